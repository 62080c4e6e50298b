package docdb

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/storage"
)

// Range read locks: how a SERIALIZABLE scan keeps phantoms out. A row lock
// (a strong read intent) covers a row that exists; a scan must also keep
// other transactions from inserting rows into the gaps it read. A range
// lock is a strong read on every key of a span of row keys: a write of any
// key inside it (a write intent, a row lock that writes, a plain write)
// conflicts with it as with a strong read intent on that key
// (RangeLockConflicts), and taking one conflicts with the write intents of
// other transactions inside the span (RangeConflicts). Range locks never
// conflict with reads, row locks FOR SHARE or other range locks.
//
// They live in their own key space, by tablet (Raft group) and transaction,
// so that a transaction's locks in a tablet are one prefix scan, like its
// intents through the txn index:
//
//	key    RangeLockPrefix | tablet id (8 BE) | txn id (16) | write id (4 BE) | hybrid time (8 BE) | span start
//	value  lock type (1: strong_read) | span end (empty: unbounded)
//
// Both bounds are in the data space (row keys or prefixes of row keys, as a
// scan span). A lock carries the write id of the scan that took it, so a
// savepoint rollback releases the locks taken after the savepoint; the
// by-transaction operations of intents.go (ApplyIntents, RemoveIntents,
// RemoveIntentsAfter) handle range locks with the intents. A split moves
// them to the children, each getting the part of the span it owns
// (SplitRangeLocks); a snapshot copies RangeLockSpan(tablet) next to the
// tablet's intents and index. The tablet also keeps its locks in memory
// for the conflict checks of writes, rebuilt from this durable form.

// RangeLock is a transaction's read lock on a span of row keys.
type RangeLock struct {
	Txn     TxnID
	Span    storage.Span  // of row keys, data space; End nil: unbounded
	HT      hlc.Timestamp // when the lock was written
	WriteID uint32
}

func (l RangeLock) String() string {
	return fmt.Sprintf("%s range_read %s@%s#%d", l.Txn, l.Span, l.HT, l.WriteID)
}

const (
	rangeLockPrefixLen = 1 + 8 + txnIDLen
	rangeLockSuffixLen = 4 + 8
)

// RangeLockSpan is the span of the range locks of one tablet (Raft group):
// the tablet layer adds it to the spans a snapshot copies and a replica
// removal deletes.
func RangeLockSpan(tablet uint64) storage.Span {
	start := binary.BigEndian.AppendUint64([]byte{storage.RangeLockPrefix}, tablet)
	return storage.Span{Start: start, End: storage.PrefixEnd(start)}
}

func rangeLockTxnPrefix(dst []byte, tablet uint64, txn TxnID) []byte {
	dst = append(dst, storage.RangeLockPrefix)
	dst = binary.BigEndian.AppendUint64(dst, tablet)
	return append(dst, txn[:]...)
}

func appendRangeLockKey(dst []byte, tablet uint64, l RangeLock) []byte {
	dst = rangeLockTxnPrefix(dst, tablet, l.Txn)
	dst = binary.BigEndian.AppendUint32(dst, l.WriteID)
	dst = binary.BigEndian.AppendUint64(dst, uint64(l.HT))
	return append(dst, l.Span.Start...)
}

func appendRangeLockValue(dst []byte, l RangeLock) []byte {
	dst = append(dst, byte(StrongRead))
	return append(dst, l.Span.End...)
}

// decodeRangeLock decodes a range lock key and value; the result owns its
// memory. It rejects malformed input with an error wrapping ErrCorrupt.
func decodeRangeLock(key, val []byte) (uint64, RangeLock, error) {
	var l RangeLock
	if len(key) <= rangeLockPrefixLen+rangeLockSuffixLen || key[0] != storage.RangeLockPrefix {
		return 0, l, corruptf("not a range lock key: %x", key)
	}
	tablet := binary.BigEndian.Uint64(key[1:])
	copy(l.Txn[:], key[1+8:])
	if l.Txn.IsZero() {
		return 0, l, corruptf("range lock of the zero transaction")
	}
	s := key[rangeLockPrefixLen:]
	l.WriteID = binary.BigEndian.Uint32(s)
	l.HT = hlc.Timestamp(binary.BigEndian.Uint64(s[4:]))
	l.Span.Start = append([]byte(nil), s[rangeLockSuffixLen:]...)
	if len(val) == 0 || IntentType(val[0]) != StrongRead {
		return 0, l, corruptf("bad range lock value %x", val)
	}
	if len(val) > 1 {
		l.Span.End = append([]byte(nil), val[1:]...)
	}
	if !validLockSpan(l.Span) {
		return 0, l, corruptf("bad range lock span %s", l.Span)
	}
	return tablet, l, nil
}

// validLockSpan: a non-empty span of the data space.
func validLockSpan(s storage.Span) bool {
	return len(s.Start) > 0 && s.Start[0] == storage.DataPrefix && (s.End == nil || bytes.Compare(s.Start, s.End) < 0)
}

// WriteRangeLocks writes range read locks of transaction txn on spans (of
// row keys, in the data space), written at hybrid time ht by tablet, with
// write id writeID. Nothing is written if any span is malformed (empty, or
// outside the data space).
func WriteRangeLocks(w pebble.Writer, tablet uint64, txn TxnID, ht hlc.Timestamp, spans []storage.Span, writeID uint32) error {
	if txn.IsZero() {
		return errors.New("docdb: WriteRangeLocks: zero transaction id")
	}
	for _, s := range spans {
		if !validLockSpan(s) {
			return fmt.Errorf("docdb: WriteRangeLocks: bad span %s", s)
		}
	}
	return atomically(w, func(w pebble.Writer) error {
		var key, val []byte
		for _, s := range spans {
			l := RangeLock{Txn: txn, Span: s, HT: ht, WriteID: writeID}
			key = appendRangeLockKey(key[:0], tablet, l)
			val = appendRangeLockValue(val[:0], l)
			if err := w.Set(key, val, pebble.NoSync); err != nil {
				return err
			}
		}
		return nil
	})
}

// scanRangeLocks returns the range locks under prefix (of the range lock
// space) in key order, and their keys.
func scanRangeLocks(r pebble.Reader, prefix []byte) ([]RangeLock, [][]byte, error) {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: storage.PrefixEnd(prefix)})
	if err != nil {
		return nil, nil, err
	}
	var locks []RangeLock
	var keys [][]byte
	for valid := it.First(); valid; valid = it.Next() {
		raw, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return nil, nil, err
		}
		_, l, err := decodeRangeLock(it.Key(), raw)
		if err != nil {
			_ = it.Close()
			return nil, nil, err
		}
		locks = append(locks, l)
		keys = append(keys, append([]byte(nil), it.Key()...))
	}
	if err := it.Error(); err != nil {
		_ = it.Close()
		return nil, nil, err
	}
	return locks, keys, it.Close()
}

// RangeLocksOf lists the range locks of txn in tablet, by write id.
func RangeLocksOf(r pebble.Reader, tablet uint64, txn TxnID) ([]RangeLock, error) {
	locks, _, err := scanRangeLocks(r, rangeLockTxnPrefix(nil, tablet, txn))
	return locks, err
}

// RangeLocks lists every range lock in tablet, by transaction id, then
// write id: what the tablet keeps in memory.
func RangeLocks(r pebble.Reader, tablet uint64) ([]RangeLock, error) {
	locks, _, err := scanRangeLocks(r, RangeLockSpan(tablet).Start)
	return locks, err
}

// removeRangeLocks deletes the range locks of txn in tablet whose write id
// remove accepts, through w (within the caller's atomic batch). It returns
// how many it deleted.
func removeRangeLocks(r pebble.Reader, w pebble.Writer, tablet uint64, txn TxnID, remove func(wid uint32) bool) (int, error) {
	locks, keys, err := scanRangeLocks(r, rangeLockTxnPrefix(nil, tablet, txn))
	if err != nil {
		return 0, err
	}
	n := 0
	for i, l := range locks {
		if !remove(l.WriteID) {
			continue
		}
		if err := w.Delete(keys[i], pebble.NoSync); err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}

// RangeLockConflicts returns the range locks of transactions other than txn
// (among locks, a tablet's) that conflict with the wanted accesses: a range
// lock is a strong read on every key of its span, so every write access
// (weak or strong) to a row inside it conflicts. One Conflict per holding
// transaction and wanted key, in the order of want; Key is the wanted key
// and Type StrongRead.
func RangeLockConflicts(locks []RangeLock, txn TxnID, want []Access) []Conflict {
	if len(locks) == 0 {
		return nil
	}
	type seenKey struct {
		txn TxnID
		key string
		col uint32
	}
	var seen map[seenKey]bool
	var out []Conflict
	for _, a := range want {
		if !IntentsConflict(StrongRead, a.Type) {
			continue
		}
		for _, l := range locks {
			if l.Txn == txn || !l.Span.Contains(a.Key.RowKey) {
				continue
			}
			sk := seenKey{l.Txn, string(a.Key.RowKey), a.Key.Column}
			if seen[sk] {
				continue
			}
			if seen == nil {
				seen = map[seenKey]bool{}
			}
			seen[sk] = true
			out = append(out, Conflict{Txn: l.Txn, Key: IntentKey{RowKey: append([]byte(nil), a.Key.RowKey...), Column: a.Key.Column},
				Type: StrongRead, Wanted: a.Type, Range: l.Span})
		}
	}
	return out
}

// RangeConflicts returns the intents of transactions other than txn inside
// span (row keys, data space; rows starting before span.Start are not in
// it) that conflict with a range lock on the span: every write intent, weak
// or strong (so also FOR UPDATE row locks). Once per holding transaction,
// key and held type, in key order; Wanted is StrongRead.
func RangeConflicts(r pebble.Reader, txn TxnID, span storage.Span) ([]Conflict, error) {
	if !validLockSpan(span) {
		return nil, fmt.Errorf("docdb: RangeConflicts: bad span %s", span)
	}
	is := IntentSpanOf(span)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: is.Start, UpperBound: is.End})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	type seenKey struct {
		txn TxnID
		key string
		col uint32
		typ IntentType
	}
	seen := map[seenKey]bool{}
	var out []Conflict
	for valid := it.First(); valid; valid = it.Next() {
		k, err := decodeIntentKey(it.Key())
		if err != nil {
			return nil, err
		}
		if !IntentsConflict(StrongRead, k.typ) {
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
		rk := k.dataRowKey()
		if bytes.Compare(rk, span.Start) < 0 {
			continue
		}
		sk := seenKey{holder, string(rk), k.col, k.typ}
		if seen[sk] {
			continue
		}
		seen[sk] = true
		out = append(out, Conflict{Txn: holder, Key: IntentKey{RowKey: rk, Column: k.col}, Type: k.typ, Wanted: StrongRead})
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	return out, nil
}

// SplitRangeLocks moves the range locks of a tablet that splits at splitKey
// (a data-space key: the right child's span start) to its children, each
// getting the part of every span it owns: a span across the split key
// becomes two locks. The tablet layer calls it in the batch that applies
// the split, next to SplitTxnIndex. It returns the number of locks the
// children got.
func SplitRangeLocks(r pebble.Reader, w pebble.Writer, parent uint64, splitKey []byte, left, right uint64) (int, error) {
	locks, keys, err := scanRangeLocks(r, RangeLockSpan(parent).Start)
	if err != nil {
		return 0, err
	}
	n := 0
	err = atomically(w, func(w pebble.Writer) error {
		var key, val []byte
		put := func(tablet uint64, l RangeLock) error {
			key = appendRangeLockKey(key[:0], tablet, l)
			val = appendRangeLockValue(val[:0], l)
			n++
			return w.Set(key, val, pebble.NoSync)
		}
		for i, l := range locks {
			if bytes.Compare(l.Span.Start, splitKey) < 0 {
				ll := l
				if l.Span.End == nil || bytes.Compare(l.Span.End, splitKey) > 0 {
					ll.Span.End = splitKey
				}
				if err := put(left, ll); err != nil {
					return err
				}
			}
			if l.Span.End == nil || bytes.Compare(l.Span.End, splitKey) > 0 {
				rl := l
				if bytes.Compare(l.Span.Start, splitKey) < 0 {
					rl.Span.Start = splitKey
				}
				if err := put(right, rl); err != nil {
					return err
				}
			}
			if err := w.Delete(keys[i], pebble.NoSync); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
