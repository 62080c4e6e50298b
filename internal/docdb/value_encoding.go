package docdb

import (
	"encoding/binary"
	"math"
)

// Value (non-key) encoding: compact, not order preserving. One type byte
// (the ValueType itself) followed by the payload:
//
//	null             nothing
//	bool             1 byte
//	int*, timestamp  zig-zag varint
//	float32/64       4/8 bytes IEEE, little endian
//	text/bytes/dec   the raw bytes, up to the end of the encoding
//	uuid             16 bytes
//
// Text-like payloads run to the end, so the encoding is not self-delimiting:
// callers embedding it (the write batch) prefix its length.

// AppendValue appends the value encoding of v to dst.
func AppendValue(dst []byte, v Value) []byte {
	dst = append(dst, byte(v.Type))
	switch v.Type {
	case TypeBool:
		dst = append(dst, byte(boolInt(v.Int)))
	case TypeInt16:
		dst = binary.AppendVarint(dst, int64(int16(v.Int)))
	case TypeInt32:
		dst = binary.AppendVarint(dst, int64(int32(v.Int)))
	case TypeInt64, TypeTimestamp:
		dst = binary.AppendVarint(dst, v.Int)
	case TypeFloat32:
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(v.Float)))
	case TypeFloat64:
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(v.Float))
	case TypeText, TypeBytes, TypeDecimal:
		dst = append(dst, v.Bytes...)
	case TypeUUID:
		dst = append(dst, v.UUID[:]...)
	}
	return dst
}

// DecodeValue decodes a whole value encoding. Text-like results alias src.
func DecodeValue(src []byte) (Value, error) {
	if len(src) == 0 {
		return Value{}, errTruncated
	}
	v := Value{Type: ValueType(src[0])}
	p := src[1:]
	want := -1 // exact payload length for fixed-size types
	switch v.Type {
	case TypeNull:
		want = 0
	case TypeBool:
		want = 1
		if len(p) == 1 {
			if p[0] > 1 {
				return Value{}, corruptf("bad bool %d", p[0])
			}
			v.Int = int64(p[0])
		}
	case TypeInt16, TypeInt32, TypeInt64, TypeTimestamp:
		i, n := binary.Varint(p)
		if n <= 0 {
			return Value{}, corruptf("bad varint")
		}
		want = n
		switch {
		case v.Type == TypeInt16 && int64(int16(i)) != i,
			v.Type == TypeInt32 && int64(int32(i)) != i:
			return Value{}, corruptf("%s out of range: %d", v.Type, i)
		}
		v.Int = i
	case TypeFloat32:
		want = 4
		if len(p) == 4 {
			v.Float = float64(math.Float32frombits(binary.LittleEndian.Uint32(p)))
		}
	case TypeFloat64:
		want = 8
		if len(p) == 8 {
			v.Float = math.Float64frombits(binary.LittleEndian.Uint64(p))
		}
	case TypeText, TypeBytes, TypeDecimal:
		v.Bytes = p
		return v, nil
	case TypeUUID:
		want = 16
		if len(p) == 16 {
			copy(v.UUID[:], p)
		}
	default:
		return Value{}, corruptf("bad value type %d", src[0])
	}
	if len(p) != want {
		return Value{}, corruptf("%s payload of %d bytes", v.Type, len(p))
	}
	return v, nil
}
