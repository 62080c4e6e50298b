package client_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
)

// TestTxnStream reads a table page by page through Txn.Stream while other
// writers change it: every row once, all as of the first page (the pages
// after it are read later, one ahead of the reader); a transaction that
// wrote the table, or a serializable one, is refused (ok false); a caller
// whose context ends stops waiting for the page being read.
func TestTxnStream(t *testing.T) {
	_, cl, tb := txnSetup(t, "stream", 4)
	ctx := ctxT(t)
	const n = 300
	for i := 0; i < n; i++ {
		if err := tb.Put(ctx, client.Row{"k": docdb.Text(fmt.Sprint("k", i)), "v": docdb.Int64(1)}); err != nil {
			t.Fatal(err)
		}
	}

	start := time.Now()
	tx := begin(t, cl, client.Snapshot)
	defer func() { _ = tx.Rollback(ctx) }()
	sc, ok, err := tx.Stream(ctx, tb, client.ScanOptions{PageSize: 7})
	if err != nil || !ok {
		t.Fatalf("Stream: %v %v", ok, err)
	}
	seen := map[string]bool{}
	next := func() {
		t.Helper()
		r := sc.Row()
		k := string(r["k"].Bytes)
		if seen[k] || val(r) != 1 {
			t.Fatalf("row %s (v %d) again or changed", k, val(r))
		}
		seen[k] = true
	}
	for i := 0; i < 20 && sc.Next(); i++ {
		next()
	}
	// Out of the read's clock uncertainty window (one clock here), the
	// writes are later than the snapshot for sure.
	for time.Since(start) <= hlc.DefaultMaxOffset+50*time.Millisecond {
		time.Sleep(10 * time.Millisecond)
	}
	for i := 0; i < n; i++ {
		if err := tb.Put(ctx, client.Row{"k": docdb.Text(fmt.Sprint("k", i)), "v": docdb.Int64(2)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tb.Put(ctx, client.Row{"k": docdb.Text("new"), "v": docdb.Int64(2)}); err != nil {
		t.Fatal(err)
	}
	for sc.Next() {
		next()
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(seen) != n {
		t.Fatalf("%d rows, want %d", len(seen), n)
	}

	t.Run("refused", func(t *testing.T) {
		w := begin(t, cl, client.Snapshot)
		defer func() { _ = w.Rollback(ctx) }()
		if err := w.Apply(ctx, tb, []client.Op{{Kind: client.OpPut, Row: client.Row{"k": docdb.Text("k1"), "v": docdb.Int64(3)}}}); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := w.Stream(ctx, tb, client.ScanOptions{}); ok || err != nil {
			t.Fatalf("a transaction that wrote the table: ok %v, %v", ok, err)
		}
		s := begin(t, cl, client.Serializable)
		defer func() { _ = s.Rollback(ctx) }()
		if _, ok, err := s.Stream(ctx, tb, client.ScanOptions{}); ok || err != nil {
			t.Fatalf("a serializable transaction: ok %v, %v", ok, err)
		}
	})

	t.Run("canceled", func(t *testing.T) {
		r := begin(t, cl, client.Snapshot)
		defer func() { _ = r.Rollback(ctx) }()
		sc, ok, err := r.Stream(ctx, tb, client.ScanOptions{PageSize: 5})
		if err != nil || !ok {
			t.Fatalf("Stream: %v %v", ok, err)
		}
		got := 0
		for got < 5 && sc.Next() {
			got++
		}
		done, cancel := context.WithCancel(ctx)
		cancel()
		sc.SetContext(done)
		for sc.Next() {
			got++ // rows of a page already read may still come
		}
		if !errors.Is(sc.Err(), context.Canceled) {
			t.Fatalf("after %d rows: %v, want the cancellation", got, sc.Err())
		}
	})
}
