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
