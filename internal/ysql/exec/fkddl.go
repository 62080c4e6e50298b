package exec

import (
	"context"
	"slices"
	"strconv"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// fkRequest is a FOREIGN KEY clause of CREATE TABLE or ALTER TABLE, with
// the referencing column of a column constraint.
type fkRequest struct {
	c      *pg.Constraint
	column string // the column of a column constraint ("" at table level)
}

// foreignKey resolves a FOREIGN KEY clause of child (whose table, for a
// CREATE TABLE, does not exist yet): the parent (child itself when it
// names it), the columns on both sides, the actions. A reference to child
// itself before it exists has RefTable 0, set once it is created.
func (s *Session) foreignKey(snap *catalog.Snapshot, child *catalog.Table, req fkRequest, taken map[string]bool) (*catalog.ForeignKey, error) {
	c := req.c
	switch c.GetFkMatchtype() {
	case "f":
		return nil, pgerror.Unsupported("MATCH FULL")
	case "p":
		return nil, pgerror.Unsupported("MATCH PARTIAL")
	}
	if len(c.GetFkDelSetCols()) > 0 {
		return nil, pgerror.Unsupported("SET NULL/SET DEFAULT with a column list")
	}
	parent, err := s.fkParent(snap, child, c.GetPktable())
	if err != nil {
		return nil, err
	}
	fkNames := stringList(c.GetFkAttrs())
	if req.column != "" {
		fkNames = []string{req.column}
	}
	fk := &catalog.ForeignKey{Name: c.GetConname(), OnDelete: referentialAction(c.GetFkDelAction()), OnUpdate: referentialAction(c.GetFkUpdAction()),
		Deferrable: c.GetDeferrable(), Deferred: c.GetInitdeferred()}
	if fk.Columns, err = fkColumnIDs(child, fkNames); err != nil {
		return nil, err
	}
	pkNames := stringList(c.GetPkAttrs())
	if len(pkNames) == 0 {
		if parent.RowID {
			return nil, pgerror.New(pgerror.CodeUndefinedObject, "there is no primary key for referenced table %q", parent.Name)
		}
		for _, k := range parent.Key {
			pkNames = append(pkNames, parent.Columns[k.Column].Name)
		}
	}
	if fk.RefColumns, err = fkColumnIDs(parent, pkNames); err != nil {
		return nil, err
	}
	if len(fk.Columns) != len(fk.RefColumns) {
		return nil, pgerror.New(pgerror.CodeInvalidForeignKey, "number of referencing and referenced columns for foreign key disagree")
	}
	if !uniquelyKeyed(parent, fk.RefColumns) {
		return nil, pgerror.New(pgerror.CodeInvalidForeignKey, "there is no unique constraint matching given keys for referenced table %q", parent.Name)
	}
	if fk.Name == "" {
		fk.Name = fkName(child.Name, fkNames, taken)
	}
	if taken[fk.Name] {
		return nil, pgerror.New(pgerror.CodeDuplicateObject, "constraint %q for relation %q already exists", fk.Name, child.Name)
	}
	for i, id := range fk.Columns {
		ct, pt := child.Columns[child.ColumnByID(id)], parent.Columns[parent.ColumnByID(fk.RefColumns[i])]
		if !fkComparable(ct.Type, pt.Type) {
			return nil, pgerror.New(pgerror.CodeDatatypeMismatch, "foreign key constraint %q cannot be implemented", fk.Name).
				WithDetail("Key columns %q and %q are of incompatible types: %s and %s.", ct.Name, pt.Name, ct.Type, pt.Type)
		}
	}
	if fk.Deferred && !fk.Deferrable {
		return nil, pgerror.New(pgerror.CodeSyntaxError, "constraint declared INITIALLY DEFERRED must be DEFERRABLE")
	}
	fk.RefTable = parent.MasterID
	if parent == child && child.MasterID == 0 {
		fk.RefTable = 0
	}
	taken[fk.Name] = true
	return fk, nil
}

// fkComparable reports whether a referencing column of type ct can be
// compared with the referenced column's pt as PostgreSQL requires: ct
// converts to pt implicitly, or both are in one btree operator family,
// which has the cross-type equality (integers, floats). So an int
// referencing a numeric key is fine, a numeric referencing an int key is
// 42804, as in PostgreSQL (it used to be taken either way round).
func fkComparable(ct, pt types.T) bool {
	if types.CanCast(ct, pt, types.CastImplicit) {
		return true
	}
	f := ct.Family()
	return f == pt.Family() && (f == types.FamInt || f == types.FamFloat)
}

// fkParent finds the referenced table: child itself when it names it.
func (s *Session) fkParent(snap *catalog.Snapshot, child *catalog.Table, rv *pg.RangeVar) (*catalog.Table, error) {
	if rv.GetRelname() == child.Name && (rv.GetSchemaname() == "" || rv.GetSchemaname() == child.Schema) && child.MasterID == 0 {
		return child, nil
	}
	parent, ok := s.findTable(snap, rv.GetSchemaname(), rv.GetRelname())
	if !ok {
		return nil, pgerror.New(pgerror.CodeUndefinedTable, "relation %q does not exist", rv.GetRelname())
	}
	if parent.MasterID == child.MasterID {
		return child, nil // ALTER TABLE: the child's new metadata
	}
	return parent, nil
}

func fkColumnIDs(t *catalog.Table, names []string) ([]uint32, error) {
	var ids []uint32
	for _, n := range names {
		i := t.ColumnIndex(n)
		if i < 0 {
			return nil, pgerror.New(pgerror.CodeUndefinedColumn, "column %q referenced in foreign key constraint does not exist", n)
		}
		ids = append(ids, t.Columns[i].ID)
	}
	return ids, nil
}

// uniquelyKeyed reports whether cols (in any order) are exactly t's
// primary key or a non-partial unique index's key.
func uniquelyKeyed(t *catalog.Table, cols []uint32) bool {
	return primaryKeyIs(t, cols) || fkUniqueIndex(t, cols) != nil
}

// primaryKeyIs reports whether ids (in any order) are t's primary key.
func primaryKeyIs(t *catalog.Table, ids []uint32) bool {
	return !t.RowID && sameIDSet(primaryKeyIDs(t), ids)
}

// primaryKeyIDs are the ids of t's primary-key columns, in key order.
func primaryKeyIDs(t *catalog.Table) []uint32 {
	ids := make([]uint32, len(t.Key))
	for i, k := range t.Key {
		ids[i] = t.Columns[k.Column].ID
	}
	return ids
}

// fkUniqueIndex returns the unique index whose key is exactly cols.
func fkUniqueIndex(t *catalog.Table, cols []uint32) *catalog.Index {
	for i := range t.Indexes {
		ix := &t.Indexes[i]
		if !ix.Unique || ix.Predicate != "" || !ix.Readable() {
			continue
		}
		var key []uint32
		for _, c := range ix.Columns {
			key = append(key, c.ID)
		}
		if sameIDSet(key, cols) {
			return ix
		}
	}
	return nil
}

func sameIDSet(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	in := map[uint32]bool{}
	for _, x := range a {
		in[x] = true
	}
	for _, x := range b {
		if !in[x] {
			return false
		}
	}
	return true
}

// referentialAction maps the grammar's action letter to pg_constraint's (the same
// letters; NO ACTION when none was given).
func referentialAction(a string) string {
	switch a {
	case catalog.FKRestrict, catalog.FKCascade, catalog.FKSetNull, catalog.FKSetDefault:
		return a
	}
	return catalog.FKNoAction
}

// fkName is PostgreSQL's default name of a foreign key: table_col1_col2_fkey,
// then fkey1, fkey2... while taken.
func fkName(table string, cols []string, taken map[string]bool) string {
	joined := strings.Join(cols, "_")
	name := objectName(table, joined, "fkey")
	for i := 1; taken[name]; i++ {
		name = objectName(table, joined, "fkey"+strconv.Itoa(i))
	}
	return name
}

// constraintNames are the names of t's constraints, which a new one must
// not take.
func constraintNames(t *catalog.Table) map[string]bool {
	taken := map[string]bool{}
	if !t.RowID {
		taken[t.PKName] = true
	}
	for _, c := range t.Checks {
		taken[c.Name] = true
	}
	for _, ix := range t.Indexes {
		if ix.Constraint {
			taken[ix.Name] = true
		}
	}
	for _, fk := range t.ForeignKeys {
		taken[fk.Name] = true
	}
	return taken
}

// fixSelfReferences sets the parent of the foreign keys a new table has to
// itself, once it exists and has its id.
func (s *Session) fixSelfReferences(ctx context.Context, t *catalog.Table) error {
	self := false
	for _, fk := range t.ForeignKeys {
		self = self || fk.RefTable == 0
	}
	if !self {
		return nil
	}
	snap, err := s.e.cfg.Cache.Fresh(ctx)
	if err != nil {
		return err
	}
	cur, ok := snap.Table(t.Database, t.Schema, t.Name)
	if !ok {
		return pgerror.New(pgerror.CodeUndefinedTable, "relation %q does not exist", t.Name)
	}
	next := cloneTable(cur)
	for i := range next.ForeignKeys {
		if next.ForeignKeys[i].RefTable == 0 {
			next.ForeignKeys[i].RefTable = cur.MasterID
		}
	}
	return alterErr(s.e.cfg.Cache.AlterTable(ctx, cur, next), cur)
}

// checkForeignKeyRows checks the rows of cur against its foreign keys
// names: each row's key must have a parent row, else 23503. The rows
// stream: their keys are looked up a batch at a time.
func (s *Session) checkForeignKeyRows(ctx context.Context, cur *catalog.Table, names []string) error {
	return s.inTxn(ctx, func(tx *client.Txn) error {
		r := &runner{s: s, ctx: ctx, txn: tx, ec: s.evalContext(nil), closers: &closers{}}
		defer r.closers.run()
		w, err := r.newFKWriter(cur)
		if err != nil {
			return err
		}
		checks := slices.DeleteFunc(w.checks, func(c *fkCheck) bool { return !slices.Contains(names, c.fk.Name) })
		rows, err := r.open(plan.NewScan(cur))
		if err != nil {
			return err
		}
		err = each(rows, func(row plan.Row) error {
			for _, c := range checks {
				if c.add(row); len(c.pending) >= lockBatch {
					if err := r.checkParents(c); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, c := range checks {
			if err := r.checkParents(c); err != nil {
				return err
			}
		}
		return nil
	})
}

// isDeferrability reports whether a column constraint is a DEFERRABLE or
// INITIALLY clause.
func isDeferrability(t pg.ConstrType) bool {
	switch t {
	case pg.ConstrType_CONSTR_ATTR_DEFERRABLE, pg.ConstrType_CONSTR_ATTR_NOT_DEFERRABLE,
		pg.ConstrType_CONSTR_ATTR_DEFERRED, pg.ConstrType_CONSTR_ATTR_IMMEDIATE:
		return true
	}
	return false
}

// setDeferrability applies a column constraint's DEFERRABLE / INITIALLY
// clause to its foreign key.
func setDeferrability(c *pg.Constraint, attr pg.ConstrType) {
	switch attr {
	case pg.ConstrType_CONSTR_ATTR_DEFERRABLE:
		c.Deferrable = true
	case pg.ConstrType_CONSTR_ATTR_NOT_DEFERRABLE:
		c.Deferrable = false
	case pg.ConstrType_CONSTR_ATTR_DEFERRED:
		c.Initdeferred = true
	case pg.ConstrType_CONSTR_ATTR_IMMEDIATE:
		c.Initdeferred = false
	}
}

// renameConstraint is ALTER TABLE ... RENAME CONSTRAINT of a foreign key
// or CHECK constraint of t (the others are indexes, renamed with them).
func renameConstraint(t *catalog.Table, old, name string) error {
	var target *string
	if fk, ok := t.ForeignKey(old); ok {
		target = &fk.Name
	}
	for i := range t.Checks {
		if t.Checks[i].Name == old {
			target = &t.Checks[i].Name
		}
	}
	if target == nil {
		if _, ok := t.Index(old); ok || !t.RowID && t.PKName == old {
			return pgerror.Unsupported("renaming a PRIMARY KEY or UNIQUE constraint")
		}
		return pgerror.New(pgerror.CodeUndefinedObject, "constraint %q for table %q does not exist", old, t.Name)
	}
	if constraintNames(t)[name] {
		return pgerror.New(pgerror.CodeDuplicateObject, "constraint %q for relation %q already exists", name, t.Name)
	}
	*target = name
	return nil
}
