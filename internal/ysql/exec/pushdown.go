package exec

import (
	"errors"
	"math"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// pushedAggregate computes an aggregate over a plain scan at the tablets,
// in parallel (count, sum of integers, min, max; per group of plain
// columns with GROUP BY), with the scan's filter evaluated there too, and
// returns its rows; ok is false when the aggregate cannot be pushed down
// exactly and must run here.
func (r *runner) pushedAggregate(a *plan.Agg) ([]plan.Row, bool, error) {
	if !r.s.pushdownEnabled() {
		return nil, false, nil
	}
	aggs, groupBy, ok := pushdownAggs(a)
	if !ok {
		return nil, false, nil
	}
	sc := a.Input.(*plan.Scan)
	filter, rest := r.remoteFilter(sc)
	if rest != nil { // a value the tablets cannot take: aggregate here
		return nil, false, nil
	}
	t := sc.Table
	tbl, err := r.s.openTable(r.ctx, t)
	if err != nil {
		return nil, false, err
	}
	return r.pushedAggregateRun(a, sc, t, tbl, client.ScanOptions{Aggregates: aggs, GroupBy: groupBy, Filter: filter})
}

// pushdownAggs returns the tablet aggregates and group columns computing
// a, an aggregate directly over an unlocked full or key-range scan whose
// filter the tablets evaluate whole (plan.FullyRemote), when every one of
// its aggregates has an exact tablet counterpart and every GROUP BY
// expression is a column the tablets group as PostgreSQL does
// (groupPushable).
func pushdownAggs(a *plan.Agg) (aggs []client.Aggregate, groupBy []string, ok bool) {
	sc, isScan := a.Input.(*plan.Scan)
	if !isScan || sc.Lock != plan.NoLock || sc.Access.Kind == plan.PointGet || sc.Access.Index != nil ||
		!plan.FullyRemote(sc) {
		return nil, nil, false
	}
	if len(a.Aggs) == 0 && len(a.Groups) == 0 {
		return nil, nil, false // GROUP BY (): one group, nothing for the tablets to compute
	}
	t := sc.Table
	for _, g := range a.Groups {
		cr, isCol := g.(*plan.ColRef)
		if !isCol || !groupPushable(t.Columns[cr.Idx].Type) {
			return nil, nil, false
		}
		groupBy = append(groupBy, catalog.StorageColumn(&t.Columns[cr.Idx]))
	}
	aggs = make([]client.Aggregate, len(a.Aggs))
	for i, c := range a.Aggs {
		if c.Distinct || c.Filter != nil || c.Arg2 != nil || len(c.Order) > 0 {
			return nil, nil, false
		}
		if c.Arg == nil {
			if c.Name != "count" {
				return nil, nil, false
			}
			aggs[i] = client.CountStar()
			continue
		}
		cr, ok := c.Arg.(*plan.ColRef)
		if !ok {
			return nil, nil, false
		}
		col := &t.Columns[cr.Idx]
		name := catalog.StorageColumn(col)
		switch fam := col.Type.Family(); {
		case c.Name == "count":
			aggs[i] = client.Count(name)
		case c.Name == "sum" && fam == types.FamInt:
			aggs[i] = client.Sum(name)
		case (c.Name == "min" || c.Name == "max") && minMaxPushable(col.Type):
			if c.Name == "min" {
				aggs[i] = client.Min(name)
			} else {
				aggs[i] = client.Max(name)
			}
		default:
			return nil, nil, false
		}
	}
	return aggs, groupBy, true
}

// pushedAggregateRun runs the pushed-down aggregates of a (see
// pushdownAggs).
func (r *runner) pushedAggregateRun(a *plan.Agg, sc *plan.Scan, t *catalog.Table, tbl *client.Table, opts client.ScanOptions) ([]plan.Row, bool, error) {
	if sc.Access.Kind == plan.KeyRange {
		ok, err := r.rangeBounds(sc, &opts)
		if err != nil {
			return nil, false, err
		}
		if !ok { // a key bound is NULL: no rows
			if len(a.Groups) > 0 {
				return nil, true, nil
			}
			row := make(plan.Row, len(a.Aggs))
			for i, c := range a.Aggs {
				row[i] = types.NullDatum
				if c.Name == "count" {
					row[i] = types.DInt(0)
				}
			}
			return []plan.Row{row}, true, nil
		}
	}
	if len(a.Groups) > 0 {
		// The merged groups held here past work_mem: group here instead,
		// where they spill (hashAgg).
		opts.MaxMergedGroups = int(max(r.s.workMem()/mergedGroupSize, 1))
	}
	var res [][]docdb.Value
	var err error
	if r.txn != nil {
		res, err = r.txn.AggregateGroups(r.ctx, tbl, opts)
	} else {
		res, err = tbl.AggregateGroups(r.ctx, opts)
	}
	if errors.Is(err, client.ErrTooManyGroups) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	out := make([]plan.Row, len(res))
	for i, vals := range res {
		if out[i], err = aggRow(a, t, vals); err != nil {
			return nil, false, err
		}
	}
	return out, true, nil
}

// mergedGroupSize estimates the memory of a group of the tablets' partial
// results merged here.
const mergedGroupSize = 256

// aggRow converts a merged row of the tablets' results (group values,
// then one result per aggregate) to the aggregate's row.
func aggRow(a *plan.Agg, t *catalog.Table, vals []docdb.Value) (plan.Row, error) {
	row := make(plan.Row, len(vals))
	for i, v := range vals {
		if v.IsNull() {
			row[i] = types.NullDatum
			continue
		}
		if i < len(a.Groups) {
			d, err := types.FromStorage(v, t.Columns[a.Groups[i].(*plan.ColRef).Idx].Type)
			if err != nil {
				return nil, err
			}
			row[i] = d
			continue
		}
		c := a.Aggs[i-len(a.Groups)]
		switch {
		case c.Name == "count":
			row[i] = types.DInt(v.Int)
		case c.Name == "sum":
			d, err := sumDatum(v, c.T)
			if err != nil {
				return nil, err
			}
			row[i] = d
		default:
			col := &t.Columns[c.Arg.(*plan.ColRef).Idx]
			d, err := types.FromStorage(v, col.Type)
			if err != nil {
				return nil, err
			}
			row[i] = d
		}
	}
	return row, nil
}

// groupPushable: the tablets group stored values by their encoding, which
// is equal exactly when the SQL values are equal for these types (not for
// floats: -0 and 0; numeric: 1.0 and 1.00; char(n): padding).
func groupPushable(t types.T) bool {
	return minMaxPushable(t) || t.OID == types.OIDBytea
}

// minMaxPushable: storage order equals SQL order for these types (floats
// are left here: NaN orders differently).
func minMaxPushable(t types.T) bool {
	switch t.Family() {
	case types.FamInt, types.FamBool, types.FamDate, types.FamTime, types.FamTimestamp, types.FamTimestampTZ, types.FamUUID:
		return true
	case types.FamString:
		return t.OID == types.OIDText || t.OID == types.OIDVarchar
	}
	return false
}

// sumDatum converts a tablet sum (int64, or a decimal past int64) to the
// SQL result type of sum over integers (bigint for int2/int4, numeric for
// int8).
func sumDatum(v docdb.Value, t types.T) (types.Datum, error) {
	if v.Type == docdb.TypeInt64 {
		if t.Family() == types.FamNumeric {
			return types.DNumeric(types.NumericFromInt(v.Int)), nil
		}
		return types.DInt(v.Int), nil
	}
	d, err := types.ParseNumeric(string(v.Bytes))
	if err != nil {
		return types.NullDatum, err
	}
	if t.Family() == types.FamNumeric {
		return types.DNumeric(d), nil
	}
	return types.Coerce(types.DNumeric(d), types.T{OID: types.OIDNumeric, Mod: -1}, t, types.CastAssignment)
}

// pushdownEnabled: yb_enable_expression_pushdown (on by default) lets
// filters, projections and limits go to the tablets; off, scans read whole
// rows and everything is evaluated here (for comparing results).
func (s *Session) pushdownEnabled() bool {
	v, ok := s.settings["yb_enable_expression_pushdown"]
	return !ok || isOn(v)
}

// remoteFilter builds the filter the tablets evaluate for a full or
// key-range scan (nil: none) and returns the rest of the scan's filter,
// to evaluate over the rows read (nil: nothing left). A conjunct whose
// values cannot be given to the tablets exactly stays here.
func (r *runner) remoteFilter(s *plan.Scan) (*client.Filter, plan.Expr) {
	if !r.s.pushdownEnabled() {
		return nil, s.Filter
	}
	remote, local := plan.SplitFilter(s)
	var fs []*client.Filter
	for _, p := range remote {
		f, ok := r.clientFilter(s.Table, p)
		if !ok {
			local = append(local, p.E)
			continue
		}
		fs = append(fs, f)
	}
	var rest plan.Expr
	for _, c := range local {
		if rest == nil {
			rest = c
		} else {
			rest = &plan.And{L: rest, R: c}
		}
	}
	switch len(fs) {
	case 0:
		return nil, rest
	case 1:
		return fs[0], rest
	}
	return client.And(fs...), rest
}

var clientCmpOps = map[string]client.CmpOp{"=": client.CmpEQ, "<>": client.CmpNE, "<": client.CmpLT,
	"<=": client.CmpLE, ">": client.CmpGT, ">=": client.CmpGE}

// clientFilter converts a remote predicate, evaluating its values; ok is
// false when a value cannot be stored exactly in the column's type.
func (r *runner) clientFilter(t *catalog.Table, p *plan.RemotePred) (*client.Filter, bool) {
	switch p.Op {
	case plan.RemoteAnd, plan.RemoteOr, plan.RemoteNot:
		args := make([]*client.Filter, len(p.Args))
		for i, a := range p.Args {
			f, ok := r.clientFilter(t, a)
			if !ok {
				return nil, false
			}
			args[i] = f
		}
		switch p.Op {
		case plan.RemoteAnd:
			return client.And(args...), true
		case plan.RemoteOr:
			return client.Or(args...), true
		}
		return client.Not(args[0]), true
	}
	col := &t.Columns[p.Col]
	name := catalog.StorageColumn(col)
	vals := make([]docdb.Value, len(p.Vals))
	for i, e := range p.Vals {
		v, ok := r.storageValue(e, col.Type)
		if !ok {
			return nil, false
		}
		vals[i] = v
	}
	switch p.Op {
	case plan.RemoteIsNull:
		return client.IsNull(name), true
	case plan.RemoteIsNotNull:
		return client.IsNotNull(name), true
	case plan.RemoteIn:
		return client.In(name, vals...), true
	case plan.RemoteCmp:
		op, known := clientCmpOps[p.Cmp]
		if !known {
			return nil, false
		}
		return client.Cmp(name, op, vals[0]), true
	}
	return nil, false
}

// storageValue evaluates a row-independent value and converts it to the
// storage value of a column of type t (NULL stays NULL: comparisons with
// it are UNKNOWN at the tablets too); ok is false when evaluation fails
// (left to the local evaluation, which reports it as before) or the value
// does not fit the column's type.
func (r *runner) storageValue(e plan.Expr, t types.T) (docdb.Value, bool) {
	d, err := e.Eval(r.ec, nil)
	if err != nil {
		return docdb.Value{}, false
	}
	if d.Null {
		return docdb.Null(), true
	}
	return keyStorage(d, t)
}

// keyStorage converts a non-NULL value of a type comparable with t (an
// integer of another width) to the key storage of a column of type t; ok is
// false when it does not fit, so that it equals no value of the column.
func keyStorage(d types.Datum, t types.T) (docdb.Value, bool) {
	switch t.OID {
	case types.OIDInt2:
		if d.I < math.MinInt16 || d.I > math.MaxInt16 {
			return docdb.Value{}, false
		}
	case types.OIDInt4:
		if d.I < math.MinInt32 || d.I > math.MaxInt32 {
			return docdb.Value{}, false
		}
	}
	v, err := types.ToKeyStorage(d, t)
	if err != nil {
		return docdb.Value{}, false
	}
	return v, true
}

// projection is the storage columns a projected scan asks for (nil: all):
// the non-key columns the query reads, or one key column when it reads no
// other (the rows' keys only).
func projection(s *plan.Scan) []string {
	if !s.Projected {
		return nil
	}
	t := s.Table
	var names []string
	for _, i := range s.Needed {
		if !t.IsKey(i) {
			names = append(names, catalog.StorageColumn(&t.Columns[i]))
		}
	}
	if len(names) == 0 && len(t.Key) > 0 {
		names = append(names, catalog.StorageColumn(&t.Columns[t.Key[0].Column]))
	}
	return names
}

// limitHint is how many rows a scan under a LIMIT needs (LIMIT plus
// OFFSET), 0 when it cannot tell (no LIMIT, LIMIT NULL or 0, a value that
// fails to evaluate or is negative: the Limit node reports it).
func (r *runner) limitHint(s *plan.Scan) int {
	if s.LimitHint == nil {
		return 0
	}
	c, err := s.LimitHint.Eval(r.ec, nil)
	if err != nil || c.Null || c.I <= 0 {
		return 0
	}
	n := c.I
	if s.OffsetHint != nil {
		o, err := s.OffsetHint.Eval(r.ec, nil)
		if err != nil || !o.Null && o.I < 0 {
			return 0
		}
		if !o.Null {
			n += o.I
		}
	}
	if n <= 0 || n > 1<<30 {
		return 0
	}
	return int(n)
}
