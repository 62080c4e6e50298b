package exec

import (
	"fmt"
	"strings"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Foreign keys at run time. Every row change a statement makes to a table
// passes through indexWrites, which hands it to the table's fkWriter:
//
//   - as a child: a new or changed row whose key columns are all non-NULL
//     (MATCH SIMPLE) needs its parent row; the distinct keys are collected
//     and, once the statement's writes are flushed, the parent rows are
//     locked FOR KEY SHARE, as PostgreSQL does, and read, many at once: by
//     primary key, or through the parent's unique index (whose entry is
//     then the row locked). The lock keeps the parent from being deleted
//     or its key changed until the transaction ends, and lets others
//     update its other columns meanwhile: FOR SHARE made two transactions
//     that each inserted a child and then updated the parent (an order's
//     line, then its total) deadlock.
//   - as a parent: a deleted row, or one whose referenced columns changed,
//     has its referencing rows looked for after the statement's writes
//     (which lock the parent row) are flushed, reading the newest data
//     (client.Txn.ReadLatest), so a child committed since the statement's
//     snapshot is found; then NO ACTION / RESTRICT fail, CASCADE deletes
//     or updates them, SET NULL / SET DEFAULT update them. Those are
//     internal DELETE and UPDATE statements on the child, planned as any
//     (an index on the child's key columns serves them), run in the same
//     transaction, with foreign keys of their own in turn.

// fkWriter is a statement's foreign-key work on one table.
type fkWriter struct {
	checks  []*fkCheck  // the table's foreign keys
	actions []*fkAction // the foreign keys referencing the table
}

// fkCheck is the parents a statement's rows of a child table need.
type fkCheck struct {
	fk            *catalog.ForeignKey
	child, parent *catalog.Table
	cols, refCols []int
	deferred      bool // checked at COMMIT (fkdefer.go)
	// pending are the keys (child's values) to check, distinct.
	pending [][]types.Datum
	seen    map[string]bool
}

// fkAction is what a statement's changes to a parent do to the rows that
// reference it through one foreign key.
type fkAction struct {
	ref           catalog.FKRef
	parent        *catalog.Table
	cols, refCols []int
	pending       []fkChange
	deferred      bool // NO ACTION checked at COMMIT (fkdefer.go)
}

// fkChange is a referenced key deleted (next nil) or changed.
type fkChange struct{ old, next []types.Datum }

func newFKCheck(child, parent *catalog.Table, fk *catalog.ForeignKey) *fkCheck {
	return &fkCheck{fk: fk, child: child, parent: parent, cols: child.ColumnIndexes(fk.Columns),
		refCols: parent.ColumnIndexes(fk.RefColumns), seen: map[string]bool{}}
}

// fkPending bounds the keys a statement holds before it checks them.
const fkPending = 4 * maxBatch

// newFKWriter returns t's foreign-key work, nil when it has none.
func (r *runner) newFKWriter(t *catalog.Table) (*fkWriter, error) {
	if r.skipFKs {
		return nil, nil
	}
	snap, err := r.s.snapshot(r.ctx)
	if err != nil {
		return nil, err
	}
	refs := snap.ReferencedBy(t)
	if len(t.ForeignKeys) == 0 && len(refs) == 0 {
		return nil, nil
	}
	w := &fkWriter{}
	for i := range t.ForeignKeys {
		fk := &t.ForeignKeys[i]
		parent, ok := fkParentOf(snap, t, fk)
		if !ok {
			return nil, pgerror.New(pgerror.CodeUndefinedTable, "relation referenced by foreign key constraint %q does not exist", fk.Name)
		}
		c := newFKCheck(t, parent, fk)
		c.deferred = r.s.fkDeferredNow(fk)
		w.checks = append(w.checks, c)
	}
	for _, ref := range refs {
		w.actions = append(w.actions, &fkAction{ref: ref, parent: t, cols: ref.Child.ColumnIndexes(ref.FK.Columns),
			refCols: t.ColumnIndexes(ref.FK.RefColumns), deferred: r.s.fkDeferredNow(ref.FK)})
	}
	return w, nil
}

// tableHasFKs reports whether writes to t have foreign-key work: t has
// foreign keys or is referenced by one.
func tableHasFKs(snap *catalog.Snapshot, t *catalog.Table) bool {
	return len(t.ForeignKeys) > 0 || len(snap.ReferencedBy(t)) > 0
}

// fkColumnsWritten reports whether writing the columns cols of t can
// change a foreign key's columns on either side.
func fkColumnsWritten(snap *catalog.Snapshot, t *catalog.Table, cols []int) bool {
	touched := map[uint32]bool{}
	for _, fk := range t.ForeignKeys {
		for _, id := range fk.Columns {
			touched[id] = true
		}
	}
	for _, ref := range snap.ReferencedBy(t) {
		for _, id := range ref.FK.RefColumns {
			touched[id] = true
		}
	}
	for _, c := range cols {
		if touched[t.Columns[c].ID] {
			return true
		}
	}
	return false
}

// values picks cols of row; ok is false when one is NULL (MATCH SIMPLE:
// such a row references nothing).
func values(row plan.Row, cols []int) (vals []types.Datum, ok bool) {
	vals = make([]types.Datum, len(cols))
	for i, c := range cols {
		if row[c].Null {
			return nil, false
		}
		vals[i] = row[c]
	}
	return vals, true
}

func sameKeyValues(t *catalog.Table, cols []int, a, b []types.Datum) bool {
	for i, c := range cols {
		if !sameDatum(a[i], b[i], t.Columns[c].Type) {
			return false
		}
	}
	return true
}

// fkRowChange notes what a row going from old to next (nil: none) of tw's
// table needs checked or done; flushTable does it.
func (r *runner) fkRowChange(tw *tableWriter, old, next plan.Row) error {
	w := tw.fk
	n := 0
	for _, c := range w.checks {
		if next == nil {
			continue
		}
		if old != nil {
			was, ok := values(old, c.cols)
			if now, _ := values(next, c.cols); ok && now != nil && sameKeyValues(c.child, c.cols, was, now) {
				continue
			}
		}
		if c.deferred {
			if vals, ok := values(next, c.cols); ok {
				key, err := storageRow(c.child, next, true)
				if err != nil {
					return err
				}
				r.s.deferChild(c, vals, key)
			}
			continue
		}
		c.add(next)
		n += len(c.pending)
	}
	if n >= fkPending {
		// Many child keys: check them now. The parents' actions wait for
		// the statement's end (NO ACTION looks at its whole effect).
		if err := r.flushWrites(tw); err != nil {
			return err
		}
		for _, c := range w.checks {
			if err := r.checkParents(c); err != nil {
				return err
			}
		}
	}
	for _, a := range w.actions {
		if old == nil {
			continue
		}
		was, ok := values(old, a.refCols)
		if !ok {
			continue
		}
		ch := fkChange{old: was}
		if next != nil {
			ch.next = pick(next, a.refCols)
			if sameKeyValues(a.parent, a.refCols, was, ch.next) {
				continue
			}
		}
		a.pending = append(a.pending, ch)
	}
	return nil
}

// add notes the key of a child row to check, unless it has a NULL.
func (c *fkCheck) add(row plan.Row) {
	vals, ok := values(row, c.cols)
	if !ok {
		return
	}
	k := rowKey(vals, c.types())
	if !c.seen[k] {
		c.seen[k] = true
		c.pending = append(c.pending, vals)
	}
}

func (c *fkCheck) types() []types.T {
	ts := make([]types.T, len(c.cols))
	for i, col := range c.cols {
		ts[i] = c.child.Columns[col].Type
	}
	return ts
}

// fkFlush does the pending foreign-key work of tw's table, whose writes
// are flushed.
func (r *runner) fkFlush(tw *tableWriter) error {
	if tw.fk == nil {
		return nil
	}
	if r.txn == nil {
		return errNeedsTxn // the fast path is not for such tables
	}
	for _, c := range tw.fk.checks {
		if err := r.checkParents(c); err != nil {
			return err
		}
	}
	for _, a := range tw.fk.actions {
		if err := r.referencingRows(a); err != nil {
			return err
		}
	}
	return nil
}

// checkParents locks and reads the parent rows of c's pending keys and
// fails with 23503 for the first one missing.
func (r *runner) checkParents(c *fkCheck) error {
	for len(c.pending) > 0 {
		n := min(len(c.pending), lockBatch)
		batch := c.pending[:n]
		c.pending = c.pending[n:]
		missing, err := r.missingParents(c, batch)
		if err != nil {
			return err
		}
		if missing != nil {
			return r.s.fkViolation(c, missing)
		}
	}
	c.seen = map[string]bool{}
	return nil
}

// missingParents returns the first of keys without a parent row, nil if
// each has one; the parent rows found stay locked FOR SHARE.
func (r *runner) missingParents(c *fkCheck, keys [][]types.Datum) ([]types.Datum, error) {
	tbl, lookup, err := r.parentLookup(c)
	if err != nil {
		return nil, err
	}
	var rows []client.Row
	var asked [][]types.Datum
	for _, vals := range keys {
		prow := nulls(len(c.parent.Columns))
		ok := true
		for i, col := range c.refCols {
			pt, ct := c.parent.Columns[col].Type, c.child.Columns[c.cols[i]].Type
			d, err := types.Coerce(vals[i], ct, pt, types.CastExplicit)
			if err != nil {
				ok = false // a value the parent's type cannot hold has no parent
				break
			}
			prow[col] = d
		}
		if !ok {
			return vals, nil
		}
		key, err := lookup(prow)
		if err != nil {
			return nil, err
		}
		rows, asked = append(rows, key), append(asked, vals)
	}
	// Rows the transaction wrote are locked already (pgbench's history
	// row references the account, teller and branch it just updated).
	var lock []client.Row
	for _, k := range rows {
		wrote, err := r.txn.Wrote(tbl, k)
		if err != nil {
			return nil, err
		}
		if !wrote {
			lock = append(lock, k)
		}
	}
	if len(lock) > 0 {
		if _, err := r.txn.Lock(r.ctx, tbl, lock, client.ForKeyShare, client.WaitOnConflict); err != nil {
			return nil, err
		}
	}
	_, found, err := r.txn.GetLocked(r.ctx, tbl, rows)
	if err != nil {
		return nil, err
	}
	for i, f := range found {
		if !f {
			return asked[i], nil
		}
	}
	return nil, nil
}

// parentLookup returns the storage table that holds c's parent keys and
// how to make the row key of a parent row there: the parent itself when
// the referenced columns are its primary key, else its unique index on
// them.
func (r *runner) parentLookup(c *fkCheck) (*client.Table, func(plan.Row) (client.Row, error), error) {
	ids := make([]uint32, len(c.refCols))
	for i, col := range c.refCols {
		ids[i] = c.parent.Columns[col].ID
	}
	if ix := fkUniqueIndex(c.parent, ids); ix != nil && !primaryKeyIs(c.parent, ids) {
		itbl, err := r.s.openIndex(r.ctx, c.parent, ix)
		if err != nil {
			return nil, nil, err
		}
		base, err := r.s.openTable(r.ctx, c.parent)
		if err != nil {
			return nil, nil, err
		}
		w := &indexWriter{ix: ix, layout: c.parent.Layout(ix), base: base, b: writeBatch{tbl: itbl}}
		return itbl, func(row plan.Row) (client.Row, error) {
			key, _, err := indexEntry(c.parent, w, row)
			return key, err
		}, nil
	}
	tbl, err := r.s.openTable(r.ctx, c.parent)
	if err != nil {
		return nil, nil, err
	}
	return tbl, func(row plan.Row) (client.Row, error) { return storageRow(c.parent, row, true) }, nil
}

// fkViolation is 23503 for a child key without a parent row.
func (s *Session) fkViolation(c *fkCheck, vals []types.Datum) error {
	return &pgerror.Error{Code: pgerror.CodeForeignKeyViolation, Table: c.child.Name, Constraint: c.fk.Name,
		Message: fmt.Sprintf("insert or update on table %q violates foreign key constraint %q", c.child.Name, c.fk.Name),
		Detail:  fmt.Sprintf("Key %s is not present in table %q.", s.formatKey(c.child, c.cols, vals), c.parent.Name)}
}

// formatKey is "(a, b)=(1, x)" as PostgreSQL's constraint errors show a
// key.
func (s *Session) formatKey(t *catalog.Table, cols []int, vals []types.Datum) string {
	names, shown := make([]string, len(cols)), make([]string, len(cols))
	for i, c := range cols {
		names[i] = t.Columns[c].Name
		shown[i] = s.formatDatum(vals[i], t.Columns[c].Type)
	}
	return "(" + strings.Join(names, ", ") + ")=(" + strings.Join(shown, ", ") + ")"
}

// referencingRows applies a's action to the rows referencing the parent
// keys deleted or changed.
func (r *runner) referencingRows(a *fkAction) error {
	pending := a.pending
	a.pending = nil
	// Without an index on the child's key column each key's statement
	// would read the whole child: one statement reads it for many keys.
	many := len(a.cols) == 1 && !fkIndexed(a.ref.Child, a.cols[0])
	batches := map[string][]fkChange{}
	var order []string
	for _, ch := range pending {
		action := a.ref.FK.OnDelete
		if ch.next != nil {
			action = a.ref.FK.OnUpdate
		}
		if action == catalog.FKNoAction && a.deferred {
			r.s.deferParent(a, ch.old)
			continue
		}
		if many && !(action == catalog.FKCascade && ch.next != nil) {
			kind := actionKind(action)
			if batches[kind] == nil {
				order = append(order, kind)
			}
			batches[kind] = append(batches[kind], ch)
			continue
		}
		if err := r.fkAct(a, action, ch); err != nil {
			return err
		}
	}
	for _, kind := range order {
		for chs := batches[kind]; len(chs) > 0; {
			n := min(len(chs), lockBatch)
			if err := r.fkActMany(a, kind, chs[:n]); err != nil {
				return err
			}
			chs = chs[n:]
		}
	}
	return nil
}

// actionKind names the internal statement of an action that needs no new
// key: "check" for NO ACTION and RESTRICT, else the action's letter.
func actionKind(action string) string {
	if action == catalog.FKNoAction || action == catalog.FKRestrict {
		return "check"
	}
	return action
}

// fkIndexed reports whether rows of t with a value of column col are
// found without reading all of t: col leads its primary key or a readable
// full index (alone among the hash columns).
func fkIndexed(t *catalog.Table, col int) bool {
	if !t.RowID && t.Key[0].Column == col && t.HashKeyCount() <= 1 {
		return true
	}
	id := t.Columns[col].ID
	for i := range t.Indexes {
		ix := &t.Indexes[i]
		hashes := 0
		for _, c := range ix.Columns {
			if c.Hash {
				hashes++
			}
		}
		if ix.Readable() && ix.Predicate == "" && ix.Columns[0].ID == id && hashes <= 1 {
			return true
		}
	}
	return false
}

// fkActMany runs one action for many changed parent keys of a one-column
// foreign key at once (WHERE col = ANY($1)).
func (r *runner) fkActMany(a *fkAction, kind string, chs []fkChange) error {
	var keys []types.Datum
	var asked []fkChange
	for _, ch := range chs {
		if k, ok := a.childKey(ch.old); ok {
			keys, asked = append(keys, k[0]), append(asked, ch)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	params := []types.Datum{types.DArray(keys)}
	if kind != "check" {
		if err := r.fkRead(a, kind+"-any", params, nil); err != nil {
			return err
		}
		if kind != catalog.FKSetDefault {
			return nil
		}
	}
	// The keys still referenced (after SET DEFAULT: those the default is).
	var referenced map[string]bool
	if err := r.fkRead(a, "check-any", params, func(rows []plan.Row) {
		referenced = map[string]bool{}
		ts := []types.T{a.ref.Child.Columns[a.cols[0]].Type}
		for _, row := range rows {
			referenced[rowKey(row[:1], ts)] = true
		}
	}); err != nil {
		return err
	}
	ts := []types.T{a.ref.Child.Columns[a.cols[0]].Type}
	for i, ch := range asked {
		if referenced[rowKey(keys[i:i+1], ts)] {
			if err := r.stillReferenced(a, ch); err != nil {
				return err
			}
		}
	}
	return nil
}

// fkAct runs one action for one changed parent key.
func (r *runner) fkAct(a *fkAction, action string, ch fkChange) error {
	child := a.ref.Child
	params, ok := a.childKey(ch.old)
	if !ok {
		return nil // no child value can equal it
	}
	kind := action
	if action == catalog.FKNoAction || action == catalog.FKRestrict {
		kind = "check"
	} else if action == catalog.FKCascade && ch.next != nil {
		kind = "cascade-update"
		for i, c := range a.cols {
			d, err := types.Coerce(ch.next[i], a.parent.Columns[a.refCols[i]].Type, child.Columns[c].Type, types.CastAssignment)
			if err != nil {
				return err
			}
			params = append(params, d)
		}
	}
	if err := r.runFKStatement(a, kind, params, &ch); err != nil {
		return err
	}
	if kind == catalog.FKSetDefault {
		// Rows whose default is the key just removed still reference it
		// (PostgreSQL runs its NO ACTION check after SET DEFAULT).
		return r.runFKStatement(a, "check", params[:len(a.cols)], &ch)
	}
	return nil
}

// parentKeyExists reports whether a row of parent has the key vals in
// refCols (locking it FOR SHARE).
func (r *runner) parentKeyExists(parent *catalog.Table, refCols []int, fk *catalog.ForeignKey, vals []types.Datum) (bool, error) {
	// The parent looked up as if a child of itself held the key.
	self := &fkCheck{fk: fk, child: parent, parent: parent, cols: refCols, refCols: refCols}
	missing, err := r.missingParents(self, [][]types.Datum{vals})
	return missing == nil && err == nil, err
}

// childKey is a parent key as the child's column values; ok is false when
// a child column cannot hold it.
func (a *fkAction) childKey(vals []types.Datum) (key []types.Datum, ok bool) {
	child := a.ref.Child
	key = make([]types.Datum, 0, 2*len(a.cols))
	for i, c := range a.cols {
		d, err := types.Coerce(vals[i], a.parent.Columns[a.refCols[i]].Type, child.Columns[c].Type, types.CastExplicit)
		if err != nil {
			return nil, false
		}
		key = append(key, d)
	}
	return key, true
}

// runFKStatement runs the internal statement of an action, reading the
// newest data; a check that finds a row fails for ch's key.
func (r *runner) runFKStatement(a *fkAction, kind string, params []types.Datum, ch *fkChange) error {
	var found bool
	err := r.fkRead(a, kind, params, func(rows []plan.Row) { found = len(rows) > 0 })
	if err != nil || !found {
		return err
	}
	return r.stillReferenced(a, *ch)
}

// fkRead runs the internal statement kind of a (reading the newest
// data), and hands a query's rows to got.
func (r *runner) fkRead(a *fkAction, kind string, params []types.Datum, got func([]plan.Row)) error {
	st, err := r.fkStatement(a, kind)
	if err != nil {
		return err
	}
	sub := r.sub(r.s.evalContext(params))
	defer sub.closers.run()
	return r.txn.ReadLatest(func() error {
		switch n := st.node.(type) {
		case *plan.Delete:
			_, _, err := sub.delete(n)
			return err
		case *plan.Update:
			_, _, err := sub.update(n)
			return err
		}
		rows, err := sub.rows(st.node)
		if err == nil && got != nil {
			got(rows)
		}
		return err
	})
}

// stillReferenced is the error for a parent key removed while rows
// reference it, unless NO ACTION finds a row with the key again (an
// UPDATE shifting keys, a row deleted and inserted again).
func (r *runner) stillReferenced(a *fkAction, ch fkChange) error {
	if a.ref.FK.OnDelete == catalog.FKNoAction && ch.next == nil || a.ref.FK.OnUpdate == catalog.FKNoAction && ch.next != nil {
		if again, err := r.parentKeyExists(a.parent, a.refCols, a.ref.FK, ch.old); err != nil || again {
			return err
		}
	}
	return r.s.fkStillReferenced(a, ch.old)
}

// fkStillReferenced is 23503 for a parent key deleted or changed while
// rows reference it.
func (s *Session) fkStillReferenced(a *fkAction, old []types.Datum) error {
	fk, child := a.ref.FK, a.ref.Child
	return &pgerror.Error{Code: pgerror.CodeForeignKeyViolation, Table: a.parent.Name, Constraint: fk.Name,
		Message: fmt.Sprintf("update or delete on table %q violates foreign key constraint %q on table %q", a.parent.Name, fk.Name, child.Name),
		Detail:  fmt.Sprintf("Key %s is still referenced from table %q.", s.formatKey(a.parent, a.refCols, old), child.Name)}
}

// fkStatement plans (once per session and catalog version) the internal
// statement of an action on the child: its parameters are the old key, then for a
// cascaded update the new one.
func (r *runner) fkStatement(a *fkAction, kind string) (*Statement, error) {
	snap, err := r.s.snapshot(r.ctx)
	if err != nil {
		return nil, err
	}
	cacheKey := fmt.Sprintf("%d/%d/%s/%s", snap.Version, a.ref.Child.MasterID, a.ref.FK.Name, kind)
	if st, ok := r.s.fkStmts[cacheKey]; ok {
		return st, nil
	}
	child := a.ref.Child
	var where, set []string
	var oids []uint32
	base, many := strings.CutSuffix(kind, "-any")
	for i, c := range a.cols {
		col := &child.Columns[c]
		if many { // one column: WHERE col = ANY($1)
			where = append(where, quoteIdent(col.Name)+" = ANY($1)")
			oids = append(oids, types.ArrayOf(col.Type).OID)
			continue
		}
		where = append(where, fmt.Sprintf("%s = $%d", quoteIdent(col.Name), i+1))
		oids = append(oids, col.Type.OID)
	}
	kind = base
	for i, c := range a.cols {
		col := &child.Columns[c]
		switch kind {
		case "cascade-update":
			set = append(set, fmt.Sprintf("%s = $%d", quoteIdent(col.Name), len(a.cols)+i+1))
			oids = append(oids, col.Type.OID)
		case catalog.FKSetNull:
			set = append(set, quoteIdent(col.Name)+" = NULL")
		case catalog.FKSetDefault:
			set = append(set, quoteIdent(col.Name)+" = DEFAULT")
		}
	}
	name := quoteIdent(child.Schema) + "." + quoteIdent(child.Name)
	cond := strings.Join(where, " AND ")
	var sql string
	switch {
	case kind == "check" && many:
		sql = "SELECT DISTINCT " + quoteIdent(child.Columns[a.cols[0]].Name) + " FROM " + name + " WHERE " + cond
	case kind == "check":
		sql = "SELECT 1 FROM " + name + " WHERE " + cond + " LIMIT 1"
	case kind == catalog.FKCascade:
		sql = "DELETE FROM " + name + " WHERE " + cond
	default:
		sql = "UPDATE " + name + " SET " + strings.Join(set, ", ") + " WHERE " + cond
	}
	st, err := r.s.prepare(r.ctx, sql, oids)
	if err != nil {
		return nil, err
	}
	if r.s.fkStmts == nil || r.s.fkStmtsVersion != snap.Version {
		r.s.fkStmts, r.s.fkStmtsVersion = map[string]*Statement{}, snap.Version
	}
	r.s.fkStmts[cacheKey] = st
	return st, nil
}
