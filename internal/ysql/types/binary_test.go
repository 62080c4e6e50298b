package types

import (
	"encoding/hex"
	"math/rand"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

func TestBinaryAgainstPostgres(t *testing.T) {
	for _, c := range pgBinaryCases {
		typ, err := ParseType(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		d, err := ParseText(c.in, typ, time.UTC)
		if err != nil {
			t.Fatalf("%s %q: %v", c.typ, c.in, err)
		}
		b, err := EncodeBinary(d, typ)
		if err != nil {
			t.Fatalf("%s %q: %v", c.typ, c.in, err)
		}
		if got := hex.EncodeToString(b); got != c.hex {
			t.Errorf("%s %q: send %s, PostgreSQL %s", c.typ, c.in, got, c.hex)
		}
		want, _ := hex.DecodeString(c.hex)
		back, err := DecodeBinary(want, typ)
		if err != nil {
			t.Errorf("%s %q: recv: %v", c.typ, c.in, err)
			continue
		}
		if Compare(back, d, typ) != 0 || FormatText(back, typ, time.UTC) != FormatText(d, typ, time.UTC) {
			t.Errorf("%s %q: recv gave %q", c.typ, c.in, FormatText(back, typ, time.UTC))
		}
	}
}

// TestBinaryAgainstPgtype decodes our binary output with pgx's codecs and
// compares the text they print (the format clients see).
func TestBinaryAgainstPgtype(t *testing.T) {
	m := pgtype.NewMap()
	r := rand.New(rand.NewSource(4))
	for _, typ := range []T{TInt2, TInt4, TInt8, TFloat4, TFloat8, TNumeric, TBool, TText, TBytea, TDate, TTime, TTimestamp, TTimestampTZ, TInterval, TUUID, TInt4Array, TTextArray} {
		for i := 0; i < 200; i++ {
			d := randDatum(r, typ)
			b, err := EncodeBinary(d, typ)
			if err != nil {
				t.Fatal(err)
			}
			// pgtype: decode our binary, re-encode as text, and parse that.
			var v any
			if err := m.Scan(typ.OID, pgtype.BinaryFormatCode, b, &v); err != nil {
				t.Fatalf("%s %q: pgtype scan: %v", typ, FormatText(d, typ, time.UTC), err)
			}
			var pgb []byte
			pgb, err = m.Encode(typ.OID, pgtype.BinaryFormatCode, v, nil)
			if err != nil {
				// pgtype cannot re-encode some values (e.g. infinity timestamps through time.Time).
				continue
			}
			back, err := DecodeBinary(pgb, typ)
			if err != nil {
				t.Fatalf("%s %q: decoding pgtype's encoding %x: %v", typ, FormatText(d, typ, time.UTC), pgb, err)
			}
			if Compare(back, d, typ) != 0 {
				t.Fatalf("%s: %q went through pgtype as %q", typ, FormatText(d, typ, time.UTC), FormatText(back, typ, time.UTC))
			}
		}
	}
}

func TestBinaryErrors(t *testing.T) {
	if _, err := DecodeBinary([]byte{1, 2}, TInt4); err == nil {
		t.Error("short int4 accepted")
	}
	if _, err := DecodeBinary([]byte{0, 1, 0, 0, 0, 0, 0, 0, 0x27, 0x10}, TNumeric); err == nil {
		t.Error("numeric digit 10000 accepted")
	}
	if _, err := DecodeBinary([]byte{2, '{', '}'}, TJSONB); err == nil {
		t.Error("jsonb version 2 accepted")
	}
}
