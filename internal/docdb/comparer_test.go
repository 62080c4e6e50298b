package docdb

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/storage"
)

// comparerRowKeys returns row keys of every shape: range and hash keys,
// ascending and descending parts of every type, text with escapes, prefixes
// of one another's components.
func comparerRowKeys() [][]byte {
	vals := []Value{
		Null(), Bool(false), Bool(true), Int16(-3), Int32(7), Int64(-1), Int64(1 << 40),
		Float32(-1.5), Float64(2.25), TimestampMicros(12345),
		Text(""), Text("a"), Text("a\x00"), Text("a\x00b"), Text("ab"), Text("a!"), Text("#K"),
		Bytes([]byte{0, 0xff, 0}), Bytes([]byte{0xff}),
		UUID([16]byte{1, 2, 3}), Decimal("0"), Decimal("-12.5"), Decimal("3e10"), Decimal("0.001"),
	}
	var keys [][]byte
	for _, table := range []uint32{1, 0x10, 0x02100000} {
		keys = append(keys, DocKey{TableID: table}.Encode())
		for i, v := range vals {
			for _, desc := range []bool{false, true} {
				part := KeyPart{Value: v, Desc: desc}
				next := KeyPart{Value: vals[(i+1)%len(vals)], Desc: !desc}
				keys = append(keys,
					DocKey{TableID: table, RangeParts: []KeyPart{part}}.Encode(),
					DocKey{TableID: table, RangeParts: []KeyPart{part, next}}.Encode(),
					DocKey{TableID: table, HasHash: true, Hash: uint16(i * 4099), HashParts: []KeyPart{part}, RangeParts: []KeyPart{next}}.Encode(),
					DocKey{TableID: table, HasHash: true, Hash: 0x2121, HashParts: []KeyPart{part, next}}.Encode(),
				)
			}
		}
	}
	return keys
}

// comparerKeys returns engine keys of every kind, each with the prefix
// Split must give it.
func comparerKeys() (keys, prefixes [][]byte) {
	add := func(k, p []byte) { keys, prefixes = append(keys, k), append(prefixes, p) }
	whole := func(k []byte) { add(k, k) }
	var tx TxnID
	copy(tx[:], "txn")
	versions := []version{{ht: 0, wid: 0}, {ht: 5, wid: 1}, {ht: hlc.Timestamp(1) << 40, wid: 7}, {ht: ^hlc.Timestamp(0), wid: ^uint32(0)}}
	for _, rk := range comparerRowKeys() {
		ip := append([]byte{storage.IntentPrefix}, rk[1:]...)
		add(rk, rk) // a seek key: the row key alone
		for _, v := range versions {
			add(rowVersionKey(nil, rk, v), rk)
			add(columnVersionKey(nil, rk, 3, v), rk)
			add(columnVersionKey(nil, rk, ^uint32(0), v), rk)
			for _, typ := range []IntentType{WeakRead, WeakWrite, StrongRead, StrongWrite} {
				add(appendIntentKey(nil, rk, LivenessColumn, typ, v.ht, v.wid), ip)
				add(appendIntentKey(nil, rk, 2, typ, v.ht, v.wid), ip)
			}
		}
		add(appendColumnSubKey(slices.Clone(rk), 2), rk) // seek keys inside the row
		add(appendIntentSubKey(nil, rk, 2), ip)
		add(ip, ip)
		// Span bounds and other non-row keys of the data and intent spaces.
		whole(rowEnd(rk))
		whole(rk[:len(rk)-1])
		whole(append([]byte{storage.IntentPrefix}, rowEnd(rk)[1:]...))
		whole(txnIndexKey(nil, 9, tx, appendIntentKey(nil, rk, 0, StrongWrite, 5, 1)[1:]))
		whole(appendRangeLockKey(nil, 9, RangeLock{Txn: tx, Span: RowSpan(rk)}))
	}
	whole(nil)
	whole([]byte{storage.DataPrefix})
	whole([]byte{storage.IntentPrefix})
	whole(TableSpan(7).Start)
	whole(TableSpan(7).End)
	whole(HashSpan(7, 0x100, 0x200).Start)
	whole(append(TableSpan(7).Start, 0x99, 0x21)) // bad tag
	whole(append(TableSpan(7).Start, ascTagBase+byte(TypeText), 'a', 0))
	for _, k := range [][]byte{storage.HardStateKey(3), storage.RaftLogKey(3, 17), storage.AppliedStateKey(0x10), storage.DescriptorKey(2)} {
		whole(k)
	}
	return keys, prefixes
}

// checkComparer checks Pebble's Split contract (pebble/internal/base
// comparer.go) on the keys, pairwise. Pebble's CheckComparer cannot be
// used: it also requires that a prefix stripped of leading bytes still
// splits as a prefix (for synthetic prefixes of ingested external files,
// which ShaleDB does not use), and a row key without its key-space byte is
// no row key.
//
// Each key is checked against its 16 neighbours on either side in key
// order, where a broken split would show, and every 50th key against each
// other.
func checkComparer(t *testing.T, c *pebble.Comparer, keys [][]byte) {
	t.Helper()
	keys = slices.Clone(keys)
	slices.SortFunc(keys, c.Compare)
	const window, every = 16, 50
	for i, a := range keys {
		var others [][]byte
		others = append(others, keys[max(0, i-window):min(len(keys), i+window+1)]...)
		if i%every == 0 {
			for j := 0; j < len(keys); j += every {
				others = append(others, keys[j])
			}
		}
		checkComparerKey(t, c, a, others)
	}
}

func checkComparerKey(t *testing.T, c *pebble.Comparer, a []byte, keys [][]byte) {
	t.Helper()
	prefix := func(k []byte) []byte { return k[:c.Split(k)] }
	{
		n := c.Split(a)
		if n < 0 || n > len(a) {
			t.Fatalf("Split(%x) = %d", a, n)
		}
		p := a[:n]
		if c.Split(p) != n {
			t.Fatalf("Split(%x) = %d, but the prefix %x splits at %d", a, n, p, c.Split(p))
		}
		// 1. A prefix sorts before every other key with it.
		if n < len(a) && c.Compare(p, a) >= 0 {
			t.Fatalf("prefix %x does not sort before %x", p, a)
		}
		// Every extension of a key that has a suffix keeps its prefix.
		if n < len(a) {
			for _, ext := range [][]byte{{0}, {0xff}, {'!'}, {'K', 1}} {
				if m := c.Split(append(slices.Clone(a), ext...)); m != n {
					t.Fatalf("Split(%x|%x) = %d, Split(%x) = %d", a, ext, m, a, n)
				}
			}
		}
		// ImmediateSuccessor of the prefix: a prefix key above it.
		succ := c.ImmediateSuccessor(nil, p)
		if c.Split(succ) != len(succ) || c.Compare(p, succ) >= 0 {
			t.Fatalf("ImmediateSuccessor(%x) = %x: splits at %d", p, succ, c.Split(succ))
		}
		for _, b := range keys {
			cmp := c.Compare(a, b)
			if cmp != bytes.Compare(a, b) {
				t.Fatalf("Compare(%x, %x) = %d, not the byte order", a, b, cmp)
			}
			if c.Equal(a, b) != (cmp == 0) {
				t.Fatalf("Equal(%x, %x) disagrees with Compare", a, b)
			}
			pa, pb := prefix(a), prefix(b)
			pcmp := c.Compare(pa, pb)
			// 2. Prefixes order keys before suffixes.
			if cmp <= 0 && pcmp > 0 {
				t.Fatalf("Compare(%x, %x) = %d but their prefixes compare %d", a, b, cmp, pcmp)
			}
			if pcmp < 0 && cmp >= 0 {
				t.Fatalf("prefix of %x sorts below prefix of %x, the keys compare %d", a, b, cmp)
			}
			// 3. Equal prefixes: the suffixes decide, as ComparePointSuffixes says.
			if pcmp == 0 {
				if s := c.ComparePointSuffixes(a[len(pa):], b[len(pb):]); s != cmp {
					t.Fatalf("Compare(%x, %x) = %d, ComparePointSuffixes = %d", a, b, cmp, s)
				}
				if cmp != 0 && c.CompareRangeSuffixes(a[len(pa):], b[len(pb):]) != cmp {
					t.Fatalf("CompareRangeSuffixes disagrees on %x, %x", a, b)
				}
			}
			// No prefix key lies strictly between a prefix and its
			// immediate successor.
			if len(pb) == len(b) && c.Compare(p, b) < 0 && c.Compare(b, succ) < 0 {
				t.Fatalf("prefix key %x lies between %x and its ImmediateSuccessor %x", b, p, succ)
			}
			// AbbreviatedKey is monotone.
			if aa, ab := c.AbbreviatedKey(a), c.AbbreviatedKey(b); (aa < ab && cmp >= 0) || (aa > ab && cmp <= 0) {
				t.Fatalf("AbbreviatedKey disagrees with Compare on %x, %x", a, b)
			}
			if cmp < 0 && len(a) > 0 {
				if sep := c.Separator(nil, a, b); c.Compare(a, sep) > 0 || c.Compare(sep, b) >= 0 {
					t.Fatalf("Separator(%x, %x) = %x", a, b, sep)
				}
			}
		}
		if len(a) > 0 {
			if s := c.Successor(nil, a); c.Compare(a, s) > 0 {
				t.Fatalf("Successor(%x) = %x", a, s)
			}
		}
	}
}

func TestComparerSplit(t *testing.T) {
	keys, prefixes := comparerKeys()
	for i, k := range keys {
		if n := Comparer.Split(k); n != len(prefixes[i]) || !bytes.Equal(k[:n], prefixes[i]) {
			t.Errorf("Split(%x) = %d, want the prefix %x", k, n, prefixes[i])
		}
	}
	// The split agrees with the row parser of the read path.
	for _, rk := range comparerRowKeys() {
		if n, err := rowKeyLen(rk); err != nil || n != len(rk) || rowKeyEnd(rk) != n {
			t.Errorf("row key %x: rowKeyLen %d %v, rowKeyEnd %d", rk, n, err, rowKeyEnd(rk))
		}
	}
}

func TestComparerInvariants(t *testing.T) {
	keys, _ := comparerKeys()
	checkComparer(t, Comparer, keys)
}

// FuzzComparer checks the Split contract on arbitrary keys, seeded with
// DocDB keys (and pairs of them spliced together).
func FuzzComparer(f *testing.F) {
	keys, _ := comparerKeys()
	for i := 0; i < len(keys); i += 7 {
		f.Add(keys[i], keys[(i*31+5)%len(keys)])
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		checkComparer(t, Comparer, [][]byte{a, b, append(slices.Clone(a), b...)})
		// A data key the read path parses splits at its row key.
		if n, err := rowKeyLen(a); err == nil && Comparer.Split(a) != n {
			t.Fatalf("Split(%x) = %d, rowKeyLen = %d", a, Comparer.Split(a), n)
		}
		// keyLen agrees with skipKey wherever skipKey accepts.
		if n, err := skipKey(a); err == nil && keyLen(a) != n {
			t.Fatalf("keyLen(%x) = %d, skipKey = %d", a, keyLen(a), n)
		}
	})
}

// TestPrefixSeeksSeeOneRow: over sstables with bloom filters, a prefix
// seek to any key of a row sees exactly the keys of that row, newest
// first, for data and for intents; rows that are not there are not found.
func TestPrefixSeeksSeeOneRow(t *testing.T) {
	eng := openTestEngine(t)
	var rows [][]byte
	for i := 0; i < 300; i++ {
		rows = append(rows, DocKey{TableID: 4, HasHash: true, Hash: uint16(i % 7),
			HashParts:  []KeyPart{{Value: Text(fmt.Sprintf("k\x00%d", i))}},
			RangeParts: []KeyPart{{Value: Int64(int64(i)), Desc: true}}}.Encode())
	}
	var tx TxnID
	copy(tx[:], "txn")
	for i, rk := range rows {
		if i%3 == 2 {
			continue // absent
		}
		wb := &WriteBatch{Ops: []WriteOp{{Kind: OpPutRow, RowKey: rk, Columns: []ColumnValue{{ID: 1, Value: Int64(int64(i))}}}}}
		for ht := hlc.Timestamp(1); ht <= 2; ht++ {
			if err := ApplyWriteBatch(eng, ht<<16, wb); err != nil {
				t.Fatal(err)
			}
		}
		if i%3 == 1 {
			// A column write: two intent keys (a put of the whole row
			// would be one packed intent).
			upd := []WriteOp{wb.Ops[0]}
			upd[0].Kind = OpPutColumns
			if err := WriteIntents(eng, 1, tx, 3<<16, upd, uint32(i)); err != nil {
				t.Fatal(err)
			}
		}
		if i%50 == 49 {
			if err := eng.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	it, err := eng.NewIter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for i, rk := range rows {
		var got []string
		for valid := it.SeekPrefixGE(rk); valid; valid = it.Next() {
			got = append(got, fmt.Sprintf("%x", it.Key()[len(rk):]))
			if !bytes.HasPrefix(it.Key(), rk) {
				t.Fatalf("row %d: prefix seek reached %x", i, it.Key())
			}
		}
		want := 0
		if i%3 != 2 {
			want = 4 // two versions of the row level and of column 1
		}
		if len(got) != want {
			t.Fatalf("row %d: %d keys %v, want %d", i, len(got), got, want)
		}
		ip := append([]byte{storage.IntentPrefix}, rk[1:]...)
		n := 0
		for valid := it.SeekPrefixGE(ip); valid; valid = it.Next() {
			if !bytes.HasPrefix(it.Key(), ip) {
				t.Fatalf("row %d: intent prefix seek reached %x", i, it.Key())
			}
			n++
		}
		if want := map[bool]int{true: 2, false: 0}[i%3 == 1]; n != want { // a weak write on the row level, a strong one on column 1
			t.Fatalf("row %d: %d intents, want %d", i, n, want)
		}
		row, found, err := GetRow(eng, rk, ReadOptions{ReadTime: 5 << 16})
		if err != nil || found != (i%3 != 2) || (found && row.Columns[0].Value.Int != int64(i)) {
			t.Fatalf("row %d: GetRow %v %v %v", i, row, found, err)
		}
		ri, err := ReadIntents(eng, RowSpan(rk), TxnID{})
		if err != nil || len(ri) != map[bool]int{true: 1, false: 0}[i%3 == 1] {
			t.Fatalf("row %d: ReadIntents %v %v", i, ri, err)
		}
	}
}

// TestEngineRefusesOtherComparer: Pebble records the comparer's name, so
// an engine written with Pebble's default comparer does not open as a
// DocDB engine (and the other way round).
func TestEngineRefusesOtherComparer(t *testing.T) {
	dir := t.TempDir()
	eng, err := storage.Open(dir, storage.Options{Comparer: pebble.DefaultComparer})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Set(storage.HardStateKey(1), []byte("x"), storage.Sync); err != nil {
		t.Fatal(err)
	}
	if err := eng.Close(); err != nil {
		t.Fatal(err)
	}
	if eng, err := OpenEngine(dir, storage.Options{}); err == nil {
		_ = eng.Close()
		t.Fatal("an engine of the default comparer opened with the DocDB comparer")
	} else if !strings.Contains(err.Error(), Comparer.Name) {
		t.Fatalf("error does not name the comparer: %v", err)
	}
}

func TestKeyLenMatchesSkipKey(t *testing.T) {
	for _, rk := range comparerRowKeys() {
		for i := tablePrefixLen; i < len(rk)-1; i++ {
			n, err := skipKey(rk[i:])
			if m := keyLen(rk[i:]); err == nil && m != n {
				t.Fatalf("keyLen(%x) = %d, skipKey = %d", rk[i:], m, n)
			}
		}
	}
	if keyLen(binary.BigEndian.AppendUint16([]byte{ascTagBase + byte(TypeInt32)}, 1)) != -1 {
		t.Fatal("keyLen accepted a truncated int32")
	}
}
