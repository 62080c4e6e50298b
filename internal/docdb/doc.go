// Package docdb stores rows as documents in the node's Pebble engine, with
// multi-version concurrency control on hybrid time. It knows nothing of SQL,
// CQL or Raft: the tablet layer hands it replicated WriteBatches to apply at
// a hybrid time, and readers ask for the rows visible at a read time.
//
// # Data model
//
// A row is a document: a liveness marker plus one sub-key per column, each
// versioned independently, so an UPDATE of one column writes one small key.
// Engine keys (see dockey.go and version.go) are
//
//	row key                             DataPrefix | table | [G hash16 hash parts… !] range parts… !
//	row-level version (marker, delete)  row key | '#' | ^hybrid time | ^write id
//	column version                      row key | 'K' | column id | '#' | ^hybrid time | ^write id
//
// Primary-key components use an order-preserving, self-delimiting encoding
// (encoding.go), so a table, a hash range of a table, or any range of
// primary keys is one contiguous engine span, scanned with one iterator.
// Versions of a key sort newest first.
//
// # Visibility
//
// A read at time T sees, per key, the newest version at or below T (ties at
// equal hybrid time go to the later op of the batch). Tombstones and values
// whose TTL expired at or before T hide their key. A row tombstone at version
// D additionally hides every column version at or below D. A row exists if
// its marker or any of its columns is visible (Cassandra semantics), so a row
// created by UPDATE alone disappears when its last column is deleted.
//
// GC (gc.go) removes versions that no read at or after a horizon can see.
//
// # Usage
//
//	key := docdb.DocKey{TableID: 7, RangeParts: []docdb.KeyPart{{Value: docdb.Int64(42)}}}.Encode()
//	b := &docdb.WriteBatch{Ops: []docdb.WriteOp{{
//		Kind:    docdb.OpPutRow,
//		RowKey:  key,
//		Columns: []docdb.ColumnValue{{ID: 1, Value: docdb.Text("hello")}},
//	}}}
//	data := b.Marshal() // replicate data; on apply:
//	var applied docdb.WriteBatch
//	_ = applied.Unmarshal(data)
//	batch := engine.NewBatch()
//	_ = docdb.ApplyWriteBatch(batch, ht, &applied)
//	_ = batch.Commit(storage.NoSync)
//
//	row, ok, err := docdb.GetRow(engine, key, docdb.ReadOptions{ReadTime: clock.Now()})
//	rows, resume, err := docdb.Scan(engine, docdb.ScanOptions{
//		ReadOptions: docdb.ReadOptions{ReadTime: clock.Now()},
//		Span:        docdb.TableSpan(7),
//		Limit:       100,
//	})
//	// next page: Span = docdb.ResumeSpan(span, resume, reverse)
//
//	n, err := docdb.GC(engine.DB, docdb.TableSpan(7), clock.Now().Add(-docdb.DefaultRetention))
package docdb
