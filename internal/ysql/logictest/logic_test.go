package logictest

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/shaledb/shaledb/internal/server/servertest"
)

// YSQLCluster starts a 3-node RF3 cluster with YSQL and returns node i's
// YSQL address once it serves.
func waitYSQL(t *testing.T, c *servertest.Cluster, i int) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if a := c.Servers[i].YSQLAddr(); a != "" {
			return a
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("node %d: YSQL did not start", i+1)
	return ""
}

func connect(t *testing.T, addr, db string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, "postgres://yugabyte@"+addr+"/"+db+"?sslmode=disable")
	if err != nil {
		t.Fatalf("connect %s/%s: %v", addr, db, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// ysqlCluster starts a 3-node cluster of in-process servers with YSQL
// (skipping the test under -short) and returns the nodes' YSQL addresses
// and a connection to node 0's yugabyte database.
func ysqlCluster(t *testing.T) ([]string, *pgx.Conn) {
	t.Helper()
	_, addrs, conn := ysqlServers(t)
	return addrs, conn
}

// ysqlServers is ysqlCluster with the cluster.
func ysqlServers(t *testing.T) (*servertest.Cluster, []string, *pgx.Conn) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	c := servertest.NewClusterWith(t, 3, servertest.Options{YSQL: true})
	addrs := []string{waitYSQL(t, c, 0), waitYSQL(t, c, 1), waitYSQL(t, c, 2)}
	return c, addrs, connect(t, addrs[0], "yugabyte")
}

func TestLogic(t *testing.T) {
	files, err := filepath.Glob("testdata/*.test")
	if err != nil || len(files) == 0 {
		t.Fatalf("no logic tests: %v", err)
	}
	addrs, admin := ysqlCluster(t)
	for i, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".test")
		t.Run(name, func(t *testing.T) {
			recs, err := Parse(f)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			db := "lt_" + name
			if _, err := admin.Exec(ctx, "CREATE DATABASE "+db); err != nil {
				t.Fatal(err)
			}
			// Each file runs on another node: DDL from one node is seen by
			// the others through the catalog version.
			conn := connect(t, addrs[i%len(addrs)], db)
			if err := Run(ctx, conn, f, recs); err != nil {
				t.Fatal(err)
			}
		})
	}
}
