// Package types is YSQL's type system: PostgreSQL's types by OID with their
// modifiers, the Datum that carries a value through the executor, text and
// binary input/output in PostgreSQL's formats, casts and implicit
// coercions, comparison, and the mapping to and from DocDB's storage values.
//
// Files: oids.go (the pg_type table, names, format_type), typename.go
// (type names with modifiers, from pg_query or text), datum.go
// (constructors), text_in.go/text_out.go (text I/O), datetime.go and
// datetime_in.go (calendar, date/time parsing and formatting), interval.go,
// numeric.go, json.go, typmod.go (length/precision coercion), cast.go,
// compare.go (ordering, equality keys, hashing), binary.go (send/recv),
// storage.go (DocDB values).
//
// Behaviour is PostgreSQL 15's with DateStyle ISO, MDY; IntervalStyle
// postgres; extra_float_digits 1; the "C" collation. Known limits:
// regclass/regtype/regproc read and print as numbers (name lookup needs
// the catalog); interval field restrictions (INTERVAL YEAR) are accepted
// but only the precision is applied; timetz and multidimensional arrays
// are not supported; the zone abbreviations known on input are a subset of
// PostgreSQL's default set (names from the tz database all work).
package types

import (
	"github.com/cockroachdb/apd/v3"
)

// Family groups types that share a Datum representation.
type Family uint8

// Type families.
const (
	FamUnknown     Family = iota // an untyped literal or parameter before resolution
	FamBool                      // Datum.I (0/1)
	FamInt                       // int2, int4, int8, oid: Datum.I
	FamFloat                     // float4, float8: Datum.F
	FamNumeric                   // numeric: Datum.D
	FamString                    // text, varchar, bpchar, name, "char": Datum.S
	FamBytes                     // bytea: Datum.B
	FamDate                      // date: Datum.I days since 2000-01-01 (PostgreSQL's epoch)
	FamTime                      // time: Datum.I microseconds since midnight
	FamTimestamp                 // timestamp: Datum.I microseconds since 2000-01-01 00:00:00
	FamTimestampTZ               // timestamptz: Datum.I microseconds since 2000-01-01 00:00:00 UTC
	FamInterval                  // interval: Datum.Iv
	FamUUID                      // uuid: Datum.U
	FamJSON                      // json, jsonb: Datum.S (jsonb normalised)
	FamArray                     // arrays (catalog output only): Datum.A
)

// PostgreSQL type OIDs (pg_type.oid).
const (
	OIDBool        uint32 = 16
	OIDBytea       uint32 = 17
	OIDChar        uint32 = 18 // "char"
	OIDName        uint32 = 19
	OIDInt8        uint32 = 20
	OIDInt2        uint32 = 21
	OIDInt2Vector  uint32 = 22
	OIDInt4        uint32 = 23
	OIDRegproc     uint32 = 24
	OIDText        uint32 = 25
	OIDOID         uint32 = 26
	OIDOIDVector   uint32 = 30
	OIDJSON        uint32 = 114
	OIDFloat4      uint32 = 700
	OIDFloat8      uint32 = 701
	OIDUnknown     uint32 = 705
	OIDBoolArray   uint32 = 1000
	OIDInt2Array   uint32 = 1005
	OIDInt4Array   uint32 = 1007
	OIDTextArray   uint32 = 1009
	OIDInt8Array   uint32 = 1016
	OIDOIDArray    uint32 = 1028
	OIDBPChar      uint32 = 1042
	OIDVarchar     uint32 = 1043
	OIDDate        uint32 = 1082
	OIDTime        uint32 = 1083
	OIDTimestamp   uint32 = 1114
	OIDTimestampTZ uint32 = 1184
	OIDInterval    uint32 = 1186
	OIDNumeric     uint32 = 1700
	OIDRegclass    uint32 = 2205
	OIDRegtype     uint32 = 2206
	// regnamespace and regrole: like regclass, names are looked up by
	// the session (see IsReg).
	OIDRegnamespace uint32 = 4089
	OIDRegrole      uint32 = 4096
	OIDUUID         uint32 = 2950
	OIDJSONB        uint32 = 3802
	// void is what pg_sleep returns: a pseudo-type whose one value prints
	// as nothing (Datum.S "", FamString).
	OIDVoid uint32 = 2278
)

// T is a type with its modifier: varchar(10), numeric(12,2), char(3).
// Mod is PostgreSQL's atttypmod (-1 when none): for varchar/bpchar the
// length + 4, for numeric ((precision << 16) | scale) + 4.
type T struct {
	OID uint32
	Mod int32
}

// Interval is PostgreSQL's interval: months, days and microseconds kept
// apart, as PostgreSQL does.
type Interval struct {
	Months int32
	Days   int32
	Micros int64
}

// Datum is one SQL value. Null is true for NULL; otherwise the field of the
// type's family holds the value (see Family).
type Datum struct {
	Null bool
	I    int64
	F    float64
	S    string
	B    []byte
	D    *apd.Decimal
	Iv   Interval
	U    [16]byte
	A    []Datum
}

// NullDatum is SQL NULL.
var NullDatum = Datum{Null: true}
