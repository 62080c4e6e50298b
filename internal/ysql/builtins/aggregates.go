package builtins

import (
	"encoding/binary"
	"math"
	"strings"

	"github.com/cockroachdb/apd/v3"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// AggState accumulates one group's aggregate. Add sees every input row
// (NULL arguments included: each aggregate skips them as PostgreSQL's
// strict transition functions do); Merge folds in a partial state computed
// elsewhere (a tablet) by the same Aggregate; Result is the final value.
// MarshalBinary/Aggregate.Unmarshal ship partial states between nodes.
type AggState interface {
	Add(ctx *EvalContext, args []types.Datum) error
	Merge(other AggState) error
	Result() (types.Datum, error)
	MarshalBinary() ([]byte, error)
}

// Aggregate is an aggregate function with PostgreSQL's result type.
type Aggregate struct {
	Name   string
	Args   []types.T // empty for count(*)
	Star   bool      // count(*)
	Result types.T
	New    func() AggState
	// Unmarshal rebuilds a state written by MarshalBinary.
	Unmarshal func([]byte) (AggState, error)
}

var aggregates = map[string][]*Aggregate{}

func addAgg(name string, arg types.T, res types.T, newState func() AggState) {
	if arg.OID == 0 {
		addAggArgs(name, nil, res, newState)
		return
	}
	addAggArgs(name, []types.T{arg}, res, newState)
}

// addAggArgs adds an aggregate of args (none: count(*)).
func addAggArgs(name string, args []types.T, res types.T, newState func() AggState) {
	a := &Aggregate{Name: name, Args: args, Star: len(args) == 0, Result: res, New: newState}
	a.Unmarshal = func(b []byte) (AggState, error) {
		s := newState()
		if err := s.(stateDecoder).unmarshal(b); err != nil {
			return nil, err
		}
		return s, nil
	}
	aggregates[name] = append(aggregates[name], a)
}

type stateDecoder interface{ unmarshal([]byte) error }

// IsAggregate reports whether name is an aggregate function.
func IsAggregate(name string) bool {
	_, ok := aggregates[strings.ToLower(name)]
	_, poly := anyAggs[strings.ToLower(name)]
	return ok || poly || IsOrderedSetAggregate(name)
}

// LookupAggregate resolves an aggregate call: star for count(*).
func LookupAggregate(name string, args []types.T, star bool) (*Aggregate, error) {
	name = strings.TrimPrefix(strings.ToLower(name), "pg_catalog.")
	aggs := aggregates[name]
	if mk := anyAggs[name]; mk != nil && !star {
		return mk(args)
	}
	if a := anyTypeAgg(name, args); a != nil {
		return a, nil
	}
	if star {
		for _, a := range aggs {
			if a.Star {
				return a, nil
			}
		}
		return nil, pgerror.New(pgerror.CodeWrongObjectType, "%s(*) specified, but %s is not an aggregate function without arguments", name, name)
	}
	var cands [][]types.T
	var idx []int
	for i, a := range aggs {
		if a.Star {
			continue
		}
		cands = append(cands, a.Args)
		idx = append(idx, i)
	}
	k := selectCandidate(cands, args)
	switch k {
	case -1:
		return nil, pgerror.New(pgerror.CodeUndefinedFunction, "function %s(%s) does not exist", name, typeNames(args)).
			WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
	case -2:
		return nil, pgerror.New(pgerror.CodeAmbiguousFunction, "function %s(%s) is not unique", name, typeNames(args)).
			WithHint("Could not choose a best candidate function. You might need to add explicit type casts.")
	}
	return aggs[idx[k]], nil
}

// anyTypeAgg is count("any") of a type without its own candidate, and
// min/max of anyarray: made for the argument's type.
func anyTypeAgg(name string, args []types.T) *Aggregate {
	if len(args) != 1 || args[0].OID == types.OIDUnknown {
		return nil
	}
	t := args[0]
	var mk func() AggState
	switch {
	case name == "count":
		for _, a := range aggregates[name] {
			if len(a.Args) == 1 && a.Args[0].OID == t.OID {
				return nil
			}
		}
		mk = func() AggState { return &countState{} }
		return &Aggregate{Name: name, Args: args, Result: tI8, New: mk,
			Unmarshal: func(b []byte) (AggState, error) { s := &countState{}; return s, s.unmarshal(b) }}
	case (name == "min" || name == "max") && t.IsArray():
		mk = func() AggState { return &minMaxState{t: t, max: name == "max"} }
		return &Aggregate{Name: name, Args: args, Result: t, New: mk,
			Unmarshal: func(b []byte) (AggState, error) { s := mk(); return s, s.(*minMaxState).unmarshal(b) }}
	}
	return nil
}

// state encoding helpers: a list of length-prefixed fields.
func putField(buf []byte, b []byte) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(b)))
	return append(buf, b...)
}

func getFields(b []byte, n int) ([][]byte, error) {
	out := make([][]byte, 0, n)
	for i := 0; i < n; i++ {
		l, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < l {
			return nil, pgerror.New(pgerror.CodeInternalError, "corrupt aggregate state")
		}
		out = append(out, b[k:k+int(l)])
		b = b[k+int(l):]
	}
	return out, nil
}

func i64(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
func getI64(b []byte) int64 {
	if len(b) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

func decBytes(d *apd.Decimal) []byte { return []byte(types.NumericString(d)) }
func getDec(b []byte) (*apd.Decimal, error) {
	return types.ParseNumeric(string(b))
}

// count

type countState struct {
	n    int64
	star bool
}

func (s *countState) Add(_ *EvalContext, a []types.Datum) error {
	if s.star || !a[0].Null {
		s.n++
	}
	return nil
}
func (s *countState) Merge(o AggState) error         { s.n += o.(*countState).n; return nil }
func (s *countState) Result() (types.Datum, error)   { return types.DInt(s.n), nil }
func (s *countState) MarshalBinary() ([]byte, error) { return i64(s.n), nil }
func (s *countState) unmarshal(b []byte) error       { s.n = getI64(b); return nil }

// sum/avg of integers in an int64 (sum(int2), sum(int4)) or a numeric
// (sum(int8), avg of integers and numerics).

type intSumState struct {
	sum  int64
	seen bool
}

func (s *intSumState) Add(_ *EvalContext, a []types.Datum) error {
	if a[0].Null {
		return nil
	}
	r, of := addInt(s.sum, a[0].I)
	if of {
		return intRangeErr(tI8)
	}
	s.sum, s.seen = r, true
	return nil
}
func (s *intSumState) Merge(o AggState) error {
	x := o.(*intSumState)
	if !x.seen {
		return nil
	}
	return s.Add(nil, []types.Datum{types.DInt(x.sum)})
}
func (s *intSumState) Result() (types.Datum, error) {
	if !s.seen {
		return types.NullDatum, nil
	}
	return types.DInt(s.sum), nil
}
func (s *intSumState) MarshalBinary() ([]byte, error) {
	if !s.seen {
		return nil, nil
	}
	return i64(s.sum), nil
}
func (s *intSumState) unmarshal(b []byte) error {
	if len(b) == 8 {
		s.sum, s.seen = getI64(b), true
	}
	return nil
}

// numArg is an integer or numeric argument as a numeric.
func numArg(d types.Datum, isInt bool) *apd.Decimal {
	if isInt {
		return apd.New(d.I, 0)
	}
	return d.D
}

type numSumState struct {
	sum   *apd.Decimal
	n     int64
	avg   bool
	isInt bool // input is an integer type (Datum.I)
}

func (s *numSumState) Add(_ *EvalContext, a []types.Datum) error {
	if a[0].Null {
		return nil
	}
	v := numArg(a[0], s.isInt)
	if s.sum == nil {
		s.sum = v
	} else {
		r, err := numAdd(s.sum, v)
		if err != nil {
			return err
		}
		s.sum = r
	}
	s.n++
	return nil
}
func (s *numSumState) Merge(o AggState) error {
	x := o.(*numSumState)
	if x.n == 0 {
		return nil
	}
	if s.sum == nil {
		s.sum = x.sum
	} else {
		r, err := numAdd(s.sum, x.sum)
		if err != nil {
			return err
		}
		s.sum = r
	}
	s.n += x.n
	return nil
}
func (s *numSumState) Result() (types.Datum, error) {
	if s.n == 0 {
		return types.NullDatum, nil
	}
	if !s.avg {
		return types.DNumeric(s.sum), nil
	}
	r, err := numDiv(s.sum, apd.New(s.n, 0))
	if err != nil {
		return types.NullDatum, err
	}
	return types.DNumeric(r), nil
}
func (s *numSumState) MarshalBinary() ([]byte, error) {
	if s.n == 0 {
		return nil, nil
	}
	return putField(putField(nil, i64(s.n)), decBytes(s.sum)), nil
}
func (s *numSumState) unmarshal(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	f, err := getFields(b, 2)
	if err != nil {
		return err
	}
	s.n = getI64(f[0])
	s.sum, err = getDec(f[1])
	return err
}

type floatSumState struct {
	sum float64
	n   int64
	avg bool
	res types.T
}

func (s *floatSumState) Add(_ *EvalContext, a []types.Datum) error {
	if a[0].Null {
		return nil
	}
	r := s.sum + a[0].F
	if s.res.OID == types.OIDFloat4 {
		r = float64(float32(r))
	}
	if math.IsInf(r, 0) && !math.IsInf(s.sum, 0) && !math.IsInf(a[0].F, 0) {
		return pgerror.New(pgerror.CodeNumericValueOutOfRange, "value out of range: overflow")
	}
	s.sum = r
	s.n++
	return nil
}
func (s *floatSumState) Merge(o AggState) error {
	x := o.(*floatSumState)
	if x.n == 0 {
		return nil
	}
	n := s.n
	err := s.Add(nil, []types.Datum{types.DFloat(x.sum)})
	s.n = n + x.n
	return err
}
func (s *floatSumState) Result() (types.Datum, error) {
	if s.n == 0 {
		return types.NullDatum, nil
	}
	if s.avg {
		return types.DFloat(s.sum / float64(s.n)), nil
	}
	return types.DFloat(s.sum), nil
}
func (s *floatSumState) MarshalBinary() ([]byte, error) {
	return putField(putField(nil, i64(s.n)), i64(int64(math.Float64bits(s.sum)))), nil
}
func (s *floatSumState) unmarshal(b []byte) error {
	f, err := getFields(b, 2)
	if err != nil {
		return err
	}
	s.n = getI64(f[0])
	s.sum = math.Float64frombits(uint64(getI64(f[1])))
	return nil
}

type intervalSumState struct {
	sum types.Interval
	n   int64
	avg bool
}

func (s *intervalSumState) Add(_ *EvalContext, a []types.Datum) error {
	if a[0].Null {
		return nil
	}
	r, err := ivAdd(s.sum, a[0].Iv)
	if err != nil {
		return err
	}
	s.sum = r
	s.n++
	return nil
}
func (s *intervalSumState) Merge(o AggState) error {
	x := o.(*intervalSumState)
	r, err := ivAdd(s.sum, x.sum)
	if err != nil {
		return err
	}
	s.sum = r
	s.n += x.n
	return nil
}
func (s *intervalSumState) Result() (types.Datum, error) {
	if s.n == 0 {
		return types.NullDatum, nil
	}
	if !s.avg {
		return types.DInterval(s.sum), nil
	}
	r, err := ivMul(s.sum, 1/float64(s.n))
	return types.DInterval(r), err
}
func (s *intervalSumState) MarshalBinary() ([]byte, error) {
	b, _ := types.EncodeBinary(types.DInterval(s.sum), tIv)
	return putField(putField(nil, i64(s.n)), b), nil
}
func (s *intervalSumState) unmarshal(b []byte) error {
	f, err := getFields(b, 2)
	if err != nil {
		return err
	}
	s.n = getI64(f[0])
	d, err := types.DecodeBinary(f[1], tIv)
	s.sum = d.Iv
	return err
}

// min/max

type minMaxState struct {
	t    types.T
	best types.Datum
	seen bool
	max  bool
}

func (s *minMaxState) Add(_ *EvalContext, a []types.Datum) error {
	v := a[0]
	if v.Null {
		return nil
	}
	if !s.seen {
		s.best, s.seen = v, true
		return nil
	}
	c := types.Compare(v, s.best, s.t)
	if (s.max && c > 0) || (!s.max && c < 0) {
		s.best = v
	}
	return nil
}
func (s *minMaxState) Merge(o AggState) error {
	x := o.(*minMaxState)
	if !x.seen {
		return nil
	}
	return s.Add(nil, []types.Datum{x.best})
}
func (s *minMaxState) Result() (types.Datum, error) {
	if !s.seen {
		return types.NullDatum, nil
	}
	return s.best, nil
}
func (s *minMaxState) MarshalBinary() ([]byte, error) {
	if !s.seen {
		return nil, nil
	}
	return types.EncodeBinary(s.best, s.t)
}
func (s *minMaxState) unmarshal(b []byte) error {
	if b == nil {
		return nil
	}
	d, err := types.DecodeBinary(b, s.t)
	if err != nil {
		return err
	}
	s.best, s.seen = d, true
	return nil
}

// string_agg keeps each value's delimiter before it, and drops the first
// one at the end, as PostgreSQL does; partial states concatenate.

type stringAggState struct {
	buf      []byte
	firstLen int // length of the first delimiter
	seen     bool
	bytea    bool
}

func (s *stringAggState) Add(_ *EvalContext, a []types.Datum) error {
	if a[0].Null {
		return nil
	}
	var v, d []byte
	if s.bytea {
		v = a[0].B
		if !a[1].Null {
			d = a[1].B
		}
	} else {
		v = []byte(a[0].S)
		if !a[1].Null {
			d = []byte(a[1].S)
		}
	}
	if !s.seen {
		s.firstLen = len(d)
		s.seen = true
	}
	if err := checkLen(int64(len(s.buf) + len(d) + len(v))); err != nil {
		return err
	}
	s.buf = append(append(s.buf, d...), v...)
	return nil
}
func (s *stringAggState) Merge(o AggState) error {
	x := o.(*stringAggState)
	if !x.seen {
		return nil
	}
	if !s.seen {
		s.firstLen, s.seen = x.firstLen, true
	}
	if err := checkLen(int64(len(s.buf) + len(x.buf))); err != nil {
		return err
	}
	s.buf = append(s.buf, x.buf...)
	return nil
}
func (s *stringAggState) Result() (types.Datum, error) {
	if !s.seen {
		return types.NullDatum, nil
	}
	out := s.buf[s.firstLen:]
	if s.bytea {
		return types.DBytes(append([]byte(nil), out...)), nil
	}
	return types.DString(string(out)), nil
}
func (s *stringAggState) MarshalBinary() ([]byte, error) {
	if !s.seen {
		return nil, nil
	}
	return putField(putField(nil, i64(int64(s.firstLen))), s.buf), nil
}
func (s *stringAggState) unmarshal(b []byte) error {
	if b == nil {
		return nil
	}
	f, err := getFields(b, 2)
	if err != nil {
		return err
	}
	s.firstLen, s.buf, s.seen = int(getI64(f[0])), append([]byte(nil), f[1]...), true
	return nil
}

// bool_and / bool_or

type boolState struct {
	v, seen, or bool
}

func (s *boolState) Add(_ *EvalContext, a []types.Datum) error {
	if a[0].Null {
		return nil
	}
	b := a[0].I != 0
	if !s.seen {
		s.v, s.seen = b, true
	} else if s.or {
		s.v = s.v || b
	} else {
		s.v = s.v && b
	}
	return nil
}
func (s *boolState) Merge(o AggState) error {
	x := o.(*boolState)
	if !x.seen {
		return nil
	}
	return s.Add(nil, []types.Datum{types.DBool(x.v)})
}
func (s *boolState) Result() (types.Datum, error) {
	if !s.seen {
		return types.NullDatum, nil
	}
	return types.DBool(s.v), nil
}
func (s *boolState) MarshalBinary() ([]byte, error) {
	if !s.seen {
		return nil, nil
	}
	if s.v {
		return []byte{1}, nil
	}
	return []byte{0}, nil
}
func (s *boolState) unmarshal(b []byte) error {
	if len(b) == 1 {
		s.v, s.seen = b[0] == 1, true
	}
	return nil
}

// bit_and / bit_or / bit_xor of integers.

type bitState struct {
	op   string
	v    int64
	seen bool
}

func (s *bitState) Add(_ *EvalContext, a []types.Datum) error {
	if a[0].Null {
		return nil
	}
	x := a[0].I
	switch {
	case !s.seen:
		s.v, s.seen = x, true
	case s.op == "bit_and":
		s.v &= x
	case s.op == "bit_or":
		s.v |= x
	default:
		s.v ^= x
	}
	return nil
}
func (s *bitState) Merge(o AggState) error {
	x := o.(*bitState)
	if !x.seen {
		return nil
	}
	return s.Add(nil, []types.Datum{types.DInt(x.v)})
}
func (s *bitState) Result() (types.Datum, error) {
	if !s.seen {
		return types.NullDatum, nil
	}
	return types.DInt(s.v), nil
}
func (s *bitState) MarshalBinary() ([]byte, error) {
	if !s.seen {
		return nil, nil
	}
	return i64(s.v), nil
}
func (s *bitState) unmarshal(b []byte) error {
	if len(b) == 8 {
		s.v, s.seen = getI64(b), true
	}
	return nil
}

// array_agg keeps NULLs.

type arrayAggState struct {
	t    types.T // array type
	vals []types.Datum
	seen bool
}

func (s *arrayAggState) Add(_ *EvalContext, a []types.Datum) error {
	s.vals = append(s.vals, a[0])
	s.seen = true
	return nil
}
func (s *arrayAggState) Merge(o AggState) error {
	x := o.(*arrayAggState)
	if x.seen {
		s.vals = append(s.vals, x.vals...)
		s.seen = true
	}
	return nil
}
func (s *arrayAggState) Result() (types.Datum, error) {
	if !s.seen {
		return types.NullDatum, nil
	}
	return types.DArray(s.vals), nil
}
func (s *arrayAggState) MarshalBinary() ([]byte, error) {
	if !s.seen {
		return nil, nil
	}
	return types.EncodeBinary(types.DArray(s.vals), s.t)
}
func (s *arrayAggState) unmarshal(b []byte) error {
	if b == nil {
		return nil
	}
	d, err := types.DecodeBinary(b, s.t)
	if err != nil {
		return err
	}
	s.vals, s.seen = d.A, true
	return nil
}

func init() {
	addAgg("count", types.T{}, tI8, func() AggState { return &countState{star: true} })
	for _, t := range []types.T{tI2, tI4, tI8, tF4, tF8, tNum, tText, tBP, tBytea, t16, tDate, tTime, tTS, tTSTZ, tIv, tUUID, tJSONB, tOID, tName, tChar} {
		t := t
		// count(any): one candidate per type keeps resolution simple.
		addAgg("count", t, tI8, func() AggState { return &countState{} })
		switch t {
		case tBytea, t16, tUUID, tJSONB, tChar, tName:
		default:
			addAgg("min", t, t, func() AggState { return &minMaxState{t: t} })
			addAgg("max", t, t, func() AggState { return &minMaxState{t: t, max: true} })
		}
	}
	addAgg("count", tJSON, tI8, func() AggState { return &countState{} })
	addAgg("sum", tI2, tI8, func() AggState { return &intSumState{} })
	addAgg("sum", tI4, tI8, func() AggState { return &intSumState{} })
	addAgg("sum", tI8, tNum, func() AggState { return &numSumState{isInt: true} })
	addAgg("sum", tNum, tNum, func() AggState { return &numSumState{} })
	addAgg("sum", tF4, tF4, func() AggState { return &floatSumState{res: tF4} })
	addAgg("sum", tF8, tF8, func() AggState { return &floatSumState{res: tF8} })
	addAgg("sum", tIv, tIv, func() AggState { return &intervalSumState{} })
	for _, t := range []types.T{tI2, tI4, tI8} {
		addAgg("avg", t, tNum, func() AggState { return &numSumState{isInt: true, avg: true} })
	}
	addAgg("avg", tNum, tNum, func() AggState { return &numSumState{avg: true} })
	addAgg("avg", tF4, tF8, func() AggState { return &floatSumState{res: tF8, avg: true} })
	addAgg("avg", tF8, tF8, func() AggState { return &floatSumState{res: tF8, avg: true} })
	addAgg("avg", tIv, tIv, func() AggState { return &intervalSumState{avg: true} })
	strAgg := &Aggregate{Name: "string_agg", Args: []types.T{tText, tText}, Result: tText,
		New: func() AggState { return &stringAggState{} }}
	strAgg.Unmarshal = func(b []byte) (AggState, error) { s := &stringAggState{}; return s, s.unmarshal(b) }
	byteaAgg := &Aggregate{Name: "string_agg", Args: []types.T{tBytea, tBytea}, Result: tBytea,
		New: func() AggState { return &stringAggState{bytea: true} }}
	byteaAgg.Unmarshal = func(b []byte) (AggState, error) { s := &stringAggState{bytea: true}; return s, s.unmarshal(b) }
	aggregates["string_agg"] = []*Aggregate{strAgg, byteaAgg}
	for _, n := range []string{"bool_and", "every"} {
		addAgg(n, t16, t16, func() AggState { return &boolState{} })
	}
	addAgg("bool_or", t16, t16, func() AggState { return &boolState{or: true} })
	for _, t := range []types.T{tI2, tI4, tI8} {
		for _, op := range []string{"bit_and", "bit_or", "bit_xor"} {
			op := op
			addAgg(op, t, t, func() AggState { return &bitState{op: op} })
		}
	}
	addStatAggs()
	for _, t := range []types.T{tI2, tI4, tI8, tText, t16, tOID, tF8, tNum, tName} {
		at := types.ArrayOf(t)
		addAgg("array_agg", t, at, func() AggState { return &arrayAggState{t: at} })
	}
}
