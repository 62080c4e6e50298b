package logictest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestStatActivity: pg_stat_activity shows a node's sessions with their
// state and statement, and pg_cancel_backend / pg_terminate_backend act
// on them, as PostgreSQL's (a node shows and signals its own sessions, as
// in YugabyteDB).
func TestStatActivity(t *testing.T) {
	addrs, _ := ysqlCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a := connect(t, addrs[0], "yugabyte")
	b := connect(t, addrs[0], "yugabyte")
	var pid int64
	if err := b.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	// waitState waits until a sees b's state and statement as wanted.
	waitState := func(state, query string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		var got, gotQuery string
		for time.Now().Before(deadline) {
			err := a.QueryRow(ctx, `SELECT state, query FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&got, &gotQuery)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				t.Fatal(err)
			}
			if got == state && gotQuery == query {
				return
			}
		}
		t.Fatalf("b: state %q query %q, want %q %q", got, gotQuery, state, query)
	}

	if _, err := b.Exec(ctx, `SET application_name = 'worker'`); err != nil {
		t.Fatal(err)
	}
	waitState("idle", "SET application_name = 'worker'")
	var app, user string
	var xactNull bool
	if err := a.QueryRow(ctx, `SELECT application_name, usename, xact_start IS NULL FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&app, &user, &xactNull); err != nil || app != "worker" || user != "yugabyte" || !xactNull {
		t.Fatalf("b: %q %q xact_start null %v, %v", app, user, xactNull, err)
	}

	// In a block, then in a failed one.
	if _, err := b.Exec(ctx, `BEGIN`); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Exec(ctx, `SELECT 1`); err != nil {
		t.Fatal(err)
	}
	waitState("idle in transaction", "SELECT 1")
	// DECLARE runs its query inside itself: the view shows the DECLARE.
	if _, err := b.Exec(ctx, `DECLARE c CURSOR FOR SELECT 2`); err != nil {
		t.Fatal(err)
	}
	waitState("idle in transaction", "DECLARE c CURSOR FOR SELECT 2")
	if _, err := b.Exec(ctx, `SELECT 1/0`); err == nil {
		t.Fatal("1/0 succeeded")
	}
	waitState("idle in transaction (aborted)", "SELECT 1/0")
	if _, err := b.Exec(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}

	// A running statement, cancelled by another session.
	slept := make(chan error, 1)
	go func() {
		_, err := b.Exec(ctx, `SELECT pg_sleep(60)`)
		slept <- err
	}()
	waitState("active", "SELECT pg_sleep(60)")
	var ok bool
	if err := a.QueryRow(ctx, `SELECT pg_cancel_backend($1)`, pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_cancel_backend: %v %v", ok, err)
	}
	var pe *pgconn.PgError
	if err := <-slept; !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("cancelled statement: %v", err)
	}
	if err := a.QueryRow(ctx, `SELECT pg_cancel_backend(2147483647)`).Scan(&ok); err != nil || ok {
		t.Fatalf("pg_cancel_backend of no session: %v %v", ok, err)
	}

	// Terminated: its connection ends, and it leaves the view.
	if err := a.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_terminate_backend: %v %v", ok, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for n := 1; n != 0; {
		if time.Now().After(deadline) {
			t.Fatal("the terminated session is still in pg_stat_activity")
		}
		if err := a.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&n); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Exec(ctx, `SELECT 1`); err == nil {
		t.Fatal("a terminated session ran a statement")
	}
}
