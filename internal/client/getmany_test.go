package client_test

import (
	"testing"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/master/masterpb"
)

// TestGetMany reads many rows of a 4-tablet table in one call at every
// isolation level: absent rows, the transaction's own writes and deletes;
// and rows with NULL in nullable key columns.
func TestGetMany(t *testing.T) {
	_, cl, tb := txnSetup(t, "many", 4)
	ctx := ctxT(t)
	putKV(t, tb, 0, 100)
	var keys []client.Row
	for i := 0; i < 120; i += 3 { // 100..119 do not exist
		keys = append(keys, client.Row{"k": docdb.Text(key(i))})
	}
	for _, iso := range []client.Isolation{client.Snapshot, client.ReadCommitted, client.Serializable} {
		tx := begin(t, cl, iso)
		if err := tx.Delete(ctx, tb, client.Row{"k": docdb.Text(key(3))}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Put(ctx, tb, client.Row{"k": docdb.Text(key(102)), "v": docdb.Int64(-1)}); err != nil {
			t.Fatal(err)
		}
		rows, found, err := tx.GetMany(ctx, tb, keys, "v")
		if err != nil {
			t.Fatalf("%v: %v", iso, err)
		}
		for j, k := range keys {
			i := 3 * j
			switch {
			case i == 3 || i > 102 || i > 99 && i != 102:
				if found[j] {
					t.Errorf("%v: %s found: %v", iso, k["k"].Bytes, rows[j])
				}
			case i == 102:
				if !found[j] || val(rows[j]) != -1 {
					t.Errorf("%v: own write %s: %v %v", iso, k["k"].Bytes, found[j], rows[j])
				}
			default:
				if !found[j] || val(rows[j]) != int64(i) {
					t.Errorf("%v: %s: %v %v", iso, k["k"].Bytes, found[j], rows[j])
				}
			}
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Key columns declared nullable take NULL (secondary index keys):
	// first ascending, last descending; one that is not refuses it.
	nk := create(t, cl, &masterpb.CreateTableRequest{Namespace: "test", Name: "nk",
		Schema: &masterpb.Schema{Columns: []*masterpb.ColumnSchema{
			{Id: 1, Name: "a", Type: "int64", IsRangeKey: true, Nullable: true},
			{Id: 2, Name: "b", Type: "int64", IsRangeKey: true, Descending: true, Nullable: true},
			{Id: 3, Name: "v", Type: "int64", Nullable: true},
		}},
		Partitioning: &masterpb.Partitioning{Kind: masterpb.Partitioning_RANGE}})
	null, i64 := docdb.Null(), docdb.Int64
	for i, r := range [][2]docdb.Value{{i64(1), null}, {null, i64(1)}, {i64(2), null}, {i64(1), i64(2)}} {
		if err := nk.Put(ctx, client.Row{"a": r[0], "b": r[1], "v": i64(int64(i))}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := nk.ScanAll(ctx, client.ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var order []int64
	for _, r := range all {
		order = append(order, r["v"].Int)
	}
	if len(order) != 4 || order[0] != 1 || order[1] != 3 || order[2] != 0 || order[3] != 2 {
		t.Fatalf("order of rows with NULL keys: %v (%v)", order, all)
	}
	if r, ok, err := nk.Get(ctx, client.Row{"a": null, "b": i64(1)}); err != nil || !ok || r["v"].Int != 1 || !r["a"].IsNull() {
		t.Fatalf("get (NULL, 1): %v %v %v", r, ok, err)
	}
	if err := tb.Put(ctx, client.Row{"k": null, "v": i64(1)}); err == nil {
		t.Fatal("a NULL in a key column not declared nullable was accepted")
	}
}
