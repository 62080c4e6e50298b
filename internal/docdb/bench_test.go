package docdb

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/storage"
)

// BenchmarkGetRow: point reads of one-column rows (a liveness marker and a
// 64-byte value each) out of 100,000 rows in a 64 MiB memtable.
func BenchmarkGetRow(b *testing.B) {
	eng, err := OpenEngine(b.TempDir(), storage.Options{InMemory: true, CacheSize: 8 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = eng.Close() }()
	const rows = 100_000
	keys := loadOneColumnRows(b, eng, rows, 64, func(k int) int { return k })
	opts := ReadOptions{ReadTime: hlc.Timestamp(uint64(rows+1) << 16)}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, found, err := GetRow(eng.DB, keys[(i*7919)%rows], opts); err != nil || !found {
			b.Fatal("missing row", err)
		}
	}
}

// BenchmarkConflictsAfterApplies: the conflict check of a transactional
// write of a new row, in a key space left full of deleted intents by
// 20,000 applied one-row transactions (as on a tablet after a run of
// transactions).
func BenchmarkConflictsAfterApplies(b *testing.B) {
	eng, err := OpenEngine(b.TempDir(), storage.Options{InMemory: true, CacheSize: 8 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = eng.Close() }()
	const txns = 20_000
	val := Bytes(make([]byte, 16))
	for i := 0; i < txns; i++ {
		var txn TxnID
		copy(txn[:], fmt.Sprintf("txn%d", i))
		ops := []WriteOp{{Kind: OpPutRow, RowKey: testRowKey(fmt.Sprintf("key:%06d", i)), Columns: []ColumnValue{{ID: 2, Value: val}}}}
		batch := eng.NewIndexedBatch()
		if err := WriteIntents(batch, 1, txn, hlc.Timestamp(uint64(i+1)<<16), ops, 0); err != nil {
			b.Fatal(err)
		}
		if _, err := ApplyIntents(batch, batch, 1, txn, hlc.Timestamp(uint64(i+1)<<16)); err != nil {
			b.Fatal(err)
		}
		if err := batch.Commit(nil); err != nil {
			b.Fatal(err)
		}
	}
	var me TxnID
	copy(me[:], "me")
	// A row that sorts before every deleted intent.
	want := WriteAccesses([]WriteOp{{Kind: OpPutRow, RowKey: testRowKey("a"), Columns: []ColumnValue{{ID: 2, Value: val}}}})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if cs, err := Conflicts(eng.DB, me, want); err != nil || len(cs) != 0 {
			b.Fatal(cs, err)
		}
	}
}

// BenchmarkApplyIntents100k: the apply of a committed 100,000-row
// transaction on one tablet (pgbench -i's load at scale 1, as one
// transaction): intents of rows with a liveness marker and three columns,
// written in batches of 1,000 rows as the participant's Raft log would and
// flushed to sstables, then ApplyIntents into one indexed batch as
// cmdApplyTxn does, and the batch committed.
func BenchmarkApplyIntents100k(b *testing.B) {
	const rows = 100_000
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		eng, err := OpenEngine(b.TempDir(), storage.Options{CacheSize: 32 << 20})
		if err != nil {
			b.Fatal(err)
		}
		txn := writeLoadIntents(b, eng, rows)
		if err := eng.Flush(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		batch := eng.NewIndexedBatch()
		n, err := ApplyIntents(batch, batch, 1, txn, hlc.Timestamp(uint64(rows+1)<<16))
		if err != nil || n != rows*4 {
			b.Fatalf("applied %d versions, err %v", n, err)
		}
		if err := batch.Commit(nil); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		left, err := IntentsOf(eng, 1, txn)
		if err != nil || len(left) != 0 {
			b.Fatalf("%d intents left, err %v", len(left), err)
		}
		_ = eng.Close()
	}
}

// writeLoadIntents writes the intents of a load of rows pgbench_accounts
// rows (a marker and three columns) in one transaction, in batches of
// 1,000 rows as the participant's Raft log would, and returns the
// transaction.
func writeLoadIntents(b *testing.B, eng *storage.Engine, rows int) TxnID {
	var txn TxnID
	copy(txn[:], "a big transaction")
	filler := Text(fmt.Sprintf("%84s", ""))
	for r := 0; r < rows; r += 1000 {
		wb := eng.NewBatch()
		var ops []WriteOp
		for k := r; k < r+1000; k++ {
			ops = append(ops, WriteOp{Kind: OpInsertRow, RowKey: testRowKey(fmt.Sprintf("aid:%07d", k)),
				Columns: []ColumnValue{{ID: 2, Value: Int64(1)}, {ID: 3, Value: Int64(0)}, {ID: 4, Value: filler}}})
		}
		if err := WriteIntents(wb, 1, txn, hlc.Timestamp(uint64(r+1)<<16), ops, uint32(r)); err != nil {
			b.Fatal(err)
		}
		if err := wb.Commit(nil); err != nil {
			b.Fatal(err)
		}
	}
	return txn
}

// lsmFixture is an engine whose rows and intents live in sstables on two
// levels, for the point lookups of BenchmarkLookupsOnDisk:
//
//   - committed rows (a liveness marker and two columns) at even i, and the
//     intents of a COPY transaction (insert of two columns) at i ≡ 1 mod 8,
//     written in random order in four flushes and compacted into the
//     bottom level;
//   - then, in three flushes to overlapping L0 files (automatic compactions are off,
//     so the shape stays): an update of one column of every fourth row, and
//     the COPY's intents at i ≡ 5 mod 8;
//   - rows at i ≡ 3 mod 4 exist nowhere: the fresh rows of the COPY.
type lsmFixture struct {
	eng     *storage.Engine
	txn     TxnID
	now     hlc.Timestamp
	present [][]byte // committed rows
	fresh   [][]byte // rows with no key at all, inside the key range
}

func lsmKey(i int) []byte { return testRowKey(fmt.Sprintf("aid:%08d", i)) }

func newLSMFixture(b *testing.B, rows int) *lsmFixture {
	b.Helper()
	// 32 MiB of block cache: less than the tables, uncompressed.
	eng, err := OpenEngine(b.TempDir(), storage.Options{CacheSize: 32 << 20, DisableAutomaticCompactions: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = eng.Close() })
	f := &lsmFixture{eng: eng}
	copy(f.txn[:], "the COPY")
	// A fixed permutation spreads every batch over the whole key range, so
	// every sstable of a flush overlaps every lookup.
	perm := func(n, k int) int { return int((uint64(k)*2654435761 + 12345) % uint64(n)) }
	filler := Text(fmt.Sprintf("%84s", ""))
	ht := hlc.Timestamp(1 << 16)
	write := func(n, flushes int, each func(wb *WriteBatch, k int)) {
		next := n / flushes
		for k := 0; k < n; {
			wb := &WriteBatch{}
			for end := min(k+1000, n); k < end; k++ {
				each(wb, perm(n, k))
			}
			ht += 1 << 16
			if len(wb.Ops) > 0 {
				if err := ApplyWriteBatch(eng.DB, ht, wb); err != nil {
					b.Fatal(err)
				}
			}
			if k >= next || k == n {
				if err := eng.Flush(); err != nil {
					b.Fatal(err)
				}
				next += n / flushes
			}
		}
	}
	f.present = make([][]byte, rows)
	for k := range f.present {
		f.present[k] = lsmKey(2 * k)
	}
	wid := uint32(0)
	intent := func(k, mod8 int) {
		if i := 2*k + 1; i%8 == mod8 {
			ops := []WriteOp{{Kind: OpInsertRow, RowKey: lsmKey(i), Columns: []ColumnValue{{ID: 2, Value: Int64(int64(i))}, {ID: 3, Value: filler}}}}
			if err := WriteIntents(eng.DB, 1, f.txn, ht, ops, wid); err != nil {
				b.Fatal(err)
			}
			wid += 3
		}
	}
	// Rows and half of the intents, into the bottom level.
	write(rows, 4, func(wb *WriteBatch, k int) {
		wb.Ops = append(wb.Ops, WriteOp{Kind: OpPutRow, RowKey: f.present[k],
			Columns: []ColumnValue{{ID: 2, Value: Int64(int64(k))}, {ID: 3, Value: filler}}})
		intent(k, 1)
	})
	span := lookupSpan()
	if err := eng.Compact(context.Background(), span.Start, span.End, false); err != nil {
		b.Fatal(err)
	}
	// Updates and the other intents, three flushes into L0.
	write(rows, 3, func(wb *WriteBatch, k int) {
		if k%4 == 0 {
			wb.Ops = append(wb.Ops, WriteOp{Kind: OpPutColumns, RowKey: f.present[k], Columns: []ColumnValue{{ID: 2, Value: Int64(-1)}}})
		}
		intent(k, 5)
	})
	for i := 3; i < 2*rows; i += 4 {
		f.fresh = append(f.fresh, lsmKey(i))
	}
	f.now = ht + 1<<16
	return f
}

// lookupSpan covers the intent and data key spaces.
func lookupSpan() storage.Span {
	return storage.Span{Start: []byte{storage.IntentPrefix}, End: []byte{storage.DataPrefix + 1}}
}

// BenchmarkLookupsOnDisk: point lookups of one row each against 200,000
// committed rows and 50,000 rows of intents in sstables on two levels (see
// lsmFixture): GetRow of present and absent rows, and the checks the tablet
// runs before it writes a fresh row of a COPY: Conflicts (intents on the
// row), NewestVersion (committed versions of the row) and CheckInserts (the
// duplicate check, with the transaction's own intents).
func BenchmarkLookupsOnDisk(b *testing.B) {
	f := newLSMFixture(b, 200_000)
	logShape := func(when string) {
		m := f.eng.Metrics()
		for l := range m.Levels {
			if n := m.Levels[l].TablesCount; n > 0 {
				b.Logf("%s: L%d: %d tables, %d KiB", when, l, n, m.Levels[l].TablesSize>>10)
			}
		}
		b.Logf("%s: block cache %d KiB, %d hits, %d misses", when, m.BlockCache.Size>>10, m.BlockCache.Hits, m.BlockCache.Misses)
		b.Logf("%s: %d compactions (%d default, %d read, %d move, %d elision, %d tombstone density)", when, m.Compact.Count, m.Compact.DefaultCount, m.Compact.ReadCount, m.Compact.MoveCount, m.Compact.ElisionOnlyCount, m.Compact.TombstoneDensityCount)
	}
	logShape("before")
	defer logShape("after")
	read := ReadOptions{ReadTime: f.now}
	filler := Text(fmt.Sprintf("%84s", ""))
	freshOps := func(i int) []WriteOp {
		return []WriteOp{{Kind: OpInsertRow, RowKey: f.fresh[(i*7919)%len(f.fresh)],
			Columns: []ColumnValue{{ID: 2, Value: Int64(1)}, {ID: 3, Value: filler}}}}
	}
	b.Run("GetRow/present", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, found, err := GetRow(f.eng.DB, f.present[(i*7919)%len(f.present)], read); err != nil || !found {
				b.Fatal("missing row", err)
			}
		}
	})
	b.Run("GetRow/absent", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, found, err := GetRow(f.eng.DB, f.fresh[(i*7919)%len(f.fresh)], read); err != nil || found {
				b.Fatal("found an absent row", err)
			}
		}
	})
	b.Run("Conflicts/fresh", func(b *testing.B) {
		var other TxnID
		copy(other[:], "another")
		for i := 0; i < b.N; i++ {
			if cs, err := Conflicts(f.eng.DB, other, WriteAccesses(freshOps(i))); err != nil || len(cs) != 0 {
				b.Fatal(cs, err)
			}
		}
	})
	b.Run("NewestVersion/fresh", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if ht, err := NewestVersion(f.eng.DB, f.fresh[(i*7919)%len(f.fresh)]); err != nil || ht != 0 {
				b.Fatal(ht, err)
			}
		}
	})
	b.Run("NewestVersion/present", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if ht, err := NewestVersion(f.eng.DB, f.present[(i*7919)%len(f.present)]); err != nil || ht == 0 {
				b.Fatal(ht, err)
			}
		}
	})
	b.Run("CheckInserts/fresh", func(b *testing.B) {
		c := InsertCheck{ReadTime: f.now, Txn: f.txn, OwnBefore: ^uint32(0)}
		for i := 0; i < b.N; i++ {
			if err := CheckInserts(f.eng.DB, freshOps(i), c); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkApplyIntentsStepped: the stepped apply of a committed
// 200,000-row transaction on one tablet, as the tablet runs it after a bulk
// load: intents written in batches of 1,000 rows into the memtable, then
// applied in steps of 4,096 intents, each step an indexed batch committed
// before the next (one Raft entry each). It reports the time of the first
// and of the last step: with the walk restarting at the txn's first index
// entry, the last step stepped over every index entry the earlier steps
// had deleted, and the apply was quadratic (sub-benchmark "restart": no
// StepCursor).
func BenchmarkApplyIntentsStepped(b *testing.B) {
	b.Run("cursor", func(b *testing.B) { benchmarkApplyIntentsStepped(b, true) })
	b.Run("restart", func(b *testing.B) { benchmarkApplyIntentsStepped(b, false) })
}

func benchmarkApplyIntentsStepped(b *testing.B, withCursor bool) {
	const rows, step = 200_000, 4096
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		eng, err := OpenEngine(b.TempDir(), storage.Options{CacheSize: 32 << 20, MemTableSize: 256 << 20})
		if err != nil {
			b.Fatal(err)
		}
		txn := writeLoadIntents(b, eng, rows)
		b.StartTimer()
		var cur *StepCursor
		if withCursor {
			cur = &StepCursor{}
		}
		var first, last time.Duration
		for done, steps := false, 0; !done; steps++ {
			start := time.Now()
			batch := eng.NewIndexedBatch()
			var err error
			if _, done, err = ApplyIntentsPart(batch, batch, 1, txn, hlc.Timestamp(uint64(rows+1)<<16), step, cur); err != nil {
				b.Fatal(err)
			}
			if err := batch.Commit(nil); err != nil {
				b.Fatal(err)
			}
			if steps == 0 {
				first = time.Since(start)
			}
			last = time.Since(start)
		}
		b.StopTimer()
		b.ReportMetric(float64(first.Microseconds()), "first-step-us")
		b.ReportMetric(float64(last.Microseconds()), "last-step-us")
		left, err := IntentsOf(eng, 1, txn)
		if err != nil || len(left) != 0 {
			b.Fatalf("%d intents left, err %v", len(left), err)
		}
		_ = eng.Close()
	}
}

// BenchmarkSmallTxnWriteApply: the intents of four one-column updates of
// existing rows, each its own transaction, written in one batch as a
// participant's Raft cycle does, then applied from what the writes recorded
// (ApplyKnownIntents) in one more batch, over a memtable already holding
// 300,000 rows: what the engine does for TPC-B's UPDATEs, mostly memtable
// inserts (cache misses in a large skiplist). Reported per transaction;
// run it with a fixed -benchtime (100000x) so that the memtable's size is
// the same from run to run.
func BenchmarkSmallTxnWriteApply(b *testing.B) {
	// A memtable large enough not to rotate during the run.
	eng, err := OpenEngine(b.TempDir(), storage.Options{InMemory: true, CacheSize: 8 << 20, MemTableSize: 512 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = eng.Close() }()
	const rows = 300_000
	keys := loadOneColumnRows(b, eng, rows, 16, func(k int) int { return k * 7919 % rows })
	val := Bytes(make([]byte, 16))
	ht := uint64(rows + 1)
	const perBatch = 4
	b.ResetTimer()
	for i := 0; i < b.N; i += perBatch {
		var txns [perBatch]TxnID
		var known [perBatch]KnownIntents
		wb := eng.NewIndexedBatch()
		for t := range txns {
			copy(txns[t][:], fmt.Sprintf("txn%d", i+t))
			ops := []WriteOp{{Kind: OpPutColumns, RowKey: keys[(i+t)*104729%rows], Columns: []ColumnValue{{ID: 2, Value: val}}}}
			ht++
			if err := WriteIntentsKnown(wb, 1, txns[t], hlc.Timestamp(ht<<16), ops, 0, &known[t]); err != nil {
				b.Fatal(err)
			}
		}
		if err := wb.Commit(nil); err != nil {
			b.Fatal(err)
		}
		ab := eng.NewIndexedBatch()
		ht++
		for t := range txns {
			if n, err := ApplyKnownIntents(ab, 1, txns[t], hlc.Timestamp(ht<<16), &known[t]); err != nil || n != 1 {
				b.Fatalf("applied %d versions, err %v", n, err)
			}
		}
		if err := ab.Commit(nil); err != nil {
			b.Fatal(err)
		}
	}
}

// loadOneColumnRows writes rows rows of a liveness marker and one value of
// size bytes, 1,000 to a batch, and returns their keys: row k is named
// "key:<name(k)>".
func loadOneColumnRows(b *testing.B, eng *storage.Engine, rows, size int, name func(int) int) [][]byte {
	keys := make([][]byte, rows)
	val := Bytes(make([]byte, size))
	for i := 0; i < rows; i += 1000 {
		wb := &WriteBatch{}
		for k := i; k < min(i+1000, rows); k++ {
			keys[k] = testRowKey(fmt.Sprintf("key:%d", name(k)))
			wb.Ops = append(wb.Ops, WriteOp{Kind: OpPutRow, RowKey: keys[k], Columns: []ColumnValue{{ID: 2, Value: val}}})
		}
		if err := ApplyWriteBatch(eng.DB, hlc.Timestamp(uint64(i+1)<<16), wb); err != nil {
			b.Fatal(err)
		}
	}
	return keys
}
