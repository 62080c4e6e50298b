package exec

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/ysql/parse"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// explain renders the plan of a statement; with ANALYZE it runs it too
// and adds the rows and time.
func (s *Session) explain(ctx context.Context, es *pg.ExplainStmt, params []types.Datum) ([]plan.Row, error) {
	analyze := false
	for _, o := range es.GetOptions() {
		de := o.GetDefElem()
		if de.GetDefname() == "analyze" {
			v, _ := setValue([]*pg.Node{de.GetArg()})
			analyze = de.GetArg() == nil || isOn(v) || v == "true"
		}
	}
	text, err := parse.Deparse(es.GetQuery())
	if err != nil {
		return nil, err
	}
	st, err := s.prepare(ctx, text, nil)
	if err != nil {
		return nil, err
	}
	if st.utility {
		return nil, pgerror.Unsupported("EXPLAIN of a utility statement")
	}
	var lines []string
	if !analyze {
		s.describe(ctx, st.node, 0, &lines)
	} else {
		start := time.Now()
		var n int
		defer func() { s.reads, s.spills = nil, nil }()
		err := s.inTxn(ctx, func(tx *client.Txn) error {
			s.reads = map[*plan.Scan]*scanReads{} // a retry counts afresh
			s.spills = map[plan.Node]func() string{}
			_, rows, err := s.runPlan(ctx, st, params, tx)
			n = len(rows)
			return err
		})
		if err != nil {
			return nil, err
		}
		elapsed := time.Since(start)
		s.describe(ctx, st.node, 0, &lines)
		lines = append(lines, fmt.Sprintf("Execution Time: %.3f ms", float64(elapsed.Microseconds())/1000),
			fmt.Sprintf("Rows: %d", n))
	}
	out := make([]plan.Row, len(lines))
	for i, l := range lines {
		out[i] = plan.Row{types.DString(l)}
	}
	return out, nil
}

func (s *Session) describe(ctx context.Context, n plan.Node, depth int, lines *[]string) {
	pad := strings.Repeat("  ", depth)
	if depth > 0 {
		pad = strings.Repeat("  ", depth-1) + "  ->  "
	}
	add := func(format string, args ...any) { *lines = append(*lines, pad+fmt.Sprintf(format, args...)) }
	detail := func(format string, args ...any) {
		*lines = append(*lines, strings.Repeat(" ", len(pad)+2)+fmt.Sprintf(format, args...))
	}
	switch x := n.(type) {
	case *plan.Scan:
		s.describeScan(ctx, x, add, detail)
	case *plan.VirtualScan:
		add("Catalog Scan on %s.%s", x.Table.Schema, x.Table.Name)
	case *plan.Values:
		add("Values (%d rows)", len(x.Rows))
	case *plan.Rows:
		add("Rows (%d)", len(x.Data))
	case *plan.Filter:
		add("Filter")
		s.describe(ctx, x.Input, depth+1, lines)
	case *plan.Project:
		if _, isVals := x.Input.(*plan.Values); isVals && len(x.Input.(*plan.Values).Rows) == 1 {
			add("Result")
			return
		}
		s.describe(ctx, x.Input, depth, lines)
	case *plan.Truncate:
		s.describe(ctx, x.Input, depth, lines)
	case *plan.Sort:
		add("Sort")
		s.spillDetail(x, detail)
		s.describe(ctx, x.Input, depth+1, lines)
	case *plan.Limit:
		add("Limit")
		s.describe(ctx, x.Input, depth+1, lines)
	case *plan.DistinctOn:
		add("Unique (DISTINCT ON)")
		s.describe(ctx, x.Input, depth+1, lines)
	case *plan.DistinctNode:
		add("HashAggregate (distinct)")
		s.spillDetail(x, detail)
		s.describe(ctx, x.Input, depth+1, lines)
	case *plan.Agg:
		if _, groupBy, ok := pushdownAggs(x); ok && s.pushdownEnabled() && s.explainFullyRemote(x.Input.(*plan.Scan)) {
			if len(groupBy) == 0 {
				add("Aggregate pushed down to the tablets (partial results merged here)")
			} else {
				add("HashAggregate pushed down to the tablets (partial results per group merged here)")
				detail("Group Key: %s", groupKeyText(x))
			}
			sc := *x.Input.(*plan.Scan)
			sc.Projected = false // the tablets return partial aggregates, not columns
			s.describe(ctx, &sc, depth+1, lines)
			return
		}
		if len(x.Groups) > 0 {
			add("HashAggregate")
			s.spillDetail(x, detail)
		} else {
			add("Aggregate")
		}
		s.describe(ctx, x.Input, depth+1, lines)
	case *plan.Join:
		kind := map[plan.JoinKind]string{plan.InnerJoin: "", plan.LeftJoin: "Left ", plan.RightJoin: "Right ", plan.FullJoin: "Full "}[x.Kind]
		lj := x
		if x.Swapped != nil {
			lj = x.Swapped
		}
		if lj.Lookup != nil {
			add("YB Batched Nested Loop %sJoin", kind)
			detail("Batch Size: %d", plan.LookupBatch)
			if lj != x {
				detail("Sides: swapped (the lookup reads the table written first)")
			}
			s.describe(ctx, lj.Left, depth+1, lines)
			s.describeLookup(lj.Lookup, lj.Right.(*plan.Scan), depth+1, lines)
			return
		}
		if len(x.EqLeft) > 0 {
			add("Hash %sJoin", kind)
			s.spillDetail(x, detail)
		} else {
			add("Nested Loop %sJoin", kind)
		}
		s.describe(ctx, x.Left, depth+1, lines)
		s.describe(ctx, x.Right, depth+1, lines)
	case *plan.RecursiveUnion:
		add("Recursive Union%s", map[bool]string{true: " All"}[x.All])
		s.describe(ctx, x.NonRec, depth+1, lines)
		s.describe(ctx, x.Recursive, depth+1, lines)
	case *plan.WorkTable:
		add("WorkTable Scan on %s", x.Name)
	case *plan.WithDML:
		s.describe(ctx, x.Main, depth, lines)
		for _, d := range x.DMLs {
			detail("CTE %s", d.Name)
			s.describe(ctx, d.Stmt, depth+2, lines)
		}
	case *plan.DMLResult:
		add("CTE Scan on %s", x.Name)
	case *plan.SetOp:
		add("%s%s", strings.ToUpper(x.Op[:1])+x.Op[1:], map[bool]string{true: " All"}[x.All])
		s.spillDetail(x, detail)
		s.describe(ctx, x.Left, depth+1, lines)
		s.describe(ctx, x.Right, depth+1, lines)
	case *plan.Insert:
		add("Insert on %s", x.Table.QualifiedName())
		s.describe(ctx, x.Source, depth+1, lines)
	case *plan.Update:
		add("Update on %s", x.Table.QualifiedName())
		if adds, ok := plan.TabletAdds(x); ok && s.pushdownEnabled() {
			var set []string
			for _, a := range adds {
				name := x.Table.Columns[a.Column].Name
				op := "+"
				if a.Negate {
					op = "-"
				}
				set = append(set, fmt.Sprintf("%s = %s %s %s", name, name, op, a.DeltaText()))
			}
			sort.Strings(set)
			detail("Tablet Update: %s (computed at the tablet under the row's lock, no read first; alone outside a transaction block, one write and no distributed transaction; not in SERIALIZABLE transactions)", strings.Join(set, ", "))
			// The tablet reads the row by its key: no filter or lock here.
			sc := *x.Source.(*plan.Scan)
			sc.Filter, sc.Lock = nil, plan.NoLock
			s.describe(ctx, &sc, depth+1, lines)
			return
		}
		s.describe(ctx, x.Source, depth+1, lines)
	case *plan.Delete:
		add("Delete on %s", x.Table.QualifiedName())
		s.describe(ctx, x.Source, depth+1, lines)
	case *plan.Window:
		add("WindowAgg")
		s.describe(ctx, x.Input, depth+1, lines)
	case *plan.FuncScan:
		add("Function Scan on %s", x.Name)
	case *plan.ProjectSet:
		add("ProjectSet")
		s.describe(ctx, x.Input, depth+1, lines)
	case *plan.LateralJoin:
		add("Nested Loop (lateral)")
		s.describe(ctx, x.Left, depth+1, lines)
		s.describe(ctx, x.Sub, depth+1, lines)
	default:
		add("%T", n)
	}
}

// describeScan renders a table or index scan: its access, what the
// tablets evaluate (Remote Filter, Remote Columns, Remote Limit), what is
// left here, and under EXPLAIN ANALYZE the rows it read.
func (s *Session) describeScan(ctx context.Context, x *plan.Scan, add, detail func(string, ...any)) {
	backward := ""
	if x.Reverse {
		backward = " Backward"
	}
	if ix := x.Access.Index; ix != nil {
		kind := "Index Scan"
		if x.Access.IndexOnly {
			kind = "Index Only Scan"
		}
		add("%s%s using %s on %s", kind, backward, ix.Name, x.Table.Name)
		detail("Index Cond: %d leading column(s) fixed%s", len(x.Access.Eq), boundText(x.Access))
		if !x.Access.IndexOnly {
			detail("Table rows: read by primary key in batches")
		}
	} else {
		add("%s%s on %s", x.Access.Kind, backward, x.Table.QualifiedName())
		if tbl, err := s.openTable(ctx, x.Table); err == nil {
			tablets := "all " + fmt.Sprint(tbl.Info().GetPartitioning().GetNumTablets())
			if x.Access.Kind == plan.PointGet || (x.Access.Kind == plan.KeyRange && len(x.Access.Eq) >= x.Table.HashKeyCount() && x.Table.HashKeyCount() > 0) {
				tablets = "1"
			}
			detail("Tablets: %s", tablets)
		}
		if x.Access.Kind != plan.FullScan {
			detail("Key: %d leading column(s) fixed%s", len(x.Access.Eq), boundText(x.Access))
		}
	}
	pushdown := s.pushdownEnabled() && x.Access.Kind != plan.PointGet
	local := x.Filter != nil
	if x.Access.Kind == plan.PointGet {
		local = x.Access.Rest != nil && x.Filter != nil // the key implies the rest
	}
	if pushdown {
		remote, rest := s.explainSplit(x)
		if len(remote) > 0 {
			detail("Remote Filter: %s", plan.FormatRemote(x, remote))
		}
		local = len(rest) > 0
		if x.Access.Index == nil && x.Projected && len(x.Needed) < len(x.Table.Columns) {
			names := make([]string, len(x.Needed))
			for i, c := range x.Needed {
				names[i] = x.Table.Columns[c].Name
			}
			if len(names) == 0 {
				names = []string{"(none: keys only)"}
			}
			detail("Remote Columns: %s", strings.Join(names, ", "))
		}
	}
	if local {
		detail("Filter: evaluated on the rows read")
	}
	if x.Lock != plan.NoLock {
		detail("Row locks: %s", x.Lock)
	}
	if x.LimitHint != nil && s.pushdownEnabled() && x.Wait != plan.SkipLocked && (x.Filter == nil || pushdown && !local && x.Lock == plan.NoLock) {
		detail("Remote Limit: %s", plan.FormatLimit(x.LimitHint, x.OffsetHint))
	}
	if x.LimitHint != nil && pushdown && local && x.Access.Index == nil && x.Lock == plan.NoLock && x.Wait != plan.SkipLocked {
		detail("Limit: %s rows that pass the filter, then the scan stops", plan.FormatLimit(x.LimitHint, x.OffsetHint))
	}
	if rd := s.reads[x]; rd != nil {
		if x.Access.Index != nil {
			detail("Storage Index Rows Read: %d", rd.index)
		}
		if x.Access.Index == nil || !x.Access.IndexOnly {
			detail("Storage Table Rows Read: %d", rd.table)
		}
	}
}

// noteSpill registers, while EXPLAIN ANALYZE runs, what an operator that
// may spill (a sort, a hash aggregate, a hash join) reports after.
func (s *Session) noteSpill(n plan.Node, explain func() string) {
	if s.spills != nil {
		s.spills[n] = explain
	}
}

func (s *Session) spillDetail(n plan.Node, detail func(string, ...any)) {
	if f := s.spills[n]; f != nil {
		detail("%s", f())
	}
}

// scanReads counts the rows a scan read from the tablets (EXPLAIN
// ANALYZE): index rows and table rows.
type scanReads struct{ index, table int }

// noteRead counts rows a scan read, while EXPLAIN ANALYZE runs.
func (s *Session) noteRead(sc *plan.Scan, index, table int) {
	if s.reads == nil {
		return
	}
	rd := s.reads[sc]
	if rd == nil {
		rd = &scanReads{}
		s.reads[sc] = rd
	}
	rd.index += index
	rd.table += table
}

// describeLookup renders the right side of a batched lookup join: how
// each batch's keys are read.
func (s *Session) describeLookup(l *plan.Lookup, sc *plan.Scan, depth int, lines *[]string) {
	pad := strings.Repeat("  ", depth-1) + "  ->  "
	detail := func(format string, args ...any) {
		*lines = append(*lines, strings.Repeat(" ", len(pad)+2)+fmt.Sprintf(format, args...))
	}
	switch {
	case l.Index != nil:
		*lines = append(*lines, pad+fmt.Sprintf("Batched Index Scan using %s on %s", l.Index.Name, sc.Table.Name))
	case l.Point:
		*lines = append(*lines, pad+fmt.Sprintf("Batched Point Get on %s", sc.Table.QualifiedName()))
	default:
		*lines = append(*lines, pad+fmt.Sprintf("Batched Key Range Scan on %s", sc.Table.QualifiedName()))
	}
	names := make([]string, len(l.Cols))
	for i, c := range l.Cols {
		names[i] = sc.Table.Columns[c].Name
	}
	detail("Lookup Key: (%s)", strings.Join(names, ", "))
	if l.Index != nil {
		detail("Table rows: read by primary key in batches")
	}
	if sc.Filter != nil {
		detail("Filter: evaluated on the rows read")
	}
	if sc.Lock != plan.NoLock {
		detail("Row locks: %s (the rows read)", sc.Lock)
	}
}

// groupKeyText names the GROUP BY columns of a pushed-down aggregate.
func groupKeyText(a *plan.Agg) string {
	t := a.Input.(*plan.Scan).Table
	names := make([]string, len(a.Groups))
	for i, g := range a.Groups {
		names[i] = t.Columns[g.(*plan.ColRef).Idx].Name
	}
	return strings.Join(names, ", ")
}

func boundText(a plan.Access) string {
	var parts []string
	if a.Lo != nil {
		parts = append(parts, map[bool]string{true: ">=", false: ">"}[a.LoIncl]+" lower bound")
	}
	if a.Hi != nil {
		parts = append(parts, map[bool]string{true: "<=", false: "<"}[a.HiIncl]+" upper bound")
	}
	if len(parts) == 0 {
		return ""
	}
	return ", next column " + strings.Join(parts, " and ")
}

// explainSplit is plan.SplitFilter as the execution will split it: a
// conjunct whose constants the tablets cannot take (an integer out of the
// column's range) stays here. Conjuncts with parameters are shown as
// pushed (their values are known at execution).
func (s *Session) explainSplit(sc *plan.Scan) ([]*plan.RemotePred, []plan.Expr) {
	remote, local := plan.SplitFilter(sc)
	r := &runner{s: s, ec: s.evalContext(nil)}
	out := remote[:0]
	for _, p := range remote {
		if constOnly(p) {
			if _, ok := r.clientFilter(sc.Table, p); !ok {
				local = append(local, p.E)
				continue
			}
		}
		out = append(out, p)
	}
	return out, local
}

func (s *Session) explainFullyRemote(sc *plan.Scan) bool {
	_, local := s.explainSplit(sc)
	return len(local) == 0
}

// constOnly reports whether a remote predicate's values are constants.
func constOnly(p *plan.RemotePred) bool {
	for _, a := range p.Args {
		if !constOnly(a) {
			return false
		}
	}
	for _, v := range p.Vals {
		for {
			c, ok := v.(*plan.Cast)
			if !ok {
				break
			}
			v = c.E
		}
		if _, ok := v.(*plan.Const); !ok {
			return false
		}
	}
	return true
}
