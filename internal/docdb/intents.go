package docdb

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/storage"
)

// Provisional records ("intents") of distributed transactions, YugabyteDB
// style. See doc.go ("Transactions: intents") for the model; this file has
// the encoding and the operations the tablet layer drives through Raft.
//
// Intent key (intents key space):
//
//	IntentPrefix | row key without its DataPrefix | ['K' | column id (4 BE)] | type (1) | ^hybrid time (8 BE) | ^write id (4 BE)
//
// Intent value:
//
//	txn id (16) | payload
//	payload, strong write intents: flags (1) | [TTL ns (8 BE) if flagged] | [value encoding unless tombstone]
//	payload, other intents:        empty
//
// Reverse index (TxnIndexPrefix key space), one empty-valued key per intent:
//
//	TxnIndexPrefix | tablet id (8 BE) | txn id (16) | intent key without its IntentPrefix
//
// Range read locks of serializable scans have their own key space
// (rangelocks.go); the by-transaction operations here handle them too.

// TxnID identifies a distributed transaction: a UUID. The zero TxnID is no
// transaction (a reader outside any transaction passes it to ReadIntents).
type TxnID [16]byte

// String formats the id as a UUID.
func (t TxnID) String() string {
	u := hex.EncodeToString(t[:])
	return u[0:8] + "-" + u[8:12] + "-" + u[12:16] + "-" + u[16:20] + "-" + u[20:]
}

// IsZero reports whether t is the zero TxnID.
func (t TxnID) IsZero() bool { return t == TxnID{} }

// IntentType is the kind of lock an intent takes on its key. The values are
// bits, as in YugabyteDB, so that a set of types fits a byte; every stored
// intent has exactly one.
type IntentType uint8

// Intent types. A write to a column takes a strong write intent on the
// column and a weak write intent on its row; a write of the row level (the
// liveness marker of an INSERT, a row tombstone) takes a strong write intent
// on the row. A serializable read takes a strong read intent on what it read
// and a weak read intent on the row of a column it read.
//
// WriteLock is a row lock that conflicts as a strong write does but carries
// no value (SELECT ... FOR UPDATE): unlike a strong write it is no
// provisional row level, so reads, inserts' duplicate checks and the apply
// of a commit pass over it as over the other locks.
const (
	WeakRead IntentType = 1 << iota
	WeakWrite
	StrongRead
	StrongWrite
	WriteLock
)

func (t IntentType) valid() bool {
	return t == WeakRead || t == WeakWrite || t == StrongRead || t == StrongWrite || t == WriteLock
}

func (t IntentType) strong() bool { return t&(StrongRead|StrongWrite|WriteLock) != 0 }
func (t IntentType) write() bool  { return t&(WeakWrite|StrongWrite|WriteLock) != 0 }

// String returns weak_read, weak_write, strong_read, strong_write or
// write_lock.
func (t IntentType) String() string {
	switch t {
	case WeakRead:
		return "weak_read"
	case WeakWrite:
		return "weak_write"
	case StrongRead:
		return "strong_read"
	case StrongWrite:
		return "strong_write"
	case WriteLock:
		return "write_lock"
	}
	return fmt.Sprintf("intent_type(%d)", uint8(t))
}

// IntentsConflict reports whether intents of types a and b of two different
// transactions on the same key conflict: at least one is strong, and at
// least one is a write. So a strong write conflicts with everything, a
// strong read with writes, weak intents only with strong ones, and reads
// never with reads (serializable: a write conflicts with a read).
func IntentsConflict(a, b IntentType) bool {
	return (a.strong() || b.strong()) && (a.write() || b.write())
}

// IntentKey names what an intent is on: the row level of a row (Column 0,
// the LivenessColumn, which is where the marker and row tombstones live) or
// one column of it.
type IntentKey struct {
	RowKey []byte
	Column uint32
}

func (k IntentKey) String() string {
	if k.Column == LivenessColumn {
		return fmt.Sprintf("%x", k.RowKey)
	}
	return fmt.Sprintf("%x/%d", k.RowKey, k.Column)
}

// Access is an intent a transaction wants: see WriteAccesses and
// ReadAccesses for the accesses WriteIntents and WriteReadIntents take.
type Access struct {
	Key  IntentKey
	Type IntentType
}

// Conflict is an intent of another transaction that conflicts with a wanted
// access.
type Conflict struct {
	Txn    TxnID
	Key    IntentKey
	Type   IntentType // the type the other transaction holds
	Wanted IntentType // the access that conflicts with it
	// Range is the span of the other transaction's range lock when the
	// conflict is with one (RangeLockConflicts); Key is then the wanted
	// key inside it.
	Range storage.Span
}

// Intent is one decoded intent.
type Intent struct {
	Txn     TxnID
	RowKey  []byte // in the data key space (DataPrefix), as DocKey.Encode returns it
	Column  uint32 // 0 = the row level
	Type    IntentType
	HT      hlc.Timestamp // when the intent was written (not the commit time)
	WriteID uint32        // order of the write within its transaction

	// The provisional value, strong write intents only. At the row level a
	// live value is the liveness marker (Value is NULL).
	Tombstone bool
	TTL       time.Duration // 0 = no expiry; the expiry is counted from the commit time
	Value     Value
}

func (in Intent) String() string {
	s := fmt.Sprintf("%s %s@%s#%d", in.Type, IntentKey{in.RowKey, in.Column}, in.HT, in.WriteID)
	if in.Type != StrongWrite {
		return s
	}
	switch {
	case in.Tombstone:
		s += " tombstone"
	case in.Column == LivenessColumn:
		s += " marker"
	default:
		s += " " + in.Value.String()
	}
	if in.TTL > 0 {
		s += " ttl=" + in.TTL.String()
	}
	return s
}

// ---- Encoding ----

const (
	intentSuffixLen  = 1 + 8 + 4
	txnIDLen         = 16
	txnIndexPrefixLn = 1 + 8 + txnIDLen
)

// Flags of a strong write intent's payload.
const (
	ivTombstone byte = 1 << 0
	ivTTL       byte = 1 << 1
	// ivPacked: a row-level intent that also carries the columns of its
	// op (a packed row, see packedOp); with or without ivTTL.
	ivPacked byte = 1 << 2
)

// appendIntentSubKey appends the intent-space prefix of every intent on
// (rowKey, col): IntentPrefix | row key without DataPrefix | ['K' col].
func appendIntentSubKey(dst, rowKey []byte, col uint32) []byte {
	dst = append(dst, storage.IntentPrefix)
	dst = append(dst, rowKey[1:]...)
	if col != LivenessColumn {
		dst = appendColumnSubKey(dst, col)
	}
	return dst
}

func appendIntentKey(dst, rowKey []byte, col uint32, typ IntentType, ht hlc.Timestamp, wid uint32) []byte {
	dst = appendIntentSubKey(dst, rowKey, col)
	dst = append(dst, byte(typ))
	dst = binary.BigEndian.AppendUint64(dst, ^uint64(ht))
	return binary.BigEndian.AppendUint32(dst, ^wid)
}

// intentSubKeySpan is the span of every intent on exactly (rowKey, col).
// Row-level intents have a type byte (< 'K') right after the row key, so
// they end where the row's column intents start.
func intentSubKeySpan(rowKey []byte, col uint32) storage.Span {
	start := appendIntentSubKey(nil, rowKey, col)
	if col == LivenessColumn {
		return storage.Span{Start: start, End: append(append([]byte(nil), start...), columnMarker)}
	}
	return storage.Span{Start: start, End: storage.PrefixEnd(start)}
}

// intentRowKeyLen returns the length of the row key (with its IntentPrefix)
// at the front of an intent key. It mirrors rowKeyLen for the data space.
func intentRowKeyLen(key []byte) (int, error) {
	if len(key) < tablePrefixLen+1 || key[0] != storage.IntentPrefix {
		return 0, corruptf("not an intent key: %x", key)
	}
	return walkRowKey(key, skipKey)
}

// decodedIntentKey is a decoded intent key; row aliases the key and still
// carries the IntentPrefix.
type decodedIntentKey struct {
	row []byte
	col uint32
	typ IntentType
	ht  hlc.Timestamp
	wid uint32
}

func (k decodedIntentKey) dataRowKey() []byte {
	rk := make([]byte, len(k.row))
	rk[0] = storage.DataPrefix
	copy(rk[1:], k.row[1:])
	return rk
}

func decodeIntentKey(key []byte) (decodedIntentKey, error) {
	var k decodedIntentKey
	n, err := intentRowKeyLen(key)
	if err != nil {
		return k, err
	}
	k.row = key[:n]
	s := key[n:]
	if len(s) > 0 && s[0] == columnMarker {
		if len(s) < columnSubKeyLen {
			return k, errTruncated
		}
		k.col = binary.BigEndian.Uint32(s[1:])
		if k.col == LivenessColumn {
			return k, corruptf("column intent on the liveness column in %x", key)
		}
		s = s[columnSubKeyLen:]
	}
	if len(s) != intentSuffixLen || !IntentType(s[0]).valid() {
		return k, corruptf("bad intent suffix in key %x", key)
	}
	k.typ = IntentType(s[0])
	k.ht = hlc.Timestamp(^binary.BigEndian.Uint64(s[1:]))
	k.wid = ^binary.BigEndian.Uint32(s[9:])
	return k, nil
}

// intentValue is a decoded intent value; value aliases the decoded bytes.
type intentValue struct {
	txn       TxnID
	tombstone bool
	ttl       time.Duration
	value     Value
	// packed: the columns of a packed row-level intent (the row level
	// itself is a live marker), encoded by appendPackedColumns.
	packed []byte
}

// packedOp reports whether WriteIntents writes op as one packed intent: a
// put or insert of a row with columns. Its intents would be a strong write
// on the row (the marker) and one on every column, all with the op's write
// id and TTL; one key carries them all instead, which a bulk load's
// transaction writes, indexes, applies and deletes once per row rather than
// once per column. The row-level strong write already conflicts with every
// access to the row or its columns, so the locks it takes are the same;
// readers of intents expand it (expandIntent) into exactly the intents it
// stands for.
func packedOp(op *WriteOp) bool {
	return (op.Kind == OpPutRow || op.Kind == OpInsertRow) && len(op.Columns) > 0
}

// appendPackedColumns appends the columns of a packed intent: in ascending
// column id order (the last value of a column named twice, as separate
// intents of one write id would leave it), each its id (4 bytes), the
// length of its value's encoding (uvarint) and the encoding.
func appendPackedColumns(dst []byte, cols []ColumnValue) []byte {
	order := make([]int, 0, len(cols))
	for i := range cols {
		order = append(order, i)
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch x, y := cols[a].ID, cols[b].ID; {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	var enc []byte
	for n, i := range order {
		if n+1 < len(order) && cols[order[n+1]].ID == cols[i].ID {
			continue // a later value of the same column wins
		}
		enc = AppendValue(enc[:0], cols[i].Value)
		dst = binary.BigEndian.AppendUint32(dst, cols[i].ID)
		dst = binary.AppendUvarint(dst, uint64(len(enc)))
		dst = append(dst, enc...)
	}
	return dst
}

// forEachPackedColumn calls fn with every column of a packed intent's
// columns and its value's encoding (aliasing b). It rejects malformed
// input (no columns, ids not ascending, the liveness column, a length past
// the end) with an error wrapping ErrCorrupt; the values themselves are
// checked by whoever decodes them.
func forEachPackedColumn(b []byte, fn func(col uint32, enc []byte) error) error {
	if len(b) == 0 {
		return corruptf("packed intent without columns")
	}
	var prev uint32
	for first := true; len(b) > 0; first = false {
		if len(b) < 4 {
			return errTruncated
		}
		col := binary.BigEndian.Uint32(b)
		if col == LivenessColumn || !first && col <= prev {
			return corruptf("packed intent column %d after %d", col, prev)
		}
		n, w := binary.Uvarint(b[4:])
		if w <= 0 || n == 0 || n > uint64(len(b)-4-w) {
			return corruptf("packed intent column %d: bad length", col)
		}
		if err := fn(col, b[4+w:4+w+int(n)]); err != nil {
			return err
		}
		prev, b = col, b[4+w+int(n):]
	}
	return nil
}

func appendIntentValue(dst []byte, typ IntentType, iv intentValue) []byte {
	dst = append(dst, iv.txn[:]...)
	if typ != StrongWrite {
		return dst
	}
	var flags byte
	if iv.tombstone {
		flags |= ivTombstone
	} else if iv.ttl > 0 {
		flags |= ivTTL
	}
	if iv.packed != nil {
		flags |= ivPacked
	}
	dst = append(dst, flags)
	if flags&ivTTL != 0 {
		dst = binary.BigEndian.AppendUint64(dst, uint64(iv.ttl))
	}
	switch {
	case iv.packed != nil:
		dst = append(dst, iv.packed...)
	case !iv.tombstone:
		dst = AppendValue(dst, iv.value)
	}
	return dst
}

// decodeIntentValue decodes the value of an intent of type typ. It rejects
// malformed input with an error wrapping ErrCorrupt and never panics.
func decodeIntentValue(typ IntentType, b []byte) (intentValue, error) {
	var iv intentValue
	if !typ.valid() {
		return iv, corruptf("bad intent type %d", typ)
	}
	if len(b) < txnIDLen {
		return iv, errTruncated
	}
	copy(iv.txn[:], b)
	if iv.txn.IsZero() {
		return iv, corruptf("intent of the zero transaction")
	}
	b = b[txnIDLen:]
	if typ != StrongWrite {
		if len(b) != 0 {
			return iv, corruptf("%s intent with a %d-byte payload", typ, len(b))
		}
		return iv, nil
	}
	p, err := splitIntentPayload(b)
	if err != nil {
		return iv, err
	}
	iv.tombstone, iv.ttl = p.tombstone, p.ttl
	if p.tombstone {
		return iv, nil
	}
	if p.packed {
		err := forEachPackedColumn(p.enc, func(_ uint32, enc []byte) error {
			_, err := DecodeValue(enc)
			return err
		})
		iv.value, iv.packed = Null(), p.enc
		return iv, err
	}
	iv.value, err = DecodeValue(p.enc)
	return iv, err
}

// TxnIndexSpan is the span of the reverse index of one tablet (Raft group):
// the tablet layer adds it to the spans a snapshot copies and a replica
// removal deletes, next to its data span and IntentSpanOf(data span).
func TxnIndexSpan(tablet uint64) storage.Span {
	start := binary.BigEndian.AppendUint64([]byte{storage.TxnIndexPrefix}, tablet)
	return storage.Span{Start: start, End: storage.PrefixEnd(start)}
}

func txnIndexPrefix(dst []byte, tablet uint64, txn TxnID) []byte {
	dst = append(dst, storage.TxnIndexPrefix)
	dst = binary.BigEndian.AppendUint64(dst, tablet)
	return append(dst, txn[:]...)
}

func txnIndexKey(dst []byte, tablet uint64, txn TxnID, intentKey []byte) []byte {
	return append(txnIndexPrefix(dst, tablet, txn), intentKey[1:]...)
}

// intentKeyOfIndex returns the intent key an index key points at.
func intentKeyOfIndex(indexKey []byte) ([]byte, error) {
	if len(indexKey) <= txnIndexPrefixLn || indexKey[0] != storage.TxnIndexPrefix {
		return nil, corruptf("not a txn index key: %x", indexKey)
	}
	ik := make([]byte, 1+len(indexKey)-txnIndexPrefixLn)
	ik[0] = storage.IntentPrefix
	copy(ik[1:], indexKey[txnIndexPrefixLn:])
	return ik, nil
}

// ---- Which intents an operation takes ----

type intentFunc func(key IntentKey, typ IntentType, iv intentValue) error

// forEachWriteIntent calls fn for every intent op stores (iv.txn unset):
// a packed op (packedOp) as its one packed intent.
func forEachWriteIntent(op *WriteOp, fn intentFunc) error {
	var ttl time.Duration
	if op.TTL > 0 {
		ttl = op.TTL
	}
	row := IntentKey{RowKey: op.RowKey}
	if packedOp(op) {
		return fn(row, StrongWrite, intentValue{ttl: ttl, value: Null(), packed: appendPackedColumns(nil, op.Columns)})
	}
	var err error
	switch op.Kind {
	case OpPutRow, OpInsertRow:
		err = fn(row, StrongWrite, intentValue{ttl: ttl, value: Null()})
	case OpDeleteRow:
		return fn(row, StrongWrite, intentValue{tombstone: true})
	default:
		err = fn(row, WeakWrite, intentValue{})
	}
	if err != nil {
		return err
	}
	tomb := op.Kind == OpDeleteColumns
	for _, c := range op.Columns {
		iv := intentValue{tombstone: tomb}
		if !tomb {
			iv.ttl, iv.value = ttl, c.Value
		}
		if err := fn(IntentKey{RowKey: op.RowKey, Column: c.ID}, StrongWrite, iv); err != nil {
			return err
		}
	}
	return nil
}

func forEachReadIntent(keys []IntentKey, strong bool, fn intentFunc) error {
	for _, k := range keys {
		typ := WeakRead
		if strong {
			typ = StrongRead
		}
		if err := fn(k, typ, intentValue{}); err != nil {
			return err
		}
		if k.Column != LivenessColumn {
			if err := fn(IntentKey{RowKey: k.RowKey}, WeakRead, intentValue{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteAccesses returns the accesses WriteIntents takes for ops, as it
// stores them: a strong write on every key an op writes and a weak write on
// the row of an op that writes only columns, a put of a whole row (packedOp)
// as the strong write on its row alone, which stands for its columns too.
// Pass them to Conflicts before writing. For a packed op they are also all
// there is to check: every intent on a column comes with one on its row
// (ReadAccesses, and the column writes here), and a strong write on the row
// conflicts with any, so its column accesses would find no transaction its
// row access does not; a bulk load checks one key per row, not per column.
func WriteAccesses(ops []WriteOp) []Access {
	var acc []Access
	for i := range ops {
		_ = forEachWriteIntent(&ops[i], func(k IntentKey, typ IntentType, _ intentValue) error {
			acc = append(acc, Access{Key: k, Type: typ})
			return nil
		})
	}
	return acc
}

// ReadAccesses returns the accesses WriteReadIntents takes for keys.
func ReadAccesses(keys []IntentKey, strong bool) []Access {
	var acc []Access
	_ = forEachReadIntent(keys, strong, func(k IntentKey, typ IntentType, _ intentValue) error {
		acc = append(acc, Access{Key: k, Type: typ})
		return nil
	})
	return acc
}

// ---- Writing ----

// atomically runs fn against w, through a private batch applied at the end
// (without sync: replicated writes are durable in the Raft log) unless w is
// a batch already, like ApplyWriteBatch.
func atomically(w pebble.Writer, fn func(pebble.Writer) error) error {
	if _, isBatch := w.(*pebble.Batch); !isBatch {
		if bm, ok := w.(batchMaker); ok {
			b := bm.NewBatch()
			defer b.Close()
			if err := fn(b); err != nil {
				return err
			}
			return w.Apply(b, pebble.NoSync)
		}
	}
	return fn(w)
}

type intentWriter struct {
	w          pebble.Writer
	tablet     uint64
	txn        TxnID
	ht         hlc.Timestamp
	key, index []byte
	val        []byte
	known      *KnownIntents // if not nil, records what is written
	// seen is set when the call can meet a key twice (mayRepeat): the
	// common write of distinct columns keeps the hot path free of it.
	seen *seenKeys
}

func (iw *intentWriter) put(k IntentKey, typ IntentType, wid uint32, iv intentValue) error {
	iv.txn = iw.txn
	iw.key = appendIntentKey(iw.key[:0], k.RowKey, k.Column, typ, iw.ht, wid)
	iw.val = appendIntentValue(iw.val[:0], typ, iv)
	// One call stamps one hybrid time and write id on each op's intents, so
	// it can meet a key twice: the weak read on the row of two columns read,
	// a column an op names twice. The later write wins, after a plain
	// deletion of the earlier: the single deletion that resolves the intent
	// (deleteOnce) must never find two writes of its key.
	dup := iw.seen != nil && iw.seen.add(iw.key)
	if dup {
		if err := iw.w.Delete(iw.key, pebble.NoSync); err != nil {
			return err
		}
	}
	if err := iw.w.Set(iw.key, iw.val, pebble.NoSync); err != nil {
		return err
	}
	if iw.known != nil {
		iw.known.add(iw.key, iw.val)
	}
	if dup {
		return nil // its index key is written already
	}
	iw.index = txnIndexKey(iw.index[:0], iw.tablet, iw.txn, iw.key)
	return iw.w.Set(iw.index, nil, pebble.NoSync)
}

// opsRepeatColumns reports whether an op names a column twice: the only
// way ops written at one hybrid time meet a key twice, since each op has
// its own write id.
func opsRepeatColumns(ops []WriteOp) bool {
	for i := range ops {
		cols := ops[i].Columns
		if len(cols) > seenKeysListMax {
			return true // a wide row: let the seen set's map look
		}
		for j := 1; j < len(cols); j++ {
			for k := 0; k < j; k++ {
				if cols[j].ID == cols[k].ID {
					return true
				}
			}
		}
	}
	return false
}

// seenKeys is the set of keys one intentWriter call wrote: a list while
// short (the usual statement writes a few intents), then a map.
type seenKeys struct {
	buf  []byte
	ends []int
	set  map[string]struct{}
}

// seenKeysListMax: past this many keys, seenKeys builds its map.
const seenKeysListMax = 16

// add records key and reports whether it was there already.
func (s *seenKeys) add(key []byte) bool {
	if s.set != nil {
		if _, ok := s.set[string(key)]; ok {
			return true
		}
		s.set[string(key)] = struct{}{}
		return false
	}
	start := 0
	for _, end := range s.ends {
		if bytes.Equal(s.buf[start:end], key) {
			return true
		}
		start = end
	}
	if len(s.ends) < seenKeysListMax {
		s.buf = append(s.buf, key...)
		s.ends = append(s.ends, len(s.buf))
		return false
	}
	s.set = make(map[string]struct{}, 2*seenKeysListMax)
	start = 0
	for _, end := range s.ends {
		s.set[string(s.buf[start:end])] = struct{}{}
		start = end
	}
	s.set[string(key)] = struct{}{}
	s.buf, s.ends = nil, nil
	return false
}

// WriteIntents writes the intents of ops for transaction txn, written at
// hybrid time ht by tablet (the Raft group whose log carries them, which
// owns every row key of ops). Op i gets write id writeID+i; the transaction
// layer hands out write ids in the order of the transaction's writes, so
// that the newest write of a key has the highest id (read-your-own-writes,
// savepoints, and the order of the versions ApplyIntents writes).
//
// Every op is validated first and nothing is written if any is malformed.
// (ht, write id) must not repeat for a key across transactions: the tablet
// stamps a distinct hybrid time on every Raft entry and puts the intents of
// one transaction in an entry.
func WriteIntents(w pebble.Writer, tablet uint64, txn TxnID, ht hlc.Timestamp, ops []WriteOp, writeID uint32) error {
	return WriteIntentsKnown(w, tablet, txn, ht, ops, writeID, nil)
}

// WriteIntentsKnown is WriteIntents that also adds the intents it writes to
// known (when not nil), for ApplyKnownIntents.
func WriteIntentsKnown(w pebble.Writer, tablet uint64, txn TxnID, ht hlc.Timestamp, ops []WriteOp, writeID uint32, known *KnownIntents) error {
	if txn.IsZero() {
		return errors.New("docdb: WriteIntents: zero transaction id")
	}
	if uint64(writeID)+uint64(len(ops)) > math.MaxUint32+1 {
		return fmt.Errorf("docdb: WriteIntents: write ids overflow (%d + %d ops)", writeID, len(ops))
	}
	for i := range ops {
		if err := ops[i].validateResolved(); err != nil {
			return fmt.Errorf("op %d: %w", i, err)
		}
	}
	return atomically(w, func(w pebble.Writer) error {
		iw := intentWriter{w: w, tablet: tablet, txn: txn, ht: ht, known: known}
		if opsRepeatColumns(ops) {
			iw.seen = &seenKeys{}
		}
		for i := range ops {
			wid := writeID + uint32(i)
			err := forEachWriteIntent(&ops[i], func(k IntentKey, typ IntentType, iv intentValue) error {
				return iw.put(k, typ, wid, iv)
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// WriteReadIntents writes read locks for transaction txn (serializable
// reads, SELECT ... FOR SHARE): with strong, a strong read intent on each key
// plus a weak read intent on the row of each column key; without, weak read
// intents on the keys only. Every intent gets write id writeID (so a
// savepoint rollback releases the locks taken after it, as PostgreSQL does).
func WriteReadIntents(w pebble.Writer, tablet uint64, txn TxnID, ht hlc.Timestamp, keys []IntentKey, strong bool, writeID uint32) error {
	if txn.IsZero() {
		return errors.New("docdb: WriteReadIntents: zero transaction id")
	}
	for _, k := range keys {
		if !IsRowKey(k.RowKey) {
			return fmt.Errorf("docdb: WriteReadIntents: malformed row key %x", k.RowKey)
		}
	}
	return atomically(w, func(w pebble.Writer) error {
		iw := intentWriter{w: w, tablet: tablet, txn: txn, ht: ht}
		if len(keys) > 1 {
			iw.seen = &seenKeys{} // the weak read on a row of two columns, a key twice
		}
		return forEachReadIntent(keys, strong, func(k IntentKey, typ IntentType, iv intentValue) error {
			return iw.put(k, typ, writeID, iv)
		})
	})
}

// ---- Conflicts ----

// Conflicts returns the intents of transactions other than txn that
// conflict with the wanted accesses (IntentsConflict), once per holding
// transaction, key and held type, in the order of want. The caller (the
// tablet, under its latches) then waits for those transactions, or aborts
// one side. Only intents are considered: a snapshot-isolation writer must
// also check for committed versions newer than its read time in the data.
func Conflicts(r pebble.Reader, txn TxnID, want []Access) ([]Conflict, error) {
	is := storage.IntentSpan()
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: is.Start, UpperBound: is.End, UseL6Filters: lookupsMostlyMiss})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	type seenKey struct {
		txn TxnID
		key string
		typ IntentType
	}
	seen := map[seenKey]bool{}
	var out []Conflict
	for _, a := range want {
		if !IsRowKey(a.Key.RowKey) || !a.Type.valid() {
			return nil, fmt.Errorf("docdb: Conflicts: bad access %s %s", a.Type, a.Key)
		}
		span := intentSubKeySpan(a.Key.RowKey, a.Key.Column)
		// Every intent on the row shares its prefix (Comparer): a prefix
		// seek skips the sstables whose bloom filter rules the row out,
		// and stops at the row's end rather than walking the deleted
		// intents (of applied transactions) beyond it up to the next live
		// one, which made this the costliest part of a transactional
		// write.
		for valid := it.SeekPrefixGE(span.Start); valid && bytes.Compare(it.Key(), span.End) < 0; valid = it.Next() {
			key := it.Key()
			if len(key) != len(span.Start)+intentSuffixLen {
				return nil, corruptf("bad intent key %x", key)
			}
			typ := IntentType(key[len(span.Start)])
			if !typ.valid() {
				return nil, corruptf("bad intent type in key %x", key)
			}
			if !IntentsConflict(a.Type, typ) {
				continue
			}
			raw, err := it.ValueAndErr()
			if err != nil {
				return nil, err
			}
			if len(raw) < txnIDLen {
				return nil, corruptf("intent value of %d bytes", len(raw))
			}
			var holder TxnID
			copy(holder[:], raw)
			if holder == txn {
				continue
			}
			sk := seenKey{holder, string(span.Start), typ}
			if seen[sk] {
				continue
			}
			seen[sk] = true
			out = append(out, Conflict{Txn: holder, Key: IntentKey{RowKey: append([]byte(nil), a.Key.RowKey...), Column: a.Key.Column}, Type: typ, Wanted: a.Type})
		}
		if err := it.Error(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ---- By transaction: list, apply, remove ----

// indexedIntentKeys returns the intent keys of txn in tablet, in key order.
func indexedIntentKeys(r pebble.Reader, tablet uint64, txn TxnID) ([][]byte, error) {
	prefix := txnIndexPrefix(nil, tablet, txn)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: storage.PrefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	var keys [][]byte
	for valid := it.First(); valid; valid = it.Next() {
		ik, err := intentKeyOfIndex(it.Key())
		if err != nil {
			_ = it.Close()
			return nil, err
		}
		keys = append(keys, ik)
	}
	if err := it.Error(); err != nil {
		_ = it.Close()
		return nil, err
	}
	return keys, it.Close()
}

// intentWalker walks the intents of one transaction in one tablet in key
// order: its index, and the intents themselves with one forward iterator
// that moves from each intent to the next (a Next when the next intent of
// the transaction is the next key, which is the rule for a transaction's
// rows; a forward seek otherwise) rather than a lookup of its own per
// intent, which costs a fresh iterator stack each.
type intentWalker struct {
	txn     TxnID
	idx, it *pebble.Iterator
	started bool
	key     []byte // the current intent key (reused)
	// adjacent: the current intent is the key right after the previous
	// one (no other key between them). Only looked for when wantAdjacent
	// (the stepped apply and removal, which delete runs of at least
	// rangeDeleteMin adjacent intents in one range deletion) and past the
	// walk's first adjacentAfter intents: it takes a Next from the previous
	// intent, which visits every deleted key between the two one by one,
	// and a hot row's intent space holds a deleted intent of each
	// transaction that wrote it since the last flush (thousands: a TPC-B
	// branch row's overlays and applies spent 5% of a node's CPU there). A
	// SeekGE jumps over them, and Pebble turns a seek just past the
	// previous one into a few Nexts by itself.
	adjacent, wantAdjacent bool
	walked                 int // intents walked
	err                    error
}

func newIntentWalker(r pebble.Reader, tablet uint64, txn TxnID) (*intentWalker, error) {
	return newIntentWalkerIn(r, tablet, txn, storage.Span{})
}

// StepCursor remembers where a stepped apply or removal of one
// transaction's intents in one tablet stopped (ApplyIntentsPart,
// RemoveIntentsPart), so that the next step starts there. Without it each
// step walked the transaction's index from its start, over every entry the
// earlier steps had deleted: their range deletion hides them, but an
// iterator still visits the deleted keys of its own memtable or sstable
// one by one, so the steps of a bulk load's apply were quadratic. A cursor
// is a hint of one replica: the index before it holds nothing of the
// transaction, since every step deletes what it walked and a committed or
// aborted transaction writes no more intents. The zero value starts at the
// beginning.
type StepCursor struct {
	next []byte // the txn index key the next step starts at
}

// walker opens the intent walk of the next step.
func (c *StepCursor) walker(r pebble.Reader, tablet uint64, txn TxnID) (*intentWalker, error) {
	prefix := txnIndexPrefix(nil, tablet, txn)
	lower := prefix
	if c != nil && bytes.HasPrefix(c.next, prefix) {
		lower = c.next
	}
	w, err := openIntentWalker(r, txn, lower, storage.PrefixEnd(prefix))
	if err == nil {
		w.wantAdjacent = true
	}
	return w, err
}

// stoppedAt is where a step that stopped at its limit left walk: the
// index entry of the first intent it did not take.
func stoppedAt(walk *intentWalker) []byte { return append([]byte(nil), walk.idx.Key()...) }

// moveTo records where the next step starts (nil: at the beginning, the
// transaction being done), once the step's writes are made.
func (c *StepCursor) moveTo(next []byte) {
	if c != nil {
		c.next = next
	}
}

// newIntentWalkerIn walks the intents of txn on the rows of span (a
// data-space span; an empty one: all rows): the index is ordered as the
// intents, so they are one range of it.
func newIntentWalkerIn(r pebble.Reader, tablet uint64, txn TxnID, span storage.Span) (*intentWalker, error) {
	prefix := txnIndexPrefix(nil, tablet, txn)
	lower, upper := prefix, storage.PrefixEnd(prefix)
	if is := IntentSpanOf(span); len(span.Start) > 0 || len(span.End) > 0 {
		lower = append(append([]byte(nil), prefix...), is.Start[1:]...)
		if !bytes.Equal(is.End, storage.IntentSpan().End) {
			upper = append(append([]byte(nil), prefix...), is.End[1:]...)
		}
	}
	return openIntentWalker(r, txn, lower, upper)
}

// openIntentWalker walks the intents of txn whose index entries are in
// [lower, upper).
func openIntentWalker(r pebble.Reader, txn TxnID, lower, upper []byte) (*intentWalker, error) {
	idx, err := r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return nil, err
	}
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: []byte{storage.IntentPrefix}, UpperBound: []byte{storage.IntentPrefix + 1}})
	if err != nil {
		_ = idx.Close()
		return nil, err
	}
	return &intentWalker{txn: txn, idx: idx, it: it}, nil
}

// adjacentAfter is how many intents a walk takes before it looks for
// adjacent ones: a small transaction's few intents never make a range
// deletion, and a large one's runs lose only their first few to point
// deletions.
const adjacentAfter = 8

// next moves to the next intent; false at the end or on an error (Err).
func (w *intentWalker) next() bool {
	if w.err != nil {
		return false
	}
	var valid bool
	if !w.started {
		w.started, valid = true, w.idx.First()
	} else {
		valid = w.idx.Next()
	}
	if !valid {
		w.err = w.idx.Error()
		return false
	}
	ik := w.idx.Key()
	if len(ik) <= txnIndexPrefixLn {
		w.err = corruptf("not a txn index key: %x", ik)
		return false
	}
	w.key = append(append(w.key[:0], storage.IntentPrefix), ik[txnIndexPrefixLn:]...)
	w.walked++
	w.adjacent = w.wantAdjacent && w.walked > adjacentAfter && w.it.Valid() && w.it.Next() && bytes.Equal(w.it.Key(), w.key)
	if !w.adjacent && (!w.it.SeekGE(w.key) || !bytes.Equal(w.it.Key(), w.key)) {
		if w.err = w.it.Error(); w.err == nil {
			w.err = corruptf("txn index names a missing intent %x", w.key)
		}
		return false
	}
	return true
}

// value is the current intent's raw value (valid until next).
func (w *intentWalker) value() ([]byte, error) { return w.it.ValueAndErr() }

func (w *intentWalker) close() error {
	err := w.err
	if e := w.idx.Close(); err == nil {
		err = e
	}
	if e := w.it.Close(); err == nil {
		err = e
	}
	return err
}

// intents appends the current intent to dst, expanded (expandIntent; its
// memory owned by the result).
func (w *intentWalker) intents(dst []Intent) ([]Intent, error) {
	k, err := decodeIntentKey(w.key)
	if err != nil {
		return dst, err
	}
	raw, err := w.value()
	if err != nil {
		return dst, err
	}
	iv, err := decodeIntentValue(k.typ, append([]byte(nil), raw...))
	if err != nil {
		return dst, err
	}
	if iv.txn != w.txn {
		return dst, corruptf("txn index of %s names an intent of %s at %x", w.txn, iv.txn, w.key)
	}
	return expandIntent(dst, k, iv, k.dataRowKey())
}

// expandIntent appends the intents one stored intent stands for, on row
// key rowKey: itself, or for a packed one (packedOp) the row's marker and
// a strong write on each of its columns, as they would have been stored
// one by one.
func expandIntent(dst []Intent, k decodedIntentKey, iv intentValue, rowKey []byte) ([]Intent, error) {
	in := Intent{
		Txn: iv.txn, RowKey: rowKey, Column: k.col, Type: k.typ, HT: k.ht, WriteID: k.wid,
		Tombstone: iv.tombstone, TTL: iv.ttl, Value: iv.value,
	}
	dst = append(dst, in)
	if iv.packed == nil {
		return dst, nil
	}
	if k.col != LivenessColumn || k.typ != StrongWrite {
		return dst, corruptf("packed %s intent on column %d", k.typ, k.col)
	}
	err := forEachPackedColumn(iv.packed, func(col uint32, enc []byte) error {
		v, err := DecodeValue(enc)
		in.Column, in.Value = col, v
		dst = append(dst, in)
		return err
	})
	return dst, err
}

// IntentsOf lists the intents of txn in tablet, in key order, a packed
// intent expanded into the intents it stands for.
func IntentsOf(r pebble.Reader, tablet uint64, txn TxnID) ([]Intent, error) {
	w, err := newIntentWalker(r, tablet, txn)
	if err != nil {
		return nil, err
	}
	var out []Intent
	for w.next() {
		if out, err = w.intents(out); err != nil {
			w.err = err
			break
		}
	}
	return out, w.close()
}

// TxnsWithIntents lists the transactions that have intents in tablet, in id
// order (one seek per transaction). A tablet that restarts or receives a
// snapshot learns from it which transactions it takes part in.
func TxnsWithIntents(r pebble.Reader, tablet uint64) ([]TxnID, error) {
	span := TxnIndexSpan(tablet)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: span.Start, UpperBound: span.End})
	if err != nil {
		return nil, err
	}
	var out []TxnID
	for valid := it.First(); valid; {
		key := it.Key()
		if len(key) <= txnIndexPrefixLn {
			_ = it.Close()
			return nil, corruptf("bad txn index key %x", key)
		}
		var t TxnID
		copy(t[:], key[1+8:])
		out = append(out, t)
		valid = it.SeekGE(storage.PrefixEnd(key[:txnIndexPrefixLn]))
	}
	if err := it.Error(); err != nil {
		_ = it.Close()
		return nil, err
	}
	return out, it.Close()
}

// ApplyIntents resolves the intents of committed transaction txn in tablet:
// every strong write intent becomes the MVCC version ApplyWriteBatch would
// have written for its op at commitHT (version (commitHT, write id), expiry
// commitHT+TTL), so existing reads see it; every intent of txn in tablet and
// its index key are deleted, and so are its range locks there. It returns
// the number of versions written.
//
// Applying one transaction as several statements gives exactly the versions
// of one ApplyWriteBatch of all its ops in write-id order. r must see the
// intents (the engine, or w when w is an indexed batch); the writes go to w
// atomically. Applying again finds nothing: it is idempotent.
func ApplyIntents(r pebble.Reader, w pebble.Writer, tablet uint64, txn TxnID, commitHT hlc.Timestamp) (int, error) {
	n, _, err := ApplyIntentsPart(r, w, tablet, txn, commitHT, 0, nil)
	return n, err
}

// ApplyIntentsPart is ApplyIntents bounded to the first limit intents of
// txn in tablet in index order (limit <= 0: all of them; a packed intent
// counts as the versions it writes, at least one), so that a large
// transaction's apply goes in bounded steps: done reports that none remain
// (its range locks go with the last step). The next step starts where this
// one stopped, since the applied intents and their index entries are gone;
// every replica that applies the same steps in the same order writes the
// same versions. cur (nil: none) carries the position from step to step.
func ApplyIntentsPart(r pebble.Reader, w pebble.Writer, tablet uint64, txn TxnID, commitHT hlc.Timestamp, limit int, cur *StepCursor) (n int, done bool, err error) {
	done = true
	var next []byte
	err = atomically(w, func(w pebble.Writer) error {
		// One pass, writing as it reads: an iterator does not see writes
		// made to its batch after it was opened. The intents' deletions
		// go in ranges over runs of adjacent intents (a large
		// transaction's rows), the index in one range (intentDeleter).
		walk, err := cur.walker(r, tablet, txn)
		if err != nil {
			return err
		}
		del := intentDeleter{w: w, tablet: tablet, txn: txn}
		ap := intentApplier{txn: txn, out: appliedWriter{commitHT: commitHT}}
		for walk.next() {
			// A step's work: its intents, and the extra versions of
			// its packed ones (an intent is otherwise one version).
			if limit > 0 && del.n+ap.n-ap.intents >= limit {
				done, next = false, stoppedAt(walk) // walk.next found one more
				break
			}
			k, err := decodeIntentKey(walk.key)
			if err != nil {
				walk.err = err
				break
			}
			if err := del.add(walk.key, walk.adjacent); err != nil {
				walk.err = err
				break
			}
			if err := ap.apply(w, walk, k); err != nil {
				walk.err = err
				break
			}
		}
		n = ap.n
		if err := walk.close(); err != nil {
			return err
		}
		if err := del.finish(done); err != nil || !done {
			return err
		}
		_, err = removeRangeLocks(r, w, tablet, txn, func(uint32) bool { return true })
		return err
	})
	if err != nil {
		return 0, false, err
	}
	cur.moveTo(next)
	return n, done, nil
}

// OverlayIntents writes into w the versions that committed transaction
// txn's strong write intents on the rows of span in tablet become at
// commitHT (as ApplyIntents writes them), and nothing else. A read through
// w (a throwaway indexed batch over the engine) sees txn applied on span
// without waiting for its apply: a bulk load's apply takes minutes, a
// reader's page needs a few rows of it. r must be one consistent view (a
// snapshot or a batch: the walk reads the index and the intents through two
// iterators). It returns the versions written.
func OverlayIntents(r pebble.Reader, w pebble.Writer, tablet uint64, txn TxnID, commitHT hlc.Timestamp, span storage.Span) (int, error) {
	return overlayIntents(r, w, tablet, txn, commitHT, span, 0)
}

// OverlayOwnIntents is OverlayIntents of a live transaction's own writes
// with write ids below before, as versions at time at: the writer's view
// of the rows (a read at at through w sees them over the committed data).
func OverlayOwnIntents(r pebble.Reader, w pebble.Writer, tablet uint64, txn TxnID, at hlc.Timestamp, span storage.Span, before uint32) (int, error) {
	if before == 0 {
		return 0, nil
	}
	return overlayIntents(r, w, tablet, txn, at, span, before)
}

func overlayIntents(r pebble.Reader, w pebble.Writer, tablet uint64, txn TxnID, commitHT hlc.Timestamp, span storage.Span, before uint32) (int, error) {
	walk, err := newIntentWalkerIn(r, tablet, txn, span)
	if err != nil {
		return 0, err
	}
	ap := intentApplier{txn: txn, out: appliedWriter{commitHT: commitHT}, before: before}
	for walk.next() {
		k, err := decodeIntentKey(walk.key)
		if err == nil {
			err = ap.apply(w, walk, k)
		}
		if err != nil {
			walk.err = err
			break
		}
	}
	return ap.n, walk.close()
}

// intentApplier writes the versions a committed transaction's intents
// become (appliedWriter), for ApplyIntentsPart and OverlayIntents.
type intentApplier struct {
	txn     TxnID
	out     appliedWriter
	n       int    // versions written
	intents int    // strong write intents applied
	before  uint32 // if not 0, only intents with write ids below it
}

// apply writes the version of the walker's current intent k, if it is a
// strong write.
func (a *intentApplier) apply(w pebble.Writer, walk *intentWalker, k decodedIntentKey) error {
	if k.typ != StrongWrite || a.before != 0 && k.wid >= a.before {
		return nil
	}
	raw, err := walk.value()
	if err != nil {
		return err
	}
	if len(raw) < txnIDLen || TxnID(raw[:txnIDLen]) != a.txn {
		return corruptf("txn index of %s names an intent of another transaction at %x", a.txn, walk.key)
	}
	n, err := a.out.write(w, k, raw[txnIDLen:])
	a.n += n
	a.intents++
	return err
}

// KnownIntents are intents of one transaction in one tablet as
// WriteIntentsKnown wrote them (raw keys and values), kept by the caller so
// that a small transaction's apply (ApplyKnownIntents) need not read them
// back: no index scan, no iterator over the intents.
type KnownIntents struct {
	keys, vals [][]byte
	bytes      int
}

func (k *KnownIntents) add(key, val []byte) {
	k.keys = append(k.keys, append([]byte(nil), key...))
	k.vals = append(k.vals, append([]byte(nil), val...))
	k.bytes += len(key) + len(val)
}

// DropFrom forgets the intents with write ids from writeID on, as
// RemoveIntentsAfter(writeID-1) removes them (a savepoint rollback, or a
// READ COMMITTED statement run again): the record stays complete.
func (k *KnownIntents) DropFrom(writeID uint32) error {
	keep := 0
	k.bytes = 0
	for i, key := range k.keys {
		d, err := decodeIntentKey(key)
		if err != nil {
			return err
		}
		if d.wid >= writeID {
			continue
		}
		k.keys[keep], k.vals[keep] = key, k.vals[i]
		k.bytes += len(key) + len(k.vals[i])
		keep++
	}
	clear(k.keys[keep:])
	clear(k.vals[keep:])
	k.keys, k.vals = k.keys[:keep], k.vals[:keep]
	return nil
}

// Len is the number of intents; Bytes the size of their keys and values.
func (k *KnownIntents) Len() int   { return len(k.keys) }
func (k *KnownIntents) Bytes() int { return k.bytes }

// nullEncoding is the encoding of a NULL value, a liveness marker's.
var nullEncoding = AppendValue(nil, Null())

// appliedWriter writes strong write intents as the regular versions they
// become at a commit time (scratch buffers reused from intent to intent).
type appliedWriter struct {
	commitHT      hlc.Timestamp
	row, key, val []byte
}

// write writes the intent k, with payload after its transaction id, and
// returns the number of versions written (a packed intent's marker and
// columns; otherwise one).
func (a *appliedWriter) write(w pebble.Writer, k decodedIntentKey, payload []byte) (int, error) {
	p, err := splitIntentPayload(payload)
	if err != nil {
		return 0, err
	}
	a.row = append(append(a.row[:0], storage.DataPrefix), k.row[1:]...)
	v := version{ht: a.commitHT, wid: k.wid}
	expiry := expiryOf(a.commitHT, p.ttl)
	if !p.packed {
		if k.col == LivenessColumn {
			a.key = rowVersionKey(a.key[:0], a.row, v)
		} else {
			a.key = columnVersionKey(a.key[:0], a.row, k.col, v)
		}
		a.val = appendStoredRaw(a.val[:0], p.tombstone, p.ttl > 0, expiry, p.enc)
		return 1, w.Set(a.key, a.val, pebble.NoSync)
	}
	if k.col != LivenessColumn {
		return 0, corruptf("packed intent on column %d", k.col)
	}
	a.key = rowVersionKey(a.key[:0], a.row, v)
	a.val = appendStoredRaw(a.val[:0], false, p.ttl > 0, expiry, nullEncoding)
	if err := w.Set(a.key, a.val, pebble.NoSync); err != nil {
		return 0, err
	}
	n := 1
	err = forEachPackedColumn(p.enc, func(col uint32, enc []byte) error {
		a.key = columnVersionKey(a.key[:0], a.row, col, v)
		a.val = appendStoredRaw(a.val[:0], false, p.ttl > 0, expiry, enc)
		n++
		return w.Set(a.key, a.val, pebble.NoSync)
	})
	return n, err
}

// ApplyKnownIntents is ApplyIntents for a transaction whose intents in
// tablet are exactly known (all of them, none since removed or applied),
// and that has no range locks there: it writes the same versions and
// deletes the same intents and index keys without reading anything. The
// caller answers for known being complete; it must not be used again.
func ApplyKnownIntents(w pebble.Writer, tablet uint64, txn TxnID, commitHT hlc.Timestamp, known *KnownIntents) (int, error) {
	n := 0
	err := atomically(w, func(w pebble.Writer) error {
		var index []byte
		out := appliedWriter{commitHT: commitHT}
		for i, ik := range known.keys {
			k, err := decodeIntentKey(ik)
			if err != nil {
				return err
			}
			if err := deleteOnce(w, ik); err != nil {
				return err
			}
			index = txnIndexKey(index[:0], tablet, txn, ik)
			if err := deleteOnce(w, index); err != nil {
				return err
			}
			if k.typ != StrongWrite {
				continue
			}
			raw := known.vals[i]
			if len(raw) < txnIDLen || TxnID(raw[:txnIDLen]) != txn {
				return corruptf("known intents of %s hold one of another transaction at %x", txn, ik)
			}
			m, err := out.write(w, k, raw[txnIDLen:])
			if err != nil {
				return err
			}
			n += m
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// intentPayload is the payload of a strong write intent (after the
// transaction id), split: enc aliases the payload.
type intentPayload struct {
	tombstone bool
	ttl       time.Duration // 0: none
	// packed: enc holds the columns of a packed intent (appendPackedColumns)
	// rather than one value's encoding.
	packed bool
	enc    []byte
}

// splitIntentPayload checks the payload of a strong write intent (after the
// transaction id) and splits it: tombstone, TTL, and the value's encoding
// (a packed intent's columns, not checked here).
func splitIntentPayload(b []byte) (p intentPayload, err error) {
	if len(b) == 0 {
		return p, errTruncated
	}
	flags := b[0]
	b = b[1:]
	switch flags {
	case 0, ivPacked:
	case ivTombstone:
		if len(b) != 0 {
			return p, corruptf("tombstone intent with a %d-byte value", len(b))
		}
		p.tombstone = true
		return p, nil
	case ivTTL, ivTTL | ivPacked:
		if len(b) < 8 {
			return p, errTruncated
		}
		t := binary.BigEndian.Uint64(b)
		if t == 0 || t > math.MaxInt64 {
			return p, corruptf("bad intent TTL %d", t)
		}
		p.ttl, b = time.Duration(t), b[8:]
	default:
		return p, corruptf("bad intent flags %#x", flags)
	}
	if len(b) == 0 {
		return p, errTruncated
	}
	p.packed, p.enc = flags&ivPacked != 0, b
	return p, nil
}

// appendStoredRaw is appendStoredValue with the value already encoded.
func appendStoredRaw(dst []byte, tombstone, hasExpiry bool, expiry hlc.Timestamp, enc []byte) []byte {
	var flags byte
	if tombstone {
		flags |= flagTombstone
	}
	if hasExpiry {
		flags |= flagExpiry
	}
	dst = append(dst, flags)
	if hasExpiry {
		dst = binary.BigEndian.AppendUint64(dst, uint64(expiry))
	}
	return append(dst, enc...)
}

// intentDeleter deletes the intents of one transaction in one tablet, as a
// walk (in key order) meets them, and their index. A run of at least
// rangeDeleteMin adjacent intents goes as one range deletion, and so does
// the index once it has that many entries; fewer go one key at a time, so
// the small transactions of the hot path leave no range tombstones for
// reads to step over.
type intentDeleter struct {
	w      pebble.Writer
	tablet uint64
	txn    TxnID
	run    [][]byte // the current run of adjacent intents (copies), up to rangeDeleteMin
	start  []byte   // of a long run
	last   []byte   // of a long run
	n      int      // intents seen (index entries)
	small  [][]byte // intents deleted one by one, for the index (while n < rangeDeleteMin)
	latest []byte   // the last intent seen
}

func (d *intentDeleter) add(key []byte, adjacent bool) error {
	if !adjacent {
		if err := d.flushRun(); err != nil {
			return err
		}
	}
	d.n++
	d.latest = append(d.latest[:0], key...)
	if d.n <= rangeDeleteMin {
		d.small = append(d.small, append([]byte(nil), key...))
	}
	if d.start != nil {
		d.last = append(d.last[:0], key...)
		return nil
	}
	d.run = append(d.run, append([]byte(nil), key...))
	if len(d.run) == rangeDeleteMin {
		d.start = d.run[0]
		d.last = append(d.last[:0], key...)
		d.run = d.run[:0]
	}
	return nil
}

func (d *intentDeleter) flushRun() error {
	if d.start != nil {
		// [start, last] exactly: last's immediate successor ends it.
		if err := d.w.DeleteRange(d.start, append(d.last, 0), pebble.NoSync); err != nil {
			return err
		}
		d.start, d.last = nil, nil
	}
	for _, k := range d.run {
		if err := deleteOnce(d.w, k); err != nil {
			return err
		}
	}
	d.run = d.run[:0]
	return nil
}

// finish deletes what is left of the run and the index entries of the
// intents seen: with all, txn's whole index; otherwise the index walked so
// far, up to the last intent seen (a bounded step).
func (d *intentDeleter) finish(all bool) error {
	if err := d.flushRun(); err != nil {
		return err
	}
	if d.n >= rangeDeleteMin {
		prefix := txnIndexPrefix(nil, d.tablet, d.txn)
		end := storage.PrefixEnd(prefix)
		if !all {
			end = append(txnIndexKey(nil, d.tablet, d.txn, d.latest), 0)
		}
		return d.w.DeleteRange(prefix, end, pebble.NoSync)
	}
	for _, k := range d.small {
		if err := deleteOnce(d.w, txnIndexKey(nil, d.tablet, d.txn, k)); err != nil {
			return err
		}
	}
	return nil
}

// deleteIndexed deletes intents (keys) of txn in tablet and their index
// entries. With whole (keys is txn's whole index there) a large index goes
// by one range deletion: a large transaction's apply would otherwise write
// as many deletions again as it has intents.
func deleteIndexed(w pebble.Writer, tablet uint64, txn TxnID, keys [][]byte, whole bool) error {
	ranged := whole && len(keys) >= rangeDeleteMin
	for _, k := range keys {
		if err := deleteOnce(w, k); err != nil {
			return err
		}
		if !ranged {
			if err := deleteOnce(w, txnIndexKey(nil, tablet, txn, k)); err != nil {
				return err
			}
		}
	}
	if !ranged {
		return nil
	}
	prefix := txnIndexPrefix(nil, tablet, txn)
	return w.DeleteRange(prefix, storage.PrefixEnd(prefix), pebble.NoSync)
}

// deleteOnce deletes an intent or a reverse index key with a single
// deletion. Both kinds are written exactly once: an intent key holds the
// hybrid time of its Raft entry and its write id, which never repeat for a
// key, and an index key names its intent key and tablet. A single deletion
// that meets its one Set in a flush or compaction removes both, so the
// intents of a transaction written and resolved within one memtable never
// reach an sstable; a plain deletion left a tombstone per intent and index
// key for every level to carry down (TPC-B wrote 30% fewer sstable bytes
// without them) and for reads of the intents to step over. Deleting such a
// key twice is harmless.
func deleteOnce(w pebble.Writer, key []byte) error {
	return w.SingleDelete(key, pebble.NoSync)
}

// rangeDeleteMin: from this many index entries on, a transaction's whole
// index goes in one range deletion rather than one deletion per entry.
const rangeDeleteMin = 64

// RemoveIntents deletes every intent of txn in tablet and its index keys,
// and its range locks there: the cleanup of an aborted transaction. It
// returns the number of intents and range locks removed.
func RemoveIntents(r pebble.Reader, w pebble.Writer, tablet uint64, txn TxnID) (int, error) {
	n, _, err := RemoveIntentsPart(r, w, tablet, txn, 0, nil)
	return n, err
}

// RemoveIntentsPart is RemoveIntents bounded to the first limit intents of
// txn in tablet in index order (limit <= 0: all of them), as
// ApplyIntentsPart; done reports that none remain (its range locks go with
// the last step).
func RemoveIntentsPart(r pebble.Reader, w pebble.Writer, tablet uint64, txn TxnID, limit int, cur *StepCursor) (n int, done bool, err error) {
	done = true
	var next []byte
	err = atomically(w, func(w pebble.Writer) error {
		walk, err := cur.walker(r, tablet, txn)
		if err != nil {
			return err
		}
		del := intentDeleter{w: w, tablet: tablet, txn: txn}
		for walk.next() {
			if limit > 0 && del.n == limit {
				done, next = false, stoppedAt(walk)
				break
			}
			if err := del.add(walk.key, walk.adjacent); err != nil {
				walk.err = err
				break
			}
		}
		if err := walk.close(); err != nil {
			return err
		}
		if err := del.finish(done); err != nil {
			return err
		}
		n = del.n
		if !done {
			return nil
		}
		m, err := removeRangeLocks(r, w, tablet, txn, func(uint32) bool { return true })
		n += m
		return err
	})
	if err != nil {
		return 0, false, err
	}
	cur.moveTo(next)
	return n, done, nil
}

// RemoveIntentsAfter deletes the intents and range locks of txn in tablet
// whose write id is greater than writeID: a rollback to the savepoint taken
// when writeID was the last write id handed out.
func RemoveIntentsAfter(r pebble.Reader, w pebble.Writer, tablet uint64, txn TxnID, writeID uint32) (int, error) {
	return removeIntents(r, w, tablet, txn, func(wid uint32) bool { return wid > writeID })
}

func removeIntents(r pebble.Reader, w pebble.Writer, tablet uint64, txn TxnID, remove func(wid uint32) bool) (int, error) {
	keys, err := indexedIntentKeys(r, tablet, txn)
	if err != nil {
		return 0, err
	}
	del := keys[:0:0]
	for _, ik := range keys {
		k, err := decodeIntentKey(ik)
		if err != nil {
			return 0, err
		}
		if remove(k.wid) {
			del = append(del, ik)
		}
	}
	n := len(del)
	err = atomically(w, func(w pebble.Writer) error {
		if err := deleteIndexed(w, tablet, txn, del, len(del) == len(keys)); err != nil {
			return err
		}
		m, err := removeRangeLocks(r, w, tablet, txn, remove)
		n += m
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// SplitTxnIndex moves the reverse index of a tablet that splits at splitKey
// (a data-space key: the right child's span start) to its children: entries
// of rows below splitKey to left, the others to right. The intents
// themselves do not move (the children own sub-spans of the same keys). The
// tablet layer calls it in the batch that applies the split on every
// replica. It returns the number of entries moved.
func SplitTxnIndex(r pebble.Reader, w pebble.Writer, parent uint64, splitKey []byte, left, right uint64) (int, error) {
	span := TxnIndexSpan(parent)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: span.Start, UpperBound: span.End})
	if err != nil {
		return 0, err
	}
	var keys [][]byte
	for valid := it.First(); valid; valid = it.Next() {
		keys = append(keys, append([]byte(nil), it.Key()...))
	}
	if err := it.Error(); err != nil {
		_ = it.Close()
		return 0, err
	}
	if err := it.Close(); err != nil {
		return 0, err
	}
	err = atomically(w, func(w pebble.Writer) error {
		var nk []byte
		for _, key := range keys {
			ik, err := intentKeyOfIndex(key)
			if err != nil {
				return err
			}
			k, err := decodeIntentKey(ik)
			if err != nil {
				return err
			}
			child := left
			if bytes.Compare(k.dataRowKey(), splitKey) >= 0 {
				child = right
			}
			var txn TxnID
			copy(txn[:], key[1+8:])
			nk = txnIndexKey(nk[:0], child, txn, ik)
			if err := w.Set(nk, nil, pebble.NoSync); err != nil {
				return err
			}
			if err := deleteOnce(w, key); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return len(keys), nil
}

// ---- The read side ----

// RowIntents is what a reader finds in the intents of one row: the
// provisional writes of its own transaction and those of others.
type RowIntents struct {
	RowKey []byte
	// Own holds the reading transaction's provisional writes, the newest
	// (highest write id) per key: the row level first, then columns in
	// ascending order.
	Own []Intent
	// Others holds the strong write intents of other transactions, the
	// newest per transaction and key, whose commit status the reader must
	// resolve (ask the status record).
	Others []Intent
}

// ReadIntents returns the provisional writes (strong write intents) on the
// rows of span (a row-key span in the data space, as for Scan; rows that
// start before span.Start are skipped), one RowIntents per row that has any,
// in key order. readTxn is the reading transaction (zero for a read outside
// any transaction, which has no own writes). Locks (weak and read intents)
// carry no data and are not returned: readers do not wait on locks.
//
// See doc.go for how the tablet combines the result with GetRow.
func ReadIntents(r pebble.Reader, span storage.Span, readTxn TxnID) ([]RowIntents, error) {
	out, _, err := ReadIntentsUpTo(r, span, readTxn, 0)
	return out, err
}

// ReadIntentsUpTo is ReadIntents over the first maxRows rows of span that
// have strong write intents (maxRows <= 0: all of them). When more rows
// have some, next is the first of those: the result covers [span.Start,
// next) exactly. A page of a scan needs no more; looking at every intent
// of a large transaction on every page made a scan quadratic.
func ReadIntentsUpTo(r pebble.Reader, span storage.Span, readTxn TxnID, maxRows int) (out []RowIntents, next []byte, err error) {
	is := IntentSpanOf(span)
	// One row (RowSpan): its intents share a prefix (Comparer), and a
	// prefix seek skips the sstables that do not hold it.
	oneRow := IsRowKey(span.Start) && bytes.Equal(span.End, rowEnd(span.Start))
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: is.Start, UpperBound: is.End, UseL6Filters: oneRow && lookupsMostlyMiss})
	if err != nil {
		return nil, nil, err
	}
	defer it.Close()
	first := it.First
	if oneRow {
		first = func() bool { return it.SeekPrefixGE(is.Start) }
	}
	var cur *RowIntents
	var expanded []Intent
	for valid := first(); valid; valid = it.Next() {
		key := it.Key()
		k, err := decodeIntentKey(key)
		if err != nil {
			return nil, nil, err
		}
		if k.typ != StrongWrite {
			continue
		}
		if cur == nil || len(cur.RowKey) != len(k.row) || !bytes.Equal(cur.RowKey[1:], k.row[1:]) {
			rk := k.dataRowKey()
			if bytes.Compare(rk, span.Start) < 0 {
				continue
			}
			if maxRows > 0 && len(out) == maxRows {
				return sortedByColumn(out), rk, it.Error()
			}
			out = append(out, RowIntents{RowKey: rk})
			cur = &out[len(out)-1]
		}
		raw, err := it.ValueAndErr()
		if err != nil {
			return nil, nil, err
		}
		iv, err := decodeIntentValue(k.typ, append([]byte(nil), raw...))
		if err != nil {
			return nil, nil, err
		}
		if expanded, err = expandIntent(expanded[:0], k, iv, cur.RowKey); err != nil {
			return nil, nil, err
		}
		for _, in := range expanded {
			if iv.txn == readTxn {
				cur.Own = mergeNewest(cur.Own, in)
			} else {
				cur.Others = mergeNewest(cur.Others, in)
			}
		}
	}
	if err := it.Error(); err != nil {
		return nil, nil, err
	}
	return sortedByColumn(out), nil, nil
}

// sortedByColumn puts each row's intents in key order (a packed intent's
// columns came in with its row level).
func sortedByColumn(rows []RowIntents) []RowIntents {
	for i := range rows {
		slices.SortStableFunc(rows[i].Own, byColumn)
		slices.SortStableFunc(rows[i].Others, byColumn)
	}
	return rows
}

func byColumn(a, b Intent) int {
	switch {
	case a.Column < b.Column:
		return -1
	case a.Column > b.Column:
		return 1
	}
	return 0
}

// mergeNewest keeps, per transaction and column, the intent with the
// highest write id.
func mergeNewest(list []Intent, in Intent) []Intent {
	for i := range list {
		if list[i].Txn == in.Txn && list[i].Column == in.Column {
			if in.WriteID > list[i].WriteID {
				list[i] = in
			}
			return list
		}
	}
	return append(list, in)
}
