package docdb

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
	"time"
)

// ValueType is the type of a Value. The numeric order of the constants is
// the order Compare uses between values of different types, and the key
// encoding's type tags follow it, so both agree even across types.
type ValueType byte

// Value types. TypeNull is zero so that the zero Value is NULL.
const (
	TypeNull ValueType = iota
	TypeBool
	TypeInt16
	TypeInt32
	TypeInt64
	TypeFloat32
	TypeFloat64
	TypeText
	TypeBytes
	TypeTimestamp
	TypeUUID
	TypeDecimal

	numValueTypes
)

var typeNames = [numValueTypes]string{
	"null", "bool", "int16", "int32", "int64", "float32", "float64",
	"text", "bytes", "timestamp", "uuid", "decimal",
}

// String returns the lower-case type name ("int64", "text", ...).
func (t ValueType) String() string {
	if t < numValueTypes {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", byte(t))
}

// ParseValueType is the inverse of ValueType.String.
func ParseValueType(s string) (ValueType, bool) {
	for i, n := range typeNames {
		if n == s {
			return ValueType(i), true
		}
	}
	return 0, false
}

// Value is one scalar: a primary-key component or a column value. Only the
// fields that belong to Type are meaningful; the constructors set them.
type Value struct {
	Type  ValueType
	Int   int64    // bool (0/1), int16/32/64, timestamp (microseconds since Unix epoch)
	Float float64  // float32/64
	Bytes []byte   // text, bytes, decimal (decimal: canonical decimal string for now)
	UUID  [16]byte // uuid
}

// Null returns the NULL value.
func Null() Value { return Value{} }

// Bool returns a bool value.
func Bool(b bool) Value {
	v := Value{Type: TypeBool}
	if b {
		v.Int = 1
	}
	return v
}

// Int16 returns an int16 value.
func Int16(v int16) Value { return Value{Type: TypeInt16, Int: int64(v)} }

// Int32 returns an int32 value.
func Int32(v int32) Value { return Value{Type: TypeInt32, Int: int64(v)} }

// Int64 returns an int64 value.
func Int64(v int64) Value { return Value{Type: TypeInt64, Int: v} }

// Float32 returns a float32 value (held widened in Float; exact).
func Float32(v float32) Value { return Value{Type: TypeFloat32, Float: float64(v)} }

// Float64 returns a float64 value.
func Float64(v float64) Value { return Value{Type: TypeFloat64, Float: v} }

// Text returns a text value.
func Text(s string) Value { return Value{Type: TypeText, Bytes: []byte(s)} }

// Bytes returns a bytes value. The slice is not copied.
func Bytes(b []byte) Value { return Value{Type: TypeBytes, Bytes: b} }

// TimestampMicros returns a timestamp value, in microseconds since the Unix epoch.
func TimestampMicros(us int64) Value { return Value{Type: TypeTimestamp, Int: us} }

// UUID returns a uuid value.
func UUID(u [16]byte) Value { return Value{Type: TypeUUID, UUID: u} }

// Decimal returns a decimal value from its decimal string, e.g. "-12.50" or
// "1e-7". The string is kept as given; comparison and key encoding are numeric
// (see decimal.go), so "1.5" and "1.50" compare equal.
func Decimal(s string) Value { return Value{Type: TypeDecimal, Bytes: []byte(s)} }

// IsNull reports whether v is NULL.
func (v Value) IsNull() bool { return v.Type == TypeNull }

// Compare returns -1, 0 or +1. Values of different types order by type, so
// NULL sorts first. Within a type the order is the natural one, with these
// choices, which the key encoding shares: false < true; floats order
// -Inf < ... < -0 < +0 < ... < +Inf < NaN (all NaNs equal); text and bytes
// order bytewise; uuids order bytewise; decimals order numerically.
func (v Value) Compare(o Value) int {
	if v.Type != o.Type {
		if v.Type < o.Type {
			return -1
		}
		return 1
	}
	switch v.Type {
	case TypeNull:
		return 0
	case TypeBool:
		return cmpInt(boolInt(v.Int), boolInt(o.Int))
	case TypeInt16:
		return cmpInt(int64(int16(v.Int)), int64(int16(o.Int)))
	case TypeInt32:
		return cmpInt(int64(int32(v.Int)), int64(int32(o.Int)))
	case TypeInt64, TypeTimestamp:
		return cmpInt(v.Int, o.Int)
	case TypeFloat32:
		return cmpUint(uint64(orderedFloat32Bits(float32(v.Float))), uint64(orderedFloat32Bits(float32(o.Float))))
	case TypeFloat64:
		return cmpUint(orderedFloat64Bits(v.Float), orderedFloat64Bits(o.Float))
	case TypeText, TypeBytes:
		return bytes.Compare(v.Bytes, o.Bytes)
	case TypeUUID:
		return bytes.Compare(v.UUID[:], o.UUID[:])
	case TypeDecimal:
		return compareDecimal(v.Bytes, o.Bytes)
	}
	return 0
}

// Equal reports whether v.Compare(o) == 0.
func (v Value) Equal(o Value) bool { return v.Compare(o) == 0 }

// String formats the value as type:literal, e.g. int64:5, text:"a b",
// bytes:x'00ff', null.
func (v Value) String() string {
	switch v.Type {
	case TypeNull:
		return "null"
	case TypeBool:
		return "bool:" + strconv.FormatBool(v.Int != 0)
	case TypeInt16:
		return "int16:" + strconv.FormatInt(int64(int16(v.Int)), 10)
	case TypeInt32:
		return "int32:" + strconv.FormatInt(int64(int32(v.Int)), 10)
	case TypeInt64:
		return "int64:" + strconv.FormatInt(v.Int, 10)
	case TypeFloat32:
		return "float32:" + strconv.FormatFloat(v.Float, 'g', -1, 32)
	case TypeFloat64:
		return "float64:" + strconv.FormatFloat(v.Float, 'g', -1, 64)
	case TypeText:
		return "text:" + strconv.Quote(string(v.Bytes))
	case TypeBytes:
		return "bytes:x'" + hex.EncodeToString(v.Bytes) + "'"
	case TypeTimestamp:
		return "timestamp:" + time.UnixMicro(v.Int).UTC().Format("2006-01-02T15:04:05.999999Z")
	case TypeUUID:
		u := hex.EncodeToString(v.UUID[:])
		return "uuid:" + u[0:8] + "-" + u[8:12] + "-" + u[12:16] + "-" + u[16:20] + "-" + u[20:]
	case TypeDecimal:
		return "decimal:" + string(v.Bytes)
	}
	return v.Type.String()
}

func boolInt(i int64) int64 {
	if i != 0 {
		return 1
	}
	return 0
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// orderedFloat64Bits maps a float64 to a uint64 whose unsigned order is the
// float order of Compare: negative numbers have all bits flipped, others only
// the sign bit; every NaN becomes the canonical quiet NaN, above +Inf.
func orderedFloat64Bits(f float64) uint64 {
	if math.IsNaN(f) {
		f = math.NaN()
	}
	b := math.Float64bits(f)
	if b&(1<<63) != 0 {
		return ^b
	}
	return b | 1<<63
}

func float64FromOrderedBits(b uint64) float64 {
	if b&(1<<63) != 0 {
		return math.Float64frombits(b &^ (1 << 63))
	}
	return math.Float64frombits(^b)
}

// orderedFloat32Bits is orderedFloat64Bits for float32.
func orderedFloat32Bits(f float32) uint32 {
	if f != f {
		f = float32(math.NaN())
	}
	b := math.Float32bits(f)
	if b&(1<<31) != 0 {
		return ^b
	}
	return b | 1<<31
}

func float32FromOrderedBits(b uint32) float32 {
	if b&(1<<31) != 0 {
		return math.Float32frombits(b &^ (1 << 31))
	}
	return math.Float32frombits(^b)
}
