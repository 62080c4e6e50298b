package docdb

import (
	"encoding/binary"
	"fmt"

	"github.com/shaledb/shaledb/internal/hlc"
)

// Engine keys are a row key followed by an optional column sub-key and the
// MVCC version suffix:
//
//	row key | '#' | ^hybrid time (8 BE) | ^write id (4 BE)                       row level
//	row key | 'K' | column id (4 BE) | '#' | ^hybrid time (8 BE) | ^write id (4 BE)  column
//
// Inverting time and write id puts the newest version of a key first, so a
// read at time T seeks to the suffix of (T, max write id) and takes the
// first key it lands on.

const (
	versionSuffixLen = 1 + 8 + 4
	columnSubKeyLen  = 1 + 4
)

// version orders the writes of one key: hybrid time, then the write id (the
// index of the op in its batch), so later ops of one batch win at equal time.
type version struct {
	ht  hlc.Timestamp
	wid uint32
}

func (v version) less(o version) bool {
	return v.ht < o.ht || (v.ht == o.ht && v.wid < o.wid)
}

func (v version) String() string { return fmt.Sprintf("%s#%d", v.ht, v.wid) }

// readVersion is the newest version a read at readTime can see.
func readVersion(readTime hlc.Timestamp) version { return version{ht: readTime, wid: ^uint32(0)} }

func appendVersion(dst []byte, v version) []byte {
	dst = append(dst, versionMarker)
	dst = binary.BigEndian.AppendUint64(dst, ^uint64(v.ht))
	return binary.BigEndian.AppendUint32(dst, ^v.wid)
}

func appendColumnSubKey(dst []byte, col uint32) []byte {
	dst = append(dst, columnMarker)
	return binary.BigEndian.AppendUint32(dst, col)
}

// rowVersionKey is the engine key of a row-level version (marker or row
// tombstone).
func rowVersionKey(dst, rowKey []byte, v version) []byte {
	return appendVersion(append(dst, rowKey...), v)
}

// columnVersionKey is the engine key of a column version.
func columnVersionKey(dst, rowKey []byte, col uint32, v version) []byte {
	return appendVersion(appendColumnSubKey(append(dst, rowKey...), col), v)
}

// splitKey decodes what follows the row key (of length rowLen) in an engine
// key: whether it is a column version and which column, and the version.
func splitKey(key []byte, rowLen int) (col uint32, isCol bool, v version, err error) {
	s := key[rowLen:]
	if len(s) > 0 && s[0] == columnMarker {
		if len(s) < columnSubKeyLen {
			return 0, false, v, errTruncated
		}
		col, isCol = binary.BigEndian.Uint32(s[1:]), true
		s = s[columnSubKeyLen:]
	}
	if len(s) != versionSuffixLen || s[0] != versionMarker {
		return 0, false, v, corruptf("bad version suffix in key %x", key)
	}
	v.ht = hlc.Timestamp(^binary.BigEndian.Uint64(s[1:]))
	v.wid = ^binary.BigEndian.Uint32(s[9:])
	return col, isCol, v, nil
}

// Stored values: a header byte of flags, the expiry if flagged, then (for
// live values) the value encoding (value_encoding.go). The row liveness
// marker is a live value of type Null stored at the row level.
const (
	flagTombstone byte = 1 << 0
	flagExpiry    byte = 1 << 1
)

// storedValue is a decoded stored-value header. payload aliases the engine
// value and is only valid while the iterator stays on the key.
type storedValue struct {
	tombstone bool
	hasExpiry bool
	expiry    hlc.Timestamp // absolute hybrid time at which the value stops being visible
	payload   []byte        // value encoding; empty for tombstones
}

// liveAt reports whether the value is visible at readTime: not a tombstone
// and not expired. An expired value acts as a tombstone for its own key.
func (sv storedValue) liveAt(readTime hlc.Timestamp) bool {
	return !sv.tombstone && !(sv.hasExpiry && sv.expiry <= readTime)
}

func appendStoredValue(dst []byte, tombstone bool, hasExpiry bool, expiry hlc.Timestamp, v Value) []byte {
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
	if !tombstone {
		dst = AppendValue(dst, v)
	}
	return dst
}

func decodeStoredValue(b []byte) (storedValue, error) {
	var sv storedValue
	if len(b) == 0 {
		return sv, errTruncated
	}
	flags := b[0]
	if flags&^(flagTombstone|flagExpiry) != 0 {
		return sv, corruptf("bad value flags %#x", flags)
	}
	b = b[1:]
	sv.tombstone = flags&flagTombstone != 0
	if flags&flagExpiry != 0 {
		if len(b) < 8 {
			return sv, errTruncated
		}
		sv.hasExpiry = true
		sv.expiry = hlc.Timestamp(binary.BigEndian.Uint64(b))
		b = b[8:]
	}
	sv.payload = b
	return sv, nil
}
