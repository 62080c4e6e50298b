package client_test

import (
	"context"
	"fmt"
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
	// The next statement's snapshot has the other's commit.
	tx.StartStatement()
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

// TestReadCommittedStatement: the reads of one read committed statement
// share a snapshot. A commit after the statement's first read, to a row it
// reads later, lies in the clock uncertainty window: the read fails with
// CodeReadRestart, Restart moves the snapshot to that version (the window
// keeps its end) and the statement run again sees it, with the row it read
// first unchanged. The next statement reads a new snapshot. Restart
// refuses other transactions and errors.
func TestReadCommittedStatement(t *testing.T) {
	_, cl, tb := txnSetup(t, "rcstmt", 2)
	ctx := ctxT(t)
	key := func(k string) client.Row { return client.Row{"k": docdb.Text(k)} }
	put := func(k string, v int64) client.Row { return client.Row{"k": docdb.Text(k), "v": docdb.Int64(v)} }
	for _, k := range []string{"a", "b"} {
		if err := tb.Put(ctx, put(k, 1)); err != nil {
			t.Fatal(err)
		}
	}
	read := func(tx *client.Txn, k string) (int64, error) {
		t.Helper()
		r, ok, err := tx.Get(ctx, tb, key(k))
		if err == nil && !ok {
			t.Fatalf("row %s missing", k)
		}
		return val(r), err
	}
	tx := begin(t, cl, client.ReadCommitted)
	tx.StartStatement()
	if v, err := read(tx, "a"); err != nil || v != 1 {
		t.Fatalf("a: %d %v", v, err)
	}
	first := tx.ReadTime()
	if err := tb.Put(ctx, put("b", 2)); err != nil {
		t.Fatal(err)
	}
	_, err := read(tx, "b")
	if code, _ := client.CodeOf(err); code != client.CodeReadRestart {
		t.Fatalf("read of a row written after the statement's snapshot: %v, want CodeReadRestart", err)
	}
	if tx.Restart(nil) || tx.Restart(context.Canceled) {
		t.Fatal("Restart took an error other than a read restart")
	}
	if !tx.Restart(err) || tx.ReadTime() <= first {
		t.Fatalf("Restart: read time %s, was %s", tx.ReadTime(), first)
	}
	if a, err := read(tx, "a"); err != nil || a != 1 {
		t.Fatalf("a after the restart: %d %v", a, err)
	}
	if b, err := read(tx, "b"); err != nil || b != 2 {
		t.Fatalf("b after the restart: %d %v", b, err)
	}
	if err := tb.Put(ctx, put("a", 3)); err != nil {
		t.Fatal(err)
	}
	tx.StartStatement()
	if a, err := read(tx, "a"); err != nil || a != 3 {
		t.Fatalf("a in the next statement: %d %v", a, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	// A serializable transaction reads the latest data: nothing to restart.
	ser := begin(t, cl, client.Serializable)
	defer func() { _ = ser.Rollback(ctx) }()
	if ser.Restart(err) {
		t.Fatal("Restart moved a serializable transaction")
	}
}

// TestBlindWrites: writes made after Blind(t) are not kept for reading
// back: the transaction reads t as it was before them (its earlier writes
// still overlaid), and holds no overlay entry for them; once committed,
// every write is there.
func TestBlindWrites(t *testing.T) {
	_, cl, tb := txnSetup(t, "blind", 2)
	ctx := ctxT(t)
	put := func(k string, v int64) client.Row { return client.Row{"k": docdb.Text(k), "v": docdb.Int64(v)} }
	tx := begin(t, cl, client.Snapshot)
	if err := tx.Put(ctx, tb, put("kept", 1)); err != nil {
		t.Fatal(err)
	}
	tx.Blind(tb)
	for i := range 50 {
		if err := tx.Put(ctx, tb, put(fmt.Sprint("blind", i), int64(i))); err != nil {
			t.Fatal(err)
		}
	}
	if n := client.OwnWrites(tx); n != 1 {
		t.Fatalf("%d writes kept for reading back, want 1", n)
	}
	if r, ok, err := tx.Get(ctx, tb, client.Row{"k": docdb.Text("kept")}); err != nil || !ok || val(r) != 1 {
		t.Fatalf("the write before Blind: %v %v %v", r, ok, err)
	}
	if _, ok, err := tx.Get(ctx, tb, client.Row{"k": docdb.Text("blind7")}); err != nil || ok {
		t.Fatalf("a write after Blind read back: %v %v", ok, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := tb.ScanAll(ctx, client.ScanOptions{})
	if err != nil || len(rows) != 51 {
		t.Fatalf("after commit: %d rows, %v", len(rows), err)
	}
}
