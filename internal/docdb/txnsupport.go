package docdb

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/storage"
)

// NewestRowLevelVersion returns the hybrid time of the newest version of
// the row level of a row (its liveness marker or tombstone: the row's
// insertion or deletion), or 0 if there is none. A FOR KEY SHARE lock
// compares it with its read time: updates of the row's columns leave the
// lock's row in place and do not conflict with it.
func NewestRowLevelVersion(r pebble.Reader, rowKey []byte) (hlc.Timestamp, error) {
	if !IsRowKey(rowKey) {
		return 0, fmt.Errorf("docdb: NewestRowLevelVersion: malformed row key %x", rowKey)
	}
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: rowKey, UpperBound: rowEnd(rowKey), UseL6Filters: lookupsMostlyMiss})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	// The row level's versions sort before its columns', newest first.
	if !it.SeekPrefixGE(rowKey) {
		return 0, it.Error()
	}
	_, isCol, v, err := splitKey(it.Key(), len(rowKey))
	if err != nil || isCol {
		return 0, err
	}
	return v.ht, nil
}

// NewestVersion returns the hybrid time of the newest version of any piece
// of a row (its row level or any column, tombstones included), or 0 if the
// row has no version at all. A snapshot-isolation writer compares it with
// its read time: a newer committed version is a write-write conflict.
// It reads one key per piece (the newest version sorts first).
func NewestVersion(r pebble.Reader, rowKey []byte) (hlc.Timestamp, error) {
	if !IsRowKey(rowKey) {
		return 0, fmt.Errorf("docdb: NewestVersion: malformed row key %x", rowKey)
	}
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: rowKey, UpperBound: rowEnd(rowKey), UseL6Filters: lookupsMostlyMiss})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	var newest hlc.Timestamp
	var seek []byte
	// Every key of the row has the row key as its prefix (Comparer), so
	// the seeks are prefix seeks, which the bloom filters serve.
	valid := it.SeekPrefixGE(rowKey)
	for valid {
		key := it.Key()
		_, _, v, err := splitKey(key, len(rowKey))
		if err != nil {
			return 0, err
		}
		newest = max(newest, v.ht)
		// Skip the older versions of this piece (the row level or a
		// column: the key without its version suffix). A few steps cost
		// less than a seek through every level, and a piece rarely has
		// more versions than that; past them, seek beyond every version
		// suffix of the piece.
		seek = append(seek[:0], key[:len(key)-versionSuffixLen]...) // the key is the iterator's
		samePiece := func(k []byte) bool {
			return len(k) == len(seek)+versionSuffixLen && bytes.HasPrefix(k, seek)
		}
		stepped := false
		for range nextsBeforeSeek {
			if valid = it.Next(); !valid || !samePiece(it.Key()) {
				stepped = true
				break
			}
		}
		if stepped {
			continue
		}
		seek = append(seek, versionMarker+1)
		valid = it.SeekPrefixGE(seek)
	}
	return newest, it.Error()
}

// nextsBeforeSeek is how many older versions of a row's piece NewestVersion
// steps over before it seeks past the rest.
const nextsBeforeSeek = 4

// WriteLockIntents writes lock-only intents of the given types (no
// provisional value) for transaction txn: the row locks (see
// tablet.LockMode for the intents each takes). Strong write intents are
// refused: they carry a value (a lock takes WriteLock instead).
func WriteLockIntents(w pebble.Writer, tablet uint64, txn TxnID, ht hlc.Timestamp, locks []Access, writeID uint32) error {
	return WriteLockIntentsKnown(w, tablet, txn, ht, locks, writeID, nil)
}

// WriteLockIntentsKnown is WriteLockIntents that also records the intents
// in known, if not nil (see WriteIntentsKnown): an UPDATE's row locks ride
// with its writes, and ApplyKnownIntents removes them with the rest.
func WriteLockIntentsKnown(w pebble.Writer, tablet uint64, txn TxnID, ht hlc.Timestamp, locks []Access, writeID uint32, known *KnownIntents) error {
	if txn.IsZero() {
		return errors.New("docdb: WriteLockIntents: zero transaction id")
	}
	for _, a := range locks {
		if !IsRowKey(a.Key.RowKey) || !a.Type.valid() || a.Type == StrongWrite {
			return fmt.Errorf("docdb: WriteLockIntents: bad lock %s %s", a.Type, a.Key)
		}
	}
	return atomically(w, func(w pebble.Writer) error {
		iw := intentWriter{w: w, tablet: tablet, txn: txn, ht: ht, known: known}
		if len(locks) > 1 {
			iw.seen = &seenKeys{} // all at one write id: a lock can repeat
		}
		for _, a := range locks {
			if err := iw.put(a.Key, a.Type, writeID, intentValue{}); err != nil {
				return err
			}
		}
		return nil
	})
}

// RowSpan is the span of every engine key of one row (its versions), and,
// through IntentSpanOf, of its intents.
func RowSpan(rowKey []byte) storage.Span {
	return storage.Span{Start: rowKey, End: rowEnd(rowKey)}
}
