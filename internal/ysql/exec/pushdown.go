package exec

import (
	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// pushedAggregate computes an aggregate without GROUP BY over a plain scan
// at the tablets, in parallel (count, sum of integers, min, max), and
// returns its single row; ok is false when the aggregate cannot be pushed
// down exactly and must run here.
func (r *runner) pushedAggregate(a *plan.Agg) (plan.Row, bool, error) {
	aggs, ok := pushdownAggs(a)
	if !ok {
		return nil, false, nil
	}
	sc := a.Input.(*plan.Scan)
	t := sc.Table
	tbl, err := r.s.openTable(r.ctx, t)
	if err != nil {
		return nil, false, err
	}
	return r.pushedAggregateRun(a, sc, t, tbl, client.ScanOptions{Aggregates: aggs})
}

// pushdownAggs returns the tablet aggregates computing a, an aggregate
// without GROUP BY directly over an unfiltered, unlocked scan, when every
// one of its aggregates has an exact tablet counterpart.
func pushdownAggs(a *plan.Agg) ([]client.Aggregate, bool) {
	sc, isScan := a.Input.(*plan.Scan)
	if !isScan || len(a.Groups) > 0 || sc.Filter != nil || sc.Lock != plan.NoLock || sc.Access.Kind == plan.PointGet {
		return nil, false
	}
	t := sc.Table
	aggs := make([]client.Aggregate, len(a.Aggs))
	for i, c := range a.Aggs {
		if c.Distinct || c.Filter != nil || c.Arg2 != nil {
			return nil, false
		}
		if c.Arg == nil {
			if c.Name != "count" {
				return nil, false
			}
			aggs[i] = client.CountStar()
			continue
		}
		cr, ok := c.Arg.(*plan.ColRef)
		if !ok {
			return nil, false
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
			return nil, false
		}
	}
	return aggs, true
}

// pushedAggregateRun runs the pushed-down aggregates of a (see
// pushdownAggs).
func (r *runner) pushedAggregateRun(a *plan.Agg, sc *plan.Scan, t *catalog.Table, tbl *client.Table, opts client.ScanOptions) (plan.Row, bool, error) {
	var err error
	if sc.Access.Kind == plan.KeyRange {
		ok, err := r.rangeBounds(sc, &opts)
		if err != nil {
			return nil, false, err
		}
		if !ok { // a key bound is NULL: no rows
			row := make(plan.Row, len(a.Aggs))
			for i, c := range a.Aggs {
				row[i] = types.NullDatum
				if c.Name == "count" {
					row[i] = types.DInt(0)
				}
			}
			return row, true, nil
		}
	}
	var vals []docdb.Value
	if r.txn != nil {
		vals, err = r.txn.Aggregate(r.ctx, tbl, opts)
	} else {
		vals, err = tbl.Aggregate(r.ctx, opts)
	}
	if err != nil {
		return nil, false, err
	}
	row := make(plan.Row, len(vals))
	for i, v := range vals {
		c := a.Aggs[i]
		if v.IsNull() {
			row[i] = types.NullDatum
			continue
		}
		switch {
		case c.Name == "count":
			row[i] = types.DInt(v.Int)
		case c.Name == "sum":
			d, err := sumDatum(v, c.T)
			if err != nil {
				return nil, false, err
			}
			row[i] = d
		default:
			col := &t.Columns[c.Arg.(*plan.ColRef).Idx]
			d, err := types.FromStorage(v, col.Type)
			if err != nil {
				return nil, false, err
			}
			row[i] = d
		}
	}
	return row, true, nil
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
