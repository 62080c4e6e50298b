package plan

import (
	"maps"
	"slices"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// WITH queries (common table expressions), non-recursive and read-only,
// are planned where they are referenced, as subqueries in FROM: PostgreSQL
// 12 and later inline such a CTE referenced once, and one referenced
// several times gives the same rows each time unless it calls volatile
// functions (PostgreSQL reads it once then; here each reference runs it).

// A recursive WITH query (WITH RECURSIVE, a UNION [ALL] whose right side
// reads the query itself) is planned as a RecursiveUnion at each
// reference: the left side (the non-recursive term) fixes the columns and
// their types, and the reference inside the right side (the recursive
// term) reads the WorkTable, the rows of the previous run. As PostgreSQL,
// the query may read itself once, directly (not in a subquery of WHERE or
// the select list) and only in its recursive term; WITH queries reading
// each other in a cycle are not supported.

// cteDef is one WITH query: what a reference binds.
type cteDef struct {
	name      string
	query     *pg.SelectStmt
	colnames  []string
	parent    *scope     // the scope around the WITH (outer references)
	visible   []cteFrame // the WITH queries it may reference
	recursive bool       // in a WITH RECURSIVE
	dml       *DMLResult // a data-modifying statement's (query nil)

	// While its own definition is being bound: work is the self
	// reference's table (nil while the non-recursive term is bound) and
	// selfRefs counts the references to it.
	binding  bool
	work     *WorkTable
	selfRefs int
	// setOpCtx: the recursive term's set operation the query is bound
	// in where PostgreSQL refuses a self reference (INTERSECT, EXCEPT).
	setOpCtx string
	// inOwnWith counts the queries of its own WITH clause being bound
	// (owner: the recursive query whose WITH declares this one).
	inOwnWith int
	owner     *cteDef
	// bindParent: the scope its query is bound under at this reference
	// (cteParent).
	bindParent *scope
}

// cteFrame is the WITH list of one query level.
type cteFrame []*cteDef

// withClause makes the WITH queries of w visible to the rest of the
// statement (restore undoes that).
func (b *Binder) withClause(w *pg.WithClause, parent *scope) (restore func(), err error) {
	outer := b.ctes
	var frame cteFrame
	seen := map[string]bool{}
	for _, n := range w.GetCtes() {
		c := n.GetCommonTableExpr()
		name := c.GetCtename()
		if seen[name] {
			return nil, posErr(pgerror.New(pgerror.CodeDuplicateAlias, "WITH query name %q specified more than once", name), c.GetLocation())
		}
		seen[name] = true
		switch {
		case c.GetSearchClause() != nil:
			return nil, posErr(pgerror.Unsupported("SEARCH in a WITH query"), c.GetLocation())
		case c.GetCycleClause() != nil:
			return nil, posErr(pgerror.Unsupported("CYCLE in a WITH query"), c.GetLocation())
		}
		var cols []string
		for _, a := range c.GetAliascolnames() {
			cols = append(cols, a.GetString_().GetSval())
		}
		// A WITH query sees the ones before it in its list, and the
		// enclosing levels'.
		visible := append(append([]cteFrame(nil), outer...), append(cteFrame(nil), frame...))
		q := c.GetCtequery().GetSelectStmt()
		if q == nil {
			dml, err := b.dmlQuery(c, visible, parent == nil && len(outer) == 0 && b.inFromSub == 0)
			if err != nil {
				return nil, err
			}
			frame = append(frame, &cteDef{name: name, dml: dml, colnames: cols, parent: parent})
			continue
		}
		frame = append(frame, &cteDef{name: name, query: q, colnames: cols, parent: parent, visible: visible, recursive: w.GetRecursive()})
	}
	if w.GetRecursive() {
		// In WITH RECURSIVE every query of the list sees all of them,
		// itself included.
		for _, d := range frame {
			d.visible = append(append([]cteFrame(nil), outer...), frame)
		}
		if err := mutualRecursion(w, frame); err != nil {
			return nil, err
		}
	}
	b.ctes = append(append([]cteFrame(nil), outer...), frame)
	return func() { b.ctes = outer }, nil
}

// cte returns the visible WITH query named name, innermost first.
func (b *Binder) cte(name string) *cteDef {
	for i := len(b.ctes) - 1; i >= 0; i-- {
		for j := len(b.ctes[i]) - 1; j >= 0; j-- {
			if d := b.ctes[i][j]; d.name == name {
				return d
			}
		}
	}
	return nil
}

// cteRef plans a reference to a WITH query as a subquery in FROM under
// alias (its column names those of the WITH list, then of the alias);
// parent is the scope around the FROM list the reference is in.
func (b *Binder) cteRef(d *cteDef, rv *pg.RangeVar, parent *scope) (Node, []scopeCol, error) {
	var sub Node
	var err error
	switch {
	case d.dml != nil:
		if len(d.dml.Columns()) == 0 {
			return nil, nil, posErr(pgerror.New(pgerror.CodeFeatureNotSupported, "WITH query %q does not have a RETURNING clause", d.name), rv.GetLocation())
		}
		sub = d.dml
	case d.binding:
		sub, err = b.selfRef(d, rv, parent)
	case d.recursive && d.query.GetOp() == pg.SetOperation_SETOP_UNION:
		sub, err = b.recursiveUnion(d, cteParent(d, parent))
	default:
		if err := b.cteCycle(d, rv); err != nil {
			return nil, nil, err
		}
		sub, err = b.cteQuery(d, cteParent(d, parent))
	}
	if err != nil {
		return nil, nil, err
	}
	if n := len(sub.Columns()); len(d.colnames) > n {
		return nil, nil, posErr(pgerror.New(pgerror.CodeInvalidColumnReference, "WITH query %q has %d columns available but %d columns specified", d.name, n, len(d.colnames)), rv.GetLocation())
	}
	alias := d.name
	var aliasCols []*pg.Node
	if a := rv.GetAlias(); a != nil {
		alias, aliasCols = a.GetAliasname(), a.GetColnames()
		if err := aliasFits(alias, sub.Columns(), aliasCols); err != nil {
			return nil, nil, err
		}
	}
	node, cols := subqueryItem(sub, alias, d.colnames, aliasCols)
	return node, cols, nil
}

// cteCycle refuses a reference to d met while d's own query is bound by
// cteQuery (in WITH RECURSIVE, one not of the form UNION [ALL] reading
// itself, or WITH queries reading each other): binding it again would
// never end (a stack overflow killed the node).
func (b *Binder) cteCycle(d *cteDef, rv *pg.RangeVar) error {
	i := slices.Index(b.expanding, d)
	switch {
	case i < 0:
		return nil
	case i == len(b.expanding)-1:
		return posErr(pgerror.New(pgerror.CodeInvalidRecursion,
			"recursive query %q does not have the form non-recursive-term UNION [ALL] recursive-term", d.name), rv.GetLocation())
	default:
		return posErr(pgerror.New(pgerror.CodeFeatureNotSupported, "mutual recursion between WITH items is not implemented"), rv.GetLocation())
	}
}

// cteParent is the scope to bind d's query under at a reference whose
// FROM list has the scope parent: d's own parent, below one empty scope
// for each query level between the reference and d's WITH. At run time
// the query runs at the reference, under those levels' rows, so its outer
// references count them (they read the wrong row, or past the end: 'index
// out of range' ended the session); the empty scopes keep the names of
// those levels out of its sight.
func cteParent(d *cteDef, parent *scope) *scope {
	levels := 0
	for s := parent; s != d.parent; s = s.parent {
		if s == nil {
			return d.parent // not under d's WITH: cannot happen
		}
		levels++
	}
	p := d.parent
	for range levels {
		p = &scope{parent: p}
	}
	return p
}

// cteQuery binds d's query where d was declared, under parent (cteParent).
func (b *Binder) cteQuery(d *cteDef, parent *scope) (Node, error) {
	if d.owner != nil {
		d.owner.inOwnWith++
		defer func() { d.owner.inOwnWith-- }()
	}
	saved := b.ctes
	b.ctes = d.visible
	b.expanding = append(b.expanding, d)
	defer func() {
		b.ctes = saved
		b.expanding = b.expanding[:len(b.expanding)-1]
	}()
	return b.selectStmt(d.query, parent)
}

// selfRef is a reference to d inside d's own query.
func (b *Binder) selfRef(d *cteDef, rv *pg.RangeVar, parent *scope) (Node, error) {
	recursive := func(format string) error {
		return posErr(pgerror.New(pgerror.CodeInvalidRecursion, format, d.name), rv.GetLocation())
	}
	switch {
	case d.inOwnWith > 0:
		// PostgreSQL checks the queries of the recursive query's own
		// WITH as subqueries.
		return nil, recursive("recursive reference to query %q must not appear within a subquery")
	case d.work == nil:
		return nil, recursive("recursive reference to query %q must not appear within its non-recursive term")
	case b.recursing[len(b.recursing)-1] != d:
		return nil, posErr(pgerror.New(pgerror.CodeFeatureNotSupported, "mutual recursion between WITH items is not implemented"), rv.GetLocation())
	case d.setOpCtx != "":
		return nil, recursive("recursive reference to query %q must not appear within " + d.setOpCtx)
	case parent != d.bindParent:
		return nil, recursive("recursive reference to query %q must not appear within a subquery")
	case d.selfRefs > 0:
		return nil, recursive("recursive reference to query %q must not appear more than once")
	}
	d.selfRefs++
	return d.work, nil
}

// recursiveUnion binds d, a UNION [ALL] in a WITH RECURSIVE: as a
// RecursiveUnion if its right side reads d, else as the plain UNION;
// parent as for cteQuery.
func (b *Binder) recursiveUnion(d *cteDef, parent *scope) (Node, error) {
	q := d.query
	if d.owner != nil {
		d.owner.inOwnWith++
		defer func() { d.owner.inOwnWith-- }()
	}
	saved := b.ctes
	b.ctes = d.visible
	d.binding, d.bindParent = true, parent
	defer func() {
		b.ctes = saved
		d.binding, d.work, d.selfRefs, d.bindParent = false, nil, 0, nil
	}()
	if w := q.GetWithClause(); w != nil {
		// The UNION's own WITH (WITH RECURSIVE t AS (WITH s AS (...)
		// SELECT ... FROM s UNION ALL SELECT ... FROM t)) is seen by
		// both of its sides.
		restore, err := b.withClause(w, parent)
		if err != nil {
			return nil, err
		}
		defer restore()
		for _, o := range b.ctes[len(b.ctes)-1] {
			o.owner = d
		}
	}
	l, err := b.selectStmt(q.GetLarg(), parent)
	if err != nil {
		return nil, err
	}
	cols := append([]Column(nil), l.Columns()...)
	var casts []Expr
	for i := range cols {
		cols[i].Table, cols[i].TableOID, cols[i].AttNum = d.name, 0, 0
		if i < len(d.colnames) {
			cols[i].Name = d.colnames[i]
		}
		var e Expr = &ColRef{Idx: i, T: cols[i].T, Name: cols[i].Name}
		if cols[i].T.OID == types.OIDUnknown {
			// A literal's type is settled here, as PostgreSQL settles it.
			if e, err = b.cast(e, tText, types.CastImplicit, -1); err != nil {
				return nil, err
			}
			cols[i].T = tText
		}
		casts = append(casts, e)
	}
	l = &Project{Input: l, Exprs: casts, cols: cols}
	d.work = &WorkTable{Name: d.name, Cols: cols}
	b.recursing = append(b.recursing, d)
	r, err := b.selectStmt(q.GetRarg(), parent)
	b.recursing = b.recursing[:len(b.recursing)-1]
	if err != nil {
		return nil, err
	}
	if d.selfRefs == 0 {
		// Not recursive after all: the plain UNION (its WITH bound again
		// by selectStmt).
		d.binding, d.work = false, nil
		b.ctes = d.visible
		return b.selectStmt(q, parent)
	}
	for _, t := range q.GetRarg().GetTargetList() {
		if hasAgg(t.GetResTarget().GetVal()) || hasAgg(q.GetRarg().GetHavingClause()) {
			return nil, pgerror.New(pgerror.CodeInvalidRecursion, "aggregate functions are not allowed in a recursive query's recursive term")
		}
	}
	switch {
	case len(q.GetSortClause()) > 0:
		return nil, pgerror.Unsupported("ORDER BY in a recursive query")
	case q.GetLimitCount() != nil || q.GetLimitOffset() != nil:
		return nil, pgerror.Unsupported("OFFSET/LIMIT in a recursive query")
	case len(q.GetLockingClause()) > 0:
		return nil, pgerror.Unsupported("FOR UPDATE/SHARE in a recursive query")
	}
	rc := r.Columns()
	if len(rc) != len(cols) {
		return nil, pgerror.New(pgerror.CodeSyntaxError, "each UNION query must have the same number of columns")
	}
	for i := range cols {
		if rc[i].T != cols[i].T {
			return nil, pgerror.New(pgerror.CodeDatatypeMismatch,
				"recursive query %q column %d has type %s in non-recursive term but type %s overall",
				d.name, i+1, cols[i].T.String(), rc[i].T.String()).
				WithHint("Cast the output of the non-recursive term to the correct type.")
		}
	}
	return &RecursiveUnion{Name: d.name, NonRec: l, Recursive: r, All: q.GetAll(), Work: d.work}, nil
}

// mutualRecursion refuses, as PostgreSQL does when it orders a WITH
// RECURSIVE list by what each query reads, a list whose queries read each
// other in a cycle (a query reading itself aside), whether or not the
// statement reads them: bound at their references, such queries were taken
// or ran without end.
func mutualRecursion(w *pg.WithClause, frame cteFrame) error {
	ctes := w.GetCtes()
	index := map[string]int{}
	for i, d := range frame {
		index[d.name] = i
	}
	deps := make([]map[int]bool, len(frame))
	for i, n := range ctes {
		deps[i] = map[int]bool{}
		cteReads(n.GetCommonTableExpr().GetCtequery().ProtoReflect(), map[string]bool{}, func(name string) {
			if j, ok := index[name]; ok && j != i {
				deps[i][j] = true
			}
		})
	}
	// PostgreSQL's TopologicalSort: the first item left that reads none
	// of those left goes next; none such is the error, at the first left.
	order := make([]int, len(frame))
	for i := range order {
		order[i] = i
	}
	for i := range order {
		j := i
		for j < len(order) && len(deps[order[j]]) > 0 {
			j++
		}
		if j == len(order) {
			c := ctes[order[i]].GetCommonTableExpr()
			return posErr(pgerror.New(pgerror.CodeFeatureNotSupported, "mutual recursion between WITH items is not implemented"), c.GetLocation())
		}
		order[i], order[j] = order[j], order[i]
		for _, k := range order[i+1:] {
			delete(deps[k], order[i])
		}
	}
	return nil
}

// cteReads calls read with each relation name m reads unqualified, other
// than the names its own WITH clauses declare where they are visible.
func cteReads(m protoreflect.Message, hidden map[string]bool, read func(string)) {
	if !m.IsValid() {
		return
	}
	if rv, ok := m.Interface().(*pg.RangeVar); ok {
		if rv.GetSchemaname() == "" && !hidden[rv.GetRelname()] {
			read(rv.GetRelname())
		}
		return
	}
	// A statement's WITH: its names hide the outer ones in the statement,
	// and in WITH RECURSIVE in its queries too (a query sees the earlier
	// ones otherwise).
	if fd := m.Descriptor().Fields().ByName("with_clause"); fd != nil && m.Has(fd) {
		w, _ := m.Get(fd).Message().Interface().(*pg.WithClause)
		inner := maps.Clone(hidden)
		if w.GetRecursive() {
			for _, c := range w.GetCtes() {
				inner[c.GetCommonTableExpr().GetCtename()] = true
			}
		}
		for _, c := range w.GetCtes() {
			cte := c.GetCommonTableExpr()
			cteReads(cte.GetCtequery().ProtoReflect(), inner, read)
			inner[cte.GetCtename()] = true
		}
		hidden = inner
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Name() == "with_clause" || fd.Message() == nil || fd.IsMap():
		case fd.IsList():
			for i := 0; i < v.List().Len(); i++ {
				cteReads(v.List().Get(i).Message(), hidden, read)
			}
		default:
			cteReads(v.Message(), hidden, read)
		}
		return true
	})
}
