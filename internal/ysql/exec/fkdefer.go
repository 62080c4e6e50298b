package exec

import (
	"context"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Deferred foreign keys: in a transaction block, the checks of a
// DEFERRABLE INITIALLY DEFERRED key (or one SET CONSTRAINTS ... DEFERRED)
// are kept in the session and run at COMMIT, in the block's transaction:
// the child keys that need a parent, and, for NO ACTION, the parent keys
// removed (still referenced at COMMIT and not there again: 23503). Actions
// (CASCADE, SET NULL, SET DEFAULT) and RESTRICT are never deferred, as in
// PostgreSQL. Outside a block a statement is its own transaction, and its
// deferred checks run at its end as the immediate ones do.

// fkDeferred is a block's deferred foreign-key work.
type fkDeferred struct {
	// mode is SET CONSTRAINTS: by constraint name, deferred or not; all
	// (when set) is SET CONSTRAINTS ALL, which names set after override.
	mode map[string]bool
	all  *bool
	// children are the child keys to check; parents the parent keys
	// removed (NO ACTION).
	children []deferredKey
	parents  []deferredKey
	// marks: the lengths of children and parents at each savepoint.
	marks map[string][2]int
}

// deferredKey is a key one foreign key (by its table's id and name) put
// off checking.
type deferredKey struct {
	table uint32
	fk    string
	vals  []types.Datum
	row   client.Row // a child's: its primary key
}

// fkDeferredNow reports whether fk's checks wait for COMMIT.
func (s *Session) fkDeferredNow(fk *catalog.ForeignKey) bool {
	if !s.inBlock || !fk.Deferrable {
		return false
	}
	if d := s.deferred; d != nil {
		if m, ok := d.mode[fk.Name]; ok {
			return m
		}
		if d.all != nil {
			return *d.all
		}
	}
	return fk.Deferred
}

func (s *Session) deferredWork() *fkDeferred {
	if s.deferred == nil {
		s.deferred = &fkDeferred{mode: map[string]bool{}, marks: map[string][2]int{}}
	}
	return s.deferred
}

// deferChild puts off the check of a child row's key.
func (s *Session) deferChild(c *fkCheck, vals []types.Datum, row client.Row) {
	d := s.deferredWork()
	d.children = append(d.children, deferredKey{table: c.child.MasterID, fk: c.fk.Name, vals: vals, row: row})
}

// deferParent puts off the NO ACTION check of a removed parent key.
func (s *Session) deferParent(a *fkAction, old []types.Datum) {
	d := s.deferredWork()
	d.parents = append(d.parents, deferredKey{table: a.ref.Child.MasterID, fk: a.ref.FK.Name, vals: old})
}

// savepointDeferred notes a savepoint; rollbackDeferred forgets what was
// deferred after it.
func (s *Session) savepointDeferred(name string) {
	if d := s.deferred; d != nil {
		d.marks[name] = [2]int{len(d.children), len(d.parents)}
	}
}

func (s *Session) rollbackDeferred(name string) {
	if d := s.deferred; d != nil {
		if m, ok := d.marks[name]; ok {
			d.children, d.parents = d.children[:m[0]], d.parents[:m[1]]
		}
	}
}

// runDeferred runs the deferred checks of the foreign keys that only
// selects (nil: all) in tx, and forgets them.
func (s *Session) runDeferred(ctx context.Context, tx *client.Txn, only func(fk string) bool) error {
	d := s.deferred
	if d == nil || len(d.children)+len(d.parents) == 0 {
		return nil
	}
	if only == nil {
		only = func(string) bool { return true }
	}
	snap, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	r := &runner{s: s, ctx: ctx, txn: tx, ec: s.evalContext(nil), closers: &closers{}}
	defer r.closers.run()
	var keepChildren, keepParents []deferredKey
	for _, k := range d.children {
		if !only(k.fk) {
			keepChildren = append(keepChildren, k)
			continue
		}
		c, ok := deferredCheck(snap, k)
		if !ok {
			continue // the table or constraint is gone
		}
		if still, err := r.stillHolds(c, k); err != nil || !still {
			if err != nil {
				return err
			}
			continue
		}
		if missing, err := r.missingParents(c, [][]types.Datum{k.vals}); err != nil {
			return err
		} else if missing != nil {
			return s.fkViolation(c, missing)
		}
	}
	for _, k := range d.parents {
		if !only(k.fk) {
			keepParents = append(keepParents, k)
			continue
		}
		if err := r.deferredParentCheck(snap, k); err != nil {
			return err
		}
	}
	d.children, d.parents = keepChildren, keepParents
	return nil
}

// stillHolds reports whether the child row of k still exists with the
// key k checks (a row deleted or changed since has nothing, or another
// key, to check).
func (r *runner) stillHolds(c *fkCheck, k deferredKey) (bool, error) {
	tbl, err := r.s.openTable(r.ctx, c.child)
	if err != nil {
		return false, err
	}
	rows, err := r.getRows(c.child, tbl, []client.Row{k.row}, false)
	if err != nil || len(rows) == 0 {
		return false, err
	}
	now, ok := values(rows[0], c.cols)
	return ok && sameKeyValues(c.child, c.cols, now, k.vals), nil
}

// deferredCheck is the check of the foreign key k names.
func deferredCheck(snap *catalog.Snapshot, k deferredKey) (*fkCheck, bool) {
	child, ok := snap.TableByID(k.table)
	if !ok {
		return nil, false
	}
	fk, ok := child.ForeignKey(k.fk)
	if !ok {
		return nil, false
	}
	parent, ok := fkParentOf(snap, child, fk)
	if !ok {
		return nil, false
	}
	return newFKCheck(child, parent, fk), true
}

// deferredParentCheck is NO ACTION at COMMIT for a removed parent key:
// fine if the key is there again, else no row may reference it.
func (r *runner) deferredParentCheck(snap *catalog.Snapshot, k deferredKey) error {
	c, ok := deferredCheck(snap, k)
	if !ok {
		return nil
	}
	if again, err := r.parentKeyExists(c.parent, c.refCols, c.fk, k.vals); err != nil || again {
		return err
	}
	a := &fkAction{ref: catalog.FKRef{Child: c.child, FK: c.fk}, parent: c.parent, cols: c.cols, refCols: c.refCols}
	params, ok := a.childKey(k.vals)
	if !ok {
		return nil
	}
	return r.runFKStatement(a, "check", params, &fkChange{old: k.vals})
}

// setConstraints runs SET CONSTRAINTS {ALL | name, ...} {DEFERRED |
// IMMEDIATE}; IMMEDIATE runs the named keys' deferred checks at once.
func (s *Session) setConstraints(ctx context.Context, cs *pg.ConstraintsSetStmt) error {
	if !s.inBlock {
		s.notice("WARNING", "25P01", "SET CONSTRAINTS can only be used in transaction blocks")
		return nil
	}
	snap, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	d := s.deferredWork()
	deferred := cs.GetDeferred()
	var names []string
	for _, n := range cs.GetConstraints() {
		name := n.GetRangeVar().GetRelname()
		fk, found := s.findForeignKey(snap, name)
		if !found && !s.constraintExists(snap, name) {
			return pgerror.New(pgerror.CodeUndefinedObject, "constraint %q does not exist", name)
		}
		if (!found || !fk.Deferrable) && deferred { // a key or CHECK never is
			return pgerror.New(pgerror.CodeWrongObjectType, "constraint %q is not deferrable", name)
		}
		names = append(names, name)
	}
	var only func(string) bool
	if len(names) == 0 {
		d.all, d.mode = &deferred, map[string]bool{}
	} else {
		for _, n := range names {
			d.mode[n] = deferred
		}
		only = func(fk string) bool {
			for _, n := range names {
				if n == fk {
					return true
				}
			}
			return false
		}
	}
	if deferred {
		return nil
	}
	if err := s.blockTxn(ctx); err != nil {
		return err
	}
	return s.runDeferred(ctx, s.txn, only)
}

// constraintExists reports whether a table of the database has a
// constraint of that name.
func (s *Session) constraintExists(snap *catalog.Snapshot, name string) bool {
	for _, t := range snap.Tables[s.db] {
		if constraintNames(t)[name] {
			return true
		}
	}
	return false
}

// findForeignKey finds a foreign key of the database by name.
func (s *Session) findForeignKey(snap *catalog.Snapshot, name string) (*catalog.ForeignKey, bool) {
	for _, t := range snap.Tables[s.db] {
		if fk, ok := t.ForeignKey(name); ok {
			return fk, true
		}
	}
	return nil, false
}
