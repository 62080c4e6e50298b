package docdb

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/cockroachdb/pebble/v2"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/storage"
)

// TestIntentHistories runs the scripts in testdata/intent_histories, in the
// style of TestMVCCHistories (whose commands — put_row, get, scan, gc, dump
// ... — also work here, on table 1). Each file gets a fresh engine.
// Regenerate expectations with: go test ./internal/docdb -run TestIntentHistories -rewrite
//
// Conventions: txn=<name> names a transaction (its id is the name's bytes);
// tablet=<id> is the tablet (default 1); a key spec is [t<table>:]<row>[/<column>]
// (table 1 by default; no column = the row level); op lines are those of
// `batch`, plus t=<table>.
//
//	write_intents txn= ts= [wid=] [tablet=]          (one op per input line)
//	lock txn= ts= keys=<spec>,... [wid=] [weak] [tablet=]
//	conflicts txn= [tablet=]                         (input: op lines, "read keys=... [weak]" or "lock_update keys=...")
//	apply txn= commit= [tablet=]
//	remove txn= [after=<wid>] [tablet=]
//	intents_of txn= [tablet=]
//	txns [tablet=]
//	read_intents txn= [k=] [start=] [end=] [t=]      (txn=none: outside a transaction)
//	split tablet= at=<row> left= right= [t=]         (the index and the range locks)
//	count                                            (keys in the intent, index and data spaces; range locks if any)
//	dump_intents                                     (every intent and index key, decoded)
//
// plus the range lock commands (rangelocks_test.go).
func TestIntentHistories(t *testing.T) {
	datadriven.Walk(t, "testdata/intent_histories", func(t *testing.T, path string) {
		eng := openTestEngine(t)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := runIntentCmd(eng, d.Cmd, d.CmdArgs, d.Input)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

func testTxn(name string) TxnID {
	var t TxnID
	if name == "none" {
		return t
	}
	copy(t[:], name)
	return t
}

func fmtTxn(t TxnID) string {
	if t.IsZero() {
		return "none"
	}
	if s := string(bytes.TrimRight(t[:], "\x00")); s != "" && !strings.ContainsFunc(s, func(r rune) bool { return r < 'a' || r > 'z' }) {
		return s
	}
	return t.String()
}

func rowKeyIn(table uint32, k string) []byte {
	return DocKey{TableID: table, RangeParts: []KeyPart{{Value: Text(k)}}}.Encode()
}

func parseTable(s string) (uint32, error) {
	if s == "" {
		return 1, nil
	}
	n, err := strconv.ParseUint(strings.TrimPrefix(s, "t"), 10, 32)
	return uint32(n), err
}

// parseKeySpec parses [t<table>:]<row>[/<column>].
func parseKeySpec(s string) (IntentKey, error) {
	table := uint32(1)
	if tb, rest, ok := strings.Cut(s, ":"); ok {
		var err error
		if table, err = parseTable(tb); err != nil {
			return IntentKey{}, fmt.Errorf("bad key %q", s)
		}
		s = rest
	}
	row, col, hasCol := strings.Cut(s, "/")
	k := IntentKey{RowKey: rowKeyIn(table, row)}
	if hasCol {
		c, err := strconv.ParseUint(col, 10, 32)
		if err != nil {
			return k, fmt.Errorf("bad key %q", s)
		}
		k.Column = uint32(c)
	}
	return k, nil
}

func parseKeySpecs(s string) ([]IntentKey, error) {
	var keys []IntentKey
	for _, spec := range strings.Split(s, ",") {
		k, err := parseKeySpec(spec)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

func fmtDataRowKey(rowKey []byte) string {
	k, err := DecodeDocKey(rowKey)
	if err != nil {
		return fmt.Sprintf("<bad key %x: %v>", rowKey, err)
	}
	s := fmtRowKey(rowKey)
	if k.TableID != 1 {
		s = fmt.Sprintf("t%d:%s", k.TableID, s)
	}
	return s
}

func fmtIntentKey(k IntentKey) string {
	s := fmtDataRowKey(k.RowKey)
	if k.Column != LivenessColumn {
		s += "/" + strconv.FormatUint(uint64(k.Column), 10)
	}
	return s
}

func fmtIntent(in Intent) string {
	s := fmt.Sprintf("%s %s %s @%s#%d", fmtTxn(in.Txn), fmtIntentKey(IntentKey{in.RowKey, in.Column}), in.Type, fmtTS(in.HT), in.WriteID)
	if in.Type != StrongWrite {
		return s
	}
	switch {
	case in.Tombstone:
		s += " -> tombstone"
	case in.Column == LivenessColumn:
		s += " -> marker"
	default:
		s += " -> " + in.Value.String()
	}
	if in.TTL > 0 {
		s += " ttl=" + in.TTL.String()
	}
	return s
}

func parseOpLines(input string) ([]WriteOp, error) {
	var ops []WriteOp
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		la := cmdArgs{}
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(f, "=")
			la[k] = v
		}
		op, err := parseOp(fields[0], la)
		if err != nil {
			return nil, err
		}
		table, err := parseTable(la["t"])
		if err != nil {
			return nil, err
		}
		op.RowKey = rowKeyIn(table, la["k"])
		ops = append(ops, op)
	}
	return ops, nil
}

func (a cmdArgs) uint(k string, def uint64) (uint64, error) {
	if !a.has(k) {
		return def, nil
	}
	n, err := strconv.ParseUint(a[k], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad %s=%q", k, a[k])
	}
	return n, nil
}

func runIntentCmd(eng *storage.Engine, cmd string, args []datadriven.CmdArg, input string) (string, error) {
	a := argsOf(args)
	var ts hlc.Timestamp
	if a.has("ts") {
		var err error
		if ts, err = parseTS(a["ts"]); err != nil {
			return "", err
		}
	}
	txn := testTxn(a["txn"])
	tablet, err := a.uint("tablet", 1)
	if err != nil {
		return "", err
	}
	wid, err := a.uint("wid", 0)
	if err != nil {
		return "", err
	}
	if out, ok, err := runRangeLockCmd(eng, cmd, a, txn, ts, tablet, uint32(wid)); ok {
		return out, err
	}
	switch cmd {
	case "write_intents":
		ops, err := parseOpLines(input)
		if err != nil {
			return "", err
		}
		return "", WriteIntents(eng, tablet, txn, ts, ops, uint32(wid))
	case "lock":
		keys, err := parseKeySpecs(a["keys"])
		if err != nil {
			return "", err
		}
		return "", WriteReadIntents(eng, tablet, txn, ts, keys, !a.has("weak"), uint32(wid))
	case "conflicts":
		var want []Access
		for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
			if rest, ok := strings.CutPrefix(line, "read "); ok {
				la := cmdArgs{}
				for _, f := range strings.Fields(rest) {
					k, v, _ := strings.Cut(f, "=")
					la[k] = v
				}
				keys, err := parseKeySpecs(la["keys"])
				if err != nil {
					return "", err
				}
				want = append(want, ReadAccesses(keys, !la.has("weak"))...)
				continue
			}
			if rest, ok := strings.CutPrefix(line, "lock_update keys="); ok {
				// FOR UPDATE: a strong read and a weak write on each row.
				keys, err := parseKeySpecs(rest)
				if err != nil {
					return "", err
				}
				for _, k := range keys {
					want = append(want, Access{Key: k, Type: StrongRead}, Access{Key: k, Type: WeakWrite})
				}
				continue
			}
			ops, err := parseOpLines(line)
			if err != nil {
				return "", err
			}
			want = append(want, WriteAccesses(ops)...)
		}
		cs, err := Conflicts(eng, txn, want)
		if err != nil {
			return "", err
		}
		locks, err := RangeLocks(eng, tablet)
		if err != nil {
			return "", err
		}
		return fmtConflicts(append(cs, RangeLockConflicts(locks, txn, want)...)), nil
	case "apply":
		commit, err := parseTS(a["commit"])
		if err != nil {
			return "", err
		}
		n, err := ApplyIntents(eng, eng, tablet, txn, commit)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("apply: %d versions written\n", n), nil
	case "remove":
		var n int
		if a.has("after") {
			after, err := a.uint("after", 0)
			if err != nil {
				return "", err
			}
			n, err = RemoveIntentsAfter(eng, eng, tablet, txn, uint32(after))
			if err != nil {
				return "", err
			}
		} else if n, err = RemoveIntents(eng, eng, tablet, txn); err != nil {
			return "", err
		}
		return fmt.Sprintf("remove: %d intents removed\n", n), nil
	case "intents_of":
		ins, err := IntentsOf(eng, tablet, txn)
		if err != nil {
			return "", err
		}
		if len(ins) == 0 {
			return "<none>\n", nil
		}
		var sb strings.Builder
		for _, in := range ins {
			sb.WriteString(fmtIntent(in) + "\n")
		}
		return sb.String(), nil
	case "txns":
		ts, err := TxnsWithIntents(eng, tablet)
		if err != nil {
			return "", err
		}
		var names []string
		for _, t := range ts {
			names = append(names, fmtTxn(t))
		}
		return fmt.Sprintf("txns: [%s]\n", strings.Join(names, " ")), nil
	case "read_intents":
		return runReadIntents(eng, txn, a)
	case "split":
		table, err := parseTable(a["t"])
		if err != nil {
			return "", err
		}
		left, err := a.uint("left", 0)
		if err != nil {
			return "", err
		}
		right, err := a.uint("right", 0)
		if err != nil {
			return "", err
		}
		n, err := SplitTxnIndex(eng, eng, tablet, rowKeyIn(table, a["at"]), left, right)
		if err != nil {
			return "", err
		}
		m, err := SplitRangeLocks(eng, eng, tablet, rowKeyIn(table, a["at"]), left, right)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("split: %d index entries moved, %d range locks\n", n, m), nil
	case "count":
		var parts []string
		for _, sp := range []struct {
			name string
			span storage.Span
		}{{"intents", storage.IntentSpan()}, {"index", storage.TxnIndexSpan()}, {"data", storage.DataSpan()}} {
			n, err := countKeys(eng, sp.span)
			if err != nil {
				return "", err
			}
			parts = append(parts, fmt.Sprintf("%s=%d", sp.name, n))
		}
		if n, err := countKeys(eng, storage.RangeLockSpan()); err != nil {
			return "", err
		} else if n > 0 {
			parts = append(parts, fmt.Sprintf("locks=%d", n))
		}
		return "count: " + strings.Join(parts, " ") + "\n", nil
	case "dump_intents":
		return dumpIntents(eng)
	case "get":
		if a.has("t") {
			table, err := parseTable(a["t"])
			if err != nil {
				return "", err
			}
			row, ok, err := GetRow(eng, rowKeyIn(table, a["k"]), ReadOptions{ReadTime: ts})
			if err != nil {
				return "", err
			}
			if !ok {
				return fmt.Sprintf("get: t%d:%s -> <no row>\n", table, a["k"]), nil
			}
			return fmt.Sprintf("get: t%d:%s\n", table, fmtRow(row)), nil
		}
	}
	return runHistoryCmd(eng, cmd, args, input)
}

func runReadIntents(eng *storage.Engine, txn TxnID, a cmdArgs) (string, error) {
	table, err := parseTable(a["t"])
	if err != nil {
		return "", err
	}
	span := TableSpan(table)
	if a.has("k") {
		rk := rowKeyIn(table, a["k"])
		span = storage.Span{Start: rk, End: rowEnd(rk)}
	}
	if a.has("start") {
		span.Start = rowKeyIn(table, a["start"])
	}
	if a.has("end") {
		span.End = rowKeyIn(table, a["end"])
	}
	rows, err := ReadIntents(eng, span, txn)
	if err != nil {
		return "", err
	}
	if len(rows) == 0 {
		return "read_intents: <none>\n", nil
	}
	var sb strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&sb, "row %s:\n", fmtDataRowKey(r.RowKey))
		for _, in := range r.Own {
			fmt.Fprintf(&sb, "  own   %s\n", fmtIntent(in))
		}
		for _, in := range r.Others {
			fmt.Fprintf(&sb, "  other %s\n", fmtIntent(in))
		}
	}
	return sb.String(), nil
}

func countKeys(r pebble.Reader, span storage.Span) (int, error) {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: span.Start, UpperBound: span.End})
	if err != nil {
		return 0, err
	}
	n := 0
	for valid := it.First(); valid; valid = it.Next() {
		n++
	}
	if err := it.Error(); err != nil {
		_ = it.Close()
		return 0, err
	}
	return n, it.Close()
}

func dumpIntents(eng *storage.Engine) (string, error) {
	var sb strings.Builder
	for _, span := range []storage.Span{storage.IntentSpan(), storage.TxnIndexSpan()} {
		it, err := eng.NewIter(&pebble.IterOptions{LowerBound: span.Start, UpperBound: span.End})
		if err != nil {
			return "", err
		}
		for valid := it.First(); valid; valid = it.Next() {
			key := it.Key()
			if key[0] == storage.TxnIndexPrefix {
				ik, err := intentKeyOfIndex(key)
				if err != nil {
					_ = it.Close()
					return "", err
				}
				var txn TxnID
				copy(txn[:], key[9:])
				k, err := decodeIntentKey(ik)
				if err != nil {
					_ = it.Close()
					return "", err
				}
				tablet := uint64(0)
				for _, b := range key[1:9] {
					tablet = tablet<<8 | uint64(b)
				}
				fmt.Fprintf(&sb, "index tablet=%d %s -> %s %s @%s#%d\n", tablet, fmtTxn(txn),
					fmtIntentKey(IntentKey{k.dataRowKey(), k.col}), k.typ, fmtTS(k.ht), k.wid)
				continue
			}
			k, err := decodeIntentKey(key)
			if err != nil {
				_ = it.Close()
				return "", err
			}
			iv, err := decodeIntentValue(k.typ, it.Value())
			if err != nil {
				_ = it.Close()
				return "", err
			}
			ins, err := expandIntent(nil, k, iv, k.dataRowKey())
			if err != nil {
				_ = it.Close()
				return "", err
			}
			for i, in := range ins {
				line := "intent " + fmtIntent(in)
				if iv.packed != nil {
					line = "packed " + fmtIntent(in) // one stored intent, expanded
					if i > 0 {
						line = "  and  " + fmtIntent(in)
					}
				}
				sb.WriteString(line + "\n")
			}
		}
		if err := it.Close(); err != nil {
			return "", err
		}
	}
	if sb.Len() == 0 {
		return "<empty>\n", nil
	}
	return sb.String(), nil
}

func TestIntentsConflictMatrix(t *testing.T) {
	types := []IntentType{WeakRead, WeakWrite, StrongRead, StrongWrite, WriteLock}
	// want[i][j]: does types[i] conflict with types[j]? A write lock
	// conflicts as a strong write does.
	want := [5][5]bool{
		//       WR     WW     SR     SW    WL
		/*WR*/ {false, false, false, true, true},
		/*WW*/ {false, false, true, true, true},
		/*SR*/ {false, true, false, true, true},
		/*SW*/ {true, true, true, true, true},
		/*WL*/ {true, true, true, true, true},
	}
	for i, a := range types {
		for j, b := range types {
			if got := IntentsConflict(a, b); got != want[i][j] {
				t.Errorf("IntentsConflict(%s, %s) = %v, want %v", a, b, got, want[i][j])
			}
		}
	}
}

// randomOps returns n random valid ops on a few rows and columns of table 1.
func randomOps(rng *rand.Rand, n int) []WriteOp {
	rows := []string{"a", "b", "c", "d"}
	return randomOpsOn(rng, n, func(int) []byte { return testRowKey(rows[rng.Intn(len(rows))]) })
}

// randomOpsOn is randomOps on the rows row returns (op i's).
func randomOpsOn(rng *rand.Rand, n int, row func(i int) []byte) []WriteOp {
	ops := make([]WriteOp, n)
	for i := range ops {
		op := &ops[i]
		op.Kind = OpKind(1 + rng.Intn(int(OpInsertRow))) // not OpAddColumns: the leader resolves adds first
		op.RowKey = row(i)
		if rng.Intn(4) == 0 {
			op.TTL = time.Duration(1+rng.Intn(20)) * time.Second
		}
		if op.Kind == OpDeleteRow {
			continue
		}
		for c := 0; c < 1+rng.Intn(3); c++ {
			cv := ColumnValue{ID: uint32(1 + rng.Intn(4))}
			if op.Kind != OpDeleteColumns {
				switch rng.Intn(3) {
				case 0:
					cv.Value = Int64(rng.Int63n(100))
				case 1:
					cv.Value = Text(strconv.Itoa(rng.Intn(1000)))
				default:
					cv.Value = Null()
				}
			}
			op.Columns = append(op.Columns, cv)
		}
	}
	return ops
}

func engineKVs(t *testing.T, r pebble.Reader, span storage.Span) [][2]string {
	t.Helper()
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: span.Start, UpperBound: span.End})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var kvs [][2]string
	for valid := it.First(); valid; valid = it.Next() {
		kvs = append(kvs, [2]string{string(it.Key()), string(it.Value())})
	}
	return kvs
}

// TestApplyIntentsMatchesApplyWriteBatch checks, on seeded random
// transactions, that writing a transaction's ops as intents over several
// statements and applying them at the commit time leaves exactly the data
// keys one ApplyWriteBatch of the same ops at that time writes, while another
// transaction's intents stay untouched, and that nothing of the applied
// transaction remains in the intent and index spaces.
func TestApplyIntentsMatchesApplyWriteBatch(t *testing.T) {
	seeds := 30
	if testing.Short() {
		seeds = 10
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		rng := rand.New(rand.NewSource(seed))
		intents, plain := openTestEngine(t), openTestEngine(t)
		// Some committed history, the same in both.
		base := randomOps(rng, 5)
		for _, eng := range []*storage.Engine{intents, plain} {
			if err := ApplyWriteBatch(eng, hlc.FromMicros(5e6, 0), &WriteBatch{Ops: base}); err != nil {
				t.Fatal(err)
			}
		}
		txnA, txnB := testTxn("a"), testTxn("b")
		ops := randomOps(rng, 1+rng.Intn(25))
		// Another transaction's intents, interleaved in time.
		other := randomOps(rng, 5)
		if err := WriteIntents(intents, 1, txnB, hlc.FromMicros(9e6, 0), other, 0); err != nil {
			t.Fatal(err)
		}
		bBefore, err := IntentsOf(intents, 1, txnB)
		if err != nil {
			t.Fatal(err)
		}
		// Txn a's ops in statements at increasing times, consecutive write ids.
		ts := int64(10e6)
		for i := 0; i < len(ops); {
			n := 1 + rng.Intn(len(ops)-i)
			if err := WriteIntents(intents, 1, txnA, hlc.FromMicros(ts, 0), ops[i:i+n], uint32(i)); err != nil {
				t.Fatal(err)
			}
			ts += 1e6
			i += n
		}
		commit := hlc.FromMicros(ts+5e6, 3)
		if _, err := ApplyIntents(intents, intents, 1, txnA, commit); err != nil {
			t.Fatal(err)
		}
		if err := ApplyWriteBatch(plain, commit, &WriteBatch{Ops: ops}); err != nil {
			t.Fatal(err)
		}
		got, want := engineKVs(t, intents, storage.DataSpan()), engineKVs(t, plain, storage.DataSpan())
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("seed %d: data after ApplyIntents differs from ApplyWriteBatch:\n got %q\nwant %q", seed, got, want)
		}
		if ins, err := IntentsOf(intents, 1, txnA); err != nil || len(ins) != 0 {
			t.Fatalf("seed %d: intents of a after apply: %v %v", seed, ins, err)
		}
		bAfter, err := IntentsOf(intents, 1, txnB)
		if err != nil || fmt.Sprint(bAfter) != fmt.Sprint(bBefore) {
			t.Fatalf("seed %d: intents of b changed: %v -> %v (%v)", seed, bBefore, bAfter, err)
		}
		stored, err := countKeys(intents, storage.IntentSpan())
		if err != nil {
			t.Fatal(err)
		}
		if n, err := RemoveIntents(intents, intents, 1, txnB); err != nil || n != stored {
			t.Fatalf("seed %d: remove b: %d %v", seed, n, err)
		}
		for _, span := range []storage.Span{storage.IntentSpan(), storage.TxnIndexSpan()} {
			if n, err := countKeys(intents, span); err != nil || n != 0 {
				t.Fatalf("seed %d: %d keys left in %s (%v)", seed, n, span, err)
			}
		}
	}
}

// TestIntentKeysStayInTabletSpans checks that a tablet's intents lie in
// IntentSpanOf(its data span) and its index in TxnIndexSpan(its id), the
// spans a snapshot copies, for two tablets of one table on one engine; and
// that a snapshot of one tablet (a copy of those spans into another engine,
// clearing them first) carries everything needed to apply there.
func TestIntentKeysStayInTabletSpans(t *testing.T) {
	eng, dst := openTestEngine(t), openTestEngine(t)
	split := testRowKey("c")
	tablets := []struct {
		id   uint64
		span storage.Span
	}{
		{1, storage.Span{Start: TableSpan(1).Start, End: split}},
		{2, storage.Span{Start: split, End: TableSpan(1).End}},
	}
	rng := rand.New(rand.NewSource(7))
	txn := testTxn("a")
	for i, op := range randomOps(rng, 40) {
		tab := tablets[0].id
		if bytes.Compare(op.RowKey, split) >= 0 {
			tab = tablets[1].id
		}
		if err := WriteIntents(eng, tab, txn, hlc.FromMicros(int64(10+i)*1e6, 0), []WriteOp{op}, uint32(i)); err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	for _, tb := range tablets {
		ins, err := IntentsOf(eng, tb.id, txn)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range ins {
			if !tb.span.Contains(in.RowKey) {
				t.Fatalf("tablet %d indexes an intent on %x outside its span", tb.id, in.RowKey)
			}
		}
		n, err := countKeys(eng, IntentSpanOf(tb.span))
		if err != nil {
			t.Fatal(err)
		}
		m, err := countKeys(eng, TxnIndexSpan(tb.id))
		if err != nil {
			t.Fatal(err)
		}
		// A packed intent stands for several (IntentsOf expands it).
		if n != m || n > len(ins) || n == 0 && len(ins) > 0 {
			t.Fatalf("tablet %d: %d intents, %d in its intent span, %d index keys", tb.id, len(ins), n, m)
		}
		total += n
	}
	if n, _ := countKeys(eng, storage.IntentSpan()); n != total {
		t.Fatalf("%d intents in all, %d in the tablets' spans", n, total)
	}
	// Snapshot tablet 2 into dst, which holds stale intents of its own there.
	tb := tablets[1]
	if err := WriteIntents(dst, tb.id, testTxn("z"), hlc.FromMicros(1e6, 0), []WriteOp{{Kind: OpDeleteRow, RowKey: testRowKey("x")}}, 0); err != nil {
		t.Fatal(err)
	}
	b := dst.NewBatch()
	for _, span := range []storage.Span{tb.span, IntentSpanOf(tb.span), TxnIndexSpan(tb.id)} {
		if err := b.DeleteRange(span.Start, span.End, nil); err != nil {
			t.Fatal(err)
		}
		for _, kv := range engineKVs(t, eng, span) {
			if err := b.Set([]byte(kv[0]), []byte(kv[1]), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Commit(nil); err != nil {
		t.Fatal(err)
	}
	commit := hlc.FromMicros(100e6, 0)
	for _, e := range []*storage.Engine{eng, dst} {
		if _, err := ApplyIntents(e, e, tb.id, txn, commit); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := engineKVs(t, dst, tb.span), engineKVs(t, eng, tb.span); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("applied snapshot differs:\n got %q\nwant %q", got, want)
	}
	if txns, err := TxnsWithIntents(dst, tb.id); err != nil || len(txns) != 0 {
		t.Fatalf("stale intents survived the snapshot: %v %v", txns, err)
	}
}

func FuzzIntentValueDecode(f *testing.F) {
	txn := testTxn("fuzz")
	for _, typ := range []IntentType{WeakRead, WeakWrite, StrongRead, StrongWrite} {
		f.Add(uint8(typ), appendIntentValue(nil, typ, intentValue{txn: txn}))
	}
	for _, iv := range []intentValue{
		{txn: txn, value: Null()},
		{txn: txn, tombstone: true},
		{txn: txn, ttl: time.Second, value: Text("abc")},
		{txn: txn, ttl: 1, value: Int64(-7)},
		{txn: txn, value: UUID([16]byte{1, 2})},
	} {
		f.Add(uint8(StrongWrite), appendIntentValue(nil, StrongWrite, iv))
	}
	cols := []ColumnValue{{ID: 2, Value: Text("x")}, {ID: 1, Value: Int64(5)}, {ID: 9, Value: Null()}}
	f.Add(uint8(StrongWrite), appendIntentValue(nil, StrongWrite, intentValue{txn: txn, value: Null(), packed: appendPackedColumns(nil, cols)}))
	f.Add(uint8(StrongWrite), appendIntentValue(nil, StrongWrite, intentValue{txn: txn, ttl: time.Minute, value: Null(), packed: appendPackedColumns(nil, cols[:1])}))
	f.Add(uint8(StrongWrite), append(txn[:], ivPacked, 0, 0, 0, 1, 9, 3))
	f.Add(uint8(StrongWrite), []byte{})
	f.Add(uint8(StrongWrite), append(txn[:], ivTTL, 0, 0, 0))
	f.Add(uint8(3), txn[:])
	f.Fuzz(func(t *testing.T, typ uint8, data []byte) {
		iv, err := decodeIntentValue(IntentType(typ), data)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to something that decodes the same.
		enc := appendIntentValue(nil, IntentType(typ), iv)
		iv2, err := decodeIntentValue(IntentType(typ), enc)
		if err != nil {
			t.Fatalf("re-decoding %x: %v", enc, err)
		}
		if iv2.txn != iv.txn || iv2.tombstone != iv.tombstone || iv2.ttl != iv.ttl || iv2.value.Type != iv.value.Type || iv2.value.Compare(iv.value) != 0 ||
			!bytes.Equal(iv2.packed, iv.packed) {
			t.Fatalf("round trip: %+v != %+v", iv2, iv)
		}
	})
}

func FuzzIntentKeyDecode(f *testing.F) {
	rk := testRowKey("k")
	f.Add(appendIntentKey(nil, rk, 0, WeakWrite, 5, 1))
	f.Add(appendIntentKey(nil, rk, 3, StrongWrite, hlc.MaxTimestamp, 0))
	hk := DocKey{TableID: 2, HasHash: true, Hash: 7, HashParts: []KeyPart{{Value: Int64(1)}}, RangeParts: []KeyPart{{Value: Text("r"), Desc: true}}}.Encode()
	f.Add(appendIntentKey(nil, hk, 1, StrongRead, 1, 2))
	f.Add([]byte{storage.IntentPrefix})
	f.Fuzz(func(t *testing.T, key []byte) {
		k, err := decodeIntentKey(key)
		if err != nil {
			return
		}
		if enc := appendIntentKey(nil, k.dataRowKey(), k.col, k.typ, k.ht, k.wid); !bytes.Equal(enc, key) {
			t.Fatalf("re-encoding %x gave %x", key, enc)
		}
	})
}

// TestApplyIntentsLargeRuns: a transaction with long runs of adjacent
// intents (its rows in a row, as a bulk load writes them) is applied with
// range deletions. Checked, in one indexed batch as the tablet's apply
// cycle uses: another transaction's intents between its rows (on the
// engine, and written to the batch just before the apply) survive, and so
// do intents written to the batch after the apply inside the deleted
// ranges; the data equals one ApplyWriteBatch of the same ops; nothing of
// the applied transaction remains. Then the removal of a large aborted
// transaction leaves the other's intents alone too.
func TestApplyIntentsLargeRuns(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	eng, plain := openTestEngine(t), openTestEngine(t)
	row := func(i int, suffix string) []byte { return testRowKey(fmt.Sprintf("r%04d%s", i, suffix)) }
	var ops []WriteOp
	for i := 0; i < 500; i++ {
		op := WriteOp{Kind: OpPutRow, RowKey: row(i, ""), Columns: []ColumnValue{{ID: 2, Value: Int64(int64(i))}, {ID: 3, Value: Text("v")}}}
		switch rng.Intn(10) {
		case 0:
			op = WriteOp{Kind: OpDeleteRow, RowKey: op.RowKey}
		case 1:
			op.TTL = 5 * time.Second
		}
		ops = append(ops, op)
	}
	// Rewrites of some rows in a later statement (higher write ids).
	ops = append(ops, randomOpsOn(rng, 40, func(int) []byte { return row(rng.Intn(500), "") })...)
	txnA, txnB, txnC := testTxn("a"), testTxn("b"), testTxn("c")
	between := func(i int) WriteOp {
		return WriteOp{Kind: OpPutRow, RowKey: row(i, "x"), Columns: []ColumnValue{{ID: 2, Value: Int64(-1)}}}
	}
	if err := WriteIntents(eng, 1, txnB, hlc.FromMicros(9e6, 0), []WriteOp{between(100), between(300), between(499)}, 0); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(ops); i += 100 {
		if err := WriteIntents(eng, 1, txnA, hlc.FromMicros(int64(10e6+i), 0), ops[i:min(i+100, len(ops))], uint32(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := eng.Flush(); err != nil { // part on sstables, part in the batch
		t.Fatal(err)
	}
	commit := hlc.FromMicros(20e6, 1)
	b := eng.NewIndexedBatch()
	if err := WriteIntents(b, 1, txnB, hlc.FromMicros(11e6, 0), []WriteOp{between(200)}, 3); err != nil {
		t.Fatal(err)
	}
	n, err := ApplyIntents(b, b, 1, txnA, commit)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteIntents(b, 1, txnC, hlc.FromMicros(21e6, 0), []WriteOp{between(250), {Kind: OpDeleteRow, RowKey: row(260, "")}}, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if err := ApplyWriteBatch(plain, commit, &WriteBatch{Ops: ops}); err != nil {
		t.Fatal(err)
	}
	got, want := engineKVs(t, eng, storage.DataSpan()), engineKVs(t, plain, storage.DataSpan())
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("data after ApplyIntents (%d versions) differs from ApplyWriteBatch: %d keys, want %d", n, len(got), len(want))
	}
	if ins, err := IntentsOf(eng, 1, txnA); err != nil || len(ins) != 0 {
		t.Fatalf("intents of a after apply: %d %v", len(ins), err)
	}
	for _, c := range []struct {
		txn  TxnID
		rows int
	}{{txnB, 4}, {txnC, 2}} {
		ins, err := IntentsOf(eng, 1, c.txn)
		rows := map[string]bool{}
		for _, in := range ins {
			rows[string(in.RowKey)] = true
		}
		if err != nil || len(rows) != c.rows {
			t.Fatalf("intents of %s: on %d rows (%v), want %d", fmtTxn(c.txn), len(rows), err, c.rows)
		}
	}
	// A large aborted transaction: removed, the others' intents stay.
	txnD := testTxn("d")
	if err := WriteIntents(eng, 1, txnD, hlc.FromMicros(30e6, 0), ops[:500], 0); err != nil {
		t.Fatal(err)
	}
	before := func() string {
		var s []string
		for _, x := range []TxnID{txnB, txnC} {
			ins, err := IntentsOf(eng, 1, x)
			if err != nil {
				t.Fatal(err)
			}
			s = append(s, fmt.Sprint(ins))
		}
		return strings.Join(s, "|")
	}
	others := before()
	if n, err := RemoveIntents(eng, eng, 1, txnD); err != nil || n == 0 {
		t.Fatalf("remove d: %d %v", n, err)
	}
	if ins, err := IntentsOf(eng, 1, txnD); err != nil || len(ins) != 0 {
		t.Fatalf("intents of d after removal: %d %v", len(ins), err)
	}
	if after := before(); after != others {
		t.Fatalf("the removal changed other transactions' intents:\n%s\n%s", others, after)
	}
	for _, x := range []TxnID{txnB, txnC} {
		if _, err := RemoveIntents(eng, eng, 1, x); err != nil {
			t.Fatal(err)
		}
	}
	for _, span := range []storage.Span{storage.IntentSpan(), storage.TxnIndexSpan()} {
		if n, err := countKeys(eng, span); err != nil || n != 0 {
			t.Fatalf("%d keys left in %s (%v)", n, span, err)
		}
	}
}

// TestApplyKnownIntentsMatchesApplyIntents checks, on seeded random
// transactions written over several statements, some with row locks, some
// rolled back in part (KnownIntents.DropFrom), next to another
// transaction's intents, that applying the intents WriteIntentsKnown and
// WriteLockIntentsKnown recorded leaves exactly the data, intents and index
// ApplyIntents leaves.
func TestApplyKnownIntentsMatchesApplyIntents(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewSource(seed))
		read, known := openTestEngine(t), openTestEngine(t)
		base := randomOps(rng, 5)
		txnA, txnB := testTxn("a"), testTxn("b")
		ops := randomOps(rng, 1+rng.Intn(25))
		other := randomOps(rng, 5)
		var k KnownIntents
		for _, eng := range []*storage.Engine{read, known} {
			if err := ApplyWriteBatch(eng, hlc.FromMicros(5e6, 0), &WriteBatch{Ops: base}); err != nil {
				t.Fatal(err)
			}
			if err := WriteIntents(eng, 1, txnB, hlc.FromMicros(9e6, 0), other, 0); err != nil {
				t.Fatal(err)
			}
			ts := int64(10e6)
			r := rand.New(rand.NewSource(seed)) // the same statements in both
			for i := 0; i < len(ops); {
				n := 1 + r.Intn(len(ops)-i)
				var kp *KnownIntents
				if eng == known {
					kp = &k
				}
				if err := WriteIntentsKnown(eng, 1, txnA, hlc.FromMicros(ts, 0), ops[i:i+n], uint32(i), kp); err != nil {
					t.Fatal(err)
				}
				if r.Intn(2) == 0 {
					// Row locks of the statement, on one of its rows and
					// on a row another statement writes.
					lockTypes := []IntentType{WeakRead, StrongRead, WeakWrite, WriteLock}
					locks := []Access{
						{Key: IntentKey{RowKey: ops[i].RowKey}, Type: lockTypes[r.Intn(len(lockTypes))]},
						{Key: IntentKey{RowKey: ops[r.Intn(len(ops))].RowKey}, Type: lockTypes[r.Intn(len(lockTypes))]},
					}
					if err := WriteLockIntentsKnown(eng, 1, txnA, hlc.FromMicros(ts, 0), locks, uint32(1000+i), kp); err != nil {
						t.Fatal(err)
					}
				}
				ts += 1e6
				i += n
			}
		}
		if seed%3 == 0 {
			// A savepoint rollback: the intents from a write id on go,
			// from the engines and from the record.
			cut := uint32(len(ops) / 2)
			for _, eng := range []*storage.Engine{read, known} {
				if _, err := RemoveIntentsAfter(eng, eng, 1, txnA, cut-1); err != nil {
					t.Fatal(err)
				}
			}
			if err := k.DropFrom(cut); err != nil {
				t.Fatal(err)
			}
		}
		commit := hlc.FromMicros(50e6, 3)
		if _, err := ApplyIntents(read, read, 1, txnA, commit); err != nil {
			t.Fatal(err)
		}
		b := known.NewIndexedBatch()
		if _, err := ApplyKnownIntents(b, 1, txnA, commit, &k); err != nil {
			t.Fatal(err)
		}
		if err := b.Commit(nil); err != nil {
			t.Fatal(err)
		}
		for _, span := range []storage.Span{storage.DataSpan(), storage.IntentSpan(), storage.TxnIndexSpan()} {
			got, want := engineKVs(t, known, span), engineKVs(t, read, span)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("seed %d: %s after ApplyKnownIntents differs from ApplyIntents:\n got %q\nwant %q", seed, span, got, want)
			}
		}
		if ins, err := IntentsOf(known, 1, txnA); err != nil || len(ins) != 0 {
			t.Fatalf("seed %d: intents of a after apply: %v %v", seed, ins, err)
		}
	}
}

// TestApplyAndRemoveIntentsInParts checks that a large transaction applied
// (or removed) in bounded steps, each its own indexed batch as a Raft entry
// would be, some flushed to sstables between steps, leaves exactly the keys
// of one ApplyIntents (RemoveIntents): data, intents, index and range locks
// in the whole key space; that every step but the last reports more to do,
// and that the range locks stay until the last step.
func TestApplyAndRemoveIntentsInParts(t *testing.T) {
	row := func(i int, suffix string) []byte { return testRowKey(fmt.Sprintf("r%04d%s", i, suffix)) }
	txnA, txnB := testTxn("a"), testTxn("b")
	lockSpan := storage.Span{Start: row(0, ""), End: row(10, "")}
	setup := func(seed int64) *storage.Engine {
		rng := rand.New(rand.NewSource(seed))
		eng := openTestEngine(t)
		var ops []WriteOp
		for i := 0; i < 300; i++ {
			ops = append(ops, WriteOp{Kind: OpPutRow, RowKey: row(i, ""), Columns: []ColumnValue{{ID: 2, Value: Int64(int64(i))}, {ID: 3, Value: Text("v")}}})
		}
		ops = append(ops, randomOpsOn(rng, 30, func(int) []byte { return row(rng.Intn(300), "") })...)
		between := []WriteOp{
			{Kind: OpPutRow, RowKey: row(50, "x"), Columns: []ColumnValue{{ID: 2, Value: Int64(-1)}}},
			{Kind: OpPutRow, RowKey: row(299, "x"), Columns: []ColumnValue{{ID: 2, Value: Int64(-1)}}},
		}
		if err := WriteIntents(eng, 1, txnB, hlc.FromMicros(9e6, 0), between, 0); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(ops); i += 100 {
			if err := WriteIntents(eng, 1, txnA, hlc.FromMicros(int64(10e6+i), 0), ops[i:min(i+100, len(ops))], uint32(i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := WriteRangeLocks(eng, 1, txnA, hlc.FromMicros(19e6, 0), []storage.Span{lockSpan}, uint32(len(ops))); err != nil {
			t.Fatal(err)
		}
		return eng
	}
	all := storage.Span{Start: []byte{0}, End: []byte{0xff, 0xff}}
	commit := hlc.FromMicros(20e6, 1)
	for _, remove := range []bool{false, true} {
		whole := setup(1)
		var err error
		if remove {
			_, err = RemoveIntents(whole, whole, 1, txnA)
		} else {
			_, err = ApplyIntents(whole, whole, 1, txnA, commit)
		}
		if err != nil {
			t.Fatal(err)
		}
		want := engineKVs(t, whole, all)
		for _, limit := range []int{1, 7, 64, 65, 100, 1000} {
			eng := setup(1)
			steps, n := 0, 0
			var cur StepCursor // carried from step to step, as a tablet does
			for done := false; !done; steps++ {
				if steps > 2000 {
					t.Fatalf("limit %d: no end after %d steps", limit, steps)
				}
				if steps%3 == 1 {
					if err := eng.Flush(); err != nil {
						t.Fatal(err)
					}
				}
				if locks, err := RangeLocksOf(eng, 1, txnA); err != nil || len(locks) != 1 {
					t.Fatalf("limit %d, step %d: range locks %v (%v), want the one until the last step", limit, steps, locks, err)
				}
				b := eng.NewIndexedBatch()
				var m int
				if remove {
					m, done, err = RemoveIntentsPart(b, b, 1, txnA, limit, &cur)
				} else {
					m, done, err = ApplyIntentsPart(b, b, 1, txnA, commit, limit, &cur)
				}
				if err != nil {
					t.Fatal(err)
				}
				if remove && !done && m != limit {
					t.Fatalf("limit %d: a step removed %d", limit, m)
				}
				n += m
				if err := b.Commit(nil); err != nil {
					t.Fatal(err)
				}
			}
			if n == 0 {
				t.Fatalf("limit %d: nothing applied", limit)
			}
			if got := engineKVs(t, eng, all); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("remove=%v limit %d: %d steps leave %d keys, one call %d, or different ones", remove, limit, steps, len(got), len(want))
			}
		}
	}
}

// TestOverlayIntentsAndWindows: on sub-spans of a large transaction's rows
// (next to another transaction's), an overlay of its intents reads as the
// data an apply leaves there, and reading the intents in windows of a few
// rows, each from where the last one stopped, finds exactly the rows one
// ReadIntents finds.
func TestOverlayIntentsAndWindows(t *testing.T) {
	row := func(i int) []byte { return testRowKey(fmt.Sprintf("r%04d", i)) }
	rng := rand.New(rand.NewSource(5))
	txnA, txnB := testTxn("a"), testTxn("b")
	setup := func() *storage.Engine {
		eng := openTestEngine(t)
		base := randomOpsOn(rand.New(rand.NewSource(1)), 50, func(i int) []byte { return row(i * 4) })
		if err := ApplyWriteBatch(eng, hlc.FromMicros(5e6, 0), &WriteBatch{Ops: base}); err != nil {
			t.Fatal(err)
		}
		ops := randomOpsOn(rand.New(rand.NewSource(2)), 300, func(i int) []byte { return row(i % 200) })
		for i := 0; i < len(ops); i += 100 {
			if err := WriteIntents(eng, 1, txnA, hlc.FromMicros(int64(10e6+i), 0), ops[i:i+100], uint32(i)); err != nil {
				t.Fatal(err)
			}
		}
		other := randomOpsOn(rand.New(rand.NewSource(3)), 20, func(i int) []byte { return row(i*10 + 5) })
		if err := WriteIntents(eng, 1, txnB, hlc.FromMicros(9e6, 0), other, 0); err != nil {
			t.Fatal(err)
		}
		return eng
	}
	commit := hlc.FromMicros(20e6, 1)
	applied, eng := setup(), setup()
	if _, err := ApplyIntents(applied, applied, 1, txnA, commit); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ {
		a := rng.Intn(200)
		span := storage.Span{Start: row(a), End: row(a + 1 + rng.Intn(60))}
		if i == 0 {
			span = storage.Span{Start: row(0), End: row(1000)}
		}
		ov := eng.NewIndexedBatch()
		n, err := OverlayIntents(eng, ov, 1, txnA, commit, span)
		if err != nil {
			t.Fatal(err)
		}
		got, want := engineKVs(t, ov, span), engineKVs(t, applied, span)
		_ = ov.Close()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("span %d: the overlay (%d versions) reads %d keys, the apply leaves %d, or different ones", i, n, len(got), len(want))
		}
	}
	whole := storage.Span{Start: row(0), End: row(1000)}
	all, err := ReadIntents(eng, whole, TxnID{})
	if err != nil || len(all) == 0 {
		t.Fatalf("ReadIntents: %d rows (%v)", len(all), err)
	}
	for _, w := range []int{1, 3, 17} {
		var got []RowIntents
		span := whole
		for {
			rows, next, err := ReadIntentsUpTo(eng, span, TxnID{}, w)
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) > w || (next != nil && len(rows) != w) {
				t.Fatalf("window %d: %d rows, next %x", w, len(rows), next)
			}
			got = append(got, rows...)
			if next == nil {
				break
			}
			span.Start = next
		}
		if fmt.Sprint(got) != fmt.Sprint(all) {
			t.Fatalf("window %d: %d rows in windows, %d at once, or different ones", w, len(got), len(all))
		}
	}
}

// A put of a whole row in a transaction is stored as one packed intent (one
// intent key, one index key) that stands for exactly the intents of the
// row level and of each column, and applies to the versions a plain write
// of the op makes; malformed packed payloads are refused.
func TestPackedRowIntent(t *testing.T) {
	eng, plain := openTestEngine(t), openTestEngine(t)
	txn := testTxn("p")
	rk := testRowKey("r")
	op := WriteOp{Kind: OpInsertRow, RowKey: rk, TTL: time.Hour, Columns: []ColumnValue{
		{ID: 3, Value: Text("three")}, {ID: 1, Value: Int64(1)}, {ID: 2, Value: Null()}, {ID: 1, Value: Int64(11)},
	}}
	ht := hlc.FromMicros(5e6, 0)
	if err := WriteIntents(eng, 1, txn, ht, []WriteOp{op}, 7); err != nil {
		t.Fatal(err)
	}
	for _, span := range []storage.Span{storage.IntentSpan(), storage.TxnIndexSpan()} {
		if n, err := countKeys(eng, span); err != nil || n != 1 {
			t.Fatalf("%d keys in %s, want 1 (%v)", n, span, err)
		}
	}
	got, err := IntentsOf(eng, 1, txn)
	if err != nil {
		t.Fatal(err)
	}
	// What the op's intents were, one key each (the last value of column 1).
	want := []string{
		"strong_write " + fmt.Sprintf("%x", rk) + "@" + ht.String() + "#7 marker ttl=1h0m0s",
		"strong_write " + fmt.Sprintf("%x", rk) + "/1@" + ht.String() + "#7 int64:11 ttl=1h0m0s",
		"strong_write " + fmt.Sprintf("%x", rk) + "/2@" + ht.String() + "#7 null ttl=1h0m0s",
		"strong_write " + fmt.Sprintf("%x", rk) + "/3@" + ht.String() + "#7 text:\"three\" ttl=1h0m0s",
	}
	if len(got) != len(want) {
		t.Fatalf("IntentsOf: %v", got)
	}
	for i := range got {
		if got[i].String() != want[i] || got[i].Txn != txn {
			t.Errorf("intent %d: %s, want %s", i, got[i], want[i])
		}
	}
	rows, err := ReadIntents(eng, RowSpan(rk), TxnID{})
	if err != nil || len(rows) != 1 || fmt.Sprint(rows[0].Others) != fmt.Sprint(got) {
		t.Fatalf("ReadIntents: %v (%v), want %v", rows, err, got)
	}
	// Another transaction's column write conflicts with the row's intent.
	if cs, err := Conflicts(eng, testTxn("q"), WriteAccesses([]WriteOp{{Kind: OpPutColumns, RowKey: rk, Columns: []ColumnValue{{ID: 2, Value: Int64(2)}}}})); err != nil || len(cs) == 0 {
		t.Fatalf("conflicts of a column write: %v (%v)", cs, err)
	}
	// A packed op checks its row only, and finds the transactions that its
	// column accesses would: a column write or read takes a weak intent on
	// the row too.
	rk2 := testRowKey("s")
	if err := WriteIntents(eng, 1, testTxn("w"), ht, []WriteOp{{Kind: OpPutColumns, RowKey: rk2, Columns: []ColumnValue{{ID: 2, Value: Int64(2)}}}}, 0); err != nil {
		t.Fatal(err)
	}
	if err := WriteReadIntents(eng, 1, testTxn("r"), ht, []IntentKey{{RowKey: rk2, Column: 3}}, true, 0); err != nil {
		t.Fatal(err)
	}
	ins := []WriteOp{{Kind: OpInsertRow, RowKey: rk2, Columns: []ColumnValue{{ID: 2, Value: Int64(9)}, {ID: 3, Value: Int64(9)}}}}
	holders := func(want []Access) []string {
		cs, err := Conflicts(eng, testTxn("i"), want)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, c := range cs {
			if !slices.Contains(out, c.Txn.String()) {
				out = append(out, c.Txn.String())
			}
		}
		slices.Sort(out)
		return out
	}
	row := WriteAccesses(ins)
	if len(row) != 1 || !bytes.Equal(row[0].Key.RowKey, rk2) || row[0].Key.Column != LivenessColumn || row[0].Type != StrongWrite {
		t.Fatalf("an insert's accesses: %v, want the strong write on its row", row)
	}
	perColumn := append(slices.Clone(row), Access{Key: IntentKey{RowKey: rk2, Column: 2}, Type: StrongWrite},
		Access{Key: IntentKey{RowKey: rk2, Column: 3}, Type: StrongWrite})
	if got, all := holders(row), holders(perColumn); len(got) != 2 || !slices.Equal(got, all) {
		t.Fatalf("an insert's row access conflicts with %v, its accesses per column with %v; want both holders", got, all)
	}
	commit := hlc.FromMicros(9e6, 0)
	if n, err := ApplyIntents(eng, eng, 1, txn, commit); err != nil || n != 4 {
		t.Fatalf("ApplyIntents: %d versions (%v), want 4", n, err)
	}
	wb := &WriteBatch{Ops: make([]WriteOp, 8)} // write id 7, as the intent's
	for i := range wb.Ops[:7] {
		wb.Ops[i] = WriteOp{Kind: OpDeleteColumns, RowKey: testRowKey("other"), Columns: []ColumnValue{{ID: 1}}}
	}
	wb.Ops[7] = op
	wb.Ops[7].Kind = OpPutRow
	if err := ApplyWriteBatch(plain, commit, wb); err != nil {
		t.Fatal(err)
	}
	if got, want := engineKVs(t, eng, RowSpan(rk)), engineKVs(t, plain, RowSpan(rk)); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("applied packed intent:\n got %q\nwant %q", got, want)
	}

	one := AppendValue(nil, Int64(1))
	col := func(id uint32, n int, enc []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, id)
		return append(binary.AppendUvarint(b, uint64(n)), enc...)
	}
	good := append([]byte{ivPacked}, col(2, len(one), one)...)
	if _, err := decodeIntentValue(StrongWrite, append(txn[:], good...)); err != nil {
		t.Fatalf("payload %x: %v", good, err)
	}
	for _, bad := range [][]byte{
		{ivPacked}, // no columns
		append(append([]byte{ivPacked}, col(2, len(one), one)...), col(1, len(one), one)...), // ids not ascending
		append(append([]byte{ivPacked}, col(2, len(one), one)...), col(2, len(one), one)...), // twice
		append([]byte{ivPacked}, col(0, len(one), one)...),                                   // the liveness column
		append([]byte{ivPacked}, col(2, len(one)+1, one)...),                                 // length past the end
		append([]byte{ivPacked}, col(2, 0, nil)...),                                          // empty value
		append([]byte{ivPacked | ivTombstone}, col(2, len(one), one)...),
	} {
		if _, err := decodeIntentValue(StrongWrite, append(txn[:], bad...)); err == nil {
			t.Errorf("payload %x decoded", bad)
		}
	}
}

// TestResolvedIntentsLeaveNoTombstones: intents and their index entries
// written and resolved (applied, removed, rolled back to a savepoint, split
// between tablets) before a flush leave nothing in the sstables the flush
// writes: their single deletions cancel with their one write each. A plain
// deletion leaves a tombstone per key for the levels below to carry.
func TestResolvedIntentsLeaveNoTombstones(t *testing.T) {
	eng := openTestEngine(t)
	resolveRandomTxns(t, eng, 40, func(ops []WriteOp) []WriteOp {
		for i := range ops {
			// One write per column: a column written twice in one
			// statement leaves a tombstone by design (intentWriter.put).
			seen := map[uint32]bool{}
			cols := ops[i].Columns[:0]
			for _, c := range ops[i].Columns {
				if !seen[c.ID] {
					seen[c.ID] = true
					cols = append(cols, c)
				}
			}
			ops[i].Columns = cols
		}
		return ops
	})
	if err := eng.Flush(); err != nil {
		t.Fatal(err)
	}
	tables, err := eng.SSTables()
	if err != nil {
		t.Fatal(err)
	}
	for _, level := range tables {
		for _, tb := range level {
			for _, span := range []storage.Span{storage.IntentSpan(), storage.TxnIndexSpan()} {
				if bytes.Compare(tb.Smallest.UserKey, span.End) < 0 && bytes.Compare(tb.Largest.UserKey, span.Start) >= 0 {
					t.Errorf("sstable %s [%x, %x] holds keys of %s", tb.FileNum, tb.Smallest.UserKey, tb.Largest.UserKey, span)
				}
			}
		}
	}
}

// TestIntentWrittenTwiceInOneCall: a statement that meets a key twice (a
// column it names twice, the row of two columns it reads, a row it locks
// twice) writes the key
// twice in one batch. The resolved intents stay gone through flushes and a
// full compaction: no single deletion meets two writes of its key (which
// would bring the earlier one back).
func TestIntentWrittenTwiceInOneCall(t *testing.T) {
	eng := openTestEngine(t)
	misuses := storage.SingleDeleteMisuses()
	txn := testTxn("dup")
	row := testRowKey("a")
	if err := ApplyWriteBatch(eng, hlc.FromMicros(5e6, 0), &WriteBatch{Ops: []WriteOp{{Kind: OpPutRow, RowKey: row}}}); err != nil {
		t.Fatal(err)
	}
	ops := []WriteOp{{Kind: OpPutColumns, RowKey: row, Columns: []ColumnValue{{ID: 1, Value: Int64(1)}, {ID: 1, Value: Int64(2)}}}}
	if err := WriteIntents(eng, 1, txn, hlc.FromMicros(10e6, 0), ops, 0); err != nil {
		t.Fatal(err)
	}
	reads := []IntentKey{{RowKey: row, Column: 2}, {RowKey: row, Column: 3}, {RowKey: row, Column: 2}}
	if err := WriteReadIntents(eng, 1, txn, hlc.FromMicros(11e6, 0), reads, true, 1); err != nil {
		t.Fatal(err)
	}
	lock := Access{Key: IntentKey{RowKey: row}, Type: WriteLock}
	if err := WriteLockIntents(eng, 1, txn, hlc.FromMicros(11e6+1, 0), []Access{lock, lock}, 2); err != nil {
		t.Fatal(err)
	}
	ins, err := IntentsOf(eng, 1, txn)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range ins {
		if in.Column == 1 && in.Value.Int != 2 {
			t.Fatalf("column 1 written twice in one statement: intent %v, want the later value 2", in)
		}
	}
	// No flush before the apply: a flush would drop the earlier of two
	// writes of a key and hide what a single deletion of it finds.
	if _, err := ApplyIntents(eng, eng, 1, txn, hlc.FromMicros(12e6, 0)); err != nil {
		t.Fatal(err)
	}
	resolveRandomTxns(t, eng, 40, func(ops []WriteOp) []WriteOp { return ops })
	for _, step := range []func() error{eng.Flush, func() error { return eng.Compact(context.Background(), []byte{0}, []byte{0xff}, true) }} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
		for _, span := range []storage.Span{storage.IntentSpan(), storage.TxnIndexSpan()} {
			if n, err := countKeys(eng, span); err != nil || n != 0 {
				t.Fatalf("%s: %d keys left (%v)", span, n, err)
			}
		}
	}
	got, ok, err := GetRow(eng, row, ReadOptions{ReadTime: hlc.FromMicros(20e6, 0), Columns: []uint32{1}})
	if err != nil || !ok || len(got.Columns) != 1 || got.Columns[0].Value.Int != 2 {
		t.Fatalf("row after apply: %v %v %v", got, ok, err)
	}
	if n := storage.SingleDeleteMisuses() - misuses; n != 0 {
		t.Fatalf("%d single deletions met a key written twice", n)
	}
}

// resolveRandomTxns writes n transactions of three statements of random
// ops (through shape) on table 1 and resolves each in one of the ways a
// tablet does, checking that no intent is left.
func resolveRandomTxns(t *testing.T, eng *storage.Engine, n int, shape func([]WriteOp) []WriteOp) {
	t.Helper()
	rng := rand.New(rand.NewSource(7))
	ts := int64(100e6)
	for i := 0; i < n; i++ {
		txn := testTxn(fmt.Sprintf("t%c%c", 'a'+i/26, 'a'+i%26))
		var known KnownIntents
		for s := 0; s < 3; s++ {
			if err := WriteIntentsKnown(eng, 1, txn, hlc.FromMicros(ts, 0), shape(randomOps(rng, 1+rng.Intn(8))), uint32(s*100), &known); err != nil {
				t.Fatal(err)
			}
			ts += 1e3
		}
		commit := hlc.FromMicros(ts, 0)
		var err error
		switch i % 4 {
		case 0:
			_, err = ApplyIntents(eng, eng, 1, txn, commit)
		case 1:
			_, err = ApplyKnownIntents(eng, 1, txn, commit, &known)
		case 2:
			if _, err = RemoveIntentsAfter(eng, eng, 1, txn, 99); err == nil {
				_, err = RemoveIntents(eng, eng, 1, txn)
			}
		case 3:
			// Split the index between two tablets, then resolve each.
			if _, err = SplitTxnIndex(eng, eng, 1, rowKeyIn(1, "m"), 2, 3); err == nil {
				if _, err = ApplyIntents(eng, eng, 2, txn, commit); err == nil {
					_, err = RemoveIntents(eng, eng, 3, txn)
				}
			}
		}
		if err != nil {
			t.Fatalf("txn %d: %v", i, err)
		}
	}
	if c, err := countKeys(eng, storage.IntentSpan()); err != nil || c != 0 {
		t.Fatalf("intents left: %d %v", c, err)
	}
}
