package logictest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestReadCommittedStatementSnapshot: under READ COMMITTED every statement
// reads one snapshot, however many reads it makes (PostgreSQL takes a
// snapshot per statement). Transfers between the rows of a table spread
// over tablets keep its total; statements of READ COMMITTED blocks that
// read the rows through several reads (scalar subqueries, two scans
// under a UNION ALL, the lookup side of a join) must always see that total, while the
// next statement of the same block sees what committed meanwhile.
func TestReadCommittedStatementSnapshot(t *testing.T) {
	addrs, admin := ysqlCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const accounts, start = 8, 1000
	for _, q := range []string{
		`CREATE TABLE acct (id int PRIMARY KEY, bal int NOT NULL) SPLIT INTO 4 TABLETS`,
		fmt.Sprintf(`INSERT INTO acct SELECT g, %d FROM generate_series(1, %d) g`, start, accounts),
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	const total = accounts * start
	subqueries := "SELECT "
	for i := 1; i <= accounts; i++ {
		if i > 1 {
			subqueries += " + "
		}
		subqueries += fmt.Sprintf("(SELECT bal FROM acct WHERE id = %d)", i)
	}
	reads := []string{
		subqueries,
		`SELECT sum(s)::int FROM (SELECT sum(bal) AS s FROM acct WHERE id <= 4 UNION ALL SELECT sum(bal) FROM acct WHERE id > 4) u`,
		`SELECT sum(b.bal) FROM acct a JOIN acct b ON b.id = a.id`,
	}
	// Writers: transfers between two rows, the lower id updated first (no
	// deadlock), each in a READ COMMITTED transaction.
	const writers, transfers = 3, 80
	var done atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, writers+len(addrs))
	for w := range writers {
		conn := connect(t, addrs[w%len(addrs)], "yugabyte")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range transfers {
				a, b := (w+i)%accounts+1, (w+3*i+1)%accounts+1
				if a == b {
					b = a%accounts + 1
				}
				amount := i%7 + 1
				if a > b {
					a, b, amount = b, a, -amount
				}
				if err := transfer(ctx, conn, a, b, amount); err != nil {
					errs <- fmt.Errorf("transfer %d -> %d: %w", a, b, err)
					return
				}
			}
		}()
	}
	// Readers: each statement once per round, in a READ COMMITTED block
	// or on its own (autocommit, a snapshot of its own), by turns.
	var rounds atomic.Int64
	var rwg sync.WaitGroup
	for r := range addrs {
		conn := connect(t, addrs[r], "yugabyte")
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			for i := 0; !done.Load(); i++ {
				if err := readRound(ctx, conn, reads, total, i%2 == 0); err != nil {
					errs <- err
					return
				}
				rounds.Add(1)
			}
		}()
	}
	wg.Wait()
	done.Store(true)
	rwg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if rounds.Load() == 0 {
		t.Fatal("no read round ran while the transfers did")
	}
	t.Logf("%d read rounds of %d statements during %d transfers", rounds.Load(), len(reads), writers*transfers)

	// Each statement of a READ COMMITTED block takes a new snapshot: a
	// change committed between two statements is seen by the second.
	tx, err := admin.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var before, after int
	if err := tx.QueryRow(ctx, reads[0]).Scan(&before); err != nil {
		t.Fatal(err)
	}
	other := connect(t, addrs[1], "yugabyte")
	if _, err := other.Exec(ctx, `UPDATE acct SET bal = bal + 5 WHERE id = 3`); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRow(ctx, reads[0]).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if before != total || after != total+5 {
		t.Fatalf("READ COMMITTED block: %d before another session's commit, %d after (want %d, %d)", before, after, total, total+5)
	}
}

// transfer moves amount from row b to row a in one READ COMMITTED
// transaction.
func transfer(ctx context.Context, conn *pgx.Conn, a, b, amount int) error {
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `UPDATE acct SET bal = bal + $2 WHERE id = $1`, a, amount); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE acct SET bal = bal - $2 WHERE id = $1`, b, amount); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// readRound runs each read, in one READ COMMITTED block or each on its own,
// and checks that it saw the total.
func readRound(ctx context.Context, conn *pgx.Conn, reads []string, total int, block bool) error {
	var q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	} = conn
	if block {
		tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }()
		q = tx
	}
	for _, read := range reads {
		var sum int
		if err := q.QueryRow(ctx, read).Scan(&sum); err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) {
				err = fmt.Errorf("%w: %s", err, pe.Detail)
			}
			return fmt.Errorf("%s: %w", read, err)
		}
		if sum != total {
			return fmt.Errorf("statement (block %v) saw a total of %d, not %d (rows read at different times): %s", block, sum, total, read)
		}
	}
	if tx, ok := q.(pgx.Tx); ok {
		return tx.Commit(ctx)
	}
	return nil
}
