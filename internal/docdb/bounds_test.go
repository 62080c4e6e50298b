package docdb

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/storage"
)

// TestNewestVersion checks NewestVersion against a walk of every key of the
// row, over rows whose pieces have from one version to many (stepped over,
// then sought past), tombstones included, next to rows of their own.
func TestNewestVersion(t *testing.T) {
	eng := openTestEngine(t)
	rng := rand.New(rand.NewSource(1))
	keys := []string{"a", "b", "b\x00", "ba", "c"}
	want := map[string]hlc.Timestamp{}
	for i := 0; i < 400; i++ {
		k := keys[rng.Intn(len(keys))]
		ht := hlc.FromMicros(int64(1+rng.Intn(1e6)), uint32(rng.Intn(3)))
		var op WriteOp
		switch rng.Intn(5) {
		case 0:
			op = WriteOp{Kind: OpDeleteRow, RowKey: testRowKey(k)}
		case 1:
			op = WriteOp{Kind: OpDeleteColumns, RowKey: testRowKey(k), Columns: []ColumnValue{{ID: uint32(1 + rng.Intn(3))}}}
		case 2:
			op = WriteOp{Kind: OpPutRow, RowKey: testRowKey(k), Columns: []ColumnValue{{ID: 2, Value: Int64(int64(i))}}}
		default:
			op = WriteOp{Kind: OpPutColumns, RowKey: testRowKey(k), Columns: []ColumnValue{{ID: uint32(1 + rng.Intn(3)), Value: Int64(int64(i))}}}
		}
		if err := ApplyWriteBatch(eng.DB, ht, &WriteBatch{Ops: []WriteOp{op}}); err != nil {
			t.Fatal(err)
		}
		want[k] = max(want[k], ht)
		checkNewest(t, eng.DB, k, want[k])
		if i%50 == 49 {
			if err := eng.DB.Flush(); err != nil { // versions on several levels
				t.Fatal(err)
			}
		}
	}
	for _, k := range append(keys, "absent") {
		checkNewest(t, eng.DB, k, want[k])
	}
}

func checkNewest(t *testing.T, r pebble.Reader, k string, want hlc.Timestamp) {
	t.Helper()
	got, err := NewestVersion(r, testRowKey(k))
	if err != nil {
		t.Fatal(err)
	}
	if walked := walkNewest(t, r, testRowKey(k)); got != want || walked != want {
		t.Fatalf("row %q: NewestVersion %s, every key %s, written %s", k, got, walked, want)
	}
}

// walkNewest reads every key of the row.
func walkNewest(t *testing.T, r pebble.Reader, rowKey []byte) hlc.Timestamp {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: rowKey, UpperBound: rowEnd(rowKey)})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var newest hlc.Timestamp
	for ok := it.First(); ok; ok = it.Next() {
		if !bytes.HasPrefix(it.Key(), rowKey) {
			t.Fatalf("key %x outside row %x", it.Key(), rowKey)
		}
		_, _, v, err := splitKey(it.Key(), len(rowKey))
		if err != nil {
			t.Fatal(err)
		}
		newest = max(newest, v.ht)
	}
	return newest
}

// TestScanMaxBytes: a scan page stops once its rows reach MaxBytes (at
// least one row a page), and the pages resumed from each other return
// every row once.
func TestScanMaxBytes(t *testing.T) {
	eng := openTestEngine(t)
	ht := hlc.FromMicros(1e6, 0)
	filler := Text(strings.Repeat("x", 1000))
	for i := range 10 {
		op := WriteOp{Kind: OpPutRow, RowKey: testRowKey(fmt.Sprintf("r%02d", i)), Columns: []ColumnValue{{ID: 2, Value: filler}}}
		if err := ApplyWriteBatch(eng.DB, ht, &WriteBatch{Ops: []WriteOp{op}}); err != nil {
			t.Fatal(err)
		}
	}
	one := (&Row{Key: testRowKey("r00"), Columns: []ColumnValue{{ID: 2, Value: filler}}}).Size()
	for _, tc := range []struct {
		maxBytes int
		pages    []int
	}{
		{2*one + 1, []int{3, 3, 3, 1}},
		{2 * one, []int{2, 2, 2, 2, 2}},
		{one / 2, []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
		{0, []int{10}},
	} {
		span := storage.Span{Start: testRowKey("r"), End: testRowKey("s")}
		var pages []int
		var keys []string
		for {
			rows, resume, err := Scan(eng.DB, ScanOptions{ReadOptions: ReadOptions{ReadTime: ht}, Span: span, MaxBytes: tc.maxBytes})
			if err != nil {
				t.Fatal(err)
			}
			pages = append(pages, len(rows))
			for _, r := range rows {
				keys = append(keys, string(r.Key))
			}
			if resume == nil {
				break
			}
			span.Start = resume
		}
		if fmt.Sprint(pages) != fmt.Sprint(tc.pages) || len(keys) != 10 || !slices.IsSorted(keys) || len(slices.Compact(keys)) != 10 {
			t.Errorf("MaxBytes %d: pages %v, want %v; %d rows", tc.maxBytes, pages, tc.pages, len(keys))
		}
	}
}
