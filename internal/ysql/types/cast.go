package types

import (
	"math"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// CastContext is where a conversion happens, as pg_cast.castcontext:
// implicitly in an expression, on assignment to a column, or explicitly
// (CAST, ::). A cast allowed in a context is allowed in the later ones.
type CastContext uint8

// Cast contexts, in increasing order of permissiveness.
const (
	CastImplicit CastContext = iota
	CastAssignment
	CastExplicit
)

// pgCasts is pg_cast between the supported types (PostgreSQL 15): the
// least permissive context in which the cast applies.
var pgCasts = map[[2]uint32]CastContext{}

func init() {
	const i, a, e = CastImplicit, CastAssignment, CastExplicit
	add := func(from uint32, ctx CastContext, tos ...uint32) {
		for _, to := range tos {
			pgCasts[[2]uint32{from, to}] = ctx
		}
	}
	add(OIDBool, e, OIDInt4)
	add(OIDBool, a, OIDText, OIDBPChar, OIDVarchar)
	add(OIDChar, e, OIDInt4)
	add(OIDChar, i, OIDText)
	add(OIDChar, a, OIDBPChar, OIDVarchar)
	add(OIDName, i, OIDText)
	add(OIDName, a, OIDBPChar, OIDVarchar)
	add(OIDInt8, a, OIDInt2, OIDInt4)
	add(OIDInt8, i, OIDRegproc, OIDOID, OIDFloat4, OIDFloat8, OIDNumeric, OIDRegclass, OIDRegtype, OIDRegnamespace, OIDRegrole)
	add(OIDInt2, i, OIDInt8, OIDInt4, OIDRegproc, OIDOID, OIDFloat4, OIDFloat8, OIDNumeric, OIDRegclass, OIDRegtype, OIDRegnamespace, OIDRegrole)
	add(OIDInt4, e, OIDBool, OIDChar)
	add(OIDInt4, i, OIDInt8, OIDRegproc, OIDOID, OIDFloat4, OIDFloat8, OIDNumeric, OIDRegclass, OIDRegtype, OIDRegnamespace, OIDRegrole)
	add(OIDInt4, a, OIDInt2)
	add(OIDRegproc, a, OIDInt8, OIDInt4)
	add(OIDRegproc, i, OIDOID)
	add(OIDText, a, OIDChar)
	add(OIDText, i, OIDName, OIDBPChar, OIDVarchar, OIDRegclass)
	add(OIDOID, a, OIDInt8, OIDInt4)
	add(OIDOID, i, OIDRegproc, OIDRegclass, OIDRegtype, OIDRegnamespace, OIDRegrole)
	add(OIDJSON, a, OIDJSONB)
	add(OIDFloat4, a, OIDInt8, OIDInt2, OIDInt4, OIDNumeric)
	add(OIDFloat4, i, OIDFloat8)
	add(OIDFloat8, a, OIDInt8, OIDInt2, OIDInt4, OIDFloat4, OIDNumeric)
	add(OIDBPChar, a, OIDChar)
	add(OIDBPChar, i, OIDName, OIDText, OIDVarchar)
	add(OIDVarchar, a, OIDChar)
	add(OIDVarchar, i, OIDName, OIDText, OIDBPChar, OIDRegclass)
	add(OIDDate, i, OIDTimestamp, OIDTimestampTZ)
	add(OIDTime, i, OIDInterval)
	add(OIDTimestamp, a, OIDDate, OIDTime)
	add(OIDTimestamp, i, OIDTimestampTZ)
	add(OIDTimestampTZ, a, OIDDate, OIDTime, OIDTimestamp)
	add(OIDInterval, a, OIDTime)
	add(OIDNumeric, a, OIDInt8, OIDInt2, OIDInt4)
	add(OIDNumeric, i, OIDFloat4, OIDFloat8)
	add(OIDRegclass, a, OIDInt8, OIDInt4)
	add(OIDRegclass, i, OIDOID)
	add(OIDRegtype, a, OIDInt8, OIDInt4)
	add(OIDRegtype, i, OIDOID)
	add(OIDRegnamespace, a, OIDInt8, OIDInt4)
	add(OIDRegnamespace, i, OIDOID)
	add(OIDRegrole, a, OIDInt8, OIDInt4)
	add(OIDRegrole, i, OIDOID)
	add(OIDJSONB, e, OIDBool, OIDInt8, OIDInt2, OIDInt4, OIDFloat4, OIDFloat8, OIDNumeric)
	add(OIDJSONB, a, OIDJSON)
}

// isStringType reports whether t is of the string category, whose values
// PostgreSQL converts to and from any type through the I/O functions.
func isStringType(oid uint32) bool {
	switch oid {
	case OIDText, OIDVarchar, OIDBPChar, OIDName:
		return true
	}
	return false
}

// CastContextOf returns the least permissive context in which a value of
// type from converts to type to, and false if it never does.
func CastContextOf(from, to T) (CastContext, bool) {
	if from.OID == to.OID || from.OID == OIDUnknown {
		return CastImplicit, true
	}
	if c, ok := pgCasts[[2]uint32{from.OID, to.OID}]; ok {
		return c, true
	}
	if byOID[from.OID] == nil || byOID[to.OID] == nil {
		return 0, false
	}
	// Arrays convert element by element (int2vector and oidvector are
	// binary-coercible to smallint[] and oid[]).
	if from.Family() == FamArray && to.Family() == FamArray {
		return CastContextOf(T{OID: from.Elem().OID, Mod: -1}, T{OID: to.Elem().OID, Mod: to.Mod})
	}
	// Automatic I/O conversion casts: to a string type on assignment,
	// from a string type explicitly.
	if isStringType(to.OID) {
		return CastAssignment, true
	}
	if isStringType(from.OID) {
		return CastExplicit, true
	}
	return 0, false
}

// CanCast reports whether a value of type from can be converted to type
// to in context ctx.
func CanCast(from, to T, ctx CastContext) bool {
	c, ok := CastContextOf(from, to)
	return ok && c <= ctx
}

func errCannotCast(from, to T) *pgerror.Error {
	return pgerror.New("42846", "cannot cast type %s to %s", from.String(), to.String())
}

// Coerce converts d from type from to type to (with to's modifier) in
// context ctx, with the session time zone UTC. See CoerceTZ.
func Coerce(d Datum, from, to T, ctx CastContext) (Datum, error) {
	return CoerceTZ(d, from, to, ctx, time.UTC)
}

// CoerceTZ converts d from type from to type to in context ctx as
// PostgreSQL does: the pg_cast function (range checks: "integer out of
// range" 22003 and the like; float to integer rounds half to even as rint,
// numeric to integer half away from zero), I/O conversion through text
// otherwise, then to's modifier (varchar(n) silently truncated by explicit
// casts but 22001 on assignment, numeric(p,s) rounded and checked, char(n)
// padded). loc is the session time zone for conversions involving
// timestamptz. A NULL stays NULL. A cast that is not allowed in ctx is
// 42846.
func CoerceTZ(d Datum, from, to T, ctx CastContext, loc *time.Location) (Datum, error) {
	if d.Null {
		return NullDatum, nil
	}
	if !CanCast(from, to, ctx) {
		return NullDatum, errCannotCast(from, to)
	}
	if loc == nil {
		loc = time.UTC
	}
	r, err := convert(d, from, to, loc)
	if err != nil {
		return NullDatum, err
	}
	return applyTypmod(r, to, ctx == CastExplicit)
}

func outOfRange(t T) *pgerror.Error {
	switch t.OID {
	case OIDInt2:
		return pgerror.New(pgerror.CodeNumericValueOutOfRange, "smallint out of range")
	case OIDInt8:
		return pgerror.New(pgerror.CodeNumericValueOutOfRange, "bigint out of range")
	}
	return pgerror.New(pgerror.CodeNumericValueOutOfRange, "integer out of range")
}

func intFits(v int64, t T) bool {
	switch t.OID {
	case OIDInt2:
		return v >= math.MinInt16 && v <= math.MaxInt16
	case OIDInt4:
		return v >= math.MinInt32 && v <= math.MaxInt32
	}
	return true
}

// convert does the cast proper, without the target's modifier.
func convert(d Datum, from, to T, loc *time.Location) (Datum, error) {
	if from.OID == to.OID {
		return d, nil
	}
	if from.OID == OIDUnknown {
		return parseBase(d.S, T{to.OID, -1}, loc)
	}
	ff, tf := from.Family(), to.Family()
	switch {
	case ff == FamArray && tf == FamArray:
		fe, te := T{OID: from.Elem().OID, Mod: -1}, T{OID: to.Elem().OID, Mod: -1}
		out := make([]Datum, len(d.A))
		for i, e := range d.A {
			if e.Null {
				out[i] = e
				continue
			}
			v, err := convert(e, fe, te, loc)
			if err != nil {
				return NullDatum, err
			}
			out[i] = v
		}
		return DArray(out), nil
	case ff == FamInt && tf == FamInt:
		return convertInt(d, from, to)
	case ff == FamInt && tf == FamFloat:
		f := float64(d.I)
		if to.OID == OIDFloat4 {
			f = float64(float32(f))
		}
		return DFloat(f), nil
	case ff == FamInt && tf == FamNumeric:
		return DNumeric(NumericFromInt(d.I)), nil
	case ff == FamFloat && tf == FamInt:
		f := math.RoundToEven(d.F)
		if math.IsNaN(f) || f < -9.223372036854775808e18 || f >= 9.223372036854775808e18 || !intFits(int64(f), to) {
			return NullDatum, outOfRange(to)
		}
		return DInt(int64(f)), nil
	case ff == FamFloat && tf == FamFloat:
		if to.OID == OIDFloat4 {
			f32 := float32(d.F)
			if math.IsInf(float64(f32), 0) && !math.IsInf(d.F, 0) {
				return NullDatum, pgerror.New(pgerror.CodeNumericValueOutOfRange, "value out of range: overflow")
			}
			if f32 == 0 && d.F != 0 {
				return NullDatum, pgerror.New(pgerror.CodeNumericValueOutOfRange, "value out of range: underflow")
			}
			return DFloat(float64(f32)), nil
		}
		return d, nil
	case ff == FamFloat && tf == FamNumeric:
		n, err := NumericFromFloat(d.F, from.OID == OIDFloat4)
		return DNumeric(n), err
	case ff == FamNumeric && tf == FamInt:
		switch d.D.Form {
		case apd.NaN, apd.NaNSignaling:
			return NullDatum, pgerror.New(pgerror.CodeFeatureNotSupported, "cannot convert NaN to %s", map[uint32]string{OIDInt2: "smallint", OIDInt4: "integer", OIDInt8: "bigint"}[to.OID])
		case apd.Infinite:
			return NullDatum, pgerror.New(pgerror.CodeFeatureNotSupported, "cannot convert infinity to %s", map[uint32]string{OIDInt2: "smallint", OIDInt4: "integer", OIDInt8: "bigint"}[to.OID])
		}
		v, ok := NumericToInt(d.D)
		if !ok || !intFits(v, to) {
			return NullDatum, outOfRange(to)
		}
		return DInt(v), nil
	case ff == FamNumeric && tf == FamFloat:
		// A value too small underflows to zero: out of range too, as
		// PostgreSQL's float8in / float4in of the numeric's text say.
		f := NumericToFloat(d.D)
		under := d.D.Form == apd.Finite && !d.D.IsZero()
		if to.OID == OIDFloat4 {
			f32 := float32(f)
			if math.IsInf(float64(f32), 0) && !math.IsInf(f, 0) || f32 == 0 && under {
				return NullDatum, pgerror.New(pgerror.CodeNumericValueOutOfRange, "\"%s\" is out of range for type real", NumericString(d.D))
			}
			f = float64(f32)
		} else if math.IsInf(f, 0) && d.D.Form == apd.Finite || f == 0 && under {
			return NullDatum, pgerror.New(pgerror.CodeNumericValueOutOfRange, "\"%s\" is out of range for type double precision", NumericString(d.D))
		}
		return DFloat(f), nil
	case from.OID == OIDBool && to.OID == OIDInt4:
		return DInt(d.I), nil
	case from.OID == OIDInt4 && to.OID == OIDBool:
		return DBool(d.I != 0), nil
	case from.OID == OIDBool && isStringType(to.OID):
		if d.I != 0 {
			return DString("true"), nil
		}
		return DString("false"), nil
	case from.OID == OIDInt4 && to.OID == OIDChar:
		if d.I < -128 || d.I > 127 {
			return NullDatum, pgerror.New(pgerror.CodeNumericValueOutOfRange, "\"char\" out of range")
		}
		if d.I == 0 {
			return DString(""), nil
		}
		return DString(string([]byte{byte(d.I)})), nil
	case from.OID == OIDChar && to.OID == OIDInt4:
		if d.S == "" {
			return DInt(0), nil
		}
		return DInt(int64(int8(d.S[0]))), nil
	case from.OID == OIDChar && isStringType(to.OID):
		return DString(d.S), nil
	case isStringType(from.OID) && to.OID == OIDChar:
		return DString(parseChar(d.S)), nil
	case ff == FamString && tf == FamString:
		s := d.S
		if from.OID == OIDBPChar {
			s = TrimBPChar(s)
		}
		if to.OID == OIDName {
			s = truncateName(s)
		}
		return DString(s), nil
	case ff == FamDate && (tf == FamTimestamp || tf == FamTimestampTZ):
		return dateToTimestamp(d.I, tf == FamTimestampTZ, loc)
	case (ff == FamTimestamp || ff == FamTimestampTZ) && tf == FamDate:
		us := d.I
		switch us {
		case TimestampNegInfinity:
			return DDate(DateNegInfinity), nil
		case TimestampPosInfinity:
			return DDate(DatePosInfinity), nil
		}
		if ff == FamTimestampTZ {
			us += int64(zoneOffset(us, loc)) * usPerSec
		}
		days, _ := SplitTimestamp(us)
		return DDate(days), nil
	case (ff == FamTimestamp || ff == FamTimestampTZ) && tf == FamTime:
		us := d.I
		if us == TimestampNegInfinity || us == TimestampPosInfinity {
			return NullDatum, pgerror.New(pgerror.CodeDatetimeFieldOverflow, "time out of range")
		}
		if ff == FamTimestampTZ {
			us += int64(zoneOffset(us, loc)) * usPerSec
		}
		_, tod := SplitTimestamp(us)
		return DMicros(tod), nil
	case ff == FamTimestamp && tf == FamTimestampTZ:
		return DMicros(TimestampToTZ(d.I, loc)), nil
	case ff == FamTimestampTZ && tf == FamTimestamp:
		return DMicros(TimestampTZToLocal(d.I, loc)), nil
	case ff == FamTime && tf == FamInterval:
		return DInterval(Interval{Micros: d.I}), nil
	case ff == FamInterval && tf == FamTime:
		_, r := floorDiv(d.Iv.Micros, usPerDay)
		return DMicros(r), nil
	case from.OID == OIDJSON && to.OID == OIDJSONB:
		n, err := NormalizeJSONB(d.S)
		return DString(n), err
	case from.OID == OIDJSONB && to.OID == OIDJSON:
		return DString(d.S), nil
	case from.OID == OIDJSONB && !isStringType(to.OID):
		return jsonbToScalar(d.S, to)
	case isStringType(to.OID):
		return DString(FormatText(d, from, loc)), nil
	case isStringType(from.OID):
		return parseBase(d.S, T{to.OID, -1}, loc)
	}
	return NullDatum, errCannotCast(from, to)
}

func convertInt(d Datum, from, to T) (Datum, error) {
	v := d.I
	switch to.OID {
	case OIDOID, OIDRegclass, OIDRegtype, OIDRegproc, OIDRegnamespace, OIDRegrole:
		switch from.OID {
		case OIDInt8:
			if v < 0 || v > math.MaxUint32 {
				return NullDatum, pgerror.New(pgerror.CodeNumericValueOutOfRange, "OID out of range")
			}
		case OIDInt2, OIDInt4:
			v = int64(uint32(int32(v)))
		}
		return DInt(v), nil
	case OIDInt4:
		if from.OID == OIDOID || IsReg(from.OID) {
			return DInt(int64(int32(uint32(v)))), nil
		}
	}
	if !intFits(v, to) {
		return NullDatum, outOfRange(to)
	}
	return DInt(v), nil
}

func dateToTimestamp(days int64, tz bool, loc *time.Location) (Datum, error) {
	switch days {
	case DateNegInfinity:
		return DMicros(TimestampNegInfinity), nil
	case DatePosInfinity:
		return DMicros(TimestampPosInfinity), nil
	}
	us := days * usPerDay
	if us < minTimestampUs || us >= endTimestampUs {
		return NullDatum, pgerror.New(pgerror.CodeDatetimeFieldOverflow, "date out of range for timestamp")
	}
	if tz {
		us = TimestampToTZ(us, loc)
	}
	return DMicros(us), nil
}

// TimestampToTZ interprets a timestamp as local time in loc and returns
// the timestamptz (UTC) it denotes.
func TimestampToTZ(us int64, loc *time.Location) int64 {
	if us == TimestampNegInfinity || us == TimestampPosInfinity {
		return us
	}
	secs, _ := floorDiv(us, usPerSec)
	return us - int64(localToUTCOffset(secs, loc))*usPerSec
}

// TimestampTZToLocal returns the local time in loc of a timestamptz.
func TimestampTZToLocal(us int64, loc *time.Location) int64 {
	if us == TimestampNegInfinity || us == TimestampPosInfinity {
		return us
	}
	return us + int64(zoneOffset(us, loc))*usPerSec
}

var jsonKindNames = map[JSONKind]string{
	JSONNull: "null", JSONString: "string", JSONNumber: "numeric", JSONBool: "boolean", JSONArray: "array", JSONObject: "object",
}

func jsonbToScalar(doc string, to T) (Datum, error) {
	v, err := ParseJSON(doc, true)
	if err != nil {
		return NullDatum, err
	}
	want := JSONNumber
	if to.OID == OIDBool {
		want = JSONBool
	}
	if v.Kind != want {
		return NullDatum, pgerror.New(pgerror.CodeInvalidParameterValue, "cannot cast jsonb %s to type %s", jsonKindNames[v.Kind], FormatType(to.OID, -1))
	}
	if want == JSONBool {
		return DBool(v.Bool), nil
	}
	return convert(DNumeric(v.Num), TNumeric, to, time.UTC)
}
