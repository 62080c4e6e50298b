package plan

import (
	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/shaledb/shaledb/internal/ysql/parse"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// GROUP BY ROLLUP (...), CUBE (...) and GROUPING SETS (...), and
// GROUPING(...). A query with grouping sets is planned as the UNION ALL of
// one grouped query per set, each reading the same FROM and WHERE:
// grouping expressions of other sets are NULL in its select list and
// HAVING (outside aggregate arguments, which see the rows), GROUPING(...)
// the bit mask of its arguments that the set does not group by. The
// query's WITH, ORDER BY, LIMIT and OFFSET apply to the union. PostgreSQL
// computes the sets in one pass over sorted or hashed input; here the
// input is read once per set.

// maxGroupingSets bounds the sets a GROUP BY expands to (PostgreSQL's
// limit is 4096).
const maxGroupingSets = 4096

// hasGroupingSets reports whether s needs the rewrite: grouping sets in
// its GROUP BY, or GROUPING() calls.
func hasGroupingSets(s *pg.SelectStmt) bool {
	if len(s.GetGroupClause()) == 0 {
		return false // GROUPING() needs a GROUP BY: the binder refuses it
	}
	for _, g := range s.GetGroupClause() {
		if g.GetGroupingSet() != nil {
			return true
		}
	}
	found := false
	check := func(n *pg.Node) {
		RewriteNodes(n.ProtoReflect(), func(x *pg.Node) (*pg.Node, bool) {
			if x.GetGroupingFunc() != nil {
				found = true
			}
			return nil, !found
		})
	}
	for _, t := range s.GetTargetList() {
		check(t)
	}
	if h := s.GetHavingClause(); h != nil {
		check(h)
	}
	return found
}

// expandGroupingSets rewrites s, a query with grouping sets, into the
// UNION ALL of a grouped query per set.
func (b *Binder) expandGroupingSets(s *pg.SelectStmt, parent *scope) (*pg.SelectStmt, error) {
	switch {
	case len(s.GetDistinctClause()) > 0:
		return nil, pgerror.Unsupported("SELECT DISTINCT with grouping sets")
	case len(s.GetLockingClause()) > 0:
		return nil, pgerror.New(pgerror.CodeFeatureNotSupported, "FOR UPDATE is not allowed with GROUP BY clause")
	case len(s.GetWindowClause()) > 0:
		return nil, pgerror.Unsupported("window functions with grouping sets")
	}
	for _, t := range s.GetTargetList() {
		if hasWindow(t.GetResTarget().GetVal()) {
			return nil, pgerror.Unsupported("window functions with grouping sets")
		}
	}
	for _, o := range s.GetSortClause() {
		n := o.GetSortBy().GetNode()
		cr := n.GetColumnRef()
		if (cr == nil || len(cr.GetFields()) != 1 || cr.GetFields()[0].GetString_() == nil) && n.GetAConst().GetIval() == nil {
			return nil, posErr(pgerror.Unsupported("ORDER BY expressions with grouping sets (order by output column names or positions)"), o.GetSortBy().GetLocation())
		}
	}
	sets := [][]*pg.Node{{}}
	for _, g := range s.GetGroupClause() {
		item, err := groupingItem(g)
		if err != nil {
			return nil, err
		}
		var next [][]*pg.Node
		for _, a := range sets {
			for _, c := range item {
				next = append(next, append(append([]*pg.Node(nil), a...), c...))
			}
		}
		if len(next) > maxGroupingSets {
			return nil, pgerror.New(pgerror.CodeStatementTooComplex, "too many grouping sets present (maximum 4096)")
		}
		sets = next
	}
	all := map[string]*pg.Node{} // each grouping expression's NULL of its type
	keysOf := make([]map[string]bool, len(sets))
	var exprs []*pg.Node
	for i, set := range sets {
		keysOf[i] = map[string]bool{}
		for _, e := range set {
			k := astKey(e)
			if _, seen := all[k]; !seen {
				all[k] = nil
				exprs = append(exprs, e)
			}
			keysOf[i][k] = true
		}
	}
	if err := b.typedNulls(s, parent, exprs, all); err != nil {
		return nil, err
	}
	var union *pg.SelectStmt
	for i, set := range sets {
		arm := &pg.SelectStmt{FromClause: s.GetFromClause(), WhereClause: s.GetWhereClause(), GroupClause: set,
			Op: pg.SetOperation_SETOP_NONE}
		for _, t := range s.GetTargetList() {
			rt := proto.Clone(t.GetResTarget()).(*pg.ResTarget)
			if rt.Name == "" {
				rt.Name = columnName(t.GetResTarget().GetVal())
			}
			v, err := nullOutside(rt.GetVal(), all, keysOf[i])
			if err != nil {
				return nil, err
			}
			rt.Val = v
			arm.TargetList = append(arm.TargetList, &pg.Node{Node: &pg.Node_ResTarget{ResTarget: rt}})
		}
		if h := s.GetHavingClause(); h != nil {
			v, err := nullOutside(proto.Clone(h).(*pg.Node), all, keysOf[i])
			if err != nil {
				return nil, err
			}
			arm.HavingClause = v
		} else if len(set) == 0 {
			// The empty grouping set is one group of every row, none
			// too: HAVING makes the arm an aggregation without groups.
			arm.HavingClause = &pg.Node{Node: &pg.Node_AConst{AConst: &pg.A_Const{Val: &pg.A_Const_Boolval{Boolval: &pg.Boolean{Boolval: true}}, Location: -1}}}
		}
		if union == nil {
			union = arm
			continue
		}
		union = &pg.SelectStmt{Op: pg.SetOperation_SETOP_UNION, All: true, Larg: union, Rarg: arm}
	}
	union.WithClause = s.GetWithClause()
	union.SortClause, union.LimitCount, union.LimitOffset, union.LimitOption = s.GetSortClause(), s.GetLimitCount(), s.GetLimitOffset(), s.GetLimitOption()
	return union, nil
}

// typedNulls sets, for each grouping expression, a NULL of its type: a set
// that does not group by it selects that, so that the union's columns
// take the expression's type whatever set comes first.
func (b *Binder) typedNulls(s *pg.SelectStmt, parent *scope, exprs []*pg.Node, nulls map[string]*pg.Node) error {
	if len(exprs) == 0 {
		return nil
	}
	probe := &pg.SelectStmt{WithClause: s.GetWithClause(), FromClause: s.GetFromClause(), Op: pg.SetOperation_SETOP_NONE}
	for _, e := range exprs {
		probe.TargetList = append(probe.TargetList, &pg.Node{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: e}}})
	}
	n, err := b.selectStmt(probe, parent)
	if err != nil {
		return err
	}
	cols := n.Columns()
	for i, e := range exprs {
		t := cols[i].T
		if t.OID == types.OIDUnknown {
			t = tText
		}
		raw, err := parse.One("SELECT NULL::" + types.FormatType(t.OID, t.Mod))
		if err != nil {
			return err
		}
		nulls[astKey(e)] = raw.GetStmt().GetSelectStmt().GetTargetList()[0].GetResTarget().GetVal()
	}
	return nil
}

// groupingItem is the grouping sets one GROUP BY item stands for.
func groupingItem(g *pg.Node) ([][]*pg.Node, error) {
	gs := g.GetGroupingSet()
	if gs == nil {
		return [][]*pg.Node{{g}}, nil
	}
	content := gs.GetContent()
	switch gs.GetKind() {
	case pg.GroupingSetKind_GROUPING_SET_EMPTY:
		return [][]*pg.Node{{}}, nil
	case pg.GroupingSetKind_GROUPING_SET_SIMPLE:
		return [][]*pg.Node{content}, nil
	case pg.GroupingSetKind_GROUPING_SET_ROLLUP, pg.GroupingSetKind_GROUPING_SET_CUBE:
		// Each element is an expression or a parenthesised list of them.
		elems := make([][]*pg.Node, len(content))
		for i, c := range content {
			switch sub := c.GetGroupingSet(); {
			case sub != nil && sub.GetKind() == pg.GroupingSetKind_GROUPING_SET_SIMPLE:
				elems[i] = sub.GetContent()
			case c.GetRowExpr() != nil: // (a, b): one element
				elems[i] = c.GetRowExpr().GetArgs()
			default:
				elems[i] = []*pg.Node{c}
			}
		}
		var out [][]*pg.Node
		if gs.GetKind() == pg.GroupingSetKind_GROUPING_SET_ROLLUP {
			for n := len(elems); n >= 0; n-- {
				var set []*pg.Node
				for _, e := range elems[:n] {
					set = append(set, e...)
				}
				out = append(out, set)
			}
			return out, nil
		}
		if len(elems) > 12 {
			return nil, pgerror.New(pgerror.CodeStatementTooComplex, "CUBE is limited to 12 elements")
		}
		for mask := (1 << len(elems)) - 1; mask >= 0; mask-- {
			var set []*pg.Node
			for i, e := range elems {
				if mask&(1<<(len(elems)-1-i)) != 0 {
					set = append(set, e...)
				}
			}
			out = append(out, set)
		}
		return out, nil
	case pg.GroupingSetKind_GROUPING_SET_SETS:
		var out [][]*pg.Node
		for _, c := range content {
			if r := c.GetRowExpr(); r != nil { // (a, b): one set
				out = append(out, r.GetArgs())
				continue
			}
			sub, err := groupingItem(c)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		}
		return out, nil
	}
	return nil, pgerror.Unsupported("this kind of grouping set")
}

// nullOutside replaces, in n outside aggregate arguments, each grouping
// expression (all) the set (in) does not group by with NULL, and each
// GROUPING(...) call with its bit mask for the set.
func nullOutside(n *pg.Node, all map[string]*pg.Node, in map[string]bool) (*pg.Node, error) {
	var err error
	replace := func(x *pg.Node) (*pg.Node, bool) {
		if err != nil {
			return nil, false
		}
		if gf := x.GetGroupingFunc(); gf != nil {
			mask := int32(0)
			for _, a := range gf.GetArgs() {
				k := astKey(a)
				if _, ok := all[k]; !ok {
					err = posErr(pgerror.New(pgerror.CodeGroupingError, "arguments to GROUPING must be grouping expressions of the associated query level"), gf.GetLocation())
					return nil, false
				}
				mask <<= 1
				if !in[k] {
					mask |= 1
				}
			}
			return &pg.Node{Node: &pg.Node_AConst{AConst: &pg.A_Const{Val: &pg.A_Const_Ival{Ival: &pg.Integer{Ival: mask}}}}}, false
		}
		if fc := x.GetFuncCall(); fc != nil && (fc.GetAggStar() || IsAggregate(funcName(fc))) && fc.GetOver() == nil {
			return nil, false // an aggregate's arguments see the rows
		}
		switch {
		case x.GetSubLink() != nil, x.GetAConst() != nil, x.GetString_() != nil, x.GetAStar() != nil, x.GetTypeName() != nil:
			return nil, false
		}
		if k := astKey(x); all[k] != nil && !in[k] {
			return proto.Clone(all[k]).(*pg.Node), false
		}
		return nil, x.GetColumnRef() == nil
	}
	if r, _ := replace(n); r != nil || err != nil {
		return r, err
	}
	RewriteNodes(n.ProtoReflect(), replace)
	return n, err
}

// RewriteNodes walks the nodes inside m, parents first: f returns a node
// to put in a node's place (nil: keep it) and whether to go inside it.
func RewriteNodes(m protoreflect.Message, f func(*pg.Node) (*pg.Node, bool)) {
	visit := func(v protoreflect.Message) (protoreflect.Message, bool) {
		n, ok := v.Interface().(*pg.Node)
		if !ok {
			return nil, true
		}
		r, descend := f(n)
		if r != nil {
			return r.ProtoReflect(), false
		}
		return nil, descend
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap() || fd.Message() == nil:
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				el := l.Get(i).Message()
				r, descend := visit(el)
				if r != nil {
					l.Set(i, protoreflect.ValueOfMessage(r))
				} else if descend {
					RewriteNodes(el, f)
				}
			}
		default:
			el := v.Message()
			r, descend := visit(el)
			if r != nil {
				m.Set(fd, protoreflect.ValueOfMessage(r))
			} else if descend {
				RewriteNodes(el, f)
			}
		}
		return true
	})
}
