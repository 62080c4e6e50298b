package docdb

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

// orderedValues lists values of each type in strictly ascending Compare
// order (except where noted equal).
var orderedValues = [][]Value{
	{Bool(false), Bool(true)},
	{Int16(math.MinInt16), Int16(-1), Int16(0), Int16(1), Int16(math.MaxInt16)},
	{Int32(math.MinInt32), Int32(-256), Int32(-1), Int32(0), Int32(255), Int32(math.MaxInt32)},
	{Int64(math.MinInt64), Int64(-1 << 40), Int64(-1), Int64(0), Int64(1), Int64(1 << 40), Int64(math.MaxInt64)},
	{Float32(float32(math.Inf(-1))), Float32(-math.MaxFloat32), Float32(-1), Float32(-math.SmallestNonzeroFloat32),
		Float32(float32(math.Copysign(0, -1))), Float32(0), Float32(math.SmallestNonzeroFloat32), Float32(1.5),
		Float32(math.MaxFloat32), Float32(float32(math.Inf(1))), Float32(float32(math.NaN()))},
	{Float64(math.Inf(-1)), Float64(-math.MaxFloat64), Float64(-2.5), Float64(-math.SmallestNonzeroFloat64),
		Float64(math.Copysign(0, -1)), Float64(0), Float64(math.SmallestNonzeroFloat64), Float64(1),
		Float64(math.MaxFloat64), Float64(math.Inf(1)), Float64(math.NaN())},
	{Text(""), Text("\x00"), Text("\x00\x00"), Text("\x00\xff"), Text("\x01"), Text("a"), Text("a\x00"), Text("a\x00b"),
		Text("a\x01"), Text("ab"), Text("b"), Text("\xff"), Text("\xff\x00"), Text("\xff\xff")},
	{Bytes(nil), Bytes([]byte{0}), Bytes([]byte{0, 0xff}), Bytes([]byte{0xff}), Bytes([]byte{0xff, 0xff})},
	{TimestampMicros(math.MinInt64), TimestampMicros(-1), TimestampMicros(0), TimestampMicros(1_700_000_000_000_000)},
	{UUID([16]byte{}), UUID([16]byte{0: 1}), UUID([16]byte{15: 0xff, 0: 1}), UUID([16]byte{0: 0xff})},
	{Decimal("-1e100"), Decimal("-123.45"), Decimal("-123.4"), Decimal("-2"), Decimal("-1.5"), Decimal("-0.001"),
		Decimal("0"), Decimal("0.000123"), Decimal("0.5"), Decimal("1"), Decimal("1.05"), Decimal("1.5"),
		Decimal("10"), Decimal("99.99"), Decimal("100"), Decimal("1e100")},
}

func TestKeyOrderWithinTypes(t *testing.T) {
	for _, vals := range orderedValues {
		// NULL sorts before every value of the type.
		vals = append([]Value{Null()}, vals...)
		for i := range vals {
			for j := range vals {
				want := cmpInt(int64(i), int64(j))
				if got := vals[i].Compare(vals[j]); got != want {
					t.Errorf("%s.Compare(%s) = %d, want %d", vals[i], vals[j], got, want)
				}
				for _, desc := range []bool{false, true} {
					got := bytes.Compare(AppendKey(nil, vals[i], desc), AppendKey(nil, vals[j], desc))
					w := want
					if desc {
						w = -w
					}
					if got != w {
						t.Errorf("desc=%v: encodings of %s and %s compare %d, want %d", desc, vals[i], vals[j], got, w)
					}
				}
			}
		}
	}
}

func TestKeyOrderAcrossTypes(t *testing.T) {
	var all []Value
	for _, vals := range orderedValues {
		all = append(all, vals...)
	}
	all = append(all, Null())
	for _, a := range all {
		for _, b := range all {
			for _, desc := range []bool{false, true} {
				want := a.Compare(b)
				if desc {
					want = -want
				}
				if got := bytes.Compare(AppendKey(nil, a, desc), AppendKey(nil, b, desc)); got != want {
					t.Fatalf("desc=%v: %s vs %s: %d, want %d", desc, a, b, got, want)
				}
			}
		}
	}
}

func TestKeyEncodingEdgeCases(t *testing.T) {
	for _, tc := range []struct {
		v    Value
		desc bool
		want []byte
	}{
		{Null(), false, []byte{0x30}},
		{Null(), true, []byte{0x70}},
		{Int64(0), false, []byte{0x34, 0x80, 0, 0, 0, 0, 0, 0, 0}},
		{Int64(-1), false, []byte{0x34, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{Int64(0), true, []byte{0x6c, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{Text(""), false, []byte{0x37, 0, 0}},
		{Text(""), true, []byte{0x69, 0xff, 0xff}},
		{Text("a\x00b"), false, []byte{0x37, 'a', 0, 0xff, 'b', 0, 0}},
		{Bytes([]byte{0xff, 0}), true, []byte{0x68, 0, 0xff, 0, 0xff, 0xff}},
		{Float64(math.Copysign(0, -1)), false, []byte{0x36, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{Float64(0), false, []byte{0x36, 0x80, 0, 0, 0, 0, 0, 0, 0}},
		{Decimal("0.00"), false, []byte{0x3b, decZero}},
	} {
		got := AppendKey(nil, tc.v, tc.desc)
		if !bytes.Equal(got, tc.want) {
			t.Errorf("AppendKey(%s, desc=%v) = % x, want % x", tc.v, tc.desc, got, tc.want)
		}
		v, desc, rest, err := DecodeKey(append(got, 0x21))
		if err != nil || desc != tc.desc || !v.Equal(tc.v) || !bytes.Equal(rest, []byte{0x21}) {
			t.Errorf("DecodeKey(% x) = %s, %v, % x, %v", got, v, desc, rest, err)
		}
	}
}

func TestKeyTagsAboveGroupEnd(t *testing.T) {
	for ty := TypeNull; ty < numValueTypes; ty++ {
		for _, desc := range []bool{false, true} {
			tag := keyTag(ty, desc)
			if tag <= GroupEnd || tag == hashMarker || tag == columnMarker || tag == versionMarker || tag == unsupportedTag {
				t.Errorf("tag %#x of %s desc=%v collides with a DocKey marker", tag, ty, desc)
			}
		}
	}
}

func TestDecimalCanonicalRoundTrip(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"1.50", "1.5"}, {"-0.0", "0"}, {"+007", "7"}, {"1e3", "1000"}, {"12.5e-3", "0.0125"},
		{"123456", "123456"}, {"1e50", "1e50"}, {"-1.5e-30", "-1.5e-30"}, {".5", "0.5"}, {"5.", "5"},
	} {
		v, _, _, err := DecodeKey(AppendKey(nil, Decimal(tc.in), false))
		if err != nil || string(v.Bytes) != tc.want {
			t.Errorf("decimal %q: got %q, %v, want %q", tc.in, v.Bytes, err, tc.want)
		}
	}
	for _, bad := range []string{"", "-", "NaN", "Infinity", "1e", "1.2.3", "1x", "e5", "1e999999999"} {
		if _, err := EncodeKey(nil, Decimal(bad), false); !errors.Is(err, ErrUnsupported) {
			t.Errorf("EncodeKey(decimal %q) = %v, want ErrUnsupported", bad, err)
		}
		if _, _, _, err := DecodeKey(AppendKey(nil, Decimal(bad), false)); !errors.Is(err, ErrUnsupported) {
			t.Errorf("DecodeKey(AppendKey(decimal %q)) = %v, want ErrUnsupported", bad, err)
		}
	}
}

func TestDecodeKeyRejectsMalformed(t *testing.T) {
	for _, b := range [][]byte{
		nil, {0x00}, {0x21}, {0x34, 1, 2}, {0x37, 'a'}, {0x37, 'a', 0}, {0x37, 0, 7}, {0x31, 2}, {0x3a, 1},
		{0x3b, 9}, {0x3b, decPos, 0x80, 0, 0, 1, '0', 0}, {0x3b, decPos, 0x80, 0, 0, 1, 'x', 0},
	} {
		if _, _, _, err := DecodeKey(b); err == nil {
			t.Errorf("DecodeKey(% x) accepted malformed input", b)
		}
		if _, err := skipKey(b); err == nil {
			t.Errorf("skipKey(% x) accepted malformed input", b)
		}
	}
}

func TestValueEncodingRoundTrip(t *testing.T) {
	for _, vals := range orderedValues {
		for _, v := range append(vals, Null()) {
			enc := AppendValue(nil, v)
			got, err := DecodeValue(enc)
			if err != nil {
				t.Fatalf("DecodeValue(%s): %v", v, err)
			}
			if v.Type == TypeDecimal {
				if !bytes.Equal(got.Bytes, v.Bytes) {
					t.Errorf("decimal %s came back as %s", v, got)
				}
			} else if !got.Equal(v) {
				t.Errorf("%s came back as %s", v, got)
			}
		}
	}
	for _, b := range [][]byte{nil, {byte(TypeBool), 2}, {byte(TypeInt64)}, {byte(TypeFloat64), 1}, {byte(TypeUUID), 1}, {99},
		{byte(TypeInt16), 0x80, 0x80, 0x04}, {byte(TypeNull), 0}} {
		if _, err := DecodeValue(b); err == nil {
			t.Errorf("DecodeValue(% x) accepted malformed input", b)
		}
	}
}

func TestValueString(t *testing.T) {
	for _, tc := range []struct {
		v    Value
		want string
	}{
		{Null(), "null"}, {Bool(true), "bool:true"}, {Int16(-3), "int16:-3"}, {Int64(5), "int64:5"},
		{Float64(math.Inf(-1)), "float64:-Inf"}, {Float32(1.5), "float32:1.5"}, {Text("a\x00"), `text:"a\x00"`},
		{Bytes([]byte{0, 0xff}), "bytes:x'00ff'"}, {TimestampMicros(1), "timestamp:1970-01-01T00:00:00.000001Z"},
		{UUID([16]byte{0: 0xab, 15: 1}), "uuid:ab000000-0000-0000-0000-000000000001"}, {Decimal("1.50"), "decimal:1.50"},
	} {
		if got := tc.v.String(); got != tc.want {
			t.Errorf("String() = %s, want %s", got, tc.want)
		}
	}
}
