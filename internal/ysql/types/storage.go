package types

import (
	"encoding/binary"
	"math"
	"strings"

	"github.com/cockroachdb/apd/v3"

	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// Mapping between SQL values and DocDB's storage values. For key columns
// of orderable types (Orderable) DocDB's key encoding orders the stored
// values as PostgreSQL orders the SQL values:
//
//	bool -> bool; int2/int4/int8 -> int16/int32/int64; oid and reg* -> int64
//	float4/float8 -> float32/float64 (NaN above +Inf in both)
//	numeric -> decimal (its text; NaN and infinities cannot be key columns)
//	text/varchar/name/"char" -> text; char(n) -> text without its padding
//	(restored on the way out), so the byte order is bpchar's order
//	bytea -> bytes; uuid -> uuid
//	date -> int32 days since 2000-01-01 (±infinity are INT32_MIN/MAX)
//	time -> int64 microseconds since midnight
//	timestamp/timestamptz -> timestamp, microseconds since the Unix epoch
//	(±infinity saturate to INT64_MIN/MAX; finite values after 294246 AD,
//	which PostgreSQL accepts, do not fit and are refused with 22008)
//	interval -> bytes (16 bytes: micros, days, months, big-endian)
//	json/jsonb -> text; arrays -> bytes (the binary send format)
//
// Interval, json, jsonb and arrays are not orderable as keys.

// StorageType returns the DocDB value type t is stored as.
func StorageType(t T) docdb.ValueType {
	switch t.OID {
	case OIDBool:
		return docdb.TypeBool
	case OIDInt2:
		return docdb.TypeInt16
	case OIDInt4, OIDDate:
		return docdb.TypeInt32
	case OIDInt8, OIDOID, OIDRegclass, OIDRegtype, OIDRegproc, OIDTime:
		return docdb.TypeInt64
	case OIDFloat4:
		return docdb.TypeFloat32
	case OIDFloat8:
		return docdb.TypeFloat64
	case OIDNumeric:
		return docdb.TypeDecimal
	case OIDText, OIDVarchar, OIDBPChar, OIDName, OIDChar, OIDJSON, OIDJSONB:
		return docdb.TypeText
	case OIDBytea, OIDInterval:
		return docdb.TypeBytes
	case OIDTimestamp, OIDTimestampTZ:
		return docdb.TypeTimestamp
	case OIDUUID:
		return docdb.TypeUUID
	}
	if t.IsArray() {
		return docdb.TypeBytes
	}
	return docdb.TypeNull
}

// Orderable reports whether t can be a range (ordered) key column: its
// storage encoding sorts as PostgreSQL sorts the type.
func Orderable(t T) bool {
	switch t.Family() {
	case FamBool, FamInt, FamFloat, FamNumeric, FamString, FamBytes, FamDate, FamTime, FamTimestamp, FamTimestampTZ, FamUUID:
		return true
	}
	return false
}

// CheckKeyType returns the error the DDL layer reports for a key column of
// a type that cannot be one: PostgreSQL's own message for json (no btree
// operator class), 0A000 for types PostgreSQL can index but ShaleDB's key
// encoding cannot order.
func CheckKeyType(t T) error {
	if Orderable(t) {
		return nil
	}
	if t.OID == OIDJSON {
		return pgerror.New(pgerror.CodeUndefinedObject, "data type json has no default operator class for access method \"btree\"").
			WithHint("You must specify an operator class for the index or define a default operator class for the data type.")
	}
	return pgerror.New(pgerror.CodeFeatureNotSupported, "data type %s is not supported as a key column", t.String())
}

// ToStorage converts a SQL value of type t to its DocDB value.
func ToStorage(d Datum, t T) (docdb.Value, error) {
	if d.Null {
		return docdb.Null(), nil
	}
	switch t.OID {
	case OIDBool:
		return docdb.Bool(d.I != 0), nil
	case OIDInt2:
		return docdb.Int16(int16(d.I)), nil
	case OIDInt4:
		return docdb.Int32(int32(d.I)), nil
	case OIDDate:
		return docdb.Int32(int32(d.I)), nil
	case OIDInt8, OIDOID, OIDRegclass, OIDRegtype, OIDRegproc, OIDTime:
		return docdb.Int64(d.I), nil
	case OIDFloat4:
		return docdb.Float32(float32(d.F)), nil
	case OIDFloat8:
		return docdb.Float64(d.F), nil
	case OIDNumeric:
		if d.D == nil {
			return docdb.Null(), pgerror.New(pgerror.CodeInternalError, "numeric datum without value")
		}
		return docdb.Decimal(NumericString(d.D)), nil
	case OIDBPChar:
		if t.CharLen() >= 0 {
			return docdb.Text(TrimBPChar(d.S)), nil
		}
		return docdb.Text(d.S), nil
	case OIDText, OIDVarchar, OIDName, OIDChar, OIDJSON, OIDJSONB:
		return docdb.Text(d.S), nil
	case OIDBytea:
		return docdb.Bytes(d.B), nil
	case OIDTimestamp, OIDTimestampTZ:
		if d.I != TimestampPosInfinity && d.I >= maxStorableTimestamp {
			return docdb.Null(), pgerror.New(pgerror.CodeDatetimeFieldOverflow, "timestamp out of range for storage")
		}
		return docdb.TimestampMicros(pgToUnixMicros(d.I)), nil
	case OIDInterval:
		var b [16]byte
		binary.BigEndian.PutUint64(b[0:], uint64(d.Iv.Micros))
		binary.BigEndian.PutUint32(b[8:], uint32(d.Iv.Days))
		binary.BigEndian.PutUint32(b[12:], uint32(d.Iv.Months))
		return docdb.Bytes(b[:]), nil
	case OIDUUID:
		return docdb.UUID(d.U), nil
	}
	if t.IsArray() {
		b, err := AppendBinary(nil, d, t)
		if err != nil {
			return docdb.Null(), err
		}
		return docdb.Bytes(b), nil
	}
	return docdb.Null(), pgerror.New(pgerror.CodeFeatureNotSupported, "storage of type %s is not supported", t.String())
}

// ToKeyStorage converts a value of a key column: as ToStorage, with -0
// stored as 0 for floats and unbounded bpchar stored without trailing
// spaces, so that values PostgreSQL calls equal have one key and keys sort
// as PostgreSQL sorts. (ToStorage keeps -0 and the spaces of an unbounded
// bpchar for ordinary columns, as PostgreSQL does.)
func ToKeyStorage(d Datum, t T) (docdb.Value, error) {
	if !d.Null && t.Family() == FamFloat && d.F == 0 {
		d.F = 0
	}
	if !d.Null && t.OID == OIDBPChar {
		return docdb.Text(TrimBPChar(d.S)), nil
	}
	return ToStorage(d, t)
}

// FromStorage converts a DocDB value back to a SQL value of type t.
func FromStorage(v docdb.Value, t T) (Datum, error) {
	if v.IsNull() {
		return NullDatum, nil
	}
	want := StorageType(t)
	if v.Type != want {
		return NullDatum, pgerror.New(pgerror.CodeDatatypeMismatch, "stored value of type %s does not match column type %s", v.Type, t.String())
	}
	switch t.OID {
	case OIDBool:
		return DBool(v.Int != 0), nil
	case OIDInt2:
		return DInt(int64(int16(v.Int))), nil
	case OIDInt4, OIDDate:
		return DInt(int64(int32(v.Int))), nil
	case OIDInt8, OIDOID, OIDRegclass, OIDRegtype, OIDRegproc, OIDTime:
		return DInt(v.Int), nil
	case OIDFloat4:
		return DFloat(float64(float32(v.Float))), nil
	case OIDFloat8:
		return DFloat(v.Float), nil
	case OIDNumeric:
		d, err := ParseNumeric(string(v.Bytes))
		if err != nil {
			return NullDatum, err
		}
		if _, s, ok := t.NumericPrecScale(); ok && d.Form == apd.Finite && NumericScale(d) < s {
			// A key's encoding keeps the value, not its display scale:
			// numeric(p,s) restores it.
			d = RoundNumeric(d, s)
		}
		return DNumeric(d), nil
	case OIDBPChar:
		s := string(v.Bytes)
		if n := t.CharLen(); n >= 0 {
			if l := runeCount(s); l < n {
				s += strings.Repeat(" ", n-l)
			}
		}
		return DString(s), nil
	case OIDText, OIDVarchar, OIDName, OIDChar, OIDJSON, OIDJSONB:
		return DString(string(v.Bytes)), nil
	case OIDBytea:
		return DBytes(append([]byte(nil), v.Bytes...)), nil
	case OIDTimestamp, OIDTimestampTZ:
		return DMicros(unixToPGMicros(v.Int)), nil
	case OIDInterval:
		if len(v.Bytes) != 16 {
			return NullDatum, pgerror.New(pgerror.CodeDataException, "corrupt stored interval")
		}
		b := v.Bytes
		return DInterval(Interval{
			Micros: int64(binary.BigEndian.Uint64(b[0:])),
			Days:   int32(binary.BigEndian.Uint32(b[8:])),
			Months: int32(binary.BigEndian.Uint32(b[12:])),
		}), nil
	case OIDUUID:
		return DUUID(v.UUID), nil
	}
	if t.IsArray() {
		return DecodeBinary(v.Bytes, t)
	}
	return NullDatum, pgerror.New(pgerror.CodeFeatureNotSupported, "storage of type %s is not supported", t.String())
}

// maxStorableTimestamp bounds the finite timestamps DocDB can hold: in Unix
// microseconds PostgreSQL's last 30 years (after 294246 AD) overflow int64.
const maxStorableTimestamp = math.MaxInt64 - PGEpochUnixMicros

// pgToUnixMicros shifts a timestamp from PostgreSQL's 2000 epoch to the
// Unix epoch, keeping ±infinity at the ends of the range.
func pgToUnixMicros(us int64) int64 {
	switch us {
	case TimestampNegInfinity, TimestampPosInfinity:
		return us
	}
	return us + PGEpochUnixMicros
}

func unixToPGMicros(us int64) int64 {
	switch us {
	case math.MinInt64, math.MaxInt64:
		return us
	}
	return us - PGEpochUnixMicros
}

func runeCount(s string) int {
	n := 0
	for range s {
		n++
	}
	return n
}
