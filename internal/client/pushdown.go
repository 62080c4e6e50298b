package client

import (
	"context"
	"fmt"
	"strings"

	"github.com/shaledb/shaledb/internal/docdb"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// Scan pushdown: filters and partial aggregates that the tablets evaluate
// next to the data (docdb.Pred, docdb.Aggregator), named by column here
// and sent by column id.

// CmpOp is the operator of a Cmp filter.
type CmpOp int

// Comparison operators.
const (
	CmpEQ CmpOp = iota + 1
	CmpNE
	CmpLT
	CmpLE
	CmpGT
	CmpGE
)

var cmpOps = map[CmpOp]docdb.PredOp{
	CmpEQ: docdb.PredEQ, CmpNE: docdb.PredNE, CmpLT: docdb.PredLT,
	CmpLE: docdb.PredLE, CmpGT: docdb.PredGT, CmpGE: docdb.PredGE,
}

// Filter is a predicate over a row's columns (key columns included),
// evaluated with SQL's three-valued logic: a comparison with NULL (a NULL
// column or constant) is UNKNOWN, NOT UNKNOWN is UNKNOWN, AND/OR as in SQL,
// and a row qualifies only when the filter is TRUE. Values compare as
// docdb.Value.Compare does; a constant must have its column's type (or be
// NULL). Build filters with Cmp, IsNull, IsNotNull, In, And, Or and Not.
type Filter struct {
	op   docdb.PredOp
	col  string
	vals []docdb.Value
	args []*Filter
}

// Cmp is `col op v`.
func Cmp(col string, op CmpOp, v docdb.Value) *Filter {
	return &Filter{op: cmpOps[op], col: col, vals: []docdb.Value{v}}
}

// IsNull is `col IS NULL`.
func IsNull(col string) *Filter { return &Filter{op: docdb.PredIsNull, col: col} }

// IsNotNull is `col IS NOT NULL`.
func IsNotNull(col string) *Filter { return &Filter{op: docdb.PredIsNotNull, col: col} }

// In is `col IN (vals...)`: TRUE if col equals one of vals, else UNKNOWN
// if col or one of vals is NULL, else FALSE (an empty list: FALSE).
func In(col string, vals ...docdb.Value) *Filter {
	return &Filter{op: docdb.PredIn, col: col, vals: vals}
}

// And is TRUE when every filter is (no filters: TRUE).
func And(fs ...*Filter) *Filter { return &Filter{op: docdb.PredAnd, args: fs} }

// Or is TRUE when some filter is (no filters: FALSE).
func Or(fs ...*Filter) *Filter { return &Filter{op: docdb.PredOr, args: fs} }

// Not negates f (NOT UNKNOWN is UNKNOWN).
func Not(f *Filter) *Filter { return &Filter{op: docdb.PredNot, args: []*Filter{f}} }

// String formats the filter, e.g. (v > int64:5 AND s IS NULL).
func (f *Filter) String() string {
	var b strings.Builder
	f.format(&b)
	return b.String()
}

func (f *Filter) format(b *strings.Builder) {
	if f == nil {
		b.WriteString("<nil>")
		return
	}
	switch f.op {
	case docdb.PredAnd, docdb.PredOr:
		if len(f.args) == 0 {
			b.WriteString(map[docdb.PredOp]string{docdb.PredAnd: "TRUE", docdb.PredOr: "FALSE"}[f.op])
			return
		}
		b.WriteByte('(')
		for i, a := range f.args {
			if i > 0 {
				b.WriteString(" " + f.op.String() + " ")
			}
			a.format(b)
		}
		b.WriteByte(')')
	case docdb.PredNot:
		b.WriteString("NOT ")
		f.args[0].format(b)
	case docdb.PredIsNull, docdb.PredIsNotNull:
		fmt.Fprintf(b, "%s %s", f.col, f.op)
	case docdb.PredIn:
		fmt.Fprintf(b, "%s IN (", f.col)
		for i, v := range f.vals {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(v.String())
		}
		b.WriteByte(')')
	default:
		fmt.Fprintf(b, "%s %s %v", f.col, f.op, f.vals)
	}
}

// Aggregate is one aggregate of Table.Aggregate and Txn.Aggregate.
type Aggregate struct {
	Kind   docdb.AggKind
	Column string // not for COUNT(*)
}

// CountStar is COUNT(*): the rows.
func CountStar() Aggregate { return Aggregate{Kind: docdb.AggCountStar} }

// Count is COUNT(col): the rows where col is not NULL.
func Count(col string) Aggregate { return Aggregate{Kind: docdb.AggCount, Column: col} }

// Sum is SUM(col) of an int16, int32, int64, float32 or float64 column.
func Sum(col string) Aggregate { return Aggregate{Kind: docdb.AggSum, Column: col} }

// Min is MIN(col) by docdb.Value.Compare.
func Min(col string) Aggregate { return Aggregate{Kind: docdb.AggMin, Column: col} }

// Max is MAX(col) by docdb.Value.Compare.
func Max(col string) Aggregate { return Aggregate{Kind: docdb.AggMax, Column: col} }

// pushdown is a scan's filter and aggregates compiled against the table's
// schema: for the wire, and for evaluation in the client (a transaction
// that reads its own writes).
type pushdown struct {
	pred    *docdb.Pred
	wire    *tspb.Predicate
	specs   []docdb.AggSpec
	aggs    []*tspb.Aggregate
	groupBy []uint32 // column ids
	keyIDs  []uint32
}

// aggregate reports whether the scan reads aggregates (or groups) rather
// than rows.
func (pd *pushdown) aggregate() bool {
	return pd != nil && (len(pd.specs) > 0 || len(pd.groupBy) > 0)
}

// merger is an empty merger of the scan's partial results.
func (pd *pushdown) merger() *docdb.AggMerger {
	return docdb.NewAggMerger(len(pd.groupBy), pd.specs)
}

// compilePushdown compiles the filter, aggregates and group columns of o
// (nil when there are none).
func (t *Table) compilePushdown(o *ScanOptions) (*pushdown, error) {
	if o.Filter == nil && len(o.Aggregates) == 0 && len(o.GroupBy) == 0 {
		return nil, nil
	}
	pd := &pushdown{keyIDs: t.keyColumnIDs()}
	if o.Filter != nil {
		p, err := t.compileFilter(o.Filter, 0)
		if err != nil {
			return nil, err
		}
		pd.pred, pd.wire = p, predToWire(p)
	}
	for _, a := range o.Aggregates {
		spec, err := t.compileAggregate(a)
		if err != nil {
			return nil, err
		}
		pd.specs = append(pd.specs, spec)
		pd.aggs = append(pd.aggs, &tspb.Aggregate{Kind: aggKindToWire[spec.Kind], ColumnId: spec.Col})
	}
	for _, name := range o.GroupBy {
		c, ok := t.schema.byName[name]
		if !ok {
			return nil, invalidf("group by: unknown column %q", name)
		}
		pd.groupBy = append(pd.groupBy, c.ID)
	}
	return pd, nil
}

// keyColumnIDs are the ids of the key columns in key order.
func (t *Table) keyColumnIDs() []uint32 {
	var ids []uint32
	for _, c := range t.schema.HashKey {
		ids = append(ids, c.ID)
	}
	for _, c := range t.schema.RangeKey {
		ids = append(ids, c.ID)
	}
	return ids
}

func (t *Table) compileFilter(f *Filter, depth int) (*docdb.Pred, error) {
	if f == nil {
		return nil, invalidf("nil filter")
	}
	if depth > 32 {
		return nil, invalidf("filter nested deeper than 32")
	}
	p := &docdb.Pred{Op: f.op}
	switch f.op {
	case docdb.PredAnd, docdb.PredOr, docdb.PredNot:
		for _, a := range f.args {
			ap, err := t.compileFilter(a, depth+1)
			if err != nil {
				return nil, err
			}
			p.Args = append(p.Args, ap)
		}
	case 0:
		return nil, invalidf("unknown comparison operator")
	default:
		c, ok := t.schema.byName[f.col]
		if !ok {
			return nil, invalidf("filter: unknown column %q", f.col)
		}
		for _, v := range f.vals {
			if !v.IsNull() && v.Type != c.Type {
				return nil, invalidf("filter: column %q is %s, not %s", c.Name, c.Type, v.Type)
			}
		}
		p.Col, p.Vals = c.ID, f.vals
	}
	if err := p.Validate(); err != nil {
		return nil, invalidf("filter %s: %v", f, err)
	}
	return p, nil
}

func (t *Table) compileAggregate(a Aggregate) (docdb.AggSpec, error) {
	spec := docdb.AggSpec{Kind: a.Kind}
	switch a.Kind {
	case docdb.AggCountStar:
		return spec, nil
	case docdb.AggCount, docdb.AggSum, docdb.AggMin, docdb.AggMax:
	default:
		return spec, invalidf("unknown aggregate kind %d", a.Kind)
	}
	c, ok := t.schema.byName[a.Column]
	if !ok {
		return spec, invalidf("%s: unknown column %q", a.Kind, a.Column)
	}
	if a.Kind == docdb.AggSum {
		switch c.Type {
		case docdb.TypeInt16, docdb.TypeInt32, docdb.TypeInt64, docdb.TypeFloat32, docdb.TypeFloat64:
		default:
			return spec, invalidf("SUM of column %q of type %s", c.Name, c.Type)
		}
	}
	spec.Col = c.ID
	return spec, nil
}

var predOpToWire = map[docdb.PredOp]tspb.Predicate_Op{
	docdb.PredAnd: tspb.Predicate_AND, docdb.PredOr: tspb.Predicate_OR, docdb.PredNot: tspb.Predicate_NOT,
	docdb.PredEQ: tspb.Predicate_EQ, docdb.PredNE: tspb.Predicate_NE, docdb.PredLT: tspb.Predicate_LT,
	docdb.PredLE: tspb.Predicate_LE, docdb.PredGT: tspb.Predicate_GT, docdb.PredGE: tspb.Predicate_GE,
	docdb.PredIsNull: tspb.Predicate_IS_NULL, docdb.PredIsNotNull: tspb.Predicate_IS_NOT_NULL, docdb.PredIn: tspb.Predicate_IN,
}

var aggKindToWire = map[docdb.AggKind]tspb.Aggregate_Kind{
	docdb.AggCountStar: tspb.Aggregate_COUNT_STAR, docdb.AggCount: tspb.Aggregate_COUNT, docdb.AggSum: tspb.Aggregate_SUM,
	docdb.AggMin: tspb.Aggregate_MIN, docdb.AggMax: tspb.Aggregate_MAX,
}

func predToWire(p *docdb.Pred) *tspb.Predicate {
	w := &tspb.Predicate{Op: predOpToWire[p.Op], ColumnId: p.Col}
	for _, a := range p.Args {
		w.Args = append(w.Args, predToWire(a))
	}
	for _, v := range p.Vals {
		w.Values = append(w.Values, docdb.AppendValue(nil, v))
	}
	return w
}

// rowGetter returns a row's values by column id (NULL if absent).
func (t *Table) rowGetter(r Row) func(col uint32) docdb.Value {
	return func(col uint32) docdb.Value {
		if c, ok := t.schema.byID[col]; ok {
			return r[c.Name]
		}
		return docdb.Value{}
	}
}

// filterRows keeps the rows for which p is TRUE (all if p is nil).
func (t *Table) filterRows(rows []Row, p *docdb.Pred) []Row {
	if p == nil {
		return rows
	}
	out := rows[:0]
	for _, r := range rows {
		if p.Eval(t.rowGetter(r)) == docdb.TruthTrue {
			out = append(out, r)
		}
	}
	return out
}

// keepRows keeps the rows keep accepts (ScanOptions.Keep); its error ends
// the scan as it is.
func keepRows(rows []Row, keep func(Row) (bool, error)) ([]Row, error) {
	if keep == nil {
		return rows, nil
	}
	out := rows[:0]
	for _, r := range rows {
		ok, err := keep(r)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// aggregateRows computes the aggregates of pd over rows in the client.
func (t *Table) aggregateRows(rows []Row, pd *pushdown) (*docdb.AggMerger, error) {
	agg, err := docdb.NewGroupAggregator(pd.groupBy, pd.specs)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if err := agg.Add(t.rowGetter(r)); err != nil {
			return nil, err
		}
	}
	m := pd.merger()
	return m, m.Add(agg.Results())
}

// aggregateColumns are the non-key columns aggregates and groups read (at
// least one name, so that a projection of them reads no other column).
func (t *Table) aggregateColumns(pd *pushdown) []string {
	var names []string
	for _, id := range pd.groupBy {
		names = append(names, t.schema.byID[id].Name)
	}
	for _, s := range pd.specs {
		if c, ok := t.schema.byID[s.Col]; ok && s.Kind != docdb.AggCountStar {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		names = append(names, t.schema.Columns[0].Name)
		for _, c := range t.schema.Columns {
			if c.IsKey() {
				names[0] = c.Name // a key column alone asks only for existence
				break
			}
		}
	}
	return names
}

// Aggregate computes opts.Aggregates over the rows a Scan with opts would
// return (opts.Filter applies; Limit must be 0; Columns and PageSize do
// not matter), with one result per aggregate, in order (see
// docdb.Aggregator for the types): COUNT(*) and COUNT(col) as int64; SUM
// of integers as int64, or as an exact decimal once the sum leaves the
// int64 range; SUM of floats as float64; MIN and MAX as the column's
// value; SUM, MIN and MAX of no values as NULL. opts.GroupBy must be
// empty (see AggregateGroups).
//
// The tablets compute partial aggregates next to the data and the client
// merges them: every tablet is read at once (opts.Parallelism), at one
// read time, after the first request fixed it.
func (t *Table) Aggregate(ctx context.Context, opts ScanOptions) ([]docdb.Value, error) {
	return t.ungrouped(ctx, opts, func() ([][]docdb.Value, error) { return t.AggregateGroups(ctx, opts) })
}

// AggregateGroups is Aggregate per group of the columns opts.GroupBy: rows
// with equal values of them, NULLs included, form a group. It returns one
// row per group, in no particular order: the group's values of the
// GroupBy columns, then one result per aggregate (no rows: no groups).
// Each tablet returns one partial row per group of its rows (at most
// opts.MaxGroups a request), and the client merges equal groups.
// Without GroupBy it returns the one row of Aggregate.
func (t *Table) AggregateGroups(ctx context.Context, opts ScanOptions) ([][]docdb.Value, error) {
	sc := t.aggregateScanner(ctx, opts)
	m, err := sc.aggregateAll()
	if err != nil {
		return nil, err
	}
	return m.Rows(), nil
}

// ungrouped returns the one row of an aggregate read without groups that
// run makes; group columns go through AggregateGroups, whose rows say
// which group each result is of.
func (t *Table) ungrouped(ctx context.Context, opts ScanOptions, run func() ([][]docdb.Value, error)) ([]docdb.Value, error) {
	if len(opts.GroupBy) > 0 {
		return nil, (&sender{c: t.c}).finish(ctx, "aggregate", t, invalidf("aggregate: group columns (use AggregateGroups)"))
	}
	rows, err := run()
	if err != nil {
		return nil, err
	}
	return rows[0], nil
}

// aggregateScanner is the scanner of an aggregate read.
func (t *Table) aggregateScanner(ctx context.Context, opts ScanOptions) *Scanner {
	var err error
	switch {
	case len(opts.Aggregates) == 0 && len(opts.GroupBy) == 0:
		err = invalidf("aggregate: no aggregates")
	case opts.Limit != 0:
		err = invalidf("aggregate: a limit with aggregates")
	}
	opts.Columns = nil
	sc := t.newScanner(ctx, opts)
	if err != nil && sc.err == nil {
		sc.err = (&sender{c: t.c}).finish(ctx, "aggregate", t, err)
		sc.done = true
	}
	return sc
}

// Aggregate is Table.Aggregate inside the transaction, at its read time.
// The transaction's own writes count: when it has written to t, or under
// serializable isolation (whose reads lock what they read), it scans the
// qualifying rows with Scan and aggregates them in the client instead of
// pushing the aggregates down.
func (tx *Txn) Aggregate(ctx context.Context, t *Table, opts ScanOptions) ([]docdb.Value, error) {
	return t.ungrouped(ctx, opts, func() ([][]docdb.Value, error) { return tx.AggregateGroups(ctx, t, opts) })
}

// AggregateGroups is Table.AggregateGroups inside the transaction, as
// Aggregate is.
func (tx *Txn) AggregateGroups(ctx context.Context, t *Table, opts ScanOptions) ([][]docdb.Value, error) {
	if err := tx.checkSettled(ctx); err != nil {
		return nil, err
	}
	if opts.FollowerReads {
		return nil, &Error{Code: CodeInvalidArgument, Op: "aggregate", Table: t.name, Message: "follower reads inside a transaction"}
	}
	sc := t.aggregateScanner(ctx, opts)
	if sc.err != nil {
		return nil, sc.err
	}
	if tx.opts.Isolation == Serializable || tx.hasOwnTable(t.id) {
		so := opts
		so.Aggregates, so.GroupBy = nil, nil
		so.Columns = t.aggregateColumns(sc.pd)
		rows, err := tx.Scan(ctx, t, so)
		if err != nil {
			return nil, err
		}
		m, err := t.aggregateRows(rows, sc.pd)
		if err != nil {
			return nil, (&sender{c: tx.c}).finish(ctx, "aggregate", t, invalidf("%v", err))
		}
		return m.Rows(), nil
	}
	sc.txn, sc.readTime = tx.readOptions()
	m, err := sc.aggregateAll()
	// Fixed by the first page even when a later one failed: a restart
	// (Txn.Restart) moves on from it.
	tx.fixFromRead(sc.readTime)
	if err != nil {
		return nil, err
	}
	return m.Rows(), nil
}
