package exec

import (
	"context"
	"fmt"
	"slices"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// ALTER TABLE ... ALTER COLUMN c TYPE t [USING expr]. A change that keeps
// every stored value as it is (varchar(n) to text or to a longer varchar)
// is the catalog's alone. Any other writes the column again: writers
// refuse the table meanwhile (as during ADD PRIMARY KEY, 55P03), a hidden
// column of the new type gets each row's converted value, then takes the
// old one's place under its name. PostgreSQL rewrites the table too, under
// a lock that makes writers wait.

// typeChange is one ALTER COLUMN TYPE of an ALTER TABLE.
type typeChange struct {
	col   uint32 // the column's id
	to    types.T
	using *pg.Node // nil: the column itself, assignment cast
}

// typeChangeOf reads an ALTER COLUMN TYPE subcommand of t.
func typeChangeOf(t *catalog.Table, cmd *pg.AlterTableCmd) (typeChange, error) {
	i := t.ColumnIndex(cmd.GetName())
	if i < 0 {
		return typeChange{}, pgerror.New(pgerror.CodeUndefinedColumn, "column %q of relation %q does not exist", cmd.GetName(), t.Name)
	}
	cd := cmd.GetDef().GetColumnDef()
	to, err := types.FromTypeName(cd.GetTypeName())
	if err != nil {
		return typeChange{}, pgerror.From(err)
	}
	id := t.Columns[i].ID
	ch := typeChange{col: id, to: to, using: cd.GetRawDefault()}
	if keepsValues(t.Columns[i].Type, to, ch.using) {
		// Keys and index entries stay as they are too (Django widens
		// the varchar of auth_user.username, a unique column).
		return ch, nil
	}
	if t.IsKey(i) {
		return typeChange{}, pgerror.Unsupported("ALTER COLUMN TYPE of a primary key column")
	}
	for _, ix := range t.Indexes {
		for _, c := range ix.Columns {
			if c.ID == id {
				return typeChange{}, pgerror.Unsupported("ALTER COLUMN TYPE of an indexed column")
			}
		}
		if slices.Contains(ix.Include, id) {
			return typeChange{}, pgerror.Unsupported("ALTER COLUMN TYPE of an indexed column")
		}
	}
	for _, fk := range t.ForeignKeys {
		if slices.Contains(fk.Columns, id) {
			return typeChange{}, pgerror.Unsupported("ALTER COLUMN TYPE of a foreign key column")
		}
	}
	return ch, nil
}

// keepsValues reports whether every value of type from is stored and
// read the same as a value of type to: no row needs writing again.
func keepsValues(from, to types.T, using *pg.Node) bool {
	if using != nil {
		return false
	}
	text := func(t types.T) bool { return t.OID == types.OIDText || t.OID == types.OIDVarchar }
	if !text(from) || !text(to) {
		return from == to
	}
	if to.OID == types.OIDText || to.Mod < 0 {
		return true
	}
	return from.OID == types.OIDVarchar && from.Mod >= 0 && from.CharLen() <= to.CharLen()
}

// alterColumnTypes runs the type changes of an ALTER TABLE of t.
func (s *Session) alterColumnTypes(ctx context.Context, snap *catalog.Snapshot, t *catalog.Table, changes []typeChange) error {
	for _, ch := range changes {
		if keepsValues(t.Columns[t.ColumnByID(ch.col)].Type, ch.to, ch.using) {
			continue
		}
		for _, ref := range snap.ReferencedBy(t) {
			if slices.Contains(ref.FK.RefColumns, ch.col) {
				return pgerror.Unsupported("ALTER COLUMN TYPE of a column a foreign key references")
			}
		}
	}
	next := cloneTable(t)
	rewrite := false
	for _, ch := range changes {
		c := &next.Columns[next.ColumnByID(ch.col)]
		rewrite = rewrite || !keepsValues(c.Type, ch.to, ch.using)
		c.Type = ch.to
	}
	if err := s.checkDefaults(ctx, next, changes); err != nil {
		return err
	}
	if !rewrite {
		return alterErr(s.e.cfg.Cache.AlterTable(ctx, t, next), t)
	}
	cur, err := s.freezeForRewrite(ctx, t)
	if err != nil {
		return err
	}
	if err := s.rewriteColumns(ctx, cur, changes); err != nil {
		return s.thaw(ctx, cur, err)
	}
	return nil
}

// checkDefaults fails, as PostgreSQL, when a changed column's default is
// no value of its new type.
func (s *Session) checkDefaults(ctx context.Context, next *catalog.Table, changes []typeChange) error {
	b, err := s.binder(ctx)
	if err != nil {
		return err
	}
	for _, ch := range changes {
		c := &next.Columns[next.ColumnByID(ch.col)]
		if _, err := b.DefaultExpr(next, c); err != nil {
			return pgerror.New(pgerror.CodeDatatypeMismatch, "default for column %q cannot be cast automatically to type %s", c.Name, ch.to.String())
		}
	}
	return nil
}

// rewriteColumns writes the new columns of changes into every row of cur
// (frozen), then puts them in the old ones' places.
func (s *Session) rewriteColumns(ctx context.Context, cur *catalog.Table, changes []typeChange) error {
	if !s.busyBlock && !s.pinned() {
		if err := s.waitNodes(ctx, s.e.cfg.Cache.Latest()); err != nil {
			return err
		}
	}
	// Hidden columns of the new types, one per change.
	staged := cloneTable(cur)
	fresh := make([]uint32, len(changes))
	for k, ch := range changes {
		old := &cur.Columns[cur.ColumnByID(ch.col)]
		fresh[k] = staged.NextColID
		staged.NextColID++
		staged.Columns = append(staged.Columns, catalog.Column{ID: fresh[k], Name: fmt.Sprintf("shale_retype_%d", fresh[k]),
			Type: ch.to, Hidden: true, NotNull: old.NotNull})
	}
	if err := s.e.cfg.Cache.AlterTable(ctx, cur, staged); err != nil {
		return alterErr(err, cur)
	}
	staged, err := s.currentTable(ctx, cur)
	if err != nil {
		return err
	}
	if err := s.fillRetyped(ctx, staged, changes, fresh); err != nil {
		return err
	}
	// The new columns take the old ones' names, places and constraints.
	final := cloneTable(staged)
	final.Rewriting = false
	for k, ch := range changes {
		i, j := final.ColumnByID(ch.col), final.ColumnByID(fresh[k])
		c := final.Columns[i]
		c.ID, c.Type = fresh[k], ch.to
		final.Columns[i] = c
		final.Columns = slices.Delete(final.Columns, j, j+1)
	}
	return alterErr(s.e.cfg.Cache.AlterTable(ctx, final, final), staged)
}

// fillRetyped writes each row's converted values into the hidden columns
// fresh, in one transaction, the rows streaming from the scan.
func (s *Session) fillRetyped(ctx context.Context, t *catalog.Table, changes []typeChange, fresh []uint32) error {
	b, err := s.binder(ctx)
	if err != nil {
		return err
	}
	conv := make([]plan.Expr, len(changes))
	for k, ch := range changes {
		target := &t.Columns[t.ColumnByID(fresh[k])]
		old := &t.Columns[t.ColumnByID(ch.col)]
		src := ch.using
		if src != nil {
			if err := b.CheckTransform(src); err != nil {
				return err
			}
		} else {
			src = &pg.Node{Node: &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{Fields: []*pg.Node{{Node: &pg.Node_String_{String_: &pg.String{Sval: old.Name}}}}, Location: -1}}}
		}
		if conv[k], err = b.RowValue(t, src, target); err != nil {
			if ch.using == nil && pgerror.Code(err) == pgerror.CodeDatatypeMismatch {
				return pgerror.New(pgerror.CodeDatatypeMismatch, "column %q cannot be cast automatically to type %s", old.Name, ch.to.String()).
					WithHint("You might need to specify \"USING %s::%s\".", quoteIdentIfNeeded(old.Name), ch.to.String())
			}
			return err
		}
	}
	return s.inTxn(ctx, func(tx *client.Txn) error {
		r := &runner{s: s, ctx: ctx, txn: tx, ec: s.evalContext(nil), closers: &closers{}}
		defer r.closers.run()
		tbl, err := s.openTable(ctx, t)
		if err != nil {
			return err
		}
		rows, err := r.open(plan.NewScan(t))
		if err != nil {
			return err
		}
		wb := &writeBatch{tbl: tbl}
		err = each(rows, func(row plan.Row) error {
			next := append(plan.Row(nil), row...)
			for k := range changes {
				d, err := conv[k].Eval(r.ec, row)
				if err != nil {
					return err
				}
				i := t.ColumnByID(fresh[k])
				if d.Null && t.Columns[i].NotNull {
					c := t.Columns[t.ColumnByID(changes[k].col)].Name
					return &pgerror.Error{Code: pgerror.CodeNotNullViolation, Table: t.Name, Column: c,
						Message: fmt.Sprintf("column %q of relation %q contains null values", c, t.Name)}
				}
				next[i] = d
			}
			return r.writeUpdate(wb, t, row, next)
		})
		if err != nil {
			return err
		}
		return r.flush(wb)
	})
}
