package docdb

import (
	"fmt"
	"testing"

	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/storage"
)

// BenchmarkGetRow: point reads of one-column rows (a liveness marker and a
// 64-byte value each) out of 100,000 rows in a 64 MiB memtable.
func BenchmarkGetRow(b *testing.B) {
	eng, err := storage.Open(b.TempDir(), storage.Options{InMemory: true, CacheSize: 8 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = eng.Close() }()
	const rows = 100_000
	keys := make([][]byte, rows)
	val := Bytes(make([]byte, 64))
	for i := 0; i < rows; i += 1000 {
		wb := &WriteBatch{}
		for k := i; k < i+1000; k++ {
			keys[k] = testRowKey(fmt.Sprintf("key:%d", k))
			wb.Ops = append(wb.Ops, WriteOp{Kind: OpPutRow, RowKey: keys[k], Columns: []ColumnValue{{ID: 2, Value: val}}})
		}
		if err := ApplyWriteBatch(eng.DB, hlc.Timestamp(uint64(i+1)<<16), wb); err != nil {
			b.Fatal(err)
		}
	}
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
	eng, err := storage.Open(b.TempDir(), storage.Options{InMemory: true, CacheSize: 8 << 20})
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
		eng, err := storage.Open(b.TempDir(), storage.Options{CacheSize: 32 << 20})
		if err != nil {
			b.Fatal(err)
		}
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
