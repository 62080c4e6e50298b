package exec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/parse"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// cloneTable deep-copies table metadata for an ALTER.
func cloneTable(t *catalog.Table) *catalog.Table {
	b, _ := json.Marshal(t)
	out := &catalog.Table{}
	_ = json.Unmarshal(b, out)
	out.MasterID, out.Version = t.MasterID, t.Version
	return out
}

func (s *Session) alterTable(ctx context.Context, at *pg.AlterTableStmt) error {
	if at.GetObjtype() != pg.ObjectType_OBJECT_TABLE {
		return pgerror.Unsupported("ALTER " + strings.TrimPrefix(at.GetObjtype().String(), "OBJECT_"))
	}
	snap, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	rv := at.GetRelation()
	t, ok := s.findTable(snap, rv.GetSchemaname(), rv.GetRelname())
	if !ok {
		if _, isView := s.findView(snap, rv.GetSchemaname(), rv.GetRelname()); isView {
			return pgerror.New(pgerror.CodeWrongObjectType, "%q is not a table", rv.GetRelname())
		}
		if at.GetMissingOk() {
			s.notice("NOTICE", "00000", "relation %q does not exist, skipping", rv.GetRelname())
			return nil
		}
		return pgerror.New(pgerror.CodeUndefinedTable, "relation %q does not exist", rv.GetRelname())
	}
	for _, cn := range at.GetCmds() {
		cmd := cn.GetAlterTableCmd()
		what := ""
		switch cmd.GetSubtype() {
		case pg.AlterTableType_AT_DropColumn:
			what = fmt.Sprintf("drop column %s of table %s", cmd.GetName(), t.Name)
		case pg.AlterTableType_AT_AlterColumnType:
			what = fmt.Sprintf("alter type of column %s of table %s", cmd.GetName(), t.Name)
		case pg.AlterTableType_AT_AddConstraint:
			if cmd.GetDef().GetConstraint().GetContype() == pg.ConstrType_CONSTR_PRIMARY {
				what = fmt.Sprintf("add a primary key to table %s", t.Name)
			}
		}
		if what != "" {
			if err := s.viewsReading(snap, t, what); err != nil {
				return err
			}
		}
	}
	next := cloneTable(t)
	s.pendingSeqs, s.pendingUniques, s.pendingFKs = nil, nil, nil
	defer func() { s.pendingSeqs, s.pendingUniques, s.pendingFKs = nil, nil, nil }()
	var rows rowChecks // what the existing rows get and must pass
	var newPK []keySpec
	var addUnique []*indexRequest // ADD CONSTRAINT ... UNIQUE, built after the rest
	var dropIndexes []string      // DROP CONSTRAINT of UNIQUE constraints
	var retype []typeChange       // ALTER COLUMN TYPE, done alone
	for _, cn := range at.GetCmds() {
		cmd := cn.GetAlterTableCmd()
		switch cmd.GetSubtype() {
		case pg.AlterTableType_AT_AddColumn:
			cd := cmd.GetDef().GetColumnDef()
			if next.ColumnIndex(cd.GetColname()) >= 0 {
				if cmd.GetMissingOk() {
					s.notice("NOTICE", "42701", "column %q of relation %q already exists, skipping", cd.GetColname(), t.Name)
					continue
				}
				return pgerror.New(pgerror.CodeDuplicateColumn, "column %q of relation %q already exists", cd.GetColname(), t.Name)
			}
			checks := len(next.Checks)
			col, isPK, err := s.columnDef(ctx, next, cd)
			if err != nil {
				return err
			}
			if isPK {
				return pgerror.Unsupported("adding a PRIMARY KEY column")
			}
			next.Columns = append(next.Columns, *col)
			if len(next.Checks) > checks {
				// The column's CHECK, validated as a table's: a subquery
				// in it crashed the session checking the rows.
				if err := s.checkChecks(ctx, next, checks); err != nil {
					return err
				}
			}
			if err := checkColumnCount(len(next.Columns)); err != nil {
				return err
			}
			if col.Default != "" {
				rows.backfill = append(rows.backfill, len(next.Columns)-1)
			}
			if col.NotNull {
				rows.notNull = append(rows.notNull, col.ID)
			}
		case pg.AlterTableType_AT_DropColumn:
			i := next.ColumnIndex(cmd.GetName())
			if i < 0 {
				if cmd.GetMissingOk() {
					s.notice("NOTICE", "42703", "column %q of relation %q does not exist, skipping", cmd.GetName(), t.Name)
					continue
				}
				return pgerror.New(pgerror.CodeUndefinedColumn, "column %q of relation %q does not exist", cmd.GetName(), t.Name)
			}
			if next.IsKey(i) {
				return pgerror.Unsupported("dropping a primary key column")
			}
			if err := s.dropColumnReferences(ctx, snap, next, next.Columns[i].ID, cmd.GetBehavior() == pg.DropBehavior_DROP_CASCADE); err != nil {
				return err
			}
			// As in PostgreSQL, indexes on the column go with it.
			id := next.Columns[i].ID
			for _, ix := range next.Indexes {
				uses := false
				for _, c := range ix.Columns {
					uses = uses || c.ID == id
				}
				for _, c := range ix.Include {
					uses = uses || c == id
				}
				uses = uses || ix.Predicate != "" && exprNamesColumn(ix.Predicate, cmd.GetName())
				if uses {
					dropIndexes = append(dropIndexes, ix.Name)
				}
			}
			// So do the CHECK constraints that read it.
			next.Checks = slices.DeleteFunc(next.Checks, func(ck catalog.Check) bool { return exprNamesColumn(ck.Expr, cmd.GetName()) })
			next.Columns = append(next.Columns[:i], next.Columns[i+1:]...)
			for k := range next.Key {
				if next.Key[k].Column > i {
					next.Key[k].Column--
				}
			}
		case pg.AlterTableType_AT_SetNotNull, pg.AlterTableType_AT_DropNotNull:
			i := next.ColumnIndex(cmd.GetName())
			if i < 0 {
				return pgerror.New(pgerror.CodeUndefinedColumn, "column %q of relation %q does not exist", cmd.GetName(), t.Name)
			}
			if cmd.GetSubtype() == pg.AlterTableType_AT_DropNotNull {
				if next.IsKey(i) {
					return pgerror.New(pgerror.CodeInvalidTableDefinition, "column %q is in a primary key", cmd.GetName())
				}
				next.Columns[i].NotNull = false
			} else if !next.Columns[i].NotNull {
				next.Columns[i].NotNull = true
				rows.notNull = append(rows.notNull, next.Columns[i].ID)
			}
		case pg.AlterTableType_AT_ColumnDefault:
			i := next.ColumnIndex(cmd.GetName())
			if i < 0 {
				return pgerror.New(pgerror.CodeUndefinedColumn, "column %q of relation %q does not exist", cmd.GetName(), t.Name)
			}
			next.Columns[i].Default = ""
			if d := cmd.GetDef(); d != nil {
				if next.Columns[i].Default, err = deparseExpr(d); err != nil {
					return err
				}
				if err := s.checkDefault(&next.Columns[i]); err != nil {
					return err
				}
			}
		case pg.AlterTableType_AT_AddConstraint:
			c := cmd.GetDef().GetConstraint()
			switch c.GetContype() {
			case pg.ConstrType_CONSTR_CHECK:
				expr, err := deparseExpr(c.GetRawExpr())
				if err != nil {
					return err
				}
				name := c.GetConname()
				if name == "" {
					name = checkName(t.Name, c.GetRawExpr(), next.Checks)
				}
				next.Checks = append(next.Checks, catalog.Check{Name: name, Expr: expr, NotValid: c.GetSkipValidation()})
				if err := s.checkChecks(ctx, next, len(next.Checks)-1); err != nil {
					return err
				}
			case pg.ConstrType_CONSTR_PRIMARY:
				if !t.RowID {
					return pgerror.New(pgerror.CodeInvalidTableDefinition, "multiple primary keys for table %q are not allowed", t.Name)
				}
				if err := refuseDeferrableKey(c); err != nil {
					return err
				}
				if name := c.GetIndexname(); name != "" {
					// It was accepted and changed nothing: the table kept
					// its hidden row id and the index stayed an index.
					ix, ok := next.Index(name)
					if !ok {
						return pgerror.New(pgerror.CodeUndefinedObject, "index %q does not exist", name)
					}
					ids := make([]uint32, len(ix.Columns))
					for i, c := range ix.Columns {
						ids[i] = c.ID
					}
					return pgerror.Unsupported("ADD PRIMARY KEY USING INDEX").
						WithHint("Drop the index and use ADD PRIMARY KEY (%s) instead.", columnNames(next, ids))
				}
				for _, k := range c.GetKeys() {
					newPK = append(newPK, keySpec{name: k.GetString_().GetSval()})
				}
				if c.GetConname() != "" {
					next.PKName = c.GetConname()
				}
			case pg.ConstrType_CONSTR_UNIQUE:
				req, err := uniqueRequest(c)
				if err != nil {
					return err
				}
				addUnique = append(addUnique, req)
			case pg.ConstrType_CONSTR_FOREIGN:
				fk, err := s.foreignKey(snap, next, fkRequest{c: c}, constraintNames(next))
				if err != nil {
					return err
				}
				fk.NotValid = c.GetSkipValidation()
				next.ForeignKeys = append(next.ForeignKeys, *fk)
				if !fk.NotValid {
					rows.foreignKeys = append(rows.foreignKeys, fk.Name)
				}
			default:
				return pgerror.Unsupported("this ALTER TABLE ADD CONSTRAINT")
			}
		case pg.AlterTableType_AT_DropConstraint:
			if ix, ok := next.Index(cmd.GetName()); ok && ix.Constraint {
				what := fmt.Sprintf("constraint %s on table %s", ix.Name, t.Name)
				if err := s.dropIndexReferences(ctx, snap, t, ix, what, cmd.GetBehavior() == pg.DropBehavior_DROP_CASCADE); err != nil {
					return err
				}
				dropIndexes = append(dropIndexes, ix.Name)
				continue
			}
			found := false
			for i, fk := range next.ForeignKeys {
				if fk.Name == cmd.GetName() {
					next.ForeignKeys = append(next.ForeignKeys[:i], next.ForeignKeys[i+1:]...)
					found = true
					break
				}
			}
			for i, ck := range next.Checks {
				if ck.Name == cmd.GetName() {
					next.Checks = append(next.Checks[:i], next.Checks[i+1:]...)
					found = true
					break
				}
			}
			if !found && !next.RowID && next.PKName == cmd.GetName() {
				// It exists (pg_constraint lists it): not 42704.
				return pgerror.Unsupported("dropping a PRIMARY KEY constraint")
			}
			if !found && !cmd.GetMissingOk() {
				return pgerror.New(pgerror.CodeUndefinedObject, "constraint %q of relation %q does not exist", cmd.GetName(), t.Name)
			}
			if !found {
				s.notice("NOTICE", "00000", "constraint %q of relation %q does not exist, skipping", cmd.GetName(), t.Name)
			}
		case pg.AlterTableType_AT_AlterColumnType:
			ch, err := typeChangeOf(next, cmd)
			if err != nil {
				return err
			}
			retype = append(retype, ch)
		case pg.AlterTableType_AT_ValidateConstraint:
			if err := validateConstraint(next, cmd.GetName(), &rows); err != nil {
				return err
			}
		default:
			return pgerror.Unsupported("ALTER TABLE " + strings.TrimPrefix(cmd.GetSubtype().String(), "AT_"))
		}
	}
	// REFERENCES clauses of columns added.
	for _, req := range s.pendingFKs {
		fk, err := s.foreignKey(snap, next, req, constraintNames(next))
		if err != nil {
			return err
		}
		next.ForeignKeys = append(next.ForeignKeys, *fk)
		rows.foreignKeys = append(rows.foreignKeys, fk.Name)
	}
	// UNIQUE clauses of columns added.
	addUnique = append(addUnique, s.pendingUniques...)
	// CHECK constraints added, of the table or of columns added.
	for _, ck := range next.Checks {
		if !ck.NotValid && !slices.ContainsFunc(t.Checks, func(old catalog.Check) bool { return old.Name == ck.Name }) {
			rows.checks = append(rows.checks, ck.Name)
		}
	}
	if len(retype) > 0 {
		if len(retype) != len(at.GetCmds()) {
			return pgerror.Unsupported("ALTER COLUMN TYPE with other changes in one ALTER TABLE")
		}
		return s.alterColumnTypes(ctx, snap, t, retype)
	}
	if newPK != nil {
		if len(t.Indexes) > 0 || len(addUnique) > 0 {
			return pgerror.Unsupported("ADD PRIMARY KEY on a table with secondary indexes")
		}
		return s.rewriteWithKey(ctx, t, next, newPK)
	}
	// Indexes to drop go first (online), then the rest of the change.
	for _, name := range dropIndexes {
		ix, _ := t.Index(name)
		if err := s.dropIndex(ctx, catalog.IndexRef{Table: t, Index: ix}); err != nil {
			return err
		}
	}
	if len(dropIndexes) > 0 {
		if t, err = s.currentTable(ctx, t); err != nil {
			return err
		}
		kept := next.Indexes[:0]
		for _, ix := range next.Indexes {
			if _, still := t.Index(ix.Name); still {
				kept = append(kept, ix)
			}
		}
		next.Indexes = kept
		next.Version = t.Version
	}
	for _, q := range s.pendingSeqs {
		if err := s.e.cfg.Cache.PutSequence(ctx, q, true); err != nil {
			return err
		}
	}
	if err := s.e.cfg.Cache.AlterTable(ctx, t, next); err != nil {
		return alterErr(err, t)
	}
	if err := s.checkExistingRows(ctx, t, rows); err != nil {
		return err
	}
	for _, req := range addUnique {
		cur, err := s.currentTable(ctx, t)
		if err != nil {
			return err
		}
		snap, err := s.snapshot(ctx)
		if err != nil {
			return err
		}
		if req.name != "" && s.relationExists(snap, cur.Schema, req.name) {
			return pgerror.New(pgerror.CodeDuplicateTable, "relation %q already exists", req.name)
		}
		ix, err := s.newIndex(ctx, snap, cur, req)
		if err != nil {
			return err
		}
		if err := s.addIndex(ctx, cur, ix, 0); err != nil {
			return err
		}
	}
	return nil
}

// currentTable is t as the catalog has it now.
func (s *Session) currentTable(ctx context.Context, t *catalog.Table) (*catalog.Table, error) {
	snap, err := s.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	cur, ok := snap.ByOID[t.OID()]
	if !ok {
		return nil, pgerror.New(pgerror.CodeUndefinedTable, "relation %q does not exist", t.Name)
	}
	return cur, nil
}

func alterErr(err error, t *catalog.Table) error {
	if client.IsCode(err, masterpb.MasterError_CONFLICT) {
		return pgerror.New(pgerror.CodeSerializationFailure, "table %q was changed concurrently", t.Name)
	}
	return err
}

func (r *runner) scanTable(t *catalog.Table) ([]plan.Row, error) {
	sc := plan.NewScan(t)
	return r.scan(sc)
}

// backfill writes the defaults of columns just added into existing rows
// that have none there: a row written meanwhile through a node that knew
// the column keeps its value. The rows' constraints are checked after.
func (s *Session) backfill(ctx context.Context, old *catalog.Table, cols []int) error {
	snap, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	t, ok := snap.Table(s.db, old.Schema, old.Name)
	if !ok {
		return pgerror.New(pgerror.CodeUndefinedTable, "relation %q does not exist", old.Name)
	}
	b, err := s.binder(ctx)
	if err != nil {
		return err
	}
	defaults := make([]plan.Expr, len(cols))
	for i, c := range cols {
		if defaults[i], err = b.DefaultExpr(t, &t.Columns[c]); err != nil {
			return err
		}
	}
	return s.inTxn(ctx, func(tx *client.Txn) error {
		r := &runner{s: s, ctx: ctx, txn: tx, ec: s.evalContext(nil)}
		rows, err := r.scanTable(t)
		if err != nil {
			return err
		}
		tbl, err := s.openTable(ctx, t)
		if err != nil {
			return err
		}
		wb := &writeBatch{tbl: tbl}
		for _, row := range rows {
			next := append(plan.Row(nil), row...)
			changed := false
			for i, c := range cols {
				if !row[c].Null {
					continue
				}
				d, err := defaults[i].Eval(r.ec, row)
				if err != nil {
					return err
				}
				next[c], changed = d, true
			}
			if !changed {
				continue
			}
			if err := r.writeUpdate(wb, t, row, next); err != nil {
				return err
			}
		}
		return r.flush(wb)
	})
}

// rewriteWithKey gives a table without a primary key one: a new table with
// the key is filled from the old one, which is then dropped (PostgreSQL
// rewrites the table for ADD PRIMARY KEY too; pgbench -i relies on it).
func (s *Session) rewriteWithKey(ctx context.Context, old, next *catalog.Table, pk []keySpec) error {
	// Drop the row id column.
	next.Columns = next.Columns[1:]
	next.RowID = false
	if err := setKey(next, pk); err != nil {
		return err
	}
	for i := range next.Columns {
		if next.IsKey(i) {
			next.Columns[i].NotNull = true
		}
	}
	tbl, err := s.openTable(ctx, old)
	if err != nil {
		return err
	}
	part := &masterpb.Partitioning{Kind: masterpb.Partitioning_HASH, NumTablets: tbl.Info().GetPartitioning().GetNumTablets()}
	if !next.Key[0].Hash {
		part = &masterpb.Partitioning{Kind: masterpb.Partitioning_RANGE}
	}
	// The old table's rows are copied, then it is dropped: from here on
	// writers refuse it (a write meanwhile would be lost), and the rows
	// are read once every node acts on that, as for the checks of
	// checkExistingRows.
	cur, err := s.freezeForRewrite(ctx, old)
	if err != nil {
		return err
	}
	thaw := func(err error) error { return s.thaw(ctx, cur, err) }
	if !s.busyBlock && !s.pinned() {
		if err := s.waitNodes(ctx, s.e.cfg.Cache.Latest()); err != nil {
			return thaw(err)
		}
	}
	tmp := cloneTable(next)
	tmp.Name = old.Name + "_shale_rewrite"
	var created *catalog.Table
	for attempt := 1; ; attempt++ {
		if created, err = s.createRewriteTable(ctx, tmp, part); err != nil {
			return thaw(err)
		}
		err = s.copyRows(ctx, created, s.rewriteSource(ctx, cur, next))
		if err == nil {
			break
		}
		_ = s.e.cfg.Cache.DropTable(ctx, created)
		if errors.Is(err, errRewriteAgain) && attempt < rewriteAttempts {
			continue
		}
		// PostgreSQL names the index it could not build, and the table
		// by its own name, not the rewrite's.
		var pe *pgerror.Error
		if errors.As(err, &pe) && pe.Code == pgerror.CodeUniqueViolation {
			err = &pgerror.Error{Code: pe.Code, Table: old.Name, Constraint: next.PKName,
				Message: fmt.Sprintf("could not create unique index %q", next.PKName),
				Detail:  strings.Replace(pe.Detail, "already exists.", "is duplicated.", 1)}
		}
		return thaw(err)
	}
	// The new table takes the old one's name as the old one goes, in one
	// catalog change: a statement finds one or the other.
	renamed := cloneTable(created)
	renamed.Name = old.Name
	if err := s.e.cfg.Cache.ReplaceTable(ctx, created, renamed, cur); err != nil {
		_ = s.e.cfg.Cache.DropTable(context.WithoutCancel(ctx), created)
		return thaw(alterErr(err, created))
	}
	delete(s.tables, old.MasterID)
	return nil
}

// freezeForRewrite marks t as being rewritten (writers refuse it, 55P03)
// and returns it so marked.
func (s *Session) freezeForRewrite(ctx context.Context, t *catalog.Table) (*catalog.Table, error) {
	frozen := cloneTable(t)
	frozen.Rewriting = true
	if err := s.e.cfg.Cache.AlterTable(ctx, t, frozen); err != nil {
		return nil, alterErr(err, t)
	}
	return s.currentTable(ctx, t)
}

// createRewriteTable creates tmp, the table a rewrite fills, and returns
// it as the catalog has it.
func (s *Session) createRewriteTable(ctx context.Context, tmp *catalog.Table, part *masterpb.Partitioning) (*catalog.Table, error) {
	_ = s.e.cfg.Cache.DropTable(ctx, tmp) // a leftover of an interrupted rewrite
	if err := s.e.cfg.Cache.CreateTable(ctx, tmp, part, false); err != nil {
		return nil, err
	}
	snap, err := s.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	created, ok := snap.Table(s.db, tmp.Schema, tmp.Name)
	if !ok {
		return nil, pgerror.New(pgerror.CodeInternalError, "rewritten table vanished")
	}
	return created, nil
}

// errRewriteAgain: the read of a rewrite's old table restarted (at a
// later time, past a value in its clock uncertainty) after some of its
// rows were copied; the copy starts over.
var errRewriteAgain = errors.New("the read of the rows to copy restarted")

// rewriteAttempts bounds how often a rewrite's copy starts over.
const rewriteAttempts = 5

// rewriteSource streams the rows of old, a table without a primary key,
// as rows of next (without the row id), in chunks of rewriteChunk; a NULL
// in a column of next's key fails it (23502). Rows sent are not taken
// back: a read that restarts fails it with errRewriteAgain.
func (s *Session) rewriteSource(ctx context.Context, old, next *catalog.Table) func(send func([]plan.Row) error) error {
	return func(send func([]plan.Row) error) error {
		read := false
		return s.inTxn(ctx, func(tx *client.Txn) error {
			if read {
				return errRewriteAgain
			}
			read = true
			r := &runner{s: s, ctx: ctx, txn: tx, ec: s.evalContext(nil), closers: &closers{}}
			defer r.closers.run()
			rows, err := r.open(plan.NewScan(old))
			if err != nil {
				return err
			}
			chunk := make([]plan.Row, 0, rewriteChunk)
			err = each(rows, func(row plan.Row) error {
				row = row[1:] // without the row id
				for _, k := range next.Key {
					if row[k.Column].Null {
						c := next.Columns[k.Column].Name
						return &pgerror.Error{Code: pgerror.CodeNotNullViolation, Table: old.Name, Column: c,
							Message: fmt.Sprintf("column %q of relation %q contains null values", c, old.Name)}
					}
				}
				if chunk = append(chunk, row); len(chunk) == rewriteChunk {
					err := send(chunk)
					chunk = make([]plan.Row, 0, rewriteChunk)
					return err
				}
				return nil
			})
			if err == nil && len(chunk) > 0 {
				err = send(chunk)
			}
			return err
		})
	}
}

func (s *Session) rename(ctx context.Context, rs *pg.RenameStmt) (string, error) {
	if rs.GetRenameType() == pg.ObjectType_OBJECT_INDEX {
		return "", pgerror.Unsupported("ALTER INDEX ... RENAME")
	}
	snap, err := s.snapshot(ctx)
	if err != nil {
		return "", err
	}
	rv := rs.GetRelation()
	if rs.GetRenameType() == pg.ObjectType_OBJECT_VIEW || rs.GetRelationType() == pg.ObjectType_OBJECT_VIEW {
		return s.renameView(ctx, snap, rs)
	}
	t, ok := s.findTable(snap, rv.GetSchemaname(), rv.GetRelname())
	if !ok {
		if _, isView := s.findView(snap, rv.GetSchemaname(), rv.GetRelname()); isView {
			return s.renameView(ctx, snap, rs) // ALTER TABLE v RENAME ..., as PostgreSQL takes it
		}
		if _, isSeq := lookup(s, rv.GetSchemaname(), func(sc string) (*catalog.Sequence, bool) { return snap.Sequence(s.db, sc, rv.GetRelname()) }); isSeq {
			return "", pgerror.Unsupported("renaming a sequence") // it said 42P01, no such relation
		}
		if rs.GetMissingOk() {
			return "ALTER TABLE", nil
		}
		return "", pgerror.New(pgerror.CodeUndefinedTable, "relation %q does not exist", rv.GetRelname())
	}
	switch rs.GetRenameType() {
	case pg.ObjectType_OBJECT_TABLE:
		if err := s.viewsReading(snap, t, "rename table "+t.Name); err != nil {
			return "", err
		}
	case pg.ObjectType_OBJECT_COLUMN:
		if err := s.viewsReading(snap, t, fmt.Sprintf("rename column %s of table %s", rs.GetSubname(), t.Name)); err != nil {
			return "", err
		}
	}
	next := cloneTable(t)
	switch rs.GetRenameType() {
	case pg.ObjectType_OBJECT_TABLE:
		if _, exists := snap.Table(s.db, t.Schema, rs.GetNewname()); exists {
			return "", pgerror.New(pgerror.CodeDuplicateTable, "relation %q already exists", rs.GetNewname())
		}
		next.Name = rs.GetNewname()
	case pg.ObjectType_OBJECT_COLUMN:
		i := next.ColumnIndex(rs.GetSubname())
		if i < 0 {
			return "", pgerror.New(pgerror.CodeUndefinedColumn, "column %q does not exist", rs.GetSubname())
		}
		if next.ColumnIndex(rs.GetNewname()) >= 0 {
			return "", pgerror.New(pgerror.CodeDuplicateColumn, "column %q of relation %q already exists", rs.GetNewname(), t.Name)
		}
		if err := systemColumnName(rs.GetNewname()); err != nil {
			return "", err
		}
		next.Columns[i].Name = rs.GetNewname()
		// CHECK expressions and index predicates name columns: rename
		// them there too.
		for k := range next.Checks {
			if next.Checks[k].Expr, err = renameColumnInExpr(next.Checks[k].Expr, rs.GetSubname(), rs.GetNewname()); err != nil {
				return "", err
			}
		}
		for k := range next.Indexes {
			if next.Indexes[k].Predicate, err = renameColumnInExpr(next.Indexes[k].Predicate, rs.GetSubname(), rs.GetNewname()); err != nil {
				return "", err
			}
		}
	case pg.ObjectType_OBJECT_TABCONSTRAINT:
		if err := renameConstraint(next, rs.GetSubname(), rs.GetNewname()); err != nil {
			return "", err
		}
	default:
		return "", pgerror.Unsupported("this RENAME")
	}
	if err := s.e.cfg.Cache.AlterTable(ctx, t, next); err != nil {
		return "", alterErr(err, t)
	}
	if err := s.renameOwnedSequences(ctx, snap, t, rs); err != nil {
		return "", err
	}
	return "ALTER TABLE", nil
}

// ybOptions are YugabyteDB's CREATE TABLE extensions, which the PostgreSQL
// grammar does not know: they are cut out of the text before parsing.
type ybOptions struct {
	splitInto int
	splitAt   [][]*pg.Node
	pk        []keySpec
	// indexCols: CREATE INDEX's column list had HASH columns.
	indexCols []idxCol
}

var (
	splitIntoRe = regexp.MustCompile(`(?is)\s+SPLIT\s+INTO\s+(\d+)\s+TABLETS\s*;?\s*$`)
	splitAtRe   = regexp.MustCompile(`(?is)\s+SPLIT\s+AT\s+VALUES\s*\(`)
	pkRe        = regexp.MustCompile(`(?i)PRIMARY\s+KEY\s*\(`)
	// CREATE INDEX: SPLIT INTO may come before a WHERE; the column list
	// follows "ON table [USING method]".
	createIndexRe = regexp.MustCompile(`(?is)^\s*CREATE\s+(UNIQUE\s+)?INDEX\b`)
	indexSplitRe  = regexp.MustCompile(`(?is)\s+SPLIT\s+INTO\s+(\d+)\s+TABLETS\b`)
	indexOnRe     = regexp.MustCompile(`(?is)\bON\s+(?:ONLY\s+)?(?:"[^"]*"|[\w$]+)(?:\s*\.\s*(?:"[^"]*"|[\w$]+))?\s*(?:USING\s+\w+\s*)?\(`)
	hashWordRe    = regexp.MustCompile(`(?i)\bHASH\b`)
)

// ybIndexExtensions rewrites YSQL's CREATE INDEX syntax (HASH columns,
// SPLIT INTO) into PostgreSQL's.
func ybIndexExtensions(sql string) (string, *ybOptions, error) {
	var opts *ybOptions
	if m := indexSplitRe.FindStringSubmatchIndex(sql); m != nil {
		n, err := strconv.Atoi(sql[m[2]:m[3]])
		if err != nil || n < 1 || n > 0xFFFF {
			return "", nil, pgerror.New(pgerror.CodeInvalidParameterValue, "invalid number of tablets %q", sql[m[2]:m[3]])
		}
		opts = &ybOptions{splitInto: n}
		sql = sql[:m[0]] + sql[m[1]:]
	}
	if loc := indexOnRe.FindStringIndex(sql); loc != nil {
		body, end, ok := balanced(sql, loc[1]-1)
		if ok && hashWordRe.MatchString(body) {
			specs, names, err := parseKeySpec(body)
			if err != nil {
				return "", nil, err
			}
			if opts == nil {
				opts = &ybOptions{}
			}
			for _, k := range specs {
				opts.indexCols = append(opts.indexCols, idxCol{name: k.name, hash: k.hash, desc: k.desc, set: k.set})
			}
			sql = sql[:loc[1]] + strings.Join(names, ", ") + sql[end:]
		}
	}
	return sql, opts, nil
}

// ybExtensions rewrites a CREATE TABLE using YSQL's syntax into PostgreSQL
// syntax and returns the options it removed.
func ybExtensions(sql string) (string, *ybOptions, error) {
	if !strings.Contains(strings.ToUpper(sql), "CREATE") {
		return sql, nil, nil
	}
	if createIndexRe.MatchString(sql) {
		return ybIndexExtensions(sql)
	}
	var opts *ybOptions
	if m := splitIntoRe.FindStringSubmatchIndex(sql); m != nil {
		n, err := strconv.Atoi(sql[m[2]:m[3]])
		if err != nil || n < 1 || n > 0xFFFF {
			return "", nil, pgerror.New(pgerror.CodeInvalidParameterValue, "invalid number of tablets %q", sql[m[2]:m[3]])
		}
		opts = &ybOptions{splitInto: n}
		sql = sql[:m[0]]
	}
	if loc := splitAtRe.FindStringIndex(sql); loc != nil {
		body, end, ok := balanced(sql, loc[1]-1)
		if !ok || strings.TrimRight(sql[end+1:], "; \t\r\n") != "" {
			return "", nil, pgerror.New(pgerror.CodeSyntaxError, "syntax error at or near \"SPLIT\"")
		}
		rows, err := splitValues(body)
		if err != nil {
			return "", nil, err
		}
		opts = &ybOptions{splitAt: rows}
		sql = sql[:loc[0]]
	}
	if loc := pkRe.FindStringIndex(sql); loc != nil {
		body, end, ok := balanced(sql, loc[1]-1)
		if ok && (strings.Contains(strings.ToUpper(body), "HASH") || strings.Contains(strings.ToUpper(body), "ASC") ||
			strings.Contains(strings.ToUpper(body), "DESC") || strings.Contains(body, "(")) {
			pk, names, err := parseKeySpec(body)
			if err != nil {
				return "", nil, err
			}
			if opts == nil {
				opts = &ybOptions{}
			}
			opts.pk = pk
			sql = sql[:loc[1]] + strings.Join(names, ", ") + sql[end:]
		}
	}
	return sql, opts, nil
}

// splitValues parses the rows of SPLIT AT VALUES ((v, ...), ...) (body is
// the text inside the outer parentheses).
func splitValues(body string) ([][]*pg.Node, error) {
	raw, err := parse.One("VALUES " + body)
	if err != nil {
		return nil, err
	}
	var rows [][]*pg.Node
	for _, l := range raw.GetStmt().GetSelectStmt().GetValuesLists() {
		rows = append(rows, l.GetList().GetItems())
	}
	return rows, nil
}

// balanced returns the text inside the parenthesis opening at open and the
// index of its closing parenthesis.
func balanced(s string, open int) (string, int, bool) {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return s[open+1 : i], i, true
			}
		}
	}
	return "", 0, false
}

// parseKeySpec parses "(a, b) HASH, c ASC" / "a HASH, b DESC".
func parseKeySpec(body string) ([]keySpec, []string, error) {
	var specs []keySpec
	var names []string
	rest := strings.TrimSpace(body)
	for rest != "" {
		var cols []string
		if rest[0] == '(' {
			inner, end, ok := balanced(rest, 0)
			if !ok {
				return nil, nil, pgerror.New(pgerror.CodeSyntaxError, "syntax error in PRIMARY KEY")
			}
			for _, c := range strings.Split(inner, ",") {
				cols = append(cols, unquoteIdent(strings.TrimSpace(c)))
			}
			rest = strings.TrimSpace(rest[end+1:])
		} else {
			end := strings.IndexAny(rest, " \t\n,")
			if end < 0 {
				end = len(rest)
			}
			cols = []string{unquoteIdent(rest[:end])}
			rest = strings.TrimSpace(rest[end:])
		}
		word := ""
		if rest != "" && rest[0] != ',' {
			end := strings.IndexAny(rest, " \t\n,")
			if end < 0 {
				end = len(rest)
			}
			word, rest = strings.ToUpper(rest[:end]), strings.TrimSpace(rest[end:])
		}
		for _, c := range cols {
			ks := keySpec{name: c, set: word != ""}
			switch word {
			case "HASH":
				ks.hash = true
			case "DESC":
				ks.desc = true
			case "ASC", "":
			default:
				return nil, nil, pgerror.New(pgerror.CodeSyntaxError, "syntax error at or near %q", word)
			}
			specs = append(specs, ks)
			names = append(names, quoteIdent(c))
		}
		rest = strings.TrimSpace(strings.TrimPrefix(rest, ","))
	}
	// An explicit ASC/DESC on the first column makes the table range
	// partitioned: mark every column as given.
	for i := range specs {
		if specs[0].set {
			specs[i].set = true
		}
	}
	return specs, names, nil
}

func unquoteIdent(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return strings.ReplaceAll(s[1:len(s)-1], `""`, `"`)
	}
	return strings.ToLower(s)
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

var _ = types.NullDatum

// A rewrite copies chunks of rewriteChunk rows, rewriteWorkers at a time
// (one after another, pgbench -i's ADD PRIMARY KEY of a million rows took
// seven minutes waiting on round trips).
const (
	rewriteChunk   = 4000
	rewriteWorkers = 4
)

// copyRows fills t, a rewrite's new table that nobody else sees yet, with
// the chunks of rows produce sends, some at once; see bulkFill. Duplicate
// keys fail it (and stop the other chunks).
func (s *Session) copyRows(ctx context.Context, t *catalog.Table, produce func(send func([]plan.Row) error) error) error {
	if _, err := s.openTable(ctx, t); err != nil { // the workers only read the session's table cache
		return err
	}
	fill := &bulkFill{s: s, keys: map[string]struct{}{}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	chunks := make(chan []plan.Row)
	errs := make(chan error, rewriteWorkers)
	for range rewriteWorkers {
		go func() {
			var err error
			for c := range chunks {
				if err == nil {
					if err = fill.chunk(ctx, t, c); err != nil {
						cancel()
					}
				}
			}
			errs <- err
		}()
	}
	perr := produce(func(chunk []plan.Row) error {
		select {
		case chunks <- chunk:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	close(chunks)
	var first error
	for range rewriteWorkers {
		if err := <-errs; err != nil && (first == nil || errors.Is(first, context.Canceled)) {
			first = err
		}
	}
	if first == nil || errors.Is(first, context.Canceled) && perr != nil && !errors.Is(perr, context.Canceled) {
		first = perr // the workers' error first (a duplicate key stops the reading)
	}
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// bulkFill writes a rewrite's new table (which has no secondary indexes:
// ADD PRIMARY KEY refuses tables with them) in plain per-tablet batches of
// upserts, not transactions: the table is seen by nobody until the rewrite
// renames it, and a failed rewrite drops it, so a chunk needs no atomicity
// across tablets, and a transaction would write every row twice (its
// intents, then their apply) and leave a long apply behind. Duplicate keys
// are found here, by key, so the writes need no existence check at the
// tablets and a batch whose outcome is unknown can simply be sent again.
type bulkFill struct {
	s    *Session
	mu   sync.Mutex
	keys map[string]struct{}
}

// bulkAttempts bounds how often one chunk is sent after ambiguous failures.
const bulkAttempts = 5

func (b *bulkFill) chunk(ctx context.Context, t *catalog.Table, rows []plan.Row) error {
	tbl, err := b.s.openTable(ctx, t)
	if err != nil {
		return err
	}
	ops := make([]client.Op, len(rows))
	keys := make([][]byte, len(rows))
	for i, row := range rows {
		sr, err := storageRow(t, row, false)
		if err != nil {
			return err
		}
		if keys[i], err = tbl.RowKey(sr); err != nil {
			return err
		}
		ops[i] = client.Op{Kind: client.OpPut, Row: sr}
	}
	b.mu.Lock()
	for i, k := range keys {
		if _, dup := b.keys[string(k)]; dup {
			b.mu.Unlock()
			return uniqueViolation(t, b.s, rows[i])
		}
		b.keys[string(k)] = struct{}{}
	}
	b.mu.Unlock()
	for attempt := 1; ; attempt++ {
		err = tbl.Apply(ctx, ops)
		if err == nil || !client.IsAmbiguous(err) || attempt == bulkAttempts || ctx.Err() != nil {
			return err
		}
	}
}
