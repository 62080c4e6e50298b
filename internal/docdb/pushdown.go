package docdb

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
)

// Pushdown: a small typed language of predicates and partial aggregates
// over DocDB values that a scan evaluates next to the data (Scan's Filter
// and Aggregator). It knows no SQL: columns are ids, constants are Values,
// comparisons are Value.Compare, and the query layers push only what they
// can express exactly in it (for instance same-type comparisons).

// ErrInvalidPushdown: a malformed predicate or aggregate, or one that does
// not fit the data (SUM of a text column, key columns that do not match
// the row keys). Retrying cannot help.
var ErrInvalidPushdown = errors.New("docdb: invalid pushdown")

func pushdownErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidPushdown, fmt.Sprintf(format, args...))
}

// PredOp is the operator of a Pred.
type PredOp uint8

// Predicate operators.
const (
	PredAnd       PredOp = iota + 1 // Args all TRUE (none: TRUE)
	PredOr                          // some of Args TRUE (none: FALSE)
	PredNot                         // Args[0]
	PredEQ                          // Col = Vals[0]
	PredNE                          // Col != Vals[0]
	PredLT                          // Col < Vals[0]
	PredLE                          // Col <= Vals[0]
	PredGT                          // Col > Vals[0]
	PredGE                          // Col >= Vals[0]
	PredIsNull                      // Col IS NULL
	PredIsNotNull                   // Col IS NOT NULL
	PredIn                          // Col IN (Vals...)
)

var predOpNames = [...]string{"?", "AND", "OR", "NOT", "=", "!=", "<", "<=", ">", ">=", "IS NULL", "IS NOT NULL", "IN"}

func (op PredOp) String() string {
	if int(op) < len(predOpNames) {
		return predOpNames[op]
	}
	return fmt.Sprintf("op(%d)", byte(op))
}

// Truth is a value of SQL's three-valued logic.
type Truth int8

// Truth values.
const (
	TruthFalse Truth = iota
	TruthUnknown
	TruthTrue
)

func (t Truth) String() string { return [...]string{"FALSE", "UNKNOWN", "TRUE"}[t] }

// Pred is a predicate over a row's columns. Comparisons take the column's
// value (NULL when absent) and constants; a comparison with a NULL operand
// is UNKNOWN; IN is TRUE if the value equals a listed one, else UNKNOWN if
// the value or a listed one is NULL, else FALSE. A row qualifies only when
// the predicate is TRUE.
type Pred struct {
	Op   PredOp
	Args []*Pred // AND, OR, NOT
	Col  uint32  // comparisons, IS [NOT] NULL, IN
	Vals []Value // one constant for EQ..GE; the list of IN
}

// maxPredDepth bounds the nesting of a predicate (evaluation recurses).
const maxPredDepth = 64

// Validate checks the shape of the predicate: known operators, the right
// number of arguments and constants, and bounded nesting.
func (p *Pred) Validate() error { return p.validate(0) }

func (p *Pred) validate(depth int) error {
	if p == nil {
		return pushdownErrorf("nil predicate")
	}
	if depth > maxPredDepth {
		return pushdownErrorf("predicate nested deeper than %d", maxPredDepth)
	}
	switch p.Op {
	case PredAnd, PredOr, PredNot:
		if p.Op == PredNot && len(p.Args) != 1 {
			return pushdownErrorf("NOT takes one argument, not %d", len(p.Args))
		}
		if len(p.Vals) != 0 {
			return pushdownErrorf("%s takes no constants", p.Op)
		}
		for _, a := range p.Args {
			if err := a.validate(depth + 1); err != nil {
				return err
			}
		}
		return nil
	case PredEQ, PredNE, PredLT, PredLE, PredGT, PredGE:
		if len(p.Vals) != 1 {
			return pushdownErrorf("%s takes one constant, not %d", p.Op, len(p.Vals))
		}
	case PredIsNull, PredIsNotNull:
		if len(p.Vals) != 0 {
			return pushdownErrorf("%s takes no constant", p.Op)
		}
	case PredIn:
	default:
		return pushdownErrorf("unknown predicate operator %d", p.Op)
	}
	if len(p.Args) != 0 {
		return pushdownErrorf("%s takes no sub-predicates", p.Op)
	}
	return nil
}

// Eval evaluates the predicate on the row whose column values get returns
// (NULL for an absent column).
func (p *Pred) Eval(get func(col uint32) Value) Truth {
	switch p.Op {
	case PredAnd:
		out := TruthTrue
		for _, a := range p.Args {
			switch a.Eval(get) {
			case TruthFalse:
				return TruthFalse
			case TruthUnknown:
				out = TruthUnknown
			}
		}
		return out
	case PredOr:
		out := TruthFalse
		for _, a := range p.Args {
			switch a.Eval(get) {
			case TruthTrue:
				return TruthTrue
			case TruthUnknown:
				out = TruthUnknown
			}
		}
		return out
	case PredNot:
		return TruthTrue - p.Args[0].Eval(get)
	case PredIsNull:
		return truth(get(p.Col).IsNull())
	case PredIsNotNull:
		return truth(!get(p.Col).IsNull())
	case PredIn:
		v := get(p.Col)
		if v.IsNull() {
			return TruthUnknown
		}
		out := TruthFalse
		for _, c := range p.Vals {
			if c.IsNull() {
				out = TruthUnknown
			} else if v.Compare(c) == 0 {
				return TruthTrue
			}
		}
		return out
	}
	v := get(p.Col)
	c := p.Vals[0]
	if v.IsNull() || c.IsNull() {
		return TruthUnknown
	}
	cmp := v.Compare(c)
	switch p.Op {
	case PredEQ:
		return truth(cmp == 0)
	case PredNE:
		return truth(cmp != 0)
	case PredLT:
		return truth(cmp < 0)
	case PredLE:
		return truth(cmp <= 0)
	case PredGT:
		return truth(cmp > 0)
	case PredGE:
		return truth(cmp >= 0)
	}
	return TruthUnknown
}

func truth(b bool) Truth {
	if b {
		return TruthTrue
	}
	return TruthFalse
}

// Columns appends the ids of the columns the predicate reads to dst.
func (p *Pred) Columns(dst []uint32) []uint32 {
	switch p.Op {
	case PredAnd, PredOr, PredNot:
		for _, a := range p.Args {
			dst = a.Columns(dst)
		}
		return dst
	}
	return append(dst, p.Col)
}

// String formats the predicate, e.g. (c2 > int64:5 AND c3 IS NULL).
func (p *Pred) String() string {
	var b strings.Builder
	p.format(&b)
	return b.String()
}

func (p *Pred) format(b *strings.Builder) {
	switch p.Op {
	case PredAnd, PredOr:
		if len(p.Args) == 0 {
			b.WriteString(map[PredOp]string{PredAnd: "TRUE", PredOr: "FALSE"}[p.Op])
			return
		}
		b.WriteByte('(')
		for i, a := range p.Args {
			if i > 0 {
				b.WriteString(" " + p.Op.String() + " ")
			}
			a.format(b)
		}
		b.WriteByte(')')
	case PredNot:
		b.WriteString("NOT ")
		p.Args[0].format(b)
	case PredIsNull, PredIsNotNull:
		fmt.Fprintf(b, "c%d %s", p.Col, p.Op)
	case PredIn:
		fmt.Fprintf(b, "c%d IN (", p.Col)
		for i, v := range p.Vals {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(v.String())
		}
		b.WriteByte(')')
	default:
		fmt.Fprintf(b, "c%d %s %s", p.Col, p.Op, p.Vals[0])
	}
}

// ---- Aggregates ----

// AggKind is the kind of a partial aggregate.
type AggKind uint8

// Aggregate kinds.
const (
	AggCountStar AggKind = iota + 1 // rows
	AggCount                        // non-NULL values of Col
	AggSum                          // see Aggregator
	AggMin
	AggMax
)

var aggNames = [...]string{"?", "COUNT(*)", "COUNT", "SUM", "MIN", "MAX"}

func (k AggKind) String() string {
	if int(k) < len(aggNames) {
		return aggNames[k]
	}
	return fmt.Sprintf("agg(%d)", byte(k))
}

// AggSpec is one aggregate: a kind and, but for COUNT(*), a column.
type AggSpec struct {
	Kind AggKind
	Col  uint32
}

// Aggregator accumulates partial aggregates over rows, per group when it
// has group columns: rows with equal values of the group columns form one
// group, and NULLs equal each other there (as GROUP BY groups them; the
// callers group only by columns whose stored values are equal exactly
// when their query layer's values are). Partial results, and the partials
// MergeAggregate combines, are Values:
//
//	COUNT(*), COUNT(col)   int64
//	SUM(int16/32/64 col)   int64 while the sum fits, else the exact sum as
//	                       a decimal (an integer string); NULL without values
//	SUM(float32/64 col)    float64; NULL without values
//	MIN, MAX               the least/greatest non-NULL value by
//	                       Value.Compare; NULL without values
//
// SUM of any other type fails with ErrInvalidPushdown.
type Aggregator struct {
	groupBy []uint32
	specs   []AggSpec
	index   map[string]int // group key (appendGroupKey) → groups
	groups  []aggGroup
	vals    []Value // scratch: the current row's group values
	key     []byte  // scratch: their group key
}

// aggGroup is one group's values of the group columns and its states.
type aggGroup struct {
	vals []Value
	st   []aggState
}

type aggState struct {
	count int64
	sum   Value    // SUM: NULL, int64 or float64 while accumulating
	big   *big.Int // SUM of ints once past the int64 range
	val   Value    // MIN, MAX
}

// NewAggregator returns an Aggregator of specs without groups: its
// results are one partial result per aggregate, over no rows too.
func NewAggregator(specs []AggSpec) (*Aggregator, error) {
	return NewGroupAggregator(nil, specs)
}

// NewGroupAggregator returns an Aggregator of specs per group of the
// columns groupBy (none: one group, that of every row).
func NewGroupAggregator(groupBy []uint32, specs []AggSpec) (*Aggregator, error) {
	if err := checkAggSpecs(specs); err != nil {
		return nil, err
	}
	a := &Aggregator{groupBy: groupBy, specs: specs, index: map[string]int{}}
	if len(groupBy) == 0 {
		a.groups = []aggGroup{{st: make([]aggState, len(specs))}}
	}
	return a, nil
}

func checkAggSpecs(specs []AggSpec) error {
	for _, s := range specs {
		if s.Kind < AggCountStar || s.Kind > AggMax {
			return pushdownErrorf("unknown aggregate kind %d", s.Kind)
		}
	}
	return nil
}

// Columns appends the ids of the columns the aggregates and the groups
// read to dst.
func (a *Aggregator) Columns(dst []uint32) []uint32 {
	dst = append(dst, a.groupBy...)
	for _, s := range a.specs {
		if s.Kind != AggCountStar {
			dst = append(dst, s.Col)
		}
	}
	return dst
}

// full reports whether the aggregator has group columns and holds max
// groups (max > 0): a scan stops its page there.
func (a *Aggregator) full(max int) bool {
	return max > 0 && len(a.groupBy) > 0 && len(a.groups) >= max
}

// Add adds a row whose values get returns.
func (a *Aggregator) Add(get func(col uint32) Value) error {
	g := a.group(get)
	for i, s := range a.specs {
		st := &g.st[i]
		if s.Kind == AggCountStar {
			st.count++
			continue
		}
		v := get(s.Col)
		if v.IsNull() {
			continue
		}
		switch s.Kind {
		case AggCount:
			st.count++
		case AggSum:
			if err := st.addSum(v); err != nil {
				return err
			}
		case AggMin:
			if st.val.IsNull() || v.Compare(st.val) < 0 {
				st.val = cloneValue(v)
			}
		case AggMax:
			if st.val.IsNull() || v.Compare(st.val) > 0 {
				st.val = cloneValue(v)
			}
		}
	}
	return nil
}

// group returns the group of the row whose values get returns, new if
// the row is the first of it.
func (a *Aggregator) group(get func(col uint32) Value) *aggGroup {
	if len(a.groupBy) == 0 {
		return &a.groups[0]
	}
	a.vals = a.vals[:0]
	for _, c := range a.groupBy {
		a.vals = append(a.vals, get(c))
	}
	a.key = appendGroupKey(a.key[:0], a.vals)
	if i, ok := a.index[string(a.key)]; ok {
		return &a.groups[i]
	}
	vals := make([]Value, len(a.vals))
	for i, v := range a.vals {
		vals[i] = cloneValue(v)
	}
	a.index[string(a.key)] = len(a.groups)
	a.groups = append(a.groups, aggGroup{vals: vals, st: make([]aggState, len(a.specs))})
	return &a.groups[len(a.groups)-1]
}

// appendGroupKey appends an encoding of a group's values that is equal
// exactly for equal values: each value's encoding with its length first
// (value encodings are not self-delimiting).
func appendGroupKey(dst []byte, vals []Value) []byte {
	for _, v := range vals {
		n := len(dst)
		dst = AppendValue(append(dst, 0, 0, 0, 0), v)
		binary.BigEndian.PutUint32(dst[n:], uint32(len(dst)-n-4))
	}
	return dst
}

func cloneValue(v Value) Value {
	if v.Bytes != nil {
		v.Bytes = slices.Clone(v.Bytes)
	}
	return v
}

func (st *aggState) addSum(v Value) error {
	switch v.Type {
	case TypeInt16, TypeInt32, TypeInt64:
		switch st.sum.Type {
		case TypeNull:
			st.sum = Int64(v.Int)
		case TypeInt64:
			if st.big != nil {
				st.big.Add(st.big, big.NewInt(v.Int))
				return nil
			}
			s, ok := addInt64(st.sum.Int, v.Int)
			if !ok {
				st.big = new(big.Int).Add(big.NewInt(st.sum.Int), big.NewInt(v.Int))
				return nil
			}
			st.sum.Int = s
		default:
			return pushdownErrorf("SUM over values of types %s and %s", st.sum.Type, v.Type)
		}
	case TypeFloat32, TypeFloat64:
		switch st.sum.Type {
		case TypeNull:
			st.sum = Float64(v.Float)
		case TypeFloat64:
			st.sum.Float += v.Float
		default:
			return pushdownErrorf("SUM over values of types %s and %s", st.sum.Type, v.Type)
		}
	default:
		return pushdownErrorf("SUM of a %s value", v.Type)
	}
	return nil
}

// addInt64 returns a+b and whether it did not overflow.
func addInt64(a, b int64) (int64, bool) {
	s := a + b
	return s, (s > a) == (b > 0)
}

// Results returns the partial results. Without group columns: one per
// aggregate. With group columns: for each group, in the order its first
// row came, its values of the group columns then one partial result per
// aggregate; the groups' rows one after another (none without rows).
func (a *Aggregator) Results() []Value {
	out := make([]Value, 0, len(a.groups)*(len(a.groupBy)+len(a.specs)))
	for _, g := range a.groups {
		out = append(out, g.vals...)
		for i, s := range a.specs {
			out = append(out, g.st[i].result(s.Kind))
		}
	}
	return out
}

// result is the partial result of an aggregate of kind k.
func (st *aggState) result(k AggKind) Value {
	switch k {
	case AggCountStar, AggCount:
		return Int64(st.count)
	case AggSum:
		if st.big != nil {
			return intSum(st.big)
		}
		return st.sum
	}
	return st.val
}

// intSum is an integer sum as a Value: int64 if it fits, else decimal.
func intSum(b *big.Int) Value {
	if b.IsInt64() {
		return Int64(b.Int64())
	}
	return Decimal(b.String())
}

// MergeAggregate combines two partial results of an aggregate of kind k
// (see Aggregator).
func MergeAggregate(k AggKind, a, b Value) (Value, error) {
	switch k {
	case AggCountStar, AggCount:
		if a.Type != TypeInt64 || b.Type != TypeInt64 {
			return Value{}, pushdownErrorf("%s partials of types %s and %s", k, a.Type, b.Type)
		}
		return Int64(a.Int + b.Int), nil
	case AggMin, AggMax:
		if a.IsNull() {
			return b, nil
		}
		if b.IsNull() {
			return a, nil
		}
		if c := a.Compare(b); (k == AggMin && c <= 0) || (k == AggMax && c >= 0) {
			return a, nil
		}
		return b, nil
	case AggSum:
		if a.IsNull() {
			return b, nil
		}
		if b.IsNull() {
			return a, nil
		}
		if a.Type == TypeFloat64 && b.Type == TypeFloat64 {
			return Float64(a.Float + b.Float), nil
		}
		if a.Type == TypeInt64 && b.Type == TypeInt64 {
			if s, ok := addInt64(a.Int, b.Int); ok {
				return Int64(s), nil
			}
		}
		x, okA := bigOfIntSum(a)
		y, okB := bigOfIntSum(b)
		if !okA || !okB {
			return Value{}, pushdownErrorf("SUM partials of types %s and %s", a.Type, b.Type)
		}
		return intSum(x.Add(x, y)), nil
	}
	return Value{}, pushdownErrorf("unknown aggregate kind %d", k)
}

// AggMerger merges partial results (Aggregator.Results) of one shape, the
// same group columns and aggregates, from many pages and tablets: the
// partial rows of equal groups combine by MergeAggregate (a hash merge).
type AggMerger struct {
	nGroup int
	specs  []AggSpec
	index  map[string]int // group key (appendGroupKey) → rows
	rows   [][]Value
	key    []byte
}

// NewAggMerger returns a merger of the partials of an Aggregator with
// groupCols group columns and specs. Without group columns it holds one
// row from the start: the results over no rows.
func NewAggMerger(groupCols int, specs []AggSpec) *AggMerger {
	m := &AggMerger{nGroup: groupCols, specs: specs, index: map[string]int{}}
	if groupCols == 0 {
		row := make([]Value, len(specs))
		for i, s := range specs {
			row[i] = (&aggState{}).result(s.Kind)
		}
		m.index[""] = 0
		m.rows = [][]Value{row}
	}
	return m
}

// Add merges the partial results of one page, as Aggregator.Results gives
// them. The merger keeps partials (and may change it) rather than copy it.
func (m *AggMerger) Add(partials []Value) error {
	w := m.nGroup + len(m.specs)
	if w == 0 || len(partials)%w != 0 || (m.nGroup == 0 && len(partials) != w) {
		return pushdownErrorf("%d partial values for rows of %d", len(partials), w)
	}
	for ; len(partials) > 0; partials = partials[w:] {
		if err := m.addRow(partials[:w:w]); err != nil {
			return err
		}
	}
	return nil
}

// Merge merges the rows of o into m.
func (m *AggMerger) Merge(o *AggMerger) error {
	for _, r := range o.rows {
		if err := m.addRow(r); err != nil {
			return err
		}
	}
	return nil
}

func (m *AggMerger) addRow(row []Value) error {
	m.key = appendGroupKey(m.key[:0], row[:m.nGroup])
	i, ok := m.index[string(m.key)]
	if !ok {
		m.index[string(m.key)] = len(m.rows)
		m.rows = append(m.rows, row)
		return nil
	}
	acc := m.rows[i][m.nGroup:]
	for j, s := range m.specs {
		v, err := MergeAggregate(s.Kind, acc[j], row[m.nGroup+j])
		if err != nil {
			return err
		}
		acc[j] = v
	}
	return nil
}

// Rows returns the merged rows: each group's values of the group columns
// then its merged results, groups in the order they first came (without
// group columns, exactly one row).
func (m *AggMerger) Rows() [][]Value { return m.rows }

// bigOfIntSum reads an integer SUM partial: int64, or a decimal holding
// an integer.
func bigOfIntSum(v Value) (*big.Int, bool) {
	switch v.Type {
	case TypeInt64:
		return big.NewInt(v.Int), true
	case TypeDecimal:
		return new(big.Int).SetString(string(v.Bytes), 10)
	}
	return nil, false
}

// ---- Rows as seen by predicates and aggregates ----

// RowView gives a scanned row's values by column id, its key columns
// included: KeyColumns names the key components in key order (hash
// components, then range components), decoded from the row key on first
// use.
type RowView struct {
	KeyColumns []uint32

	row     *Row
	keyVals []Value
	decoded bool
	err     error
}

// Reset points the view at row.
func (v *RowView) Reset(row *Row) {
	v.row, v.decoded, v.keyVals = row, false, v.keyVals[:0]
}

// Err reports a row key that does not fit KeyColumns.
func (v *RowView) Err() error { return v.err }

// Get returns the value of column col (NULL if absent).
func (v *RowView) Get(col uint32) Value {
	for i, k := range v.KeyColumns {
		if k == col {
			if !v.decoded {
				v.decodeKey()
			}
			if i < len(v.keyVals) {
				return v.keyVals[i]
			}
			return Value{}
		}
	}
	cols := v.row.Columns
	i, found := slices.BinarySearchFunc(cols, col, func(c ColumnValue, id uint32) int {
		switch {
		case c.ID < id:
			return -1
		case c.ID > id:
			return 1
		}
		return 0
	})
	if found {
		return cols[i].Value
	}
	return Value{}
}

func (v *RowView) decodeKey() {
	v.decoded = true
	k, err := DecodeDocKey(v.row.Key)
	if err != nil {
		v.err = err
		return
	}
	if len(k.HashParts)+len(k.RangeParts) != len(v.KeyColumns) {
		v.err = pushdownErrorf("%d key columns for a row key of %d components", len(v.KeyColumns), len(k.HashParts)+len(k.RangeParts))
		return
	}
	for _, p := range k.HashParts {
		v.keyVals = append(v.keyVals, p.Value)
	}
	for _, p := range k.RangeParts {
		v.keyVals = append(v.keyVals, p.Value)
	}
}

// pushdownColumns returns the columns a scan with a filter or aggregator
// reads: with an aggregator, those the filter and the aggregates need;
// without, the projection plus the filter's (nil projection: all). Key
// columns come from the row key. trim reports whether returned rows must
// be cut back to the projection.
func pushdownColumns(opts *ScanOptions) (cols []uint32, trim bool) {
	if opts.Aggregator == nil && opts.Columns == nil {
		return nil, false
	}
	cols = []uint32{}
	if opts.Aggregator == nil {
		cols = append(cols, opts.Columns...)
	} else {
		cols = opts.Aggregator.Columns(cols)
	}
	if opts.Filter != nil {
		cols = opts.Filter.Columns(cols)
	}
	cols = slices.DeleteFunc(cols, func(c uint32) bool { return slices.Contains(opts.KeyColumns, c) || c == LivenessColumn })
	slices.Sort(cols)
	cols = slices.Compact(cols)
	if opts.Aggregator != nil {
		return cols, false
	}
	proj := slices.Clone(opts.Columns)
	slices.Sort(proj)
	return cols, !slices.Equal(slices.Compact(proj), cols)
}

// trimColumns keeps the columns of row in proj.
func trimColumns(cols []ColumnValue, proj []uint32) []ColumnValue {
	return slices.DeleteFunc(cols, func(c ColumnValue) bool { return !slices.Contains(proj, c.ID) })
}
