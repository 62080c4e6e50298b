package exec

import (
	"context"
	"fmt"
	"slices"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// rowChecks is what an ALTER TABLE does to the rows the table already has:
// the defaults of new columns to write, then the constraints they must
// pass.
type rowChecks struct {
	backfill    []int    // new columns with a default (indexes into the altered table's columns)
	notNull     []uint32 // ids of columns newly NOT NULL
	checks      []string // CHECK constraints to validate
	foreignKeys []string // foreign keys to validate
}

func (c rowChecks) empty() bool {
	return len(c.backfill)+len(c.notNull)+len(c.checks)+len(c.foreignKeys) == 0
}

// checkExistingRows does to the rows of t, now altered, what the ALTER
// asks (c). A constraint they fail undoes the ALTER, as PostgreSQL's
// rolled-back transaction leaves nothing of it.
//
// Writers enforce a constraint from the catalog version that added it on.
// The rows are read once every node acts on that version, so that a row
// written through a node that had not heard of it yet is read and checked
// too. A block that has run statements, or a batch's implicit
// transaction, holds an older version itself and cannot wait for it
// (migrations that create tables and then add constraints in one block):
// there a constraint is enforced from when each node hears of it.
func (s *Session) checkExistingRows(ctx context.Context, t *catalog.Table, c rowChecks) error {
	if c.empty() {
		return nil
	}
	cur, err := s.currentTable(ctx, t)
	if err != nil {
		return err
	}
	if err := s.waitAndCheck(ctx, cur, c); err != nil {
		return s.undoAlter(ctx, t, cur, err)
	}
	return nil
}

func (s *Session) waitAndCheck(ctx context.Context, cur *catalog.Table, c rowChecks) error {
	if !s.busyBlock && !s.pinned() {
		if err := s.waitNodes(ctx, s.e.cfg.Cache.Latest()); err != nil {
			return err
		}
	}
	if len(c.backfill) > 0 {
		if err := s.backfill(ctx, cur, c.backfill); err != nil {
			return err
		}
	}
	for _, id := range c.notNull {
		col := &cur.Columns[cur.ColumnByID(id)]
		found, err := s.anyRow(ctx, cur, quoteIdent(col.Name)+" IS NULL")
		if err != nil {
			return err
		}
		if found {
			return &pgerror.Error{Code: pgerror.CodeNotNullViolation, Table: cur.Name, Column: col.Name,
				Message: fmt.Sprintf("column %q of relation %q contains null values", col.Name, cur.Name)}
		}
	}
	for _, name := range c.checks {
		i := slices.IndexFunc(cur.Checks, func(ck catalog.Check) bool { return ck.Name == name })
		if i < 0 {
			continue // dropped meanwhile
		}
		// A row fails a CHECK when its expression is false, not null.
		found, err := s.anyRow(ctx, cur, "NOT ("+cur.Checks[i].Expr+")")
		if err != nil {
			return err
		}
		if found {
			return &pgerror.Error{Code: pgerror.CodeCheckViolation, Table: cur.Name, Constraint: name,
				Message: fmt.Sprintf("check constraint %q of relation %q is violated by some row", name, cur.Name)}
		}
	}
	if len(c.foreignKeys) > 0 {
		return s.checkForeignKeyRows(ctx, cur, c.foreignKeys)
	}
	return nil
}

// anyRow reports whether a row of t meets cond (SQL over t's columns),
// read at a new snapshot: the filter runs at the tablets, and the scan
// ends at the first row found.
func (s *Session) anyRow(ctx context.Context, t *catalog.Table, cond string) (bool, error) {
	st, err := s.prepare(ctx, "SELECT 1 FROM "+quoteIdent(t.Schema)+"."+quoteIdent(t.Name)+" WHERE "+cond+" LIMIT 1", nil)
	if err != nil {
		return false, err
	}
	found := false
	err = s.inTxn(ctx, func(tx *client.Txn) error {
		r := &runner{s: s, ctx: ctx, txn: tx, ec: s.evalContext(nil), closers: &closers{}}
		defer r.closers.run()
		rows, err := r.rows(st.node)
		found = len(rows) > 0
		return err
	})
	return found, err
}

// undoAlter puts t's definition back in place of cur, what the ALTER made
// of it, and drops the sequences the ALTER created for new columns; it
// returns err, the reason. The ids of the columns it added stay used:
// rows may hold values under them.
func (s *Session) undoAlter(ctx context.Context, t, cur *catalog.Table, err error) error {
	ctx = context.WithoutCancel(ctx)
	if uerr := s.putBack(ctx, t, cur); uerr != nil {
		return uerr
	}
	for _, q := range s.pendingSeqs {
		if uerr := s.e.cfg.Cache.DropSequence(ctx, q); uerr != nil {
			return uerr
		}
	}
	return err
}

// putBack replaces latest, a table an ALTER changed, by def's definition,
// keeping latest's column id counter (the ids it handed out stay used:
// rows may hold values under them) and indexes.
func (s *Session) putBack(ctx context.Context, def, latest *catalog.Table) error {
	undo := cloneTable(def)
	undo.NextColID, undo.Indexes = latest.NextColID, latest.Indexes
	return alterErr(s.e.cfg.Cache.AlterTable(context.WithoutCancel(ctx), latest, undo), latest)
}

// thaw ends a rewrite that failed (err): frozen, the table as
// freezeForRewrite marked it, is put back without the mark over what the
// rewrite staged meanwhile.
func (s *Session) thaw(ctx context.Context, frozen *catalog.Table, err error) error {
	latest, lerr := s.currentTable(ctx, frozen)
	if lerr != nil {
		return err
	}
	def := cloneTable(frozen)
	def.Rewriting = false
	if uerr := s.putBack(ctx, def, latest); uerr != nil {
		return uerr
	}
	return err
}

// validateConstraint marks the NOT VALID check or foreign key name of t
// valid, and its rows to be checked (ALTER TABLE VALIDATE CONSTRAINT).
func validateConstraint(t *catalog.Table, name string, c *rowChecks) error {
	for i := range t.Checks {
		if ck := &t.Checks[i]; ck.Name == name {
			if ck.NotValid {
				ck.NotValid = false
				c.checks = append(c.checks, name)
			}
			return nil
		}
	}
	for i := range t.ForeignKeys {
		if fk := &t.ForeignKeys[i]; fk.Name == name {
			if fk.NotValid {
				fk.NotValid = false
				c.foreignKeys = append(c.foreignKeys, name)
			}
			return nil
		}
	}
	if _, isIndex := t.Index(name); isIndex || !t.RowID && t.PKName == name {
		return pgerror.New(pgerror.CodeWrongObjectType, "constraint %q of relation %q is not a foreign key or check constraint", name, t.Name)
	}
	return pgerror.New(pgerror.CodeUndefinedObject, "constraint %q of relation %q does not exist", name, t.Name)
}
