package docdb

import (
	"bytes"

	"github.com/cockroachdb/pebble/v2"

	"github.com/shaledb/shaledb/internal/storage"
)

// Comparer is the Pebble comparer of a node's engine (every engine that
// holds DocDB keys: open it with EngineOptions or OpenEngine). It orders
// keys exactly as bytes.Compare does; what it adds is Split, the "prefix"
// that Pebble's bloom filters hash and SeekPrefixGE confines an iterator to:
//
//   - a data key: its row key (every version of the row level and of every
//     column of one row shares it);
//   - an intent key: IntentPrefix | row key without DataPrefix (every intent
//     on one row shares it);
//   - any other key (node-local state, the transaction index, range locks,
//     a span bound or a malformed key): the whole key.
//
// Pebble records the name: an engine written with another comparer (before
// this one, Pebble's default) does not open with it.
var Comparer = &pebble.Comparer{
	Name:                 "shaledb.docdb.v1",
	Compare:              bytes.Compare,
	Equal:                bytes.Equal,
	ComparePointSuffixes: bytes.Compare,
	CompareRangeSuffixes: bytes.Compare,
	AbbreviatedKey:       pebble.DefaultComparer.AbbreviatedKey,
	Separator:            pebble.DefaultComparer.Separator,
	Successor:            pebble.DefaultComparer.Successor,
	ImmediateSuccessor:   immediateSuccessor,
	Split:                splitRow,
	FormatKey:            pebble.DefaultComparer.FormatKey,
}

// lookupsMostlyMiss is the UseL6Filters of the iterators of lookups that
// usually find nothing: the checks before a write (intents of other
// transactions, a committed version newer than the read time, an existing
// row under an INSERT) and a row's intents. Pebble skips the bottom level's
// filters by default, as they are large and useless when the key is there;
// for these lookups they save the data block read. GetRow keeps the
// default: a point read usually finds its row.
const lookupsMostlyMiss = true

// EngineOptions returns o with the DocDB comparer set: the options of every
// engine that holds DocDB keys.
func EngineOptions(o storage.Options) storage.Options {
	o.Comparer = Comparer
	return o
}

// OpenEngine opens an engine for DocDB data (storage.Open with
// EngineOptions).
func OpenEngine(dir string, o storage.Options) (*storage.Engine, error) {
	return storage.Open(dir, EngineOptions(o))
}

// splitRow is Comparer.Split. Pebble runs it on every key written to an
// sstable and on seek keys, so it parses without allocating, and it is
// lenient (rowKeyEnd): it only has to find where a row key ends, not
// validate it.
//
// Pebble's invariants hold with bytes.Compare as the order because the
// split is a left-to-right parse of the key's leading bytes: if a key
// starts with a complete row key R, every key starting with R splits at R
// too, so two prefixes are never proper prefixes of one another unless the
// shorter one is a whole key, and comparing prefixes orders keys the way
// comparing the keys does (see comparer_test.go).
func splitRow(key []byte) int {
	if len(key) > 0 && (key[0] == storage.DataPrefix || key[0] == storage.IntentPrefix) {
		if n := rowKeyEnd(key); n > 0 {
			return n
		}
	}
	return len(key)
}

// immediateSuccessor is Comparer.ImmediateSuccessor: the smallest prefix
// key above the prefix key a. Above a row key R come R's own keys (all
// with prefix R), then R with its closing GroupEnd incremented, which is
// no row key and so its own prefix. Above any other prefix key is a|0x00,
// which cannot end in a row key (row keys end in GroupEnd).
func immediateSuccessor(dst, a []byte) []byte {
	if n := len(a); n > 0 && (a[0] == storage.DataPrefix || a[0] == storage.IntentPrefix) && rowKeyEnd(a) == n {
		dst = append(dst, a...)
		dst[len(dst)-1]++
		return dst
	}
	return append(append(dst, a...), 0)
}

// rowKeyEnd returns the length of the row key at the front of a data or
// intent key (its first byte is not looked at), or -1 if the key does not
// start with a complete row key. Unlike rowKeyLen it does not validate the
// components, only skips them (keyLen).
func rowKeyEnd(key []byte) int {
	n, err := walkRowKey(key, skipKeyLoosely)
	if err != nil {
		return -1
	}
	return n
}

// skipKeyLoosely is keyLen for walkRowKey.
func skipKeyLoosely(src []byte) (int, error) {
	if n := keyLen(src); n >= 0 {
		return n, nil
	}
	return 0, errTruncated
}

// keyLen returns the length of the value encoding at the front of src, or
// -1 if there is none: skipKey without the errors and without checking
// payloads (a bool's byte, a decimal's digits).
func keyLen(src []byte) int {
	if len(src) == 0 {
		return -1
	}
	t, desc, ok := tagType(src[0])
	if !ok {
		return -1
	}
	var inv byte
	if desc {
		inv = 0xff
	}
	n := fixedKeyLen(t)
	switch t {
	case TypeText, TypeBytes:
		for i := 1; i+1 < len(src); i++ {
			if src[i]^inv == 0 {
				if src[i+1]^inv == 0 {
					return i + 2
				}
				i++ // escaped 0x00
			}
		}
		return -1
	case TypeDecimal:
		// class, then unless zero: exponent (4) and digits up to a 0x00,
		// all inverted once more for negative numbers.
		if len(src) < 2 {
			return -1
		}
		switch src[1] ^ inv {
		case decZero:
			return 2
		case decNeg:
			inv ^= 0xff
		case decPos:
		default:
			return -1
		}
		for i := 6; i < len(src); i++ {
			if src[i]^inv == 0 {
				return i + 1
			}
		}
		return -1
	}
	if n < 0 || len(src) < 1+n {
		return -1
	}
	return 1 + n
}
