package docdb

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Order-preserving key encoding of one Value.
//
// Every encoded value starts with a type tag, then a payload:
//
//	null                   (no payload)
//	bool                   1 byte, 0 or 1
//	int16/32/64, timestamp 2/4/8/8 bytes BE, sign bit flipped
//	float32/64             4/8 bytes: IEEE bits, negatives fully inverted,
//	                       others with the sign bit set; NaN canonicalized
//	text, bytes            0x00 escaped as 0x00 0xff, terminated by 0x00 0x00
//	uuid                   16 bytes
//	decimal                see decimal.go
//
// Descending values use a different tag and invert every payload byte. Asc
// tags are ascTagBase+type, so NULL (type 0) has the smallest; desc tags
// are descTagBase-type, so NULL has the largest and, with the inverted
// payloads, desc encodings order exactly opposite to Compare, even across
// types. Every tag is above GroupEnd ('!') so that a shorter key group sorts
// before a longer one with the same prefix, and none collides with the
// DocKey markers 'G', 'K' and '#'.
const (
	ascTagBase  byte = 0x30 // 0x30..0x3b
	descTagBase byte = 0x70 // 0x70..0x65
)

// ErrUnsupported is returned for values that cannot be key-encoded: at
// present decimal strings that do not parse (NaN, Infinity, garbage).
var ErrUnsupported = errors.New("docdb: value cannot be key-encoded")

// ErrCorrupt is returned (wrapped) when decoding malformed bytes.
var ErrCorrupt = errors.New("docdb: corrupt encoding")

var errTruncated = fmt.Errorf("%w: truncated", ErrCorrupt)

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// unsupportedTag is appended, alone, by AppendKey for a value it cannot
// encode. It is no valid tag, so DecodeKey (and DecodeDocKey) reject the
// key with ErrUnsupported instead of silently misreading it.
const unsupportedTag byte = 0x7f

func keyTag(t ValueType, desc bool) byte {
	if desc {
		return descTagBase - byte(t)
	}
	return ascTagBase + byte(t)
}

// tagType decodes a tag; ok is false for bytes that are no value tag.
func tagType(tag byte) (t ValueType, desc bool, ok bool) {
	switch {
	case tag >= ascTagBase && tag < ascTagBase+byte(numValueTypes):
		return ValueType(tag - ascTagBase), false, true
	case tag <= descTagBase && tag > descTagBase-byte(numValueTypes):
		return ValueType(descTagBase - tag), true, true
	}
	return 0, false, false
}

// AppendKey appends the order-preserving encoding of v to dst:
// bytes.Compare(AppendKey(nil, a, d), AppendKey(nil, b, d)) has the sign of
// a.Compare(b), negated when desc. Encodings are self-delimiting.
//
// A value that cannot be key-encoded (see ErrUnsupported) is appended as a
// poison byte that DecodeKey rejects; use EncodeKey to get the error instead.
func AppendKey(dst []byte, v Value, desc bool) []byte {
	out, err := EncodeKey(dst, v, desc)
	if err != nil {
		return append(dst, unsupportedTag)
	}
	return out
}

// EncodeKey is AppendKey returning ErrUnsupported for values it cannot
// encode (dst is then returned unchanged).
func EncodeKey(dst []byte, v Value, desc bool) ([]byte, error) {
	if v.Type >= numValueTypes {
		return dst, fmt.Errorf("%w: unknown type %d", ErrUnsupported, v.Type)
	}
	orig := len(dst)
	dst = append(dst, keyTag(v.Type, desc))
	start := len(dst)
	switch v.Type {
	case TypeNull:
	case TypeBool:
		dst = append(dst, byte(boolInt(v.Int)))
	case TypeInt16:
		dst = binary.BigEndian.AppendUint16(dst, uint16(v.Int)^1<<15)
	case TypeInt32:
		dst = binary.BigEndian.AppendUint32(dst, uint32(v.Int)^1<<31)
	case TypeInt64, TypeTimestamp:
		dst = binary.BigEndian.AppendUint64(dst, uint64(v.Int)^1<<63)
	case TypeFloat32:
		dst = binary.BigEndian.AppendUint32(dst, orderedFloat32Bits(float32(v.Float)))
	case TypeFloat64:
		dst = binary.BigEndian.AppendUint64(dst, orderedFloat64Bits(v.Float))
	case TypeText, TypeBytes:
		dst = appendEscaped(dst, v.Bytes)
	case TypeUUID:
		dst = append(dst, v.UUID[:]...)
	case TypeDecimal:
		var ok bool
		if dst, ok = appendDecimalKey(dst, v.Bytes); !ok {
			return dst[:orig], fmt.Errorf("%w: decimal %q", ErrUnsupported, v.Bytes)
		}
	}
	if desc {
		invert(dst[start:])
	}
	return dst, nil
}

// appendEscaped appends b with 0x00 escaped as 0x00 0xff and the 0x00 0x00
// terminator, which sorts below any escaped byte so that a string sorts
// before its extensions.
func appendEscaped(dst, b []byte) []byte {
	for _, c := range b {
		if c == 0 {
			dst = append(dst, 0, 0xff)
		} else {
			dst = append(dst, c)
		}
	}
	return append(dst, 0, 0)
}

func invert(b []byte) {
	for i := range b {
		b[i] = ^b[i]
	}
}

// DecodeKey decodes one value encoded by AppendKey from the front of src.
// Text and bytes payloads are copied; the other results do not alias src
// except rest.
func DecodeKey(src []byte) (v Value, desc bool, rest []byte, err error) {
	if len(src) == 0 {
		return Value{}, false, nil, errTruncated
	}
	if src[0] == unsupportedTag {
		return Value{}, false, nil, ErrUnsupported
	}
	t, desc, ok := tagType(src[0])
	if !ok {
		return Value{}, false, nil, corruptf("bad key tag %#x", src[0])
	}
	var inv byte
	if desc {
		inv = 0xff
	}
	v.Type = t
	p := src[1:]
	fixed := func(n int) ([]byte, error) {
		if len(p) < n {
			return nil, errTruncated
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = p[i] ^ inv
		}
		p = p[n:]
		return b, nil
	}
	var b []byte
	switch t {
	case TypeNull:
	case TypeBool:
		if b, err = fixed(1); err == nil {
			if b[0] > 1 {
				err = corruptf("bad bool %d", b[0])
			}
			v.Int = int64(b[0])
		}
	case TypeInt16:
		if b, err = fixed(2); err == nil {
			v.Int = int64(int16(binary.BigEndian.Uint16(b) ^ 1<<15))
		}
	case TypeInt32:
		if b, err = fixed(4); err == nil {
			v.Int = int64(int32(binary.BigEndian.Uint32(b) ^ 1<<31))
		}
	case TypeInt64, TypeTimestamp:
		if b, err = fixed(8); err == nil {
			v.Int = int64(binary.BigEndian.Uint64(b) ^ 1<<63)
		}
	case TypeFloat32:
		if b, err = fixed(4); err == nil {
			v.Float = float64(float32FromOrderedBits(binary.BigEndian.Uint32(b)))
		}
	case TypeFloat64:
		if b, err = fixed(8); err == nil {
			v.Float = float64FromOrderedBits(binary.BigEndian.Uint64(b))
		}
	case TypeText, TypeBytes:
		v.Bytes, p, err = decodeEscaped(p, inv)
	case TypeUUID:
		if b, err = fixed(16); err == nil {
			copy(v.UUID[:], b)
		}
	case TypeDecimal:
		var s string
		if s, p, err = decodeDecimalKey(p, inv); err == nil {
			v.Bytes = []byte(s)
		}
	}
	if err != nil {
		return Value{}, false, nil, err
	}
	return v, desc, p, nil
}

// decodeEscaped decodes an escaped string whose bytes are XORed with inv.
func decodeEscaped(src []byte, inv byte) (out, rest []byte, err error) {
	out = []byte{}
	for i := 0; i < len(src); i++ {
		c := src[i] ^ inv
		if c != 0 {
			out = append(out, c)
			continue
		}
		if i+1 >= len(src) {
			return nil, nil, errTruncated
		}
		switch src[i+1] ^ inv {
		case 0:
			return out, src[i+2:], nil
		case 0xff:
			out = append(out, 0)
			i++
		default:
			return nil, nil, corruptf("bad escape 0x00 %#x", src[i+1]^inv)
		}
	}
	return nil, nil, errTruncated
}

// fixedKeyLen is the payload length of a key-encoded value of type t, or -1
// for types whose payload ends with a terminator (text, bytes, decimal).
func fixedKeyLen(t ValueType) int {
	switch t {
	case TypeNull:
		return 0
	case TypeBool:
		return 1
	case TypeInt16:
		return 2
	case TypeInt32, TypeFloat32:
		return 4
	case TypeInt64, TypeTimestamp, TypeFloat64:
		return 8
	case TypeUUID:
		return 16
	}
	return -1
}

// skipKey returns the length of the value encoding at the front of src
// without decoding it; row-key parsing on the read path uses it so that
// finding row boundaries allocates nothing.
func skipKey(src []byte) (int, error) {
	if len(src) == 0 {
		return 0, errTruncated
	}
	t, desc, ok := tagType(src[0])
	if !ok {
		if src[0] == unsupportedTag {
			return 0, ErrUnsupported
		}
		return 0, corruptf("bad key tag %#x", src[0])
	}
	n := fixedKeyLen(t)
	switch t {
	case TypeText, TypeBytes:
		var inv byte
		if desc {
			inv = 0xff
		}
		for i := 1; i+1 < len(src); i++ {
			if src[i]^inv == 0 {
				if src[i+1]^inv == 0 {
					return i + 2, nil
				}
				i++ // escaped 0x00
			}
		}
		return 0, errTruncated
	case TypeDecimal:
		_, _, rest, err := DecodeKey(src)
		if err != nil {
			return 0, err
		}
		return len(src) - len(rest), nil
	}
	if n < 0 {
		return 0, corruptf("bad key tag %#x", src[0])
	}
	if len(src) < 1+n {
		return 0, errTruncated
	}
	if t == TypeBool {
		var inv byte
		if desc {
			inv = 0xff
		}
		if src[1]^inv > 1 {
			return 0, corruptf("bad bool %#x", src[1])
		}
	}
	return 1 + n, nil
}
