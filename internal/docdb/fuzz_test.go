package docdb

import (
	"bytes"
	"math"
	"strconv"
	"testing"
)

// fuzzValue builds a value of type ty (mod the number of types) from raw
// fuzz inputs.
func fuzzValue(ty uint8, i int64, f float64, b []byte) Value {
	var u [16]byte
	copy(u[:], b)
	switch ValueType(ty % uint8(numValueTypes)) {
	case TypeNull:
		return Null()
	case TypeBool:
		return Bool(i&1 == 1)
	case TypeInt16:
		return Int16(int16(i))
	case TypeInt32:
		return Int32(int32(i))
	case TypeInt64:
		return Int64(i)
	case TypeFloat32:
		return Float32(float32(f))
	case TypeFloat64:
		return Float64(f)
	case TypeText:
		return Text(string(b))
	case TypeBytes:
		return Bytes(b)
	case TypeTimestamp:
		return TimestampMicros(i)
	case TypeUUID:
		return UUID(u)
	default:
		// A decimal made from the int and a scale taken from the float.
		s := strconv.FormatInt(i, 10)
		if e := int(f) % 40; e != 0 && !math.IsNaN(f) {
			s += "e" + strconv.Itoa(e)
		}
		return Decimal(s)
	}
}

func addValueSeeds(f *testing.F) {
	for ty := uint8(0); ty < uint8(numValueTypes); ty++ {
		f.Add(ty, int64(0), 0.0, []byte{}, false)
		f.Add(ty, int64(-1), math.Copysign(0, -1), []byte{0}, true)
		f.Add(ty, int64(math.MinInt64), math.Inf(-1), []byte{0xff, 0}, false)
		f.Add(ty, int64(math.MaxInt64), math.NaN(), []byte("a\x00\xffb"), true)
		f.Add(ty, int64(12345), 3.5, []byte("hello"), false)
	}
}

func FuzzKeyRoundTrip(f *testing.F) {
	addValueSeeds(f)
	f.Fuzz(func(t *testing.T, ty uint8, i int64, fl float64, b []byte, desc bool) {
		v := fuzzValue(ty, i, fl, b)
		enc := AppendKey([]byte{0xaa}, v, desc)[1:]
		suffix := []byte{GroupEnd, 0x00, 0xff}
		got, gotDesc, rest, err := DecodeKey(append(enc, suffix...))
		if err != nil {
			t.Fatalf("DecodeKey(AppendKey(%s)): %v", v, err)
		}
		if gotDesc != desc || got.Compare(v) != 0 || got.Type != v.Type {
			t.Fatalf("round trip of %s (desc=%v) gave %s (desc=%v)", v, desc, got, gotDesc)
		}
		if !bytes.Equal(rest, suffix) {
			t.Fatalf("rest = % x, want % x", rest, suffix)
		}
		if n, err := skipKey(append(enc, suffix...)); err != nil || n != len(enc) {
			t.Fatalf("skipKey = %d, %v; want %d", n, err, len(enc))
		}
		// Re-encoding the decoded value is stable.
		if again := AppendKey(nil, got, desc); !bytes.Equal(again, enc) {
			t.Fatalf("re-encoding %s: % x != % x", got, again, enc)
		}
	})
}

func FuzzKeyOrder(f *testing.F) {
	for ty := uint8(0); ty < uint8(numValueTypes); ty++ {
		f.Add(ty, int64(-1), int64(1), -1.0, 0.0, []byte{}, []byte{0}, false)
		f.Add(ty, int64(5), int64(5), math.Inf(1), math.NaN(), []byte("a\x00"), []byte("a"), true)
		f.Add(ty, int64(math.MinInt64), int64(math.MaxInt64), math.Copysign(0, -1), 0.0, []byte{0xff}, []byte{0xff, 0}, true)
		f.Add(ty, int64(100), int64(99), 1e300, -1e-300, []byte("ab"), []byte("b"), false)
	}
	f.Fuzz(func(t *testing.T, ty uint8, i1, i2 int64, f1, f2 float64, b1, b2 []byte, desc bool) {
		a, b := fuzzValue(ty, i1, f1, b1), fuzzValue(ty, i2, f2, b2)
		want := a.Compare(b)
		if want != -b.Compare(a) {
			t.Fatalf("Compare not antisymmetric for %s, %s", a, b)
		}
		if desc {
			want = -want
		}
		if got := bytes.Compare(AppendKey(nil, a, desc), AppendKey(nil, b, desc)); got != want {
			t.Fatalf("desc=%v: encodings of %s and %s compare %d, want %d", desc, a, b, got, want)
		}
	})
}

func FuzzWriteBatchUnmarshal(f *testing.F) {
	key := DocKey{TableID: 1, RangeParts: []KeyPart{{Value: Text("k")}}}.Encode()
	seed := &WriteBatch{Ops: []WriteOp{
		{Kind: OpPutRow, RowKey: key, Columns: []ColumnValue{{ID: 1, Value: Int64(-5)}, {ID: 2, Value: Text("x")}}, TTL: 3},
		{Kind: OpPutColumns, RowKey: key, Columns: []ColumnValue{{ID: 3, Value: Float64(1.5)}, {ID: 4, Value: UUID([16]byte{1})}}},
		{Kind: OpDeleteColumns, RowKey: key, Columns: []ColumnValue{{ID: 2}}},
		{Kind: OpDeleteRow, RowKey: key},
	}}
	f.Add(seed.Marshal())
	f.Add((&WriteBatch{}).Marshal())
	f.Add([]byte{})
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{1, 1, 1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, data []byte) {
		var b WriteBatch
		if err := b.Unmarshal(data); err != nil {
			return
		}
		// Whatever decodes re-encodes deterministically.
		enc := b.Marshal()
		var b2 WriteBatch
		if err := b2.Unmarshal(enc); err != nil {
			t.Fatalf("re-decoding %x: %v", enc, err)
		}
		if enc2 := b2.Marshal(); !bytes.Equal(enc, enc2) {
			t.Fatalf("marshal not deterministic: %x != %x", enc, enc2)
		}
	})
}
