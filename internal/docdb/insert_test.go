package docdb

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/storage"
)

func sec(s int64) hlc.Timestamp { return hlc.FromMicros(s*1e6, 0) }

// insOps parses "kind row [col...]" items separated by ';': kinds
// ins (OpInsertRow), put, cols (OpPutColumns), del, delcols; a column is
// an id, written as a text value.
func insOps(t *testing.T, spec string) []WriteOp {
	t.Helper()
	var ops []WriteOp
	for _, item := range strings.Split(spec, ";") {
		f := strings.Fields(item)
		op := WriteOp{RowKey: testRowKey(f[1])}
		switch f[0] {
		case "ins":
			op.Kind = OpInsertRow
		case "put":
			op.Kind = OpPutRow
		case "cols":
			op.Kind = OpPutColumns
		case "del":
			op.Kind = OpDeleteRow
		case "delcols":
			op.Kind = OpDeleteColumns
		default:
			t.Fatalf("bad op %q", item)
		}
		for _, c := range f[2:] {
			var id uint32
			if _, err := fmt.Sscan(c, &id); err != nil {
				t.Fatal(err)
			}
			cv := ColumnValue{ID: id}
			if op.Kind != OpDeleteColumns {
				cv.Value = Text("v" + c)
			}
			op.Columns = append(op.Columns, cv)
		}
		ops = append(ops, op)
	}
	return ops
}

// dupIndex runs CheckInserts and returns the duplicate's index, -1 for
// none.
func dupIndex(t *testing.T, eng *storage.Engine, ops []WriteOp, c InsertCheck) int {
	t.Helper()
	err := CheckInserts(eng, ops, c)
	if err == nil {
		return -1
	}
	var d *DuplicateKeyError
	if !errors.As(err, &d) || !errors.Is(err, ErrDuplicateKey) {
		t.Fatalf("CheckInserts: %v", err)
	}
	if string(d.RowKey) != string(ops[d.Index].RowKey) || ops[d.Index].Kind != OpInsertRow {
		t.Fatalf("duplicate names op %d (%s %x), key %x", d.Index, ops[d.Index].Kind, ops[d.Index].RowKey, d.RowKey)
	}
	return d.Index
}

func TestCheckInsertsCommitted(t *testing.T) {
	eng := openTestEngine(t)
	apply := func(ts int64, spec string) {
		t.Helper()
		if err := ApplyWriteBatch(eng, sec(ts), &WriteBatch{Ops: insOps(t, spec)}); err != nil {
			t.Fatal(err)
		}
	}
	apply(10, "put live 1")
	apply(10, "put gone 1; del gone") // deleted in the same batch (later op wins)
	apply(10, "put dead 1")
	apply(11, "del dead")       // deleted later
	apply(10, "cols colonly 2") // exists through a column only
	apply(10, "cols colgone 2")
	apply(11, "delcols colgone 2") // ... its only column deleted
	apply(10, "put revived 1")
	apply(11, "del revived")
	apply(12, "cols revived 3") // a column newer than the row delete
	apply(20, "put future 1")   // newer than the read time below
	apply(10, "put old 1; put reinserted 1")
	apply(11, "del reinserted")
	apply(12, "put reinserted 1")
	apply(10, "put absent2 1; del absent2; cols x 1") // unrelated row x
	apply(10, "put tombcol 1; delcols tombcol 1")     // marker still live
	apply(10, "cols twocols 1 2; delcols twocols 1")  // column 2 still live
	rc := InsertCheck{ReadTime: sec(15)}
	for _, c := range []struct {
		row  string
		dupe bool
	}{
		{"nothing", false}, {"live", true}, {"gone", false}, {"dead", false},
		{"colonly", true}, {"colgone", false}, {"revived", true}, {"future", false},
		{"old", true}, {"reinserted", true}, {"absent2", false}, {"tombcol", true},
		{"twocols", true},
	} {
		got := dupIndex(t, eng, insOps(t, "ins "+c.row+" 1"), rc)
		if (got == 0) != c.dupe {
			t.Errorf("insert into %q: duplicate index %d, want duplicate %v", c.row, got, c.dupe)
		}
	}
	// TTL: live until its expiry, absent from then on.
	ttl := insOps(t, "put short 1; cols shortcol 1")
	ttl[0].TTL, ttl[1].TTL = 5*time.Second, 5*time.Second
	if err := ApplyWriteBatch(eng, sec(10), &WriteBatch{Ops: ttl}); err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"short", "shortcol"} {
		if got := dupIndex(t, eng, insOps(t, "ins "+row), InsertCheck{ReadTime: sec(14)}); got != 0 {
			t.Errorf("%s before its expiry: %d", row, got)
		}
		if got := dupIndex(t, eng, insOps(t, "ins "+row), InsertCheck{ReadTime: sec(15)}); got != -1 {
			t.Errorf("%s at its expiry: %d", row, got)
		}
	}
	// The first colliding insert in batch order is named, wherever the
	// rows sort.
	if got := dupIndex(t, eng, insOps(t, "ins zz 1; ins a 1; ins old 1; ins live 1; ins b 1"), rc); got != 2 {
		t.Errorf("first duplicate: %d", got)
	}
}

func TestCheckInsertsInBatch(t *testing.T) {
	eng := openTestEngine(t)
	if err := ApplyWriteBatch(eng, sec(10), &WriteBatch{Ops: insOps(t, "put live 1; cols colonly 1")}); err != nil {
		t.Fatal(err)
	}
	rc := InsertCheck{ReadTime: sec(15)}
	for _, c := range []struct {
		spec string
		want int
	}{
		{"ins a 1; ins b 1; ins a 2", 2},         // the same key twice
		{"put a 1; ins a 1", 1},                  // a put earlier in the batch
		{"cols a 1; ins a 1", 1},                 // an update that creates the row
		{"ins a 1; del a; ins a 1", -1},          // deleted again in between
		{"del live; ins live 1", -1},             // the batch deletes the committed row first
		{"delcols colonly 1; ins colonly 1", -1}, // ... or its only column
		{"delcols live 1; ins live 1", 1},        // the marker stays
		{"ins a 1; delcols a 1; ins a 2", 2},     // so does an inserted one
		{"del a; ins a 1; put b 1; ins b 2", 3},
		{"ins live 1; ins a 1", 0},
		{"put live 2; del live; ins live 1", -1},
		{"ins x 1; ins y 1; ins z 1", -1},
		{"cols n 1; delcols n 1; ins n 1", -1},
		{"cols n 1 2; delcols n 1; ins n 1", 2},
		{"put q 1; ins r 1; del q; ins q 1", -1},
		{"ins colonly 1; del colonly", 0},
		{"put other 1; ins a 1; ins other 1", 2},
		{"ins a 1; put a 2; del a; ins a 3", -1},
		{"del nothing; del nothing; ins a 1", -1},
	} {
		if got := dupIndex(t, eng, insOps(t, c.spec), rc); got != c.want {
			t.Errorf("%s: duplicate %d, want %d", c.spec, got, c.want)
		}
	}
}

func TestCheckInsertsOwnIntents(t *testing.T) {
	eng := openTestEngine(t)
	me, other := testTxn("me"), testTxn("other")
	if err := ApplyWriteBatch(eng, sec(10), &WriteBatch{Ops: insOps(t, "put live 1; put live2 1; cols colonly 1; put live3 1")}); err != nil {
		t.Fatal(err)
	}
	writeOwn := func(txn TxnID, ts int64, wid uint32, spec string) {
		t.Helper()
		if err := WriteIntents(eng, 1, txn, sec(ts), insOps(t, spec), wid); err != nil {
			t.Fatal(err)
		}
	}
	writeOwn(me, 11, 0, "put mine 1")        // own put
	writeOwn(me, 11, 1, "del live")          // own delete of a committed row
	writeOwn(me, 11, 2, "delcols colonly 1") // own delete of its only column
	writeOwn(me, 11, 3, "del live2")
	writeOwn(me, 12, 4, "cols live2 2")         // an update after the own delete revives it
	writeOwn(me, 12, 5, "put gone 1; del gone") // own put, then own delete
	writeOwn(me, 12, 7, "cols early 1")
	writeOwn(me, 12, 8, "del early")                  // the delete hides the earlier own column
	writeOwn(other, 12, 0, "put theirs 1; del live3") // another transaction's (the caller resolves those)
	writeOwn(me, 13, 9, "put late 1")                 // at or above OwnBefore below: this batch's retry
	c := InsertCheck{ReadTime: sec(15), Txn: me, OwnBefore: 9}
	for _, tc := range []struct {
		row  string
		dupe bool
	}{
		{"mine", true}, {"live", false}, {"colonly", false}, {"live2", true}, {"gone", false},
		{"early", false}, {"theirs", false}, {"live3", true}, {"late", false}, {"nothing", false},
	} {
		got := dupIndex(t, eng, insOps(t, "ins "+tc.row+" 1"), c)
		if (got == 0) != tc.dupe {
			t.Errorf("insert into %q: duplicate index %d, want duplicate %v", tc.row, got, tc.dupe)
		}
	}
	// Outside the transaction only committed data counts.
	for row, dupe := range map[string]bool{"mine": false, "live": true, "colonly": true, "gone": false, "theirs": false} {
		if got := dupIndex(t, eng, insOps(t, "ins "+row+" 1"), InsertCheck{ReadTime: sec(15)}); (got == 0) != dupe {
			t.Errorf("plain insert into %q: duplicate index %d, want duplicate %v", row, got, dupe)
		}
	}
	// The own intents combine with the batch's earlier ops.
	if got := dupIndex(t, eng, insOps(t, "ins live 1; ins mine 1"), c); got != 1 {
		t.Errorf("own delete, own put: %d", got)
	}
	// A savepoint rollback removes the intents from write id 5 on: what
	// they said of "gone", "early" and "late" no longer counts; the older
	// own writes still do.
	if _, err := RemoveIntentsAfter(eng, eng, 1, me, 4); err != nil {
		t.Fatal(err)
	}
	c.OwnBefore = 10
	for _, tc := range []struct {
		row  string
		dupe bool
	}{{"gone", false}, {"early", false}, {"late", false}, {"mine", true}, {"live2", true}} {
		if got := dupIndex(t, eng, insOps(t, "ins "+tc.row+" 1"), c); (got == 0) != tc.dupe {
			t.Errorf("after the rollback, insert into %q: duplicate index %d, want duplicate %v", tc.row, got, tc.dupe)
		}
	}
	if _, err := RemoveIntentsAfter(eng, eng, 1, me, 0); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		row  string
		dupe bool
	}{{"mine", true}, {"live", true}, {"live2", true}, {"colonly", true}} {
		if got := dupIndex(t, eng, insOps(t, "ins "+tc.row+" 1"), c); (got == 0) != tc.dupe {
			t.Errorf("after the rollback to write id 1, insert into %q: duplicate index %d, want duplicate %v", tc.row, got, tc.dupe)
		}
	}
}

func TestInsertRowWritesAPut(t *testing.T) {
	// An insert that passed its check writes what a put writes, as a
	// version and as intents, and survives the wire format.
	put := insOps(t, "put a 1 2; put b 3")
	put[1].TTL = time.Minute
	ins := insOps(t, "ins a 1 2; ins b 3")
	ins[1].TTL = time.Minute
	var decoded WriteBatch
	if err := decoded.Unmarshal((&WriteBatch{Ops: ins}).Marshal()); err != nil {
		t.Fatal(err)
	}
	if decoded.Ops[0].Kind != OpInsertRow || OpInsertRow.String() != "insert_row" {
		t.Fatalf("decoded %v", decoded.Ops[0].Kind)
	}
	got := InsertsAsPuts(decoded.Ops)
	if got[0].Kind != OpPutRow || got[1].Kind != OpPutRow || decoded.Ops[0].Kind != OpInsertRow {
		t.Fatalf("InsertsAsPuts: %v %v (input %v)", got[0].Kind, got[1].Kind, decoded.Ops[0].Kind)
	}
	if p := insOps(t, "put a 1"); &InsertsAsPuts(p)[0] != &p[0] {
		t.Fatal("InsertsAsPuts copied a batch without inserts")
	}
	e1, e2 := openTestEngine(t), openTestEngine(t)
	if err := ApplyWriteBatch(e1, sec(10), &WriteBatch{Ops: put}); err != nil {
		t.Fatal(err)
	}
	if err := ApplyWriteBatch(e2, sec(10), &decoded); err != nil {
		t.Fatal(err)
	}
	if a, b := engineKVs(t, e1, storage.Span{}), engineKVs(t, e2, storage.Span{}); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("versions differ:\n%v\n%v", a, b)
	}
	me := testTxn("me")
	if err := WriteIntents(e1, 1, me, sec(11), put, 0); err != nil {
		t.Fatal(err)
	}
	if err := WriteIntents(e2, 1, me, sec(11), ins, 0); err != nil {
		t.Fatal(err)
	}
	if a, b := engineKVs(t, e1, storage.Span{}), engineKVs(t, e2, storage.Span{}); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("intents differ:\n%v\n%v", a, b)
	}
	if fmt.Sprint(WriteAccesses(put)) != fmt.Sprint(WriteAccesses(ins)) {
		t.Fatal("an insert takes other intents than a put")
	}
}
