package types

import (
	"sort"
	"strconv"
)

// TypeInfo is one pg_type row (the fields the catalog needs) plus the
// type's family and its format_type() name.
type TypeInfo struct {
	OID       uint32
	Name      string // typname: int4, varchar, _int4
	SQLName   string // format_type's base name: integer, character varying
	Family    Family
	Len       int16 // typlen: -1 varlena, -2 cstring/unknown
	ByVal     bool
	Type      byte // typtype: 'b' base, 'p' pseudo
	Category  byte // typcategory: N numeric, S string, D datetime, A array...
	Preferred bool
	Elem      uint32 // typelem (arrays, name, int2vector, oidvector)
	Array     uint32 // typarray
	Input     string // typinput
	Output    string
	Receive   string
	Send      string
	ModIn     string // typmodin, "-" when none
	ModOut    string
	Align     byte // typalign: c s i d
	Storage   byte // typstorage: p x m e
	Collation uint32
	// HasMod is true when the type accepts a modifier (varchar(10)).
	HasMod bool
}

// Array OIDs beyond the ones named in types.go.
const (
	OIDJSONArray        uint32 = 199
	OIDByteaArray       uint32 = 1001
	OIDCharArray        uint32 = 1002
	OIDNameArray        uint32 = 1003
	OIDRegprocArray     uint32 = 1008
	OIDBPCharArray      uint32 = 1014
	OIDVarcharArray     uint32 = 1015
	OIDFloat4Array      uint32 = 1021
	OIDFloat8Array      uint32 = 1022
	OIDTimestampArray   uint32 = 1115
	OIDDateArray        uint32 = 1182
	OIDTimeArray        uint32 = 1183
	OIDTimestampTZArray uint32 = 1185
	OIDIntervalArray    uint32 = 1187
	OIDNumericArray     uint32 = 1231
	OIDRegclassArray    uint32 = 2210
	OIDRegtypeArray     uint32 = 2211
	OIDRegnamespaceArr  uint32 = 4090
	OIDRegroleArray     uint32 = 4097
	OIDUUIDArray        uint32 = 2951
	OIDJSONBArray       uint32 = 3807
)

func base(oid uint32, name, sqlName string, fam Family, l int16, byval bool, cat byte, pref bool, elem, arr uint32, in, out, recv, send, modin, modout string, align, storage byte, coll uint32) *TypeInfo {
	return &TypeInfo{OID: oid, Name: name, SQLName: sqlName, Family: fam, Len: l, ByVal: byval, Type: 'b',
		Category: cat, Preferred: pref, Elem: elem, Array: arr, Input: in, Output: out, Receive: recv, Send: send,
		ModIn: modin, ModOut: modout, Align: align, Storage: storage, Collation: coll, HasMod: modin != "-"}
}

func arrayOf(oid uint32, elem uint32, modin, modout string, align byte, coll uint32) *TypeInfo {
	return &TypeInfo{OID: oid, Family: FamArray, Len: -1, Type: 'b', Category: 'A', Elem: elem,
		Input: "array_in", Output: "array_out", Receive: "array_recv", Send: "array_send",
		ModIn: modin, ModOut: modout, Align: align, Storage: 'x', Collation: coll, HasMod: modin != "-"}
}

// typeTable is pg_type for the supported types, as PostgreSQL 15 has it.
var typeTable = []*TypeInfo{
	base(OIDBool, "bool", "boolean", FamBool, 1, true, 'B', true, 0, 1000, "boolin", "boolout", "boolrecv", "boolsend", "-", "-", 'c', 'p', 0),
	base(OIDBytea, "bytea", "bytea", FamBytes, -1, false, 'U', false, 0, 1001, "byteain", "byteaout", "bytearecv", "byteasend", "-", "-", 'i', 'x', 0),
	base(OIDChar, "char", `"char"`, FamString, 1, true, 'Z', false, 0, 1002, "charin", "charout", "charrecv", "charsend", "-", "-", 'c', 'p', 0),
	base(OIDName, "name", "name", FamString, 64, false, 'S', false, OIDChar, 1003, "namein", "nameout", "namerecv", "namesend", "-", "-", 'c', 'p', 950),
	base(OIDInt8, "int8", "bigint", FamInt, 8, true, 'N', false, 0, 1016, "int8in", "int8out", "int8recv", "int8send", "-", "-", 'd', 'p', 0),
	base(OIDInt2, "int2", "smallint", FamInt, 2, true, 'N', false, 0, 1005, "int2in", "int2out", "int2recv", "int2send", "-", "-", 's', 'p', 0),
	base(OIDInt2Vector, "int2vector", "int2vector", FamArray, -1, false, 'A', false, OIDInt2, 1006, "int2vectorin", "int2vectorout", "int2vectorrecv", "int2vectorsend", "-", "-", 'i', 'p', 0),
	base(OIDInt4, "int4", "integer", FamInt, 4, true, 'N', false, 0, 1007, "int4in", "int4out", "int4recv", "int4send", "-", "-", 'i', 'p', 0),
	base(OIDRegproc, "regproc", "regproc", FamInt, 4, true, 'N', false, 0, 1008, "regprocin", "regprocout", "regprocrecv", "regprocsend", "-", "-", 'i', 'p', 0),
	base(OIDText, "text", "text", FamString, -1, false, 'S', true, 0, 1009, "textin", "textout", "textrecv", "textsend", "-", "-", 'i', 'x', 100),
	base(OIDOID, "oid", "oid", FamInt, 4, true, 'N', true, 0, 1028, "oidin", "oidout", "oidrecv", "oidsend", "-", "-", 'i', 'p', 0),
	base(OIDOIDVector, "oidvector", "oidvector", FamArray, -1, false, 'A', false, OIDOID, 1013, "oidvectorin", "oidvectorout", "oidvectorrecv", "oidvectorsend", "-", "-", 'i', 'p', 0),
	base(OIDJSON, "json", "json", FamJSON, -1, false, 'U', false, 0, 199, "json_in", "json_out", "json_recv", "json_send", "-", "-", 'i', 'x', 0),
	base(OIDFloat4, "float4", "real", FamFloat, 4, true, 'N', false, 0, 1021, "float4in", "float4out", "float4recv", "float4send", "-", "-", 'i', 'p', 0),
	base(OIDFloat8, "float8", "double precision", FamFloat, 8, true, 'N', true, 0, 1022, "float8in", "float8out", "float8recv", "float8send", "-", "-", 'd', 'p', 0),
	{OID: OIDUnknown, Name: "unknown", SQLName: "unknown", Family: FamUnknown, Len: -2, Type: 'p', Category: 'X',
		Input: "unknownin", Output: "unknownout", Receive: "unknownrecv", Send: "unknownsend", ModIn: "-", ModOut: "-", Align: 'c', Storage: 'p'},
	{OID: OIDVoid, Name: "void", SQLName: "void", Family: FamString, Len: 4, ByVal: true, Type: 'p', Category: 'P',
		Input: "void_in", Output: "void_out", Receive: "void_recv", Send: "void_send", ModIn: "-", ModOut: "-", Align: 'i', Storage: 'p'},
	base(OIDBPChar, "bpchar", "character", FamString, -1, false, 'S', false, 0, 1014, "bpcharin", "bpcharout", "bpcharrecv", "bpcharsend", "bpchartypmodin", "bpchartypmodout", 'i', 'x', 100),
	base(OIDVarchar, "varchar", "character varying", FamString, -1, false, 'S', false, 0, 1015, "varcharin", "varcharout", "varcharrecv", "varcharsend", "varchartypmodin", "varchartypmodout", 'i', 'x', 100),
	base(OIDDate, "date", "date", FamDate, 4, true, 'D', false, 0, 1182, "date_in", "date_out", "date_recv", "date_send", "-", "-", 'i', 'p', 0),
	base(OIDTime, "time", "time without time zone", FamTime, 8, true, 'D', false, 0, 1183, "time_in", "time_out", "time_recv", "time_send", "timetypmodin", "timetypmodout", 'd', 'p', 0),
	base(OIDTimestamp, "timestamp", "timestamp without time zone", FamTimestamp, 8, true, 'D', false, 0, 1115, "timestamp_in", "timestamp_out", "timestamp_recv", "timestamp_send", "timestamptypmodin", "timestamptypmodout", 'd', 'p', 0),
	base(OIDTimestampTZ, "timestamptz", "timestamp with time zone", FamTimestampTZ, 8, true, 'D', true, 0, 1185, "timestamptz_in", "timestamptz_out", "timestamptz_recv", "timestamptz_send", "timestamptztypmodin", "timestamptztypmodout", 'd', 'p', 0),
	base(OIDInterval, "interval", "interval", FamInterval, 16, false, 'T', true, 0, 1187, "interval_in", "interval_out", "interval_recv", "interval_send", "intervaltypmodin", "intervaltypmodout", 'd', 'p', 0),
	base(OIDNumeric, "numeric", "numeric", FamNumeric, -1, false, 'N', false, 0, 1231, "numeric_in", "numeric_out", "numeric_recv", "numeric_send", "numerictypmodin", "numerictypmodout", 'i', 'm', 0),
	base(OIDRegclass, "regclass", "regclass", FamInt, 4, true, 'N', false, 0, 2210, "regclassin", "regclassout", "regclassrecv", "regclasssend", "-", "-", 'i', 'p', 0),
	base(OIDRegtype, "regtype", "regtype", FamInt, 4, true, 'N', false, 0, 2211, "regtypein", "regtypeout", "regtyperecv", "regtypesend", "-", "-", 'i', 'p', 0),
	base(OIDRegnamespace, "regnamespace", "regnamespace", FamInt, 4, true, 'N', false, 0, 4090, "regnamespacein", "regnamespaceout", "regnamespacerecv", "regnamespacesend", "-", "-", 'i', 'p', 0),
	base(OIDRegrole, "regrole", "regrole", FamInt, 4, true, 'N', false, 0, 4097, "regrolein", "regroleout", "regrolerecv", "regrolesend", "-", "-", 'i', 'p', 0),
	base(OIDUUID, "uuid", "uuid", FamUUID, 16, false, 'U', false, 0, 2951, "uuid_in", "uuid_out", "uuid_recv", "uuid_send", "-", "-", 'c', 'p', 0),
	base(OIDJSONB, "jsonb", "jsonb", FamJSON, -1, false, 'U', false, 0, 3807, "jsonb_in", "jsonb_out", "jsonb_recv", "jsonb_send", "-", "-", 'i', 'x', 0),

	arrayOf(OIDJSONArray, OIDJSON, "-", "-", 'i', 0),
	arrayOf(OIDBoolArray, OIDBool, "-", "-", 'i', 0),
	arrayOf(OIDByteaArray, OIDBytea, "-", "-", 'i', 0),
	arrayOf(OIDCharArray, OIDChar, "-", "-", 'i', 0),
	arrayOf(OIDNameArray, OIDName, "-", "-", 'i', 950),
	arrayOf(OIDInt2Array, OIDInt2, "-", "-", 'i', 0),
	arrayOf(OIDInt4Array, OIDInt4, "-", "-", 'i', 0),
	arrayOf(OIDRegprocArray, OIDRegproc, "-", "-", 'i', 0),
	arrayOf(OIDTextArray, OIDText, "-", "-", 'i', 100),
	arrayOf(OIDBPCharArray, OIDBPChar, "bpchartypmodin", "bpchartypmodout", 'i', 100),
	arrayOf(OIDVarcharArray, OIDVarchar, "varchartypmodin", "varchartypmodout", 'i', 100),
	arrayOf(OIDInt8Array, OIDInt8, "-", "-", 'd', 0),
	arrayOf(OIDFloat4Array, OIDFloat4, "-", "-", 'i', 0),
	arrayOf(OIDFloat8Array, OIDFloat8, "-", "-", 'd', 0),
	arrayOf(OIDOIDArray, OIDOID, "-", "-", 'i', 0),
	arrayOf(OIDTimestampArray, OIDTimestamp, "timestamptypmodin", "timestamptypmodout", 'd', 0),
	arrayOf(OIDDateArray, OIDDate, "-", "-", 'i', 0),
	arrayOf(OIDTimeArray, OIDTime, "timetypmodin", "timetypmodout", 'd', 0),
	arrayOf(OIDTimestampTZArray, OIDTimestampTZ, "timestamptztypmodin", "timestamptztypmodout", 'd', 0),
	arrayOf(OIDIntervalArray, OIDInterval, "intervaltypmodin", "intervaltypmodout", 'd', 0),
	arrayOf(OIDNumericArray, OIDNumeric, "numerictypmodin", "numerictypmodout", 'i', 0),
	arrayOf(OIDRegclassArray, OIDRegclass, "-", "-", 'i', 0),
	arrayOf(OIDRegtypeArray, OIDRegtype, "-", "-", 'i', 0),
	arrayOf(OIDRegnamespaceArr, OIDRegnamespace, "-", "-", 'i', 0),
	arrayOf(OIDRegroleArray, OIDRegrole, "-", "-", 'i', 0),
	arrayOf(OIDUUIDArray, OIDUUID, "-", "-", 'i', 0),
	arrayOf(OIDJSONBArray, OIDJSONB, "-", "-", 'i', 0),
}

var (
	byOID  = map[uint32]*TypeInfo{}
	byName = map[string]*TypeInfo{}
)

func init() {
	for _, ti := range typeTable {
		if ti.Family == FamArray && ti.Category == 'A' && ti.Name == "" {
			el := byOID[ti.Elem]
			ti.Name = "_" + el.Name
			ti.SQLName = el.SQLName + "[]"
		}
		byOID[ti.OID] = ti
		byName[ti.Name] = ti
	}
	for alias, name := range typeAliases {
		byName[alias] = byName[name]
	}
}

// typeAliases are the other names a type can be written with (after the
// grammar's own rewriting, which pg_query has done: "integer" arrives as
// pg_catalog.int4). Both spellings are accepted so that type names typed
// by hand resolve too.
var typeAliases = map[string]string{
	"boolean":                     "bool",
	"smallint":                    "int2",
	"integer":                     "int4",
	"int":                         "int4",
	"bigint":                      "int8",
	"real":                        "float4",
	"double precision":            "float8",
	"float":                       "float8",
	"decimal":                     "numeric",
	"character varying":           "varchar",
	"char varying":                "varchar",
	"character":                   "bpchar",
	"time without time zone":      "time",
	"timestamp without time zone": "timestamp",
	"timestamp with time zone":    "timestamptz",
}

// Info returns the pg_type entry of oid, or nil if the type is not supported.
func Info(oid uint32) *TypeInfo { return byOID[oid] }

// AllTypes returns every supported pg_type entry, ordered by OID.
func AllTypes() []*TypeInfo {
	out := append([]*TypeInfo(nil), typeTable...)
	sort.Slice(out, func(i, j int) bool { return out[i].OID < out[j].OID })
	return out
}

// LookupTypeName returns the type named name (typname or an alias such as
// "integer" or "character varying"; case-sensitive, lower-case as the
// parser folds it).
func LookupTypeName(name string) (*TypeInfo, bool) {
	ti, ok := byName[name]
	return ti, ok
}

// Info returns t's pg_type entry, or nil for an unsupported OID.
func (t T) Info() *TypeInfo { return byOID[t.OID] }

// Family returns t's family (FamUnknown for unsupported OIDs).
func (t T) Family() Family {
	if ti := byOID[t.OID]; ti != nil {
		return ti.Family
	}
	return FamUnknown
}

// IsArray reports whether t is an array type.
func (t T) IsArray() bool { return t.Family() == FamArray }

// IsReg reports whether oid is one of the OID alias types (regclass,
// regtype, regproc, regnamespace, regrole): stored and sent in binary as
// an oid; their names are looked up by the session, which knows the
// catalog.
func IsReg(oid uint32) bool {
	switch oid {
	case OIDRegclass, OIDRegtype, OIDRegproc, OIDRegnamespace, OIDRegrole:
		return true
	}
	return false
}

// Elem returns the element type of an array type (with t's modifier, as
// PostgreSQL keeps an array column's typmod for its elements).
func (t T) Elem() T {
	if ti := byOID[t.OID]; ti != nil && ti.Family == FamArray {
		return T{OID: ti.Elem, Mod: t.Mod}
	}
	return T{OID: OIDUnknown, Mod: -1}
}

// ArrayOf returns the array type whose elements are t (OID 0 when none).
func ArrayOf(t T) T {
	if ti := byOID[t.OID]; ti != nil && ti.Family != FamArray {
		return T{OID: ti.Array, Mod: t.Mod}
	}
	return T{OID: 0, Mod: -1}
}

// Common types without modifiers.
var (
	TUnknown     = T{OIDUnknown, -1}
	TBool        = T{OIDBool, -1}
	TBytea       = T{OIDBytea, -1}
	TChar        = T{OIDChar, -1} // "char"
	TName        = T{OIDName, -1}
	TInt8        = T{OIDInt8, -1}
	TInt2        = T{OIDInt2, -1}
	TInt4        = T{OIDInt4, -1}
	TRegproc     = T{OIDRegproc, -1}
	TText        = T{OIDText, -1}
	TOID         = T{OIDOID, -1}
	TJSON        = T{OIDJSON, -1}
	TFloat4      = T{OIDFloat4, -1}
	TFloat8      = T{OIDFloat8, -1}
	TBPChar      = T{OIDBPChar, -1}
	TVarchar     = T{OIDVarchar, -1}
	TDate        = T{OIDDate, -1}
	TTime        = T{OIDTime, -1}
	TTimestamp   = T{OIDTimestamp, -1}
	TTimestampTZ = T{OIDTimestampTZ, -1}
	TInterval    = T{OIDInterval, -1}
	TNumeric     = T{OIDNumeric, -1}
	TRegclass    = T{OIDRegclass, -1}
	TRegtype     = T{OIDRegtype, -1}
	TUUID        = T{OIDUUID, -1}
	TJSONB       = T{OIDJSONB, -1}
	TVoid        = T{OIDVoid, -1}
	TInt2Array   = T{OIDInt2Array, -1}
	TInt4Array   = T{OIDInt4Array, -1}
	TInt8Array   = T{OIDInt8Array, -1}
	TTextArray   = T{OIDTextArray, -1}
	TOIDArray    = T{OIDOIDArray, -1}
	TBoolArray   = T{OIDBoolArray, -1}
	TNameArray   = T{OIDNameArray, -1}
)

// typmod header size (VARHDRSZ) that PostgreSQL adds to string and numeric
// modifiers.
const varHdrSz = 4

// MakeVarchar returns varchar(n).
func MakeVarchar(n int) T { return T{OIDVarchar, int32(n + varHdrSz)} }

// MakeBPChar returns character(n).
func MakeBPChar(n int) T { return T{OIDBPChar, int32(n + varHdrSz)} }

// MakeNumeric returns numeric(p,s).
func MakeNumeric(p, s int) T {
	return T{OIDNumeric, int32(p<<16|(s&0x7ff)) + varHdrSz}
}

// intervalFullRange is PostgreSQL's INTERVAL_FULL_RANGE: the range bits of
// an interval typmod without a fields restriction.
const intervalFullRange = 0x7fff

// WithPrecision returns t (time, timestamp, timestamptz or interval) with
// fractional-second precision p.
func WithPrecision(t T, p int) T {
	if t.OID == OIDInterval {
		return T{t.OID, intervalFullRange<<16 | int32(p)}
	}
	return T{t.OID, int32(p)}
}

// CharLen returns n of varchar(n)/char(n), or -1 when unbounded.
func (t T) CharLen() int {
	if (t.OID == OIDVarchar || t.OID == OIDBPChar) && t.Mod >= varHdrSz {
		return int(t.Mod - varHdrSz)
	}
	return -1
}

// NumericPrecScale returns numeric(p,s)'s precision and scale; ok is false
// for unconstrained numeric.
func (t T) NumericPrecScale() (p, s int, ok bool) {
	if t.OID != OIDNumeric || t.Mod < varHdrSz {
		return 0, 0, false
	}
	m := t.Mod - varHdrSz
	p = int(m>>16) & 0xffff
	s = int(m & 0x7ff)
	if s&0x400 != 0 { // negative scale, sign-extended from 11 bits
		s -= 0x800
	}
	return p, s, true
}

// TimePrecision returns the fractional-second precision of a time,
// timestamp(tz) or interval type, or -1 when unspecified.
func (t T) TimePrecision() int {
	switch t.OID {
	case OIDTime, OIDTimestamp, OIDTimestampTZ:
		if t.Mod >= 0 {
			return int(t.Mod)
		}
	case OIDInterval:
		if t.Mod >= 0 {
			p := int(t.Mod & 0xffff)
			if p != 0xffff {
				return p
			}
		}
	}
	return -1
}

// String returns the type as format_type(oid, typmod) prints it:
// "integer", "character varying(10)", "numeric(12,2)",
// "timestamp(3) with time zone", "integer[]".
func (t T) String() string { return FormatType(t.OID, t.Mod) }

// FormatType is PostgreSQL's format_type(oid, typmod) for the supported
// types (typmod -1 for none).
func FormatType(oid uint32, mod int32) string {
	ti := byOID[oid]
	if ti == nil && oid == OIDRecord {
		return "record" // an anonymous record's name, whatever its fields
	}
	if ti == nil {
		return "???"
	}
	if ti.Family == FamArray && ti.Category == 'A' && ti.OID != OIDInt2Vector && ti.OID != OIDOIDVector {
		return FormatType(ti.Elem, mod) + "[]"
	}
	t := T{oid, mod}
	switch oid {
	case OIDBPChar:
		if n := t.CharLen(); n >= 0 {
			return "character(" + strconv.Itoa(n) + ")"
		}
		return "bpchar"
	case OIDVarchar:
		if n := t.CharLen(); n >= 0 {
			return "character varying(" + strconv.Itoa(n) + ")"
		}
	case OIDNumeric:
		if p, s, ok := t.NumericPrecScale(); ok {
			return "numeric(" + strconv.Itoa(p) + "," + strconv.Itoa(s) + ")"
		}
	case OIDTime:
		if p := t.TimePrecision(); p >= 0 {
			return "time(" + strconv.Itoa(p) + ") without time zone"
		}
	case OIDTimestamp:
		if p := t.TimePrecision(); p >= 0 {
			return "timestamp(" + strconv.Itoa(p) + ") without time zone"
		}
	case OIDTimestampTZ:
		if p := t.TimePrecision(); p >= 0 {
			return "timestamp(" + strconv.Itoa(p) + ") with time zone"
		}
	case OIDInterval:
		if p := t.TimePrecision(); p >= 0 {
			return "interval(" + strconv.Itoa(p) + ")"
		}
	}
	return ti.SQLName
}
