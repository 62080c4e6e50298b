package types

import (
	"github.com/cockroachdb/apd/v3"
)

// Datum constructors, one per family.

// DBool returns a bool datum.
func DBool(b bool) Datum {
	if b {
		return Datum{I: 1}
	}
	return Datum{}
}

// DInt returns an int2/int4/int8/oid datum.
func DInt(i int64) Datum { return Datum{I: i} }

// DFloat returns a float4/float8 datum.
func DFloat(f float64) Datum { return Datum{F: f} }

// DNumeric returns a numeric datum.
func DNumeric(d *apd.Decimal) Datum { return Datum{D: d} }

// DString returns a text/varchar/bpchar/name/"char"/json/jsonb datum.
func DString(s string) Datum { return Datum{S: s} }

// DBytes returns a bytea datum.
func DBytes(b []byte) Datum { return Datum{B: b} }

// DDate returns a date datum from days since 2000-01-01.
func DDate(days int64) Datum { return Datum{I: days} }

// DMicros returns a time/timestamp/timestamptz datum.
func DMicros(us int64) Datum { return Datum{I: us} }

// DInterval returns an interval datum.
func DInterval(iv Interval) Datum { return Datum{Iv: iv} }

// DUUID returns a uuid datum.
func DUUID(u [16]byte) Datum { return Datum{U: u} }

// DArray returns an array datum.
func DArray(elems []Datum) Datum { return Datum{A: elems} }

// Bool returns d as a bool (FamBool).
func (d Datum) Bool() bool { return d.I != 0 }
