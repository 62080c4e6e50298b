package types

import (
	"bytes"
	"math"
	"math/rand"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/shaledb/shaledb/internal/docdb"
)

// randDatum returns a random non-NULL value of t, biased towards edge cases.
func randDatum(r *rand.Rand, t T) Datum {
	pick := func(vals ...int64) int64 { return vals[r.Intn(len(vals))] }
	switch t.OID {
	case OIDBool:
		return DBool(r.Intn(2) == 0)
	case OIDInt2:
		return DInt(pick(math.MinInt16, math.MaxInt16, 0, -1, 1, int64(int16(r.Uint32()))))
	case OIDInt4:
		return DInt(pick(math.MinInt32, math.MaxInt32, 0, -1, int64(int32(r.Uint32()))))
	case OIDInt8:
		return DInt(pick(math.MinInt64, math.MaxInt64, 0, -1, int64(r.Uint64())))
	case OIDOID:
		return DInt(pick(0, math.MaxUint32, int64(r.Uint32())))
	case OIDFloat4:
		fs := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 1.5, -2.25, float64(math.MaxFloat32), float64(math.SmallestNonzeroFloat32), float64(float32(r.NormFloat64() * 1e6))}
		return DFloat(fs[r.Intn(len(fs))])
	case OIDFloat8:
		fs := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 1.5, -2.25, math.MaxFloat64, math.SmallestNonzeroFloat64, r.NormFloat64() * math.Pow(10, float64(r.Intn(40)-20))}
		return DFloat(fs[r.Intn(len(fs))])
	case OIDNumeric:
		c := apd.New(int64(r.Uint64()>>uint(r.Intn(64))), int32(r.Intn(30)-20))
		if r.Intn(2) == 0 {
			c.Negative = true
		}
		return DNumeric(normNumeric(c))
	case OIDText, OIDVarchar, OIDName:
		return DString(randString(r))
	case OIDBPChar:
		s := randString(r)
		if n := t.CharLen(); n >= 0 {
			d, _ := applyTypmod(DString(s), t, true)
			return d
		}
		return DString(s)
	case OIDBytea:
		b := make([]byte, r.Intn(6))
		r.Read(b)
		return DBytes(b)
	case OIDDate:
		return DDate(pick(DateNegInfinity, DatePosInfinity, minDate, endDate-1, 0, -1, int64(r.Intn(200000)-100000)))
	case OIDTime:
		return DMicros(pick(0, usPerDay, r.Int63n(usPerDay)))
	case OIDTimestamp, OIDTimestampTZ:
		return DMicros(pick(TimestampNegInfinity, TimestampPosInfinity, minTimestampUs, maxStorableTimestamp-1, 0, -1, r.Int63n(1<<50)-(1<<49)))
	case OIDInterval:
		return DInterval(Interval{Months: int32(r.Uint32()), Days: int32(r.Intn(100) - 50), Micros: r.Int63() - (1 << 62)})
	case OIDUUID:
		var u [16]byte
		r.Read(u[:])
		return DUUID(u)
	case OIDJSONB:
		docs := []string{`{"a": 1}`, `[1, "x", null]`, `"s"`, `1.50`}
		return DString(docs[r.Intn(len(docs))])
	case OIDJSON:
		return DString(`{"b":1,  "a":[true]}`)
	}
	if t.IsArray() {
		n := r.Intn(4)
		out := make([]Datum, n)
		for i := range out {
			if r.Intn(5) == 0 {
				out[i] = NullDatum
			} else {
				out[i] = randDatum(r, t.Elem())
			}
		}
		return DArray(out)
	}
	panic("no generator for " + t.String())
}

func randString(r *rand.Rand) string {
	alphabet := []string{"", " ", "a", "b", "z", "é", "😀", "\x01", "A", "  "}
	n := r.Intn(5)
	s := ""
	for i := 0; i < n; i++ {
		s += alphabet[r.Intn(len(alphabet))]
	}
	return s
}

var storageTypes = []T{TBool, TInt2, TInt4, TInt8, TOID, TFloat4, TFloat8, TNumeric, TText, MakeVarchar(5), MakeBPChar(4), TBPChar, TName,
	TBytea, TDate, TTime, TTimestamp, TTimestampTZ, TInterval, TUUID, TJSON, TJSONB, TInt4Array, TTextArray, TBoolArray, TInt8Array, TOIDArray, TInt2Array}

func TestStorageRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for _, typ := range storageTypes {
		for i := 0; i < 300; i++ {
			d := randDatum(r, typ)
			v, err := ToStorage(d, typ)
			if err != nil {
				t.Fatalf("%s: ToStorage(%s): %v", typ, FormatText(d, typ, time.UTC), err)
			}
			if v.Type != StorageType(typ) {
				t.Fatalf("%s: stored as %s, StorageType says %s", typ, v.Type, StorageType(typ))
			}
			back, err := FromStorage(v, typ)
			if err != nil {
				t.Fatalf("%s: FromStorage(%s): %v", typ, v, err)
			}
			if Compare(back, d, typ) != 0 || FormatText(back, typ, time.UTC) != FormatText(d, typ, time.UTC) {
				t.Fatalf("%s: %q came back as %q", typ, FormatText(d, typ, time.UTC), FormatText(back, typ, time.UTC))
			}
		}
		if v, err := ToStorage(NullDatum, typ); err != nil || !v.IsNull() {
			t.Fatalf("%s: NULL stored as %v %v", typ, v, err)
		}
	}
}

// TestKeyOrder checks that DocDB's key encoding of the stored values sorts
// as Compare sorts the SQL values, for every orderable type.
func TestKeyOrder(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for _, typ := range storageTypes {
		if !Orderable(typ) {
			if CheckKeyType(typ) == nil {
				t.Errorf("%s: not orderable but CheckKeyType accepts it", typ)
			}
			continue
		}
		for i := 0; i < 2000; i++ {
			a, b := randDatum(r, typ), randDatum(r, typ)
			va, _ := ToKeyStorage(a, typ)
			vb, _ := ToKeyStorage(b, typ)
			ka, err1 := docdb.EncodeKey(nil, va, false)
			kb, err2 := docdb.EncodeKey(nil, vb, false)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: key encoding: %v %v", typ, err1, err2)
			}
			want := Compare(a, b, typ)
			if got := bytes.Compare(ka, kb); got != want {
				t.Fatalf("%s: %q vs %q: keys compare %d, values %d", typ, FormatText(a, typ, time.UTC), FormatText(b, typ, time.UTC), got, want)
			}
		}
	}
	for _, typ := range []T{TInterval, TJSON, TJSONB, TInt4Array} {
		if Orderable(typ) || CheckKeyType(typ) == nil {
			t.Errorf("%s should not be a key type", typ)
		}
	}
}

// TestKeyDecodeRoundTrip reads values back from DocDB's key encoding (as a
// scan of a key column does) and values encoding.
func TestKeyDecodeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for _, typ := range append(storageTypes, MakeNumeric(12, 3)) {
		for i := 0; i < 300; i++ {
			var d Datum
			if typ.OID == OIDNumeric && typ.Mod >= 0 {
				d, _ = ParseText("12.5", typ, time.UTC)
			} else {
				d = randDatum(r, typ)
			}
			if Orderable(typ) {
				v, _ := ToKeyStorage(d, typ)
				k, err := docdb.EncodeKey(nil, v, i%2 == 0)
				if err != nil {
					t.Fatal(err)
				}
				kv, _, _, err := docdb.DecodeKey(k)
				if err != nil {
					t.Fatalf("%s: %v", typ, err)
				}
				back, err := FromStorage(kv, typ)
				if err != nil {
					t.Fatalf("%s: %v", typ, err)
				}
				if Compare(back, d, typ) != 0 {
					t.Fatalf("%s: key %q came back %q", typ, FormatText(d, typ, time.UTC), FormatText(back, typ, time.UTC))
				}
				if typ.Mod >= 0 && typ.OID == OIDNumeric && FormatText(back, typ, time.UTC) != "12.500" {
					t.Fatalf("numeric(12,3) key read back as %q", FormatText(back, typ, time.UTC))
				}
			}
			v, _ := ToStorage(d, typ)
			vv, err := docdb.DecodeValue(docdb.AppendValue(nil, v))
			if err != nil {
				t.Fatal(err)
			}
			back, err := FromStorage(vv, typ)
			if err != nil || FormatText(back, typ, time.UTC) != FormatText(d, typ, time.UTC) {
				t.Fatalf("%s: value %q came back %q %v", typ, FormatText(d, typ, time.UTC), FormatText(back, typ, time.UTC), err)
			}
		}
	}
}

func TestTimestampStorageEpoch(t *testing.T) {
	if _, err := ToStorage(DMicros(endTimestampUs-1), TTimestamp); err == nil {
		t.Fatal("294276-12-31 stored without error")
	}
	// 2000-01-01 00:00:00 is 946684800 s after the Unix epoch.
	v, _ := ToStorage(DMicros(0), TTimestamp)
	if v.Int != 946684800*1000000 {
		t.Fatalf("got %d", v.Int)
	}
	d, _ := ParseText("1970-01-01 00:00:00+00", TTimestampTZ, time.UTC)
	v, _ = ToStorage(d, TTimestampTZ)
	if v.Int != 0 {
		t.Fatalf("unix epoch stored as %d", v.Int)
	}
}
