package logictest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/server/servertest"
)

// TestAdvisoryLocks: advisory locks are cluster-wide. Sessions on
// different nodes contend for them as PostgreSQL's backends do: try
// variants answer false at once, shared locks share, a blocked lock
// returns once the holder unlocks, commits or disconnects, and ends at
// statement_timeout or a cancel; transaction-level advisory locks and row
// locks deadlock into 40P01; a session lock outlives many expiries of a
// transaction record without heartbeats and a leader change of its
// tablet; each database has its own locks. (Session-level locks of two
// keys taken in opposite orders are not found as a deadlock: each key is
// a transaction of its own; docs/ysql.md.)
// advisory.test has the single-session behaviour.
func TestAdvisoryLocks(t *testing.T) {
	cluster, addrs, admin := ysqlServers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	a := connect(t, addrs[0], "yugabyte")
	b := connect(t, addrs[1], "yugabyte")
	c := connect(t, addrs[2], "yugabyte")
	// watch[i] reads node i's pg_locks.
	watch := []*pgx.Conn{connect(t, addrs[0], "yugabyte"), connect(t, addrs[1], "yugabyte"), connect(t, addrs[2], "yugabyte")}
	exec := func(conn *pgx.Conn, sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	boolOf := func(conn *pgx.Conn, sql string) bool {
		t.Helper()
		var v bool
		if err := conn.QueryRow(ctx, sql).Scan(&v); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return v
	}
	want := func(conn *pgx.Conn, sql string, v bool) {
		t.Helper()
		if got := boolOf(conn, sql); got != v {
			t.Fatalf("%s: got %v, want %v", sql, got, v)
		}
	}
	// blocked runs sql on conn in the background; its error comes on the
	// channel.
	blocked := func(conn *pgx.Conn, sql string) <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := conn.Exec(ctx, sql)
			done <- err
		}()
		return done
	}
	// waiting waits until node's pg_locks shows conn's session waiting.
	waiting := func(node int, conn *pgx.Conn) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			var n int
			if err := watch[node].QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = $1 AND NOT granted`,
				int32(conn.PgConn().PID())).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n == 1 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the session never waited")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	finished := func(done <-chan error) error {
		t.Helper()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("the blocked statement did not return")
		}
		return nil
	}
	notYet := func(done <-chan error) {
		t.Helper()
		select {
		case err := <-done:
			t.Fatalf("the blocked statement returned early: %v", err)
		default:
		}
	}
	wantCode := func(err error, code string) {
		t.Helper()
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != code {
			t.Fatalf("got %v, want SQLSTATE %s", err, code)
		}
	}

	t.Run("try", func(t *testing.T) {
		exec(a, `SELECT pg_advisory_lock(1)`)
		want(b, `SELECT pg_try_advisory_lock(1)`, false)
		want(b, `SELECT pg_try_advisory_lock_shared(1)`, false)
		want(c, `SELECT pg_try_advisory_xact_lock(1)`, false)
		want(c, `SELECT pg_try_advisory_lock(1, 1)`, true) // another lock
		want(c, `SELECT pg_advisory_unlock(1, 1)`, true)
		want(a, `SELECT pg_advisory_unlock(1)`, true)
		want(b, `SELECT pg_try_advisory_lock(1)`, true)
		want(a, `SELECT pg_try_advisory_lock(1)`, false)
		want(b, `SELECT pg_advisory_unlock(1)`, true)
	})

	t.Run("shared", func(t *testing.T) {
		exec(a, `SELECT pg_advisory_lock_shared(2)`)
		want(b, `SELECT pg_try_advisory_lock_shared(2)`, true)
		want(c, `SELECT pg_try_advisory_xact_lock_shared(2)`, true)
		want(c, `SELECT pg_try_advisory_lock(2)`, false)
		want(a, `SELECT pg_advisory_unlock_shared(2)`, true)
		want(c, `SELECT pg_try_advisory_lock(2)`, false) // b's
		want(b, `SELECT pg_advisory_unlock_shared(2)`, true)
		want(c, `SELECT pg_try_advisory_lock(2)`, true)
		want(a, `SELECT pg_try_advisory_lock_shared(2)`, false)
		want(c, `SELECT pg_advisory_unlock(2)`, true)
	})

	t.Run("wait-unlock", func(t *testing.T) {
		exec(a, `SELECT pg_advisory_lock(3)`)
		done := blocked(b, `SELECT pg_advisory_lock(3)`)
		waiting(1, b)
		notYet(done)
		want(a, `SELECT pg_advisory_unlock(3)`, true)
		if err := finished(done); err != nil {
			t.Fatal(err)
		}
		want(c, `SELECT pg_try_advisory_lock_shared(3)`, false)
		want(b, `SELECT pg_advisory_unlock(3)`, true)
	})

	t.Run("wait-commit", func(t *testing.T) {
		exec(a, `BEGIN`)
		exec(a, `SELECT pg_advisory_xact_lock(4)`)
		done := blocked(b, `SELECT pg_advisory_lock_shared(4)`)
		waiting(1, b)
		notYet(done)
		exec(a, `COMMIT`)
		if err := finished(done); err != nil {
			t.Fatal(err)
		}
		want(b, `SELECT pg_advisory_unlock_shared(4)`, true)
	})

	t.Run("wait-disconnect", func(t *testing.T) {
		// The holder's connection is cut without a goodbye (Terminate).
		d := connect(t, addrs[2], "yugabyte")
		exec(d, `SELECT pg_advisory_lock(5)`)
		done := blocked(b, `SELECT pg_advisory_lock(5)`)
		waiting(1, b)
		notYet(done)
		if err := d.PgConn().Conn().Close(); err != nil {
			t.Fatal(err)
		}
		if err := finished(done); err != nil {
			t.Fatal(err)
		}
		want(a, `SELECT pg_try_advisory_lock(5)`, false)
		want(b, `SELECT pg_advisory_unlock(5)`, true)
	})

	t.Run("timeout-cancel", func(t *testing.T) {
		exec(a, `SELECT pg_advisory_lock(6)`)
		exec(b, `SET statement_timeout = '300ms'`)
		_, err := b.Exec(ctx, `SELECT pg_advisory_lock(6)`)
		wantCode(err, "57014")
		exec(b, `RESET statement_timeout`)
		done := blocked(b, `SELECT pg_advisory_lock_shared(6)`)
		waiting(1, b)
		if err := b.PgConn().CancelRequest(ctx); err != nil {
			t.Fatal(err)
		}
		wantCode(finished(done), "57014")
		// Neither left a lock behind.
		want(a, `SELECT pg_advisory_unlock(6)`, true)
		want(c, `SELECT pg_try_advisory_lock(6)`, true)
		want(c, `SELECT pg_advisory_unlock(6)`, true)
	})

	t.Run("deadlock", func(t *testing.T) {
		// Transaction-level advisory locks in opposite orders.
		exec(a, `BEGIN`)
		exec(b, `BEGIN`)
		exec(a, `SELECT pg_advisory_xact_lock(7)`)
		exec(b, `SELECT pg_advisory_xact_lock(8)`)
		doneA := blocked(a, `SELECT pg_advisory_xact_lock(8)`)
		waiting(0, a)
		doneB := blocked(b, `SELECT pg_advisory_xact_lock(7)`)
		errA, errB := finished(doneA), finished(doneB)
		if (errA == nil) == (errB == nil) {
			t.Fatalf("want one deadlock victim: %v, %v", errA, errB)
		}
		wantCode(errors.Join(errA, errB), "40P01")
		exec(a, `ROLLBACK`)
		exec(b, `ROLLBACK`)

		// An advisory lock and a row lock.
		exec(admin, `CREATE TABLE dl (k int PRIMARY KEY, v int)`)
		exec(admin, `INSERT INTO dl VALUES (1, 0)`)
		exec(a, `BEGIN`)
		exec(b, `BEGIN`)
		exec(a, `SELECT v FROM dl WHERE k = 1 FOR UPDATE`)
		exec(b, `SELECT pg_advisory_xact_lock(9)`)
		doneA = blocked(a, `SELECT pg_advisory_xact_lock(9)`)
		waiting(0, a)
		doneB = blocked(b, `UPDATE dl SET v = 1 WHERE k = 1`)
		errA, errB = finished(doneA), finished(doneB)
		if (errA == nil) == (errB == nil) {
			t.Fatalf("want one deadlock victim: %v, %v", errA, errB)
		}
		wantCode(errors.Join(errA, errB), "40P01")
		exec(a, `ROLLBACK`)
		exec(b, `ROLLBACK`)

		// Two sessions raising their shared session locks: the victim's
		// shared lock goes with its transaction (PostgreSQL's keeps it).
		exec(a, `SELECT pg_advisory_lock_shared(13)`)
		exec(b, `SELECT pg_advisory_lock_shared(13)`)
		doneA = blocked(a, `SELECT pg_advisory_lock(13)`)
		waiting(0, a)
		doneB = blocked(b, `SELECT pg_advisory_lock(13)`)
		errA, errB = finished(doneA), finished(doneB)
		if (errA == nil) == (errB == nil) {
			t.Fatalf("want one deadlock victim: %v, %v", errA, errB)
		}
		wantCode(errors.Join(errA, errB), "40P01")
		winner, victim := a, b
		if errA != nil {
			winner, victim = b, a
		}
		want(victim, `SELECT pg_advisory_unlock_shared(13)`, false)
		want(c, `SELECT pg_try_advisory_lock_shared(13)`, false)
		want(winner, `SELECT pg_advisory_unlock(13)`, true)
		want(winner, `SELECT pg_advisory_unlock_shared(13)`, true)
		want(c, `SELECT pg_try_advisory_lock(13)`, true)
		want(c, `SELECT pg_advisory_unlock(13)`, true)
	})

	t.Run("outlives-expiry", func(t *testing.T) {
		// The test cluster expires a transaction record after 2 s without
		// a heartbeat; the lock's transaction keeps its record for as long
		// as the session holds it.
		exec(a, `SELECT pg_advisory_lock(10)`)
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
			want(b, `SELECT pg_try_advisory_lock(10)`, false)
			want(c, `SELECT pg_try_advisory_lock_shared(10)`, false)
			time.Sleep(200 * time.Millisecond)
		}
		want(a, `SELECT pg_advisory_unlock(10)`, true)
		want(b, `SELECT pg_try_advisory_lock(10)`, true)
		want(b, `SELECT pg_advisory_unlock(10)`, true)
	})

	t.Run("leader-change", func(t *testing.T) {
		// The lock is replicated with its tablet: a new leader has it.
		exec(a, `SELECT pg_advisory_lock(12)`)
		ms := cluster.Masters()
		location := func() *masterpb.TabletLocation {
			r, err := servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.GetTableResponse, error) {
				return mc.GetTable(ctx, &masterpb.GetTableRequest{Namespace: "system", Name: "ysql_advisory_locks"})
			})
			if err != nil || len(r.GetTablets()) != 1 {
				t.Fatalf("the advisory lock table: %v, %v", r, err)
			}
			return r.GetTablets()[0]
		}
		loc := location()
		from, id := loc.GetLeaderNode(), loc.GetTablet().GetTabletId()
		if _, err := servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.LeaderStepdownResponse, error) {
			return mc.LeaderStepdown(ctx, &masterpb.LeaderStepdownRequest{TabletId: id})
		}); err != nil {
			t.Fatal(err)
		}
		consensustest.WaitFor(t, 30*time.Second, "another leader", func() bool {
			l := location().GetLeaderNode()
			return l != 0 && l != from
		})
		want(b, `SELECT pg_try_advisory_lock(12)`, false)
		want(c, `SELECT pg_try_advisory_xact_lock_shared(12)`, false)
		want(a, `SELECT pg_advisory_unlock(12)`, true)
		want(b, `SELECT pg_try_advisory_lock(12)`, true)
		want(b, `SELECT pg_advisory_unlock(12)`, true)
	})

	t.Run("databases", func(t *testing.T) {
		exec(admin, `CREATE DATABASE advisory2`)
		other := connect(t, addrs[1], "advisory2")
		exec(a, `SELECT pg_advisory_lock(11)`)
		want(other, `SELECT pg_try_advisory_lock(11)`, true)
		want(b, `SELECT pg_try_advisory_lock(11)`, false)
		want(other, `SELECT pg_advisory_unlock(11)`, true)
		want(a, `SELECT pg_advisory_unlock(11)`, true)
	})
}
