package docdb

import (
	"encoding/binary"
	"hash/fnv"

	"github.com/shaledb/shaledb/internal/storage"
)

// Row key ("DocKey") layout, inside the data key space:
//
//	DataPrefix | table id (4 BE) | [ 'G' | hash16 (2 BE) | hash parts… | '!' ] | range parts… | '!'
//
// The group end '!' sorts below every value tag, so a row key sorts before
// the row keys that extend its components, and the trailing '!' makes row
// keys prefix-free: no row key is a prefix of another, so every engine key of
// a row (row key + sub-key + version suffix) has the row key as a prefix
// and a row is one contiguous run of engine keys.
const (
	// GroupEnd closes the hash group and the range group of a row key.
	GroupEnd byte = '!'
	// hashMarker opens the hash group of a hash-sharded table's row key.
	hashMarker byte = 'G'
	// columnMarker opens a column sub-key: 'K' | column id (4 BE).
	columnMarker byte = 'K'
	// versionMarker opens the MVCC version suffix; '#' < 'K', so row-level
	// versions sort before every column of the row.
	versionMarker byte = '#'
)

// LivenessColumn is the reserved column id of the row liveness marker; user
// columns are >= 1. The marker itself is stored at the row level (row key +
// version suffix, no column sub-key), where row tombstones also live.
const LivenessColumn uint32 = 0

const tablePrefixLen = 1 + 4

// KeyPart is one primary-key component.
type KeyPart struct {
	Value Value
	Desc  bool
}

// DocKey is a decoded row key.
type DocKey struct {
	TableID    uint32
	HasHash    bool
	Hash       uint16
	HashParts  []KeyPart
	RangeParts []KeyPart
}

func appendTablePrefix(dst []byte, tableID uint32) []byte {
	dst = append(dst, storage.DataPrefix)
	return binary.BigEndian.AppendUint32(dst, tableID)
}

// Encode returns the row key. Components that cannot be key-encoded (see
// ErrUnsupported) yield a key that DecodeDocKey and ApplyWriteBatch reject;
// callers validate user input with EncodeKey first.
func (k DocKey) Encode() []byte {
	dst := appendTablePrefix(make([]byte, 0, 32), k.TableID)
	if k.HasHash {
		dst = append(dst, hashMarker)
		dst = binary.BigEndian.AppendUint16(dst, k.Hash)
		for _, p := range k.HashParts {
			dst = AppendKey(dst, p.Value, p.Desc)
		}
		dst = append(dst, GroupEnd)
	}
	for _, p := range k.RangeParts {
		dst = AppendKey(dst, p.Value, p.Desc)
	}
	return append(dst, GroupEnd)
}

// DecodeDocKey decodes a whole row key (no sub-key or version suffix).
func DecodeDocKey(rowKey []byte) (DocKey, error) {
	var k DocKey
	if len(rowKey) < tablePrefixLen+1 || rowKey[0] != storage.DataPrefix {
		return k, corruptf("not a row key: %x", rowKey)
	}
	k.TableID = binary.BigEndian.Uint32(rowKey[1:])
	p := rowKey[tablePrefixLen:]
	var err error
	if p[0] == hashMarker {
		if len(p) < 3 {
			return k, errTruncated
		}
		k.HasHash = true
		k.Hash = binary.BigEndian.Uint16(p[1:])
		if k.HashParts, p, err = decodeGroup(p[3:]); err != nil {
			return k, err
		}
	}
	if k.RangeParts, p, err = decodeGroup(p); err != nil {
		return k, err
	}
	if len(p) != 0 {
		return k, corruptf("%d trailing bytes after row key", len(p))
	}
	return k, nil
}

func decodeGroup(p []byte) ([]KeyPart, []byte, error) {
	var parts []KeyPart
	for {
		if len(p) == 0 {
			return nil, nil, errTruncated
		}
		if p[0] == GroupEnd {
			return parts, p[1:], nil
		}
		v, desc, rest, err := DecodeKey(p)
		if err != nil {
			return nil, nil, err
		}
		parts = append(parts, KeyPart{Value: v, Desc: desc})
		p = rest
	}
}

// rowKeyLen returns the length of the row key at the front of an engine key
// (a row key possibly followed by a sub-key and a version suffix).
func rowKeyLen(key []byte) (int, error) {
	if len(key) < tablePrefixLen+1 || key[0] != storage.DataPrefix {
		return 0, corruptf("not a data key: %x", key)
	}
	return walkRowKey(key, skipKey)
}

// walkRowKey returns the length of the row key at the front of key, whose
// first byte (the key space) it does not look at, stepping over each key
// component with skip.
func walkRowKey(key []byte, skip func([]byte) (int, error)) (int, error) {
	i := tablePrefixLen
	if len(key) <= i {
		return 0, errTruncated
	}
	groups := 1
	if key[i] == hashMarker {
		i += 3
		groups = 2
	}
	for ; groups > 0; groups-- {
		for {
			if i >= len(key) {
				return 0, errTruncated
			}
			if key[i] == GroupEnd {
				i++
				break
			}
			n, err := skip(key[i:])
			if err != nil {
				return 0, err
			}
			i += n
		}
	}
	return i, nil
}

// IsRowKey reports whether b is exactly one well-formed row key.
func IsRowKey(b []byte) bool {
	n, err := rowKeyLen(b)
	return err == nil && n == len(b)
}

// HashKeyParts hashes the hash components of a row: 32-bit FNV-1a over
// their concatenated key encodings (AppendKey, so Desc matters), folded to
// 16 bits by XORing the two halves. The function is part of the on-disk
// format: changing it moves rows between tablets.
func HashKeyParts(parts []KeyPart) uint16 {
	var buf []byte
	for _, p := range parts {
		buf = AppendKey(buf, p.Value, p.Desc)
	}
	h := fnv.New32a()
	_, _ = h.Write(buf)
	s := h.Sum32()
	return uint16(s>>16) ^ uint16(s)
}

// TableSpan returns the span of every row key of a table.
func TableSpan(tableID uint32) storage.Span {
	start := appendTablePrefix(nil, tableID)
	return storage.Span{Start: start, End: storage.PrefixEnd(start)}
}

// HashSpan returns the span of the row keys of a hash-sharded table whose
// hash lies in [lo, hi); hi may be 0x10000, meaning to the end of the table.
func HashSpan(tableID uint32, lo, hi uint32) storage.Span {
	prefix := append(appendTablePrefix(nil, tableID), hashMarker)
	start := binary.BigEndian.AppendUint16(append([]byte(nil), prefix...), uint16(lo))
	var end []byte
	if hi >= 0x10000 {
		end = storage.PrefixEnd(prefix)
	} else {
		end = binary.BigEndian.AppendUint16(prefix, uint16(hi))
	}
	return storage.Span{Start: start, End: end}
}

// IntentSpanOf maps a span of the data key space onto the same keys in the
// intents key space (IntentPrefix instead of DataPrefix), where the
// transaction layer keeps provisional writes. An empty Start maps to the
// start of the intents space and a nil End, or an End past the data space, to
// its end.
func IntentSpanOf(dataSpan storage.Span) storage.Span {
	intents := storage.IntentSpan()
	var s storage.Span
	switch {
	case len(dataSpan.Start) == 0 || dataSpan.Start[0] < storage.DataPrefix:
		s.Start = intents.Start
	default:
		s.Start = append([]byte{storage.IntentPrefix}, dataSpan.Start[1:]...)
	}
	switch {
	case len(dataSpan.End) == 0 || dataSpan.End[0] > storage.DataPrefix:
		s.End = intents.End
	default:
		s.End = append([]byte{storage.IntentPrefix}, dataSpan.End[1:]...)
	}
	return s
}
