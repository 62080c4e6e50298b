package plan

import (
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/proto"

	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/parse"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// tableScope is the scope of a table's row (every column, hidden ones
// included, in catalog order).
func tableScope(t *catalog.Table, alias string) *scope {
	sc := &scope{}
	for _, c := range t.Columns {
		sc.cols = append(sc.cols, scopeCol{Table: alias, Name: c.Name, T: c.Type, Hidden: c.Hidden})
	}
	return sc
}

// DefaultExpr binds column c of table t's default (NULL when it has
// none); t may be nil for a default not stored yet.
func (b *Binder) DefaultExpr(t *catalog.Table, c *catalog.Column) (Expr, error) {
	if c.Default == "" {
		return nullConst(c.Type), nil
	}
	st, err := parse.One("SELECT " + c.Default)
	if err != nil {
		return nil, err
	}
	val := st.GetStmt().GetSelectStmt().GetTargetList()[0].GetResTarget().GetVal()
	val = b.qualifyOwnedSequence(t, c, val)
	e, err := b.expr(val, &scope{}, c.Type)
	if err != nil {
		return nil, err
	}
	return b.assign(e, c, -1)
}

// qualifyOwnedSequence names the schema of the sequence in a SERIAL or
// identity column's default, nextval('t_a_seq'): the sequence is the
// table's, in the table's schema, whatever the search_path (PostgreSQL
// binds it by OID when the table is made). Unqualified, an insert into a
// table outside the search_path found no sequence, or another schema's of
// the same name.
func (b *Binder) qualifyOwnedSequence(t *catalog.Table, c *catalog.Column, n *pg.Node) *pg.Node {
	fc := n.GetFuncCall()
	if t == nil || b.Cat == nil || fc == nil || len(fc.GetFuncname()) != 1 || len(fc.GetArgs()) != 1 ||
		fc.GetFuncname()[0].GetString_().GetSval() != "nextval" {
		return n
	}
	lit := fc.GetArgs()[0].GetAConst().GetSval()
	if lit == nil || strings.ContainsAny(lit.GetSval(), `."`) {
		return n
	}
	if q, ok := b.Cat.Sequence(t.Database, t.Schema, lit.GetSval()); !ok || q.OwnedBy != t.Name+"."+c.Name {
		return n
	}
	// The parsed tree is shared (parse.One): change a copy.
	n = proto.Clone(n).(*pg.Node)
	lit = n.GetFuncCall().GetArgs()[0].GetAConst().GetSval()
	lit.Sval = t.Schema + "." + lit.GetSval()
	return n
}

// ColumnValue binds a row-independent expression as a value of column c
// (assignment-cast rules, as INSERT).
func (b *Binder) ColumnValue(n *pg.Node, c *catalog.Column) (Expr, error) {
	e, err := b.expr(n, &scope{}, c.Type)
	if err != nil {
		return nil, err
	}
	return b.assign(e, c, -1)
}

// RowValue binds an expression over t's row (ALTER COLUMN TYPE's USING)
// as a value of column c, assignment-cast rules.
func (b *Binder) RowValue(t *catalog.Table, n *pg.Node, c *catalog.Column) (Expr, error) {
	e, err := b.expr(n, tableScope(t, t.Name), c.Type)
	if err != nil {
		return nil, err
	}
	return b.assign(e, c, exprLocation(n))
}

// Checks binds a table's CHECK constraints over its row.
func (b *Binder) Checks(t *catalog.Table) ([]Expr, error) { return b.checks(t) }

// checks binds a table's CHECK constraints over its row.
func (b *Binder) checks(t *catalog.Table) ([]Expr, error) {
	var out []Expr
	for _, ck := range t.Checks {
		st, err := parse.One("SELECT " + ck.Expr)
		if err != nil {
			return nil, err
		}
		e, err := b.expr(st.GetStmt().GetSelectStmt().GetTargetList()[0].GetResTarget().GetVal(), tableScope(t, t.Name), tBool)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// returning binds a RETURNING list over scope sc, whose columns from at
// on are the target table's (before them: UPDATE's FROM or DELETE's
// USING tables).
func (b *Binder) returning(list []*pg.Node, sc *scope, at int) ([]Expr, []Column, error) {
	var exprs []Expr
	var cols []Column
	for _, n := range list {
		rt := n.GetResTarget()
		if err := b.noSRF(rt.GetVal(), "RETURNING"); err != nil {
			return nil, nil, err
		}
		if cr := rt.GetVal().GetColumnRef(); cr != nil && isStar(cr) {
			es, cs, err := b.expandStar(cr, sc)
			if err != nil {
				return nil, nil, err
			}
			if at > 0 {
				// * is the target's columns first, as PostgreSQL's range
				// table has it, then the other tables'.
				var tes, oes []Expr
				var tcs, ocs []Column
				for i, e := range es {
					if r, ok := e.(*ColRef); ok && r.Idx >= at {
						tes, tcs = append(tes, e), append(tcs, cs[i])
					} else {
						oes, ocs = append(oes, e), append(ocs, cs[i])
					}
				}
				es, cs = append(tes, oes...), append(tcs, ocs...)
			}
			exprs, cols = append(exprs, es...), append(cols, cs...)
			continue
		}
		e, err := b.expr(rt.GetVal(), sc, tUnknown)
		if err != nil {
			return nil, nil, err
		}
		if e.Type().OID == types.OIDUnknown {
			if e, err = b.cast(e, tText, types.CastImplicit, -1); err != nil {
				return nil, nil, err
			}
		}
		name := rt.GetName()
		if name == "" {
			name = columnName(rt.GetVal())
		}
		exprs, cols = append(exprs, e), append(cols, Column{Name: name, T: e.Type()})
	}
	return exprs, cols, nil
}

// Insert plans an INSERT.
func (b *Binder) Insert(s *pg.InsertStmt) (*Insert, error) {
	if w := s.GetWithClause(); w != nil {
		restore, err := b.withClause(w, nil)
		if err != nil {
			return nil, err
		}
		defer restore()
	}
	t, err := b.LookupTable(s.GetRelation())
	if err != nil {
		return nil, err
	}
	alias := t.Name
	if a := s.GetRelation().GetAlias(); a != nil {
		alias = a.GetAliasname()
	}
	// target[i] is the table column the i-th source column goes to.
	var target []int
	if len(s.GetCols()) == 0 {
		for i, c := range t.Columns {
			if !c.Hidden {
				target = append(target, i)
			}
		}
	} else {
		seen := map[int]bool{}
		for _, n := range s.GetCols() {
			rt := n.GetResTarget()
			i := t.ColumnIndex(rt.GetName())
			if i < 0 {
				return nil, posErr(pgerror.New(pgerror.CodeUndefinedColumn, "column %q of relation %q does not exist", rt.GetName(), t.Name), rt.GetLocation())
			}
			if seen[i] {
				return nil, posErr(pgerror.New(pgerror.CodeDuplicateColumn, "column %q specified more than once", rt.GetName()), rt.GetLocation())
			}
			seen[i] = true
			target = append(target, i)
		}
	}
	defaults := make([]Expr, len(t.Columns))
	for i := range t.Columns {
		if defaults[i], err = b.DefaultExpr(t, &t.Columns[i]); err != nil {
			return nil, err
		}
	}
	full := func(src []Expr) ([]Expr, error) {
		row := append([]Expr(nil), defaults...)
		for j, e := range src {
			i := target[j]
			c := &t.Columns[i]
			if _, isDef := e.(*defaultMarker); isDef {
				continue
			}
			if c.Identity != "" && s.GetOverride() == pg.OverridingKind_OVERRIDING_USER_VALUE {
				continue // the identity's sequence gives the value
			}
			if c.Identity == "a" && s.GetOverride() != pg.OverridingKind_OVERRIDING_SYSTEM_VALUE {
				return nil, pgerror.New(pgerror.CodeGeneratedAlways, "cannot insert a non-DEFAULT value into column %q", c.Name).
					WithDetail("Column %q is an identity column defined as GENERATED ALWAYS.", c.Name).
					WithHint("Use OVERRIDING SYSTEM VALUE to override.")
			}
			v, err := b.assign(e, c, -1)
			if err != nil {
				return nil, err
			}
			row[i] = v
		}
		return row, nil
	}
	ins := &Insert{Table: t}
	sel := s.GetSelectStmt().GetSelectStmt()
	// Without a column list, the values fill the leading columns and the
	// rest take their defaults.
	if len(s.GetCols()) == 0 && sel != nil {
		width := -1
		if len(sel.GetValuesLists()) > 0 {
			width = len(sel.GetValuesLists()[0].GetList().GetItems())
		} else if sel.GetOp() == pg.SetOperation_SETOP_NONE {
			width = 0
			for _, tl := range sel.GetTargetList() {
				if cr := tl.GetResTarget().GetVal().GetColumnRef(); cr != nil && isStar(cr) {
					width = -1
					break
				}
				width++
			}
		}
		if width >= 0 && width < len(target) {
			target = target[:width]
		}
	}
	switch {
	case sel == nil: // DEFAULT VALUES
		ins.Source = &Values{Rows: [][]Expr{defaults}, cols: tableColumns(t)}
	case len(sel.GetValuesLists()) > 0 && sel.GetOp() == pg.SetOperation_SETOP_NONE && len(sel.GetSortClause()) == 0 && sel.GetLimitCount() == nil:
		v := &Values{cols: tableColumns(t)}
		for _, l := range sel.GetValuesLists() {
			items := l.GetList().GetItems()
			if len(items) > len(target) {
				return nil, posErr(pgerror.New(pgerror.CodeSyntaxError, "INSERT has more expressions than target columns"), exprLocation(items[len(target)]))
			}
			if len(items) < len(target) {
				return nil, pgerror.New(pgerror.CodeSyntaxError, "INSERT has more target columns than expressions")
			}
			src := make([]Expr, len(items))
			for j, it := range items {
				if it.GetSetToDefault() != nil {
					src[j] = &defaultMarker{}
					continue
				}
				e, err := b.expr(it, &scope{}, t.Columns[target[j]].Type)
				if err != nil {
					return nil, err
				}
				src[j] = e
			}
			row, err := full(src)
			if err != nil {
				return nil, err
			}
			v.Rows = append(v.Rows, row)
		}
		ins.Source = v
	default:
		n, err := b.selectStmt(sel, nil)
		if err != nil {
			return nil, err
		}
		cols := n.Columns()
		if len(cols) > len(target) {
			return nil, pgerror.New(pgerror.CodeSyntaxError, "INSERT has more expressions than target columns")
		}
		if len(cols) < len(target) {
			return nil, pgerror.New(pgerror.CodeSyntaxError, "INSERT has more target columns than expressions")
		}
		src := make([]Expr, len(cols))
		for j, c := range cols {
			src[j] = &ColRef{Idx: j, T: c.T}
		}
		row, err := full(src)
		if err != nil {
			return nil, err
		}
		ins.Source = &Project{Input: n, Exprs: row, cols: tableColumns(t)}
	}
	if ins.Checks, err = b.checks(t); err != nil {
		return nil, err
	}
	sc := tableScope(t, alias)
	if oc := s.GetOnConflictClause(); oc != nil {
		ins.OnConflict = &OnConflict{}
		switch oc.GetAction() {
		case pg.OnConflictAction_ONCONFLICT_NOTHING:
			ins.OnConflict.DoNothing = true
			if oc.GetInfer() == nil {
				ins.OnConflict.Any = true
			} else if ins.OnConflict.Index, err = b.checkConflictTarget(t, oc); err != nil {
				return nil, err
			}
		case pg.OnConflictAction_ONCONFLICT_UPDATE:
			if ins.OnConflict.Index, err = b.checkConflictTarget(t, oc); err != nil {
				return nil, err
			}
			both := &scope{cols: append(append([]scopeCol(nil), sc.cols...), tableScope(t, "excluded").cols...)}
			set, err := b.setList(t, oc.GetTargetList(), both)
			if err != nil {
				return nil, err
			}
			ins.OnConflict.Set = set
			if w := oc.GetWhereClause(); w != nil {
				if ins.OnConflict.Where, err = b.expr(w, both, tBool); err != nil {
					return nil, err
				}
			}
		}
	}
	if ins.Returning, ins.cols, err = b.returning(s.GetReturningList(), sc, 0); err != nil {
		return nil, err
	}
	return ins, nil
}

// checkConflictTarget resolves ON CONFLICT (cols) / ON CONSTRAINT name to
// the primary key ("") or a unique index usable as an arbiter (readable;
// a partial one only when the clause's WHERE implies its predicate, as
// PostgreSQL infers it: the soft-delete upsert ON CONFLICT (key) WHERE
// deleted_at IS NULL).
func (b *Binder) checkConflictTarget(t *catalog.Table, oc *pg.OnConflictClause) (string, error) {
	inf := oc.GetInfer()
	if inf == nil {
		return "", pgerror.New(pgerror.CodeSyntaxError, "ON CONFLICT DO UPDATE requires inference specification or constraint name").
			WithHint("For example, ON CONFLICT (column_name).")
	}
	if w := inf.GetWhereClause(); w != nil {
		// The WHERE names a partial index's predicate: what one may not
		// hold, it may not either (PostgreSQL: a subquery is 0A000).
		if err := refuseInDefinition(b, w, "index predicate", false); err != nil {
			return "", err
		}
	}
	if name := inf.GetConname(); name != "" {
		if name == t.PKName && !t.RowID {
			return "", nil
		}
		if ix, ok := t.Index(name); ok && ix.Unique && ix.Constraint && ix.Readable() {
			return name, nil
		}
		return "", pgerror.New(pgerror.CodeUndefinedObject, "constraint %q for table %q does not exist", name, t.Name)
	}
	named := map[int]bool{}
	for _, e := range inf.GetIndexElems() {
		if e.GetIndexElem().GetExpr() != nil {
			// No index is on an expression, so none matches.
			return "", pgerror.New(pgerror.CodeInvalidColumnReference, "there is no unique or exclusion constraint matching the ON CONFLICT specification")
		}
		i := t.ColumnIndex(e.GetIndexElem().GetName())
		if i < 0 {
			return "", pgerror.New(pgerror.CodeUndefinedColumn, "column %q does not exist", e.GetIndexElem().GetName())
		}
		named[i] = true
	}
	match := len(named) == len(t.Key) && !t.RowID
	for _, k := range t.Key {
		match = match && named[k.Column]
	}
	if match {
		return "", nil
	}
	for i := range t.Indexes {
		ix := &t.Indexes[i]
		if !ix.Unique || !ix.Readable() || len(ix.Columns) != len(named) {
			continue
		}
		if ix.Predicate != "" && !impliesPredicate(inf.GetWhereClause(), ix.Predicate) {
			continue
		}
		ok := true
		for _, c := range ix.Columns {
			ok = ok && named[t.ColumnByID(c.ID)]
		}
		if ok {
			return ix.Name, nil
		}
	}
	return "", pgerror.New(pgerror.CodeInvalidColumnReference, "there is no unique or exclusion constraint matching the ON CONFLICT specification")
}

// impliesPredicate reports whether where (ON CONFLICT's) implies a partial
// index's predicate: each of the predicate's AND terms is one of where's
// (compared deparsed). PostgreSQL proves more (x > 5 implies x > 0); the
// same terms are what upserts on partial unique indexes write.
func impliesPredicate(where *pg.Node, pred string) bool {
	if where == nil {
		return false
	}
	st, err := parse.One("SELECT " + pred)
	if err != nil {
		return false
	}
	have := map[string]bool{}
	for _, n := range andTerms(where, nil) {
		if s, err := deparseNode(n); err == nil {
			have[s] = true
		}
	}
	for _, n := range andTerms(st.GetStmt().GetSelectStmt().GetTargetList()[0].GetResTarget().GetVal(), nil) {
		if s, err := deparseNode(n); err != nil || !have[s] {
			return false
		}
	}
	return true
}

// andTerms appends the terms of n's ANDs (n itself when it is none).
func andTerms(n *pg.Node, out []*pg.Node) []*pg.Node {
	if be := n.GetBoolExpr(); be != nil && be.GetBoolop() == pg.BoolExprType_AND_EXPR {
		for _, a := range be.GetArgs() {
			out = andTerms(a, out)
		}
		return out
	}
	return append(out, n)
}

func (b *Binder) setList(t *catalog.Table, targets []*pg.Node, sc *scope) (map[int]Expr, error) {
	set := map[int]Expr{}
	for _, n := range targets {
		rt := n.GetResTarget()
		i := t.ColumnIndex(rt.GetName())
		if i < 0 {
			return nil, posErr(pgerror.New(pgerror.CodeUndefinedColumn, "column %q of relation %q does not exist", rt.GetName(), t.Name), rt.GetLocation())
		}
		if len(rt.GetIndirection()) > 0 {
			return nil, posErr(pgerror.Unsupported("assignment to a field or element"), rt.GetLocation())
		}
		if err := b.noSRF(rt.GetVal(), "UPDATE"); err != nil {
			return nil, err
		}
		if _, dup := set[i]; dup {
			return nil, posErr(pgerror.New(pgerror.CodeSyntaxError, "multiple assignments to same column %q", rt.GetName()), rt.GetLocation())
		}
		c := &t.Columns[i]
		var e Expr
		var err error
		val, err := multiAssignItem(rt)
		if err != nil {
			return nil, err
		}
		if val.GetSetToDefault() != nil {
			e, err = b.DefaultExpr(t, c)
		} else if c.Identity == "a" {
			return nil, posErr(pgerror.New(pgerror.CodeGeneratedAlways, "column %q can only be updated to DEFAULT", c.Name).
				WithDetail("Column %q is an identity column defined as GENERATED ALWAYS.", c.Name), rt.GetLocation())
		} else {
			if e, err = b.expr(val, sc, c.Type); err == nil {
				e, err = b.assign(e, c, rt.GetLocation())
			}
		}
		if err != nil {
			return nil, err
		}
		set[i] = e
	}
	return set, nil
}

// multiAssignItem is the value a SET target takes: its own, or for SET
// (a, b) = (x, y) / = (SELECT x, y ...) its item of the row (a subquery
// of that one column: an uncorrelated one is read once per statement).
func multiAssignItem(rt *pg.ResTarget) (*pg.Node, error) {
	mar := rt.GetVal().GetMultiAssignRef()
	if mar == nil {
		return rt.GetVal(), nil
	}
	i := int(mar.GetColno()) - 1
	src := mar.GetSource()
	loc := exprLocation(src)
	mismatch := posErr(pgerror.New(pgerror.CodeSyntaxError, "number of columns does not match number of values"), loc)
	switch {
	case src.GetRowExpr() != nil:
		args := src.GetRowExpr().GetArgs()
		if len(args) != int(mar.GetNcolumns()) {
			return nil, mismatch
		}
		return args[i], nil
	case src.GetSubLink() != nil && src.GetSubLink().GetSubselect().GetSelectStmt() != nil:
		sl := src.GetSubLink()
		sel := sl.GetSubselect().GetSelectStmt()
		if sel.GetOp() != pg.SetOperation_SETOP_NONE || len(sel.GetValuesLists()) > 0 {
			return nil, posErr(pgerror.Unsupported("SET (columns) = a set operation or VALUES"), loc)
		}
		if len(sel.GetTargetList()) != int(mar.GetNcolumns()) {
			return nil, mismatch
		}
		one := proto.Clone(sel).(*pg.SelectStmt)
		one.TargetList = []*pg.Node{sel.GetTargetList()[i]}
		return &pg.Node{Node: &pg.Node_SubLink{SubLink: &pg.SubLink{SubLinkType: pg.SubLinkType_EXPR_SUBLINK,
			Subselect: &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: one}}, Location: sl.GetLocation()}}}, nil
	}
	return nil, posErr(pgerror.New(pgerror.CodeFeatureNotSupported, "source for a multiple-column UPDATE item must be a sub-SELECT or ROW() expression"), loc)
}

// Update plans an UPDATE.
func (b *Binder) Update(s *pg.UpdateStmt) (*Update, error) {
	if w := s.GetWithClause(); w != nil {
		restore, err := b.withClause(w, nil)
		if err != nil {
			return nil, err
		}
		defer restore()
	}
	t, err := b.LookupTable(s.GetRelation())
	if err != nil {
		return nil, err
	}
	src, scan, at, sc, err := b.dmlSource(t, s.GetRelation(), s.GetFromClause(), s.GetWhereClause())
	if err != nil {
		return nil, err
	}
	u := &Update{Table: t, Source: src, TargetAt: at}
	if u.Set, err = b.setList(t, s.GetTargetList(), sc); err != nil {
		return nil, err
	}
	// PostgreSQL's lock for an UPDATE: FOR NO KEY UPDATE. A row whose
	// key changes is also locked FOR UPDATE, when it does (exec).
	scan.Lock = LockNoKeyUpdate
	if u.Checks, err = b.checks(t); err != nil {
		return nil, err
	}
	if u.Returning, u.cols, err = b.returning(s.GetReturningList(), sc, at); err != nil {
		return nil, err
	}
	return u, nil
}

// Delete plans a DELETE.
func (b *Binder) Delete(s *pg.DeleteStmt) (*Delete, error) {
	if w := s.GetWithClause(); w != nil {
		restore, err := b.withClause(w, nil)
		if err != nil {
			return nil, err
		}
		defer restore()
	}
	t, err := b.LookupTable(s.GetRelation())
	if err != nil {
		return nil, err
	}
	src, _, at, sc, err := b.dmlSource(t, s.GetRelation(), s.GetUsingClause(), s.GetWhereClause())
	if err != nil {
		return nil, err
	}
	d := &Delete{Table: t, Source: src, TargetAt: at}
	if d.Returning, d.cols, err = b.returning(s.GetReturningList(), sc, at); err != nil {
		return nil, err
	}
	return d, nil
}

// dmlSource plans the rows an UPDATE or DELETE of t works on: t's scan,
// whose rows it locks, joined with the tables of UPDATE's FROM or
// DELETE's USING when there are any, under the WHERE condition. The join
// is an inner join with the target on the right, so that a join key that
// fixes the target's primary key reads and locks the matched target rows
// alone (a locked lookup join) rather than scanning and locking all of
// them; each row then holds the other tables' columns, then the target's,
// from at. It returns the target's scan, which locks its rows FOR UPDATE,
// and the scope that SET, WHERE and RETURNING see.
func (b *Binder) dmlSource(t *catalog.Table, rel *pg.RangeVar, from []*pg.Node, where *pg.Node) (src Node, scan *Scan, at int, sc *scope, err error) {
	alias := t.Name
	if a := rel.GetAlias(); a != nil {
		alias = a.GetAliasname()
	}
	sc = tableScope(t, alias)
	scan = newScan(t, alias)
	scan.Lock, scan.ForWrite = LockUpdate, true
	src = scan
	if len(from) > 0 {
		other, osc, err := b.fromList(from, nil)
		if err != nil {
			return nil, nil, 0, nil, err
		}
		for _, c := range osc.cols {
			if c.Table == alias {
				return nil, nil, 0, nil, pgerror.New(pgerror.CodeDuplicateAlias, "table name %q specified more than once", alias)
			}
		}
		at = len(other.Columns())
		src = &Join{Kind: InnerJoin, Left: other, Right: scan, cols: append(append([]Column(nil), other.Columns()...), scan.Columns()...)}
		sc = &scope{cols: append(append([]scopeCol(nil), osc.cols...), sc.cols...)}
	}
	if where != nil {
		cond, err := b.expr(where, sc, tBool)
		if err != nil {
			return nil, nil, 0, nil, err
		}
		if cond, err = b.coerceTo(cond, tBool, "argument of WHERE", -1); err != nil {
			return nil, nil, 0, nil, err
		}
		src = b.addFilter(src, cond)
	}
	planLookups(src)
	return src, scan, at, sc, nil
}

func tableColumns(t *catalog.Table) []Column {
	cols := make([]Column, len(t.Columns))
	for i, c := range t.Columns {
		cols[i] = Column{Name: c.Name, T: c.Type, Table: t.Name, TableOID: t.OID(), AttNum: int16(i + 1), Hidden: c.Hidden}
	}
	return cols
}

func exprLocation(n *pg.Node) int32 {
	switch {
	case n.GetAConst() != nil:
		return n.GetAConst().GetLocation()
	case n.GetColumnRef() != nil:
		return n.GetColumnRef().GetLocation()
	case n.GetFuncCall() != nil:
		return n.GetFuncCall().GetLocation()
	case n.GetTypeCast() != nil:
		return n.GetTypeCast().GetLocation()
	case n.GetAExpr() != nil:
		return n.GetAExpr().GetLocation()
	case n.GetRowExpr() != nil:
		return n.GetRowExpr().GetLocation()
	case n.GetSubLink() != nil:
		return n.GetSubLink().GetLocation()
	}
	return -1
}

// IndexPredicate binds a partial index's predicate over t's row.
func (b *Binder) IndexPredicate(t *catalog.Table, pred string) (Expr, error) {
	st, err := parse.One("SELECT " + pred)
	if err != nil {
		return nil, err
	}
	e, err := b.expr(st.GetStmt().GetSelectStmt().GetTargetList()[0].GetResTarget().GetVal(), tableScope(t, t.Name), tBool)
	if err != nil {
		return nil, err
	}
	return b.coerceTo(e, tBool, "argument of WHERE", -1)
}
