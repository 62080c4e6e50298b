package docdb

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/storage"
)

// Range lock commands of TestIntentHistories (testdata/intent_histories):
//
//	range_lock txn= ts= spans=<span>,... [wid=] [tablet=] [t=]
//	range_locks [txn=] [tablet=]
//	range_conflicts txn= span=<span> [t=]             (RangeConflicts)
//
// A span is <start>-<end> over rows of table t (default 1): a bound is a row
// name, a row name followed by + (the end of that row: rowEnd), or empty
// (the table's start or end); an end of "inf" is unbounded. `conflicts`
// also reports the range locks of tablet= a write conflicts with, `split`
// moves range locks too, and `count` shows locks= when there are any.

func parseBound(table uint32, s string, end bool) []byte {
	switch {
	case s == "" && end:
		return TableSpan(table).End
	case s == "":
		return TableSpan(table).Start
	case s == "inf" && end:
		return nil
	case strings.HasSuffix(s, "+"):
		return rowEnd(rowKeyIn(table, strings.TrimSuffix(s, "+")))
	}
	return rowKeyIn(table, s)
}

func parseSpanSpec(table uint32, s string) (storage.Span, error) {
	start, end, ok := strings.Cut(s, "-")
	if !ok {
		return storage.Span{}, fmt.Errorf("bad span %q (want <start>-<end>)", s)
	}
	return storage.Span{Start: parseBound(table, start, false), End: parseBound(table, end, true)}, nil
}

func fmtBound(b []byte) string {
	if b == nil {
		return "inf"
	}
	if _, err := DecodeDocKey(b); err == nil {
		return fmtDataRowKey(b)
	}
	if len(b) > 0 {
		prev := bytes.Clone(b)
		prev[len(prev)-1]--
		if _, err := DecodeDocKey(prev); err == nil {
			return fmtDataRowKey(prev) + "+"
		}
	}
	if len(b) == tablePrefixLen && b[0] == storage.DataPrefix {
		for _, table := range []uint32{1, 2} {
			if bytes.Equal(b, TableSpan(table).Start) {
				return fmt.Sprintf("^t%d", table)
			}
			if bytes.Equal(b, TableSpan(table).End) {
				return fmt.Sprintf("$t%d", table)
			}
		}
	}
	return fmt.Sprintf("%x", b)
}

func fmtSpan(s storage.Span) string {
	return fmt.Sprintf("[%s, %s)", fmtBound(s.Start), fmtBound(s.End))
}

func fmtRangeLock(l RangeLock) string {
	return fmt.Sprintf("%s range_read %s @%s#%d", fmtTxn(l.Txn), fmtSpan(l.Span), fmtTS(l.HT), l.WriteID)
}

func fmtConflicts(cs []Conflict) string {
	if len(cs) == 0 {
		return "conflicts: none\n"
	}
	var sb strings.Builder
	for _, c := range cs {
		if c.Range.Start != nil {
			fmt.Fprintf(&sb, "conflict: %s holds a range lock on %s (wanted %s on %s)\n", fmtTxn(c.Txn), fmtSpan(c.Range), c.Wanted, fmtIntentKey(c.Key))
			continue
		}
		fmt.Fprintf(&sb, "conflict: %s holds %s on %s (wanted %s)\n", fmtTxn(c.Txn), c.Type, fmtIntentKey(c.Key), c.Wanted)
	}
	return sb.String()
}

// runRangeLockCmd runs the range lock commands; ok is false for others.
func runRangeLockCmd(eng *storage.Engine, cmd string, a cmdArgs, txn TxnID, ts hlc.Timestamp, tablet uint64, wid uint32) (out string, ok bool, err error) {
	table, err := parseTable(a["t"])
	if err != nil {
		return "", true, err
	}
	switch cmd {
	case "range_lock":
		var spans []storage.Span
		for _, spec := range strings.Split(a["spans"], ",") {
			s, err := parseSpanSpec(table, spec)
			if err != nil {
				return "", true, err
			}
			spans = append(spans, s)
		}
		return "", true, WriteRangeLocks(eng, tablet, txn, ts, spans, wid)
	case "range_locks":
		var locks []RangeLock
		if a.has("txn") {
			locks, err = RangeLocksOf(eng, tablet, txn)
		} else {
			locks, err = RangeLocks(eng, tablet)
		}
		if err != nil {
			return "", true, err
		}
		if len(locks) == 0 {
			return "<none>\n", true, nil
		}
		var sb strings.Builder
		for _, l := range locks {
			sb.WriteString(fmtRangeLock(l) + "\n")
		}
		return sb.String(), true, nil
	case "range_conflicts":
		s, err := parseSpanSpec(table, a["span"])
		if err != nil {
			return "", true, err
		}
		cs, err := RangeConflicts(eng, txn, s)
		if err != nil {
			return "", true, err
		}
		return fmtConflicts(cs), true, nil
	}
	return "", false, nil
}

func TestRangeLockEncodingRoundTrip(t *testing.T) {
	txn := testTxn("a")
	hk := DocKey{TableID: 2, HasHash: true, Hash: 7, HashParts: []KeyPart{{Value: Int64(1)}}}.Encode()
	for _, l := range []RangeLock{
		{Txn: txn, Span: storage.Span{Start: testRowKey("a"), End: testRowKey("b")}, HT: hlc.FromMicros(5e6, 1), WriteID: 3},
		{Txn: txn, Span: storage.Span{Start: TableSpan(1).Start, End: rowEnd(testRowKey("zz"))}, HT: hlc.MaxTimestamp, WriteID: 1<<32 - 1},
		{Txn: txn, Span: storage.Span{Start: HashSpan(2, 0, 10).Start}, HT: 1},
		{Txn: txn, Span: storage.Span{Start: hk, End: rowEnd(hk)}},
	} {
		key := appendRangeLockKey(nil, 9, l)
		val := appendRangeLockValue(nil, l)
		tablet, got, err := decodeRangeLock(key, val)
		if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		if tablet != 9 || got.String() != l.String() || !bytes.Equal(got.Span.End, l.Span.End) || (got.Span.End == nil) != (l.Span.End == nil) {
			t.Fatalf("round trip: %s (tablet %d) != %s", got, tablet, l)
		}
		if !RangeLockSpan(9).Contains(key) || RangeLockSpan(8).Contains(key) || RangeLockSpan(10).Contains(key) {
			t.Fatalf("key %x outside its tablet's range lock span", key)
		}
	}
	for _, bad := range []struct{ key, val []byte }{
		{nil, []byte{byte(StrongRead)}},
		{appendRangeLockKey(nil, 1, RangeLock{Txn: txn, Span: storage.Span{Start: testRowKey("a")}}), nil},
		{appendRangeLockKey(nil, 1, RangeLock{Txn: txn, Span: storage.Span{Start: testRowKey("a")}}), []byte{byte(StrongWrite)}},
		// end before start
		{appendRangeLockKey(nil, 1, RangeLock{Txn: txn, Span: storage.Span{Start: testRowKey("b")}}), append([]byte{byte(StrongRead)}, testRowKey("a")...)},
		// zero transaction
		{appendRangeLockKey(nil, 1, RangeLock{Span: storage.Span{Start: testRowKey("a")}}), []byte{byte(StrongRead)}},
		// no span start
		{rangeLockTxnPrefix(nil, 1, txn), []byte{byte(StrongRead)}},
	} {
		if _, _, err := decodeRangeLock(bad.key, bad.val); err == nil {
			t.Errorf("decodeRangeLock(%x, %x) accepted", bad.key, bad.val)
		}
	}
	if err := WriteRangeLocks(openTestEngine(t), 1, txn, 1, []storage.Span{{Start: testRowKey("b"), End: testRowKey("a")}}, 0); err == nil {
		t.Fatal("WriteRangeLocks accepted an empty span")
	}
	if err := WriteRangeLocks(openTestEngine(t), 1, txn, 1, []storage.Span{{Start: []byte{storage.IntentPrefix}}}, 0); err == nil {
		t.Fatal("WriteRangeLocks accepted a span outside the data space")
	}
}

// TestSplitRangeLocksRandom checks on random locks and split keys that the
// children's locks cover exactly the parent's keys, each child's within its
// span, and that nothing is left under the parent.
func TestSplitRangeLocksRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	names := "abcdefghij"
	for iter := 0; iter < 50; iter++ {
		eng := openTestEngine(t)
		var locks []RangeLock
		for i := 0; i < 1+rng.Intn(6); i++ {
			a, b := rng.Intn(len(names)), rng.Intn(len(names))
			if a > b {
				a, b = b, a
			}
			s := storage.Span{Start: testRowKey(names[a : a+1]), End: rowEnd(testRowKey(names[b : b+1]))}
			if rng.Intn(5) == 0 {
				s.End = nil
			}
			txn := testTxn(string(rune('p' + rng.Intn(3))))
			if err := WriteRangeLocks(eng, 1, txn, hlc.Timestamp(i+1), []storage.Span{s}, uint32(i)); err != nil {
				t.Fatal(err)
			}
			locks = append(locks, RangeLock{Txn: txn, Span: s})
		}
		split := testRowKey(names[rng.Intn(len(names)):][:1] + "m")
		if _, err := SplitRangeLocks(eng, eng, 1, split, 2, 3); err != nil {
			t.Fatal(err)
		}
		if left, err := RangeLocks(eng, 1); err != nil || len(left) != 0 {
			t.Fatalf("parent keeps %v (%v)", left, err)
		}
		children := map[uint64]storage.Span{2: {Start: TableSpan(1).Start, End: split}, 3: {Start: split}}
		var got []RangeLock
		for id, cs := range children {
			ls, err := RangeLocks(eng, id)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range ls {
				if !cs.Contains(l.Span.Start) || (cs.End != nil && (l.Span.End == nil || bytes.Compare(l.Span.End, cs.End) > 0)) {
					t.Fatalf("child %d %s got lock %s outside it", id, cs, l)
				}
			}
			got = append(got, ls...)
		}
		// Every probe key is locked by a transaction in the parent iff it
		// is in the children.
		for _, n := range []string{"a", "am", "b", "c", "cm", "d", "e", "em", "f", "g", "h", "i", "im", "j", "jm", "z"} {
			k := testRowKey(n)
			locked := false
			for _, txn := range []string{"p", "q", "r"} {
				before, after := lockedBy(locks, testTxn(txn), k), lockedBy(got, testTxn(txn), k)
				if before != after {
					t.Fatalf("iter %d: key %s txn %s: locked before %v, after %v (split at %x)", iter, n, txn, before, after, split)
				}
				locked = locked || after
			}
			// A writer of the key conflicts iff someone locks it.
			w := []Access{{Key: IntentKey{RowKey: k}, Type: StrongWrite}}
			if c := len(RangeLockConflicts(got, testTxn("x"), w)) > 0; c != locked {
				t.Fatalf("iter %d: key %s: conflict %v, locked %v", iter, n, c, locked)
			}
		}
	}
}

func lockedBy(locks []RangeLock, txn TxnID, key []byte) bool {
	for _, l := range locks {
		if l.Txn == txn && l.Span.Contains(key) {
			return true
		}
	}
	return false
}
