package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ysqlProcessCluster creates a 3-node RF 3 cluster of processes with YSQL
// on a free port and returns its state, a way to connect to node k (1-3)
// and a connection to node 1, closed at the test's end.
func ysqlProcessCluster(ctx context.Context, r *shaleRunner, name string) (*clusterState, func(context.Context, int) (*pgx.Conn, error), *pgx.Conn) {
	t := r.t
	rpcPort, httpPort, ysqlPort := freePort(t), freePort(t), freePort(t)
	for httpPort == rpcPort || ysqlPort == rpcPort || ysqlPort == httpPort {
		httpPort, ysqlPort = freePort(t), freePort(t)
	}
	base := filepath.Join(t.TempDir(), name)
	killNodesOnCleanup(t, base)
	r.must("cluster", "create", "--nodes", "3", "--rf", "3", "--base-dir", base, "--rpc-port", strconv.Itoa(rpcPort),
		"--http-port", strconv.Itoa(httpPort), "--ysql-port", strconv.Itoa(ysqlPort), "--wait", "60s")
	st, err := loadClusterState(base)
	if err != nil {
		t.Fatal(err)
	}
	connectTo := func(ctx context.Context, k int) (*pgx.Conn, error) {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return pgx.Connect(cctx, fmt.Sprintf("postgres://yugabyte@%s/yugabyte?sslmode=disable&connect_timeout=5", st.ysqlAddr(st.Nodes[k-1])))
	}
	var admin *pgx.Conn
	for admin == nil {
		if admin, err = connectTo(ctx, 1); err != nil {
			if ctx.Err() != nil {
				t.Fatalf("YSQL on node 1: %v", err)
			}
			admin = nil
			time.Sleep(100 * time.Millisecond) // the node is starting its YSQL listener
		}
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	return st, connectTo, admin
}

// TestYSQLSurvivesSIGKILL: a 3-node RF 3 cluster of real processes with a
// pgx connection to every node's YSQL port; one writer per node inserts
// rows. Node 3 is killed with SIGKILL: the writers on nodes 1 and 2 go on
// (retrying a failed statement on a fresh connection to their node), and
// every insert that was acknowledged is there afterwards.
func TestYSQLSurvivesSIGKILL(t *testing.T) {
	bin := buildShale(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := &shaleRunner{t: t, ctx: ctx, bin: bin}
	st, connectTo, admin := ysqlProcessCluster(ctx, r, "ysqlfault")
	if _, err := admin.Exec(ctx, `CREATE TABLE acked (id bigint PRIMARY KEY, node int NOT NULL, at timestamptz DEFAULT now()) SPLIT INTO 6 TABLETS`); err != nil {
		t.Fatal(err)
	}

	type writer struct {
		node     int
		acked    []int64
		progress atomic.Int64
		failures atomic.Int64
		maxGap   time.Duration
	}
	writers := []*writer{{node: 1}, {node: 2}, {node: 3}}
	wctx, stopWriters := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var conn *pgx.Conn
			last := time.Now()
			for id := int64(w.node) * 1_000_000; wctx.Err() == nil; {
				if conn == nil {
					c, err := connectTo(wctx, w.node)
					if err != nil {
						w.failures.Add(1)
						select { // back off before connecting again
						case <-wctx.Done():
						case <-time.After(50 * time.Millisecond):
						}
						continue
					}
					conn = c
				}
				_, err := conn.Exec(wctx, `INSERT INTO acked (id, node) VALUES ($1, $2)`, id, w.node)
				var pe *pgconn.PgError
				switch {
				case err == nil:
					w.acked = append(w.acked, id)
					w.progress.Add(1)
					if gap := time.Since(last); gap > w.maxGap {
						w.maxGap = gap
					}
					last = time.Now()
					id++
				case errors.As(err, &pe) && pe.Code == "23505":
					// An earlier attempt of this id committed although its
					// answer was lost: it counts as acknowledged now.
					w.acked = append(w.acked, id)
					id++
				default:
					w.failures.Add(1)
					if conn.IsClosed() || !errors.As(err, &pe) {
						conn.Close(context.Background())
						conn = nil
					}
				}
			}
			if conn != nil {
				conn.Close(context.Background())
			}
		}()
	}
	waitProgress := func(what string, ws []*writer, more int64) {
		t.Helper()
		base := make([]int64, len(ws))
		for i, w := range ws {
			base[i] = w.progress.Load()
		}
		for {
			done := true
			for i, w := range ws {
				if w.progress.Load() < base[i]+more {
					done = false
				}
			}
			if done {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s: no progress", what)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	waitProgress("before the kill", writers, 30)
	victim := st.Nodes[2]
	if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	t.Logf("SIGKILL node 3 (pid %d)", victim.PID)
	waitProgress("after the kill", writers[:2], 100)
	t.Logf("writers on nodes 1 and 2 did 100 more inserts each within %v of the kill", time.Since(killed).Round(time.Millisecond))
	stopWriters()
	wg.Wait()

	got := map[int64]bool{}
	rows, err := admin.Query(ctx, `SELECT id FROM acked`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		got[id] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, w := range writers {
		for _, id := range w.acked {
			if !got[id] {
				t.Errorf("acknowledged insert %d through node %d is missing", id, w.node)
			}
		}
		total += len(w.acked)
		t.Logf("node %d: %d acknowledged inserts, %d failed attempts, longest gap %v", w.node, len(w.acked), w.failures.Load(), w.maxGap.Round(time.Millisecond))
	}
	t.Logf("%d acknowledged inserts, %d rows in the table", total, len(got))
}
