package client_test

import (
	"testing"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
)

// TestApplyUnchangedSince: a read committed transaction reads a row
// without a lock (ReadForWrite) and writes it back with
// ApplyUnchangedSince. The write succeeds when nobody changed the row
// since the read, and fails with CodeTxnConflict, writing nothing, when
// another transaction committed a version after it; the transaction stays
// usable and a locked re-read sees the newer version.
func TestApplyUnchangedSince(t *testing.T) {
	_, cl, tb := txnSetup(t, "unchanged", 2)
	ctx := ctxT(t)
	key := client.Row{"k": docdb.Text("row")}
	put := func(v int64) client.Row { return client.Row{"k": key["k"], "v": docdb.Int64(v)} }
	if err := tb.Put(ctx, put(1)); err != nil {
		t.Fatal(err)
	}
	get := func() int64 {
		t.Helper()
		r, ok, err := tb.Get(ctx, key)
		if err != nil || !ok {
			t.Fatalf("get: %v %v", ok, err)
		}
		return val(r)
	}

	// Unchanged since the read: the write goes through.
	tx := begin(t, cl, client.ReadCommitted)
	r, ok, at, err := tx.ReadForWrite(ctx, tb, key)
	if err != nil || !ok || val(r) != 1 || at == 0 {
		t.Fatalf("read for write: %v %v %v %v", r, ok, at, err)
	}
	if err := tx.ApplyUnchangedSince(ctx, tb, []client.Op{{Kind: client.OpPut, Row: put(val(r) + 1)}}, at); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if v := get(); v != 2 {
		t.Fatalf("after an unchanged write: %d, want 2", v)
	}

	// Changed since the read by another transaction: conflict, nothing
	// written; the locked re-read sees the new version and the
	// transaction commits on top of it.
	tx = begin(t, cl, client.ReadCommitted)
	r, _, at, err = tx.ReadForWrite(ctx, tb, key)
	if err != nil || val(r) != 2 {
		t.Fatalf("read for write: %v %v", r, err)
	}
	other := begin(t, cl, client.ReadCommitted)
	if err := other.Put(ctx, tb, put(10)); err != nil {
		t.Fatal(err)
	}
	if err := other.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	err = tx.ApplyUnchangedSince(ctx, tb, []client.Op{{Kind: client.OpPut, Row: put(val(r) + 1)}}, at)
	if code, _ := client.CodeOf(err); code != client.CodeTxnConflict {
		t.Fatalf("write of a row changed since its read: %v, want CodeTxnConflict", err)
	}
	if r, _, err = tx.Get(ctx, tb, key); err != nil || val(r) != 10 {
		t.Fatalf("the failed write left a value in the transaction: %v %v", r, err)
	}
	if r, _, err = tx.GetForUpdate(ctx, tb, key, client.ForUpdate, client.WaitOnConflict); err != nil || val(r) != 10 {
		t.Fatalf("locked re-read: %v %v", r, err)
	}
	if err := tx.Put(ctx, tb, put(val(r)+1)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if v := get(); v != 11 {
		t.Fatalf("after the locked retry: %d, want 11", v)
	}
}
