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
// # Transactions: intents
//
// Distributed transactions (YugabyteDB style) write provisional records,
// intents, instead of versions; intents.go has the encoding and operations.
// An intent is a lock of one type on one key (the row level of a row, or one
// column), and a strong write intent also carries the provisional value:
//
//	intent key    IntentPrefix | row key without DataPrefix | ['K' column id] | type | ^hybrid time | ^write id
//	intent value  txn id (16) | strong write: flags | [TTL ns] | [value encoding unless tombstone]
//	packed        txn id (16) | flags (packed) | [TTL ns] | (column id (4 BE) | uvarint length | value encoding)…
//	txn index     TxnIndexPrefix | tablet id (8 BE) | txn id | intent key without IntentPrefix  (empty value)
//
// A put or insert of a whole row is stored as one packed intent at the row
// level: the strong write of its marker and the values of its columns (in
// ascending id order), all with the op's write id and TTL. It stands for
// exactly the intents the op would otherwise store one by one (a strong
// write on the row and on each column), and everything that reads intents
// back expands it (IntentsOf, ReadIntents, the apply); the row-level strong
// write conflicts with any access to the row or its columns, so conflict
// checks need no expansion. A bulk load's transaction so writes, indexes,
// applies and deletes one intent per row instead of one per column.
//
// Types: a write to a column takes a strong write on the column and a weak
// write on its row; a write of the row level (INSERT's liveness marker, a
// row delete) a strong write on the row; a serializable read a strong read
// on what it read and a weak read on the row of a column it read. Two intents
// of different transactions on the same key conflict iff one is strong and
// one is a write (IntentsConflict). The write id (the order of the write in
// its transaction) is in the key so that two writes of one transaction to one
// key never collide, and it becomes the version's write id when the intent
// is applied. The TTL is stored, not an expiry: the expiry counts from the
// commit time, unknown until then.
//
// The reverse index finds a transaction's intents in one tablet (apply,
// abort, savepoint rollback) with one prefix scan. It is keyed by tablet
// (Raft group) id, not by table: the node's engine is shared by every
// tablet, and several tablets of one table routinely live on one node
// (CreateTable places two per tserver, and split children stay on their
// parent's nodes). Snapshots and replica removal work on spans, clearing
// each span with a range deletion; a per-table index span would wipe or ship
// the sibling tablets' entries, and a table | txn layout has no contiguous
// span per tablet at all. TxnIndexSpan(tablet) is exactly one tablet's index,
// so a snapshot copies, and a removal deletes, the tablet's data span,
// IntentSpanOf(data span) and TxnIndexSpan(tablet id) with nothing else in
// them. Scoping every by-transaction operation to one tablet also keeps
// replicas identical: applying a transaction in one tablet's Raft entry must
// not touch the intents of another tablet that happens to share the engine.
// A split moves the parent's index to the children (SplitTxnIndex, in the
// batch applying the split); the intents themselves do not move.
//
// Reading: GetRow and Scan see applied versions only. The tablet reads
// ReadIntents for the same rows and combines, per key (the row level and each
// column), in this order:
//   - committed data from GetRow/Scan at the read time;
//   - other transactions' intents (RowIntents.Others): ask the status record
//     of each. ABORTED or PENDING with a commit time that can only be later
//     than the read time: ignore. COMMITTED at c <= read time but not yet
//     applied: the intent counts as a version at (c, write id), competing
//     with the committed data like any version (newest wins; a row-level
//     tombstone hides column versions at or below it; TTL counts from c).
//     COMMITTED at c > read time: ignore. PENDING whose commit time might
//     still land at or below the read time: wait, or restart the read;
//   - the reader's own intents (RowIntents.Own) last, overriding everything:
//     per key the highest write id wins, and an own row-level tombstone
//     hides committed columns and own column intents with lower write ids;
//     an own row-level live intent is the liveness marker.
//
// Row existence follows the usual rule on the combined result (marker or any
// column visible). GetRow's Row does not say whether the marker was visible,
// so the combination needs a marker-aware read: that comes with the
// intent-aware reader once read.go settles.
//
// Conflicts is checked by the tablet under its write latches before it
// proposes WriteIntents/WriteReadIntents; ApplyIntents (commit),
// RemoveIntents (abort) and RemoveIntentsAfter (savepoint rollback) are Raft
// commands of the tablet like any write. GC never looks at intents.
//
// Range locks (rangelocks.go) keep phantoms out of SERIALIZABLE scans: a
// strong read on every key of a span of row keys, in their own key space by
// tablet and transaction,
//
//	range lock    RangeLockPrefix | tablet id (8 BE) | txn id | write id (4 BE) | hybrid time (8 BE) | span start  ->  strong_read | span end
//
// A write into the span conflicts with it (RangeLockConflicts), taking one
// conflicts with write intents inside (RangeConflicts). ApplyIntents,
// RemoveIntents and RemoveIntentsAfter release them with the intents; a
// split divides them between the children (SplitRangeLocks); a snapshot
// carries RangeLockSpan(tablet id) next to the tablet's other spans.
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
