package cli

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestForeignKeyRaceOnProcesses: on a 3-node cluster of processes (each
// with its own clock), children are inserted through every node while
// their parents are deleted. Every statement works or fails with 23503:
// a parent delete's search for children reads the newest data, and one
// that meets a value in its clock uncertainty window on another tablet
// reads again past it (it failed with 40001 before, a few times in ten
// seconds, since the delete had already written). No child is left
// without its parent.
func TestForeignKeyRaceOnProcesses(t *testing.T) {
	bin := buildShale(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := &shaleRunner{t: t, ctx: ctx, bin: bin}
	_, connectTo, admin := ysqlProcessCluster(ctx, r, "fkrace")
	for _, sql := range []string{
		`CREATE TABLE rp (k int PRIMARY KEY)`,
		`CREATE TABLE rc (id int PRIMARY KEY, p int REFERENCES rp)`,
		`INSERT INTO rp SELECT g FROM generate_series(1, 300) g`,
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	var (
		mu         sync.Mutex
		unexpected error
		counts     = map[string]int{}
	)
	note := func(what string, err error) {
		mu.Lock()
		defer mu.Unlock()
		var pe *pgconn.PgError
		switch {
		case err == nil:
			counts[what]++
		case errors.As(err, &pe) && pe.Code == "23503":
			counts[what+" refused"]++
		case unexpected == nil:
			unexpected = fmt.Errorf("%s: %w", what, err)
		}
	}
	stop := time.Now().Add(10 * time.Second)
	var wg sync.WaitGroup
	for w := range 8 {
		c, err := connectTo(ctx, 1+w%3)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(context.Background())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(stop) && ctx.Err() == nil; i++ {
				if w < 6 {
					_, err := c.Exec(ctx, `INSERT INTO rc VALUES ($1, $2)`, w*1_000_000+i, 1+(i*7+w*13)%300)
					note("insert", err)
				} else {
					_, err := c.Exec(ctx, `DELETE FROM rp WHERE k = $1`, 1+(i*11+w*17)%300)
					note("delete", err)
					time.Sleep(10 * time.Millisecond) // the parents last a while
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%v", counts)
	if unexpected != nil {
		t.Fatal(unexpected)
	}
	var n int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM rc WHERE p NOT IN (SELECT k FROM rp)`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("children without a parent: %d %v", n, err)
	}
	if counts["insert"] == 0 || counts["delete"]+counts["delete refused"] == 0 {
		t.Fatalf("the race did not run both sides: %v", counts)
	}
}
