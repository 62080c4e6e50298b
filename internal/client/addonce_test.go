package client_test

import (
	"sync"
	"testing"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
)

// TestApplyExisting: adds (OpAdd), updates and deletes outside a
// transaction through ApplyExisting: the sums land, an op on a missing row
// writes nothing and is reported in the caller's numbering across tablets,
// concurrent adds to one row all count, an add sent while a transaction's
// write of the row is pending adds to what it commits (waiting for it, or
// after it: never under it), and Apply still refuses adds.
func TestApplyExisting(t *testing.T) {
	_, cl, tb := txnSetup(t, "adds", 4)
	ctx := ctxT(t)
	for _, r := range []client.Row{kv("a", 1), kv("b", 2)} {
		if err := tb.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	add := func(k string, d int64) client.Op {
		return client.Op{Kind: client.OpAdd, Row: client.Row{"k": docdb.Text(k), "v": docdb.Int64(d)}}
	}
	value := func(k string) int64 {
		t.Helper()
		r, found, err := tb.Get(ctx, client.Row{"k": docdb.Text(k)})
		if err != nil {
			t.Fatal(err)
		}
		if !found {
			return -1
		}
		return val(r)
	}
	missing, err := tb.ApplyExisting(ctx, []client.Op{add("a", 10), add("zz", 1), add("b", 5), add("yy", 1)})
	if err != nil || len(missing) != 2 || missing[0] != 1 || missing[1] != 3 {
		t.Fatalf("missing = %v, %v; want [1 3]", missing, err)
	}
	if a, b, zz := value("a"), value("b"), value("zz"); a != 11 || b != 7 || zz != -1 {
		t.Fatalf("a = %d, b = %d, zz = %d; want 11, 7 and absent", a, b, zz)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				if _, err := tb.ApplyExisting(ctx, []client.Op{add("a", 1)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if a := value("a"); a != 211 {
		t.Fatalf("after 200 concurrent adds of 1: a = %d, want 211", a)
	}

	tx := begin(t, cl, client.ReadCommitted)
	if err := tx.Put(ctx, tb, kv("b", 100)); err != nil {
		t.Fatal(err)
	}
	// Had the add gone under tx's intent (7 + 1), tx's commit would leave
	// 100.
	done := make(chan error, 1)
	go func() {
		_, err := tb.ApplyExisting(ctx, []client.Op{add("b", 1)})
		done <- err
	}()
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b := value("b"); b != 101 {
		t.Fatalf("b = %d, want 101 (the committed 100, plus 1)", b)
	}
	missing, err = tb.ApplyExisting(ctx, []client.Op{
		{Kind: client.OpUpdate, Row: kv("b", 7)},
		{Kind: client.OpUpdate, Row: kv("nope", 7)},
		{Kind: client.OpDelete, Row: client.Row{"k": docdb.Text("a")}},
		{Kind: client.OpDelete, Row: client.Row{"k": docdb.Text("gone")}},
	})
	if err != nil || len(missing) != 2 || missing[0] != 1 || missing[1] != 3 {
		t.Fatalf("update and delete: missing = %v, %v; want [1 3]", missing, err)
	}
	if a, b, nope := value("a"), value("b"), value("nope"); a != -1 || b != 7 || nope != -1 {
		t.Fatalf("a = %d, b = %d, nope = %d; want absent, 7 and absent", a, b, nope)
	}
	if err := tb.Apply(ctx, []client.Op{add("b", 1)}); err == nil {
		t.Fatal("Apply took an add")
	}
}
