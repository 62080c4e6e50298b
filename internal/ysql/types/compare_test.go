package types

import (
	"bytes"
	"math/rand"
	"testing"
	"time"
)

func TestCompareAgainstPostgres(t *testing.T) {
	// Each row: a < b, a = b or a > b as PostgreSQL 15 evaluates it.
	cases := []struct {
		typ  string
		a, b string
		want int
	}{
		{"interval", "1 mon", "30 days", 0},
		{"interval", "1 day", "24 hours", 0},
		{"interval", "1 year", "360 days", 0},
		{"interval", "-1 day", "1 hour", -1},
		{"interval", "178956970 years", "-178956970 years", 1},
		{"character(4)", "ab  ", "ab", 0},
		{"bpchar", "a", "a\x01", -1},
		{"bpchar", "", "a", -1},
		{"double precision", "nan", "inf", 1},
		{"double precision", "nan", "nan", 0},
		{"double precision", "-0", "0", 0},
		{"double precision", "-inf", "-1e308", -1},
		{"numeric", "nan", "inf", 1},
		{"numeric", "-inf", "-1e100", -1},
		{"numeric", "1.50", "1.5", 0},
		{"numeric", "-0.001", "0", -1},
		{"jsonb", `{"a":1}`, `{"a":1.0}`, 0},
		{"jsonb", `[1,2]`, `[1,2,3]`, -1},
		{"jsonb", `{"b":1}`, `[1,2,3]`, 1},
		{"jsonb", `null`, `"a"`, -1},
		{"jsonb", `"a"`, `1`, -1},
		{"jsonb", `1`, `true`, -1},
		{"jsonb", `true`, `[]`, 1},
		{"jsonb", `[]`, `null`, -1},
		{"jsonb", `1`, `[1]`, -1},
		{"jsonb", `{"aa":1}`, `{"b":1}`, -1},
		{"text", "a", "B", 1},
		{"text", "ab", "abc", -1},
		{"text", "é", "z", 1},
		{"bytea", `\x00`, `\x`, 1},
		{"uuid", "00000000-0000-0000-0000-000000000001", "10000000-0000-0000-0000-000000000000", -1},
		{"timestamp with time zone", "2024-01-01 00:00+01", "2023-12-31 23:30+00", -1},
		{"date", "-infinity", "4714-11-24 BC", -1},
		{"boolean", "f", "t", -1},
		{"integer[]", "{1,2}", "{1,2,NULL}", -1},
		{"integer[]", "{1,NULL}", "{1,3}", 1},
	}
	for _, c := range cases {
		typ, err := ParseType(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		a, err1 := ParseText(c.a, typ, time.UTC)
		b, err2 := ParseText(c.b, typ, time.UTC)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s: %v %v", c.typ, err1, err2)
		}
		if got := Compare(a, b, typ); got != c.want {
			t.Errorf("%s: compare(%q, %q) = %d, want %d", c.typ, c.a, c.b, got, c.want)
		}
		if got := Compare(b, a, typ); got != -c.want {
			t.Errorf("%s: compare(%q, %q) = %d, want %d", c.typ, c.b, c.a, got, -c.want)
		}
		ka, kb := AppendKey(nil, a, typ), AppendKey(nil, b, typ)
		if (c.want == 0) != bytes.Equal(ka, kb) {
			t.Errorf("%s: %q and %q: keys equal %v, values equal %v", c.typ, c.a, c.b, bytes.Equal(ka, kb), c.want == 0)
		}
		if c.want == 0 && Hash(a, typ) != Hash(b, typ) {
			t.Errorf("%s: equal values hash differently", c.typ)
		}
	}
}

// TestKeyMatchesCompare: for random values, equal keys exactly when
// Compare says equal.
func TestKeyMatchesCompare(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for _, typ := range storageTypes {
		for i := 0; i < 1000; i++ {
			a, b := randDatum(r, typ), randDatum(r, typ)
			if r.Intn(4) == 0 {
				b = a
			}
			eq := Compare(a, b, typ) == 0
			if keq := bytes.Equal(AppendKey(nil, a, typ), AppendKey(nil, b, typ)); eq != keq {
				t.Fatalf("%s: %q vs %q: compare-equal %v, key-equal %v", typ, FormatText(a, typ, time.UTC), FormatText(b, typ, time.UTC), eq, keq)
			}
		}
	}
}
