package exec

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// Foreign keys as dependencies: a table referenced by another cannot be
// dropped (DROP ... CASCADE drops the constraints, not the tables that
// hold them) nor truncated alone (TRUNCATE ... CASCADE truncates the
// referencing tables too).

// outsideReferences returns the foreign keys that reference one of tables
// from a table not among them.
func outsideReferences(snap *catalog.Snapshot, tables []*catalog.Table) []catalog.FKRef {
	among := map[uint32]bool{}
	for _, t := range tables {
		among[t.MasterID] = true
	}
	var out []catalog.FKRef
	for _, t := range tables {
		for _, ref := range snap.ReferencedBy(t) {
			if !among[ref.Child.MasterID] {
				out = append(out, ref)
			}
		}
	}
	return out
}

// dropReferences is DROP TABLE's handling of the foreign keys referencing
// the tables from other tables: 2BP01, or with CASCADE the constraints go.
func (s *Session) dropReferences(ctx context.Context, snap *catalog.Snapshot, tables []*catalog.Table, cascade bool) error {
	refs := outsideReferences(snap, tables)
	if len(refs) == 0 {
		return nil
	}
	if !cascade {
		parent, _ := snap.TableByID(refs[0].FK.RefTable)
		var same []catalog.FKRef
		for _, ref := range refs {
			if ref.FK.RefTable == parent.MasterID {
				same = append(same, ref)
			}
		}
		return dependentsError("table "+parent.Name, same)
	}
	s.noteCascade(refs)
	return s.dropForeignKeys(ctx, refs)
}

// dropForeignKeys takes the foreign keys refs out of their tables.
func (s *Session) dropForeignKeys(ctx context.Context, refs []catalog.FKRef) error {
	byChild := map[uint32][]string{}
	children := map[uint32]*catalog.Table{}
	for _, ref := range refs {
		byChild[ref.Child.MasterID] = append(byChild[ref.Child.MasterID], ref.FK.Name)
		children[ref.Child.MasterID] = ref.Child
	}
	for id, names := range byChild {
		cur, err := s.currentTable(ctx, children[id])
		if err != nil {
			return err
		}
		next := cloneTable(cur)
		kept := next.ForeignKeys[:0]
		for _, fk := range next.ForeignKeys {
			if !slices.Contains(names, fk.Name) {
				kept = append(kept, fk)
			}
		}
		next.ForeignKeys = kept
		if err := s.e.cfg.Cache.AlterTable(ctx, cur, next); err != nil {
			return alterErr(err, cur)
		}
	}
	return nil
}

// truncateReferences is TRUNCATE's rule: a table referenced from a table
// not truncated with it is 0A000, unless CASCADE, which adds those tables
// (and the tables referencing them) to the list.
func (s *Session) truncateReferences(snap *catalog.Snapshot, tables []*catalog.Table, cascade bool) ([]*catalog.Table, error) {
	for {
		refs := outsideReferences(snap, tables)
		if len(refs) == 0 {
			return tables, nil
		}
		if !cascade {
			ref := refs[0]
			parent, _ := snap.TableByID(ref.FK.RefTable)
			return nil, pgerror.New(pgerror.CodeFeatureNotSupported, "cannot truncate a table referenced in a foreign key constraint").
				WithDetail("Table %q references %q.", ref.Child.Name, parent.Name).
				WithHint("Truncate table %q at the same time, or use TRUNCATE ... CASCADE.", ref.Child.Name)
		}
		added := map[uint32]bool{}
		for _, ref := range refs {
			if !added[ref.Child.MasterID] {
				added[ref.Child.MasterID] = true
				s.notice("NOTICE", "00000", "truncate cascades to table %q", ref.Child.Name)
				tables = append(tables, ref.Child)
			}
		}
	}
}

// repointForeignKeys moves the foreign keys referencing tables rebuilt
// under new ids (TRUNCATE outside a block) to the new tables: moved maps
// an old id to the table's qualified name.
func (s *Session) repointForeignKeys(ctx context.Context, moved map[uint32]string) error {
	snap, err := s.e.cfg.Cache.Fresh(ctx)
	if err != nil {
		return err
	}
	for _, t := range snap.Tables[s.db] {
		var next *catalog.Table
		for i, fk := range t.ForeignKeys {
			name, ok := moved[fk.RefTable]
			if !ok {
				continue
			}
			now, ok := snap.Tables[s.db][name]
			if !ok {
				continue
			}
			if next == nil {
				next = cloneTable(t)
			}
			next.ForeignKeys[i].RefTable = now.MasterID
		}
		if next != nil {
			if err := s.e.cfg.Cache.AlterTable(ctx, t, next); err != nil {
				return alterErr(err, t)
			}
		}
	}
	return nil
}

// dependentsError is 2BP01 for dropping what the constraints refs depend
// on (what: "table p", "column k of table p").
func dependentsError(what string, refs []catalog.FKRef) error {
	lines := make([]string, len(refs))
	for i, ref := range refs {
		lines[i] = fmt.Sprintf("constraint %s on table %s depends on %s", ref.FK.Name, ref.Child.Name, what)
	}
	return pgerror.New(pgerror.CodeDependentObjectsStillExist, "cannot drop %s because other objects depend on it", what).
		WithDetail("%s", strings.Join(lines, "\n")).
		WithHint("Use DROP ... CASCADE to drop the dependent objects too.")
}

// noteCascade is DROP ... CASCADE's notice of the constraints it drops.
func (s *Session) noteCascade(refs []catalog.FKRef) {
	lines := make([]string, len(refs))
	for i, ref := range refs {
		lines[i] = fmt.Sprintf("drop cascades to constraint %s on table %s", ref.FK.Name, ref.Child.Name)
	}
	if len(lines) == 1 {
		s.notice("NOTICE", "00000", "%s", lines[0])
		return
	}
	s.noticeDetail("NOTICE", "00000", strings.Join(lines, "\n"), "drop cascades to %d other objects", len(lines))
}

// dropColumnReferences is DROP COLUMN's handling of foreign keys on the
// column of next (not yet dropped from it): the table's own foreign keys
// using it go with it; those of other tables referencing it are 2BP01, or
// with CASCADE go too (a self-reference goes from next).
func (s *Session) dropColumnReferences(ctx context.Context, snap *catalog.Snapshot, next *catalog.Table, id uint32, cascade bool) error {
	var refs []catalog.FKRef
	for _, ref := range snap.ReferencedBy(next) {
		if slices.Contains(ref.FK.RefColumns, id) && ref.Child.MasterID != next.MasterID {
			refs = append(refs, ref)
		}
	}
	next.ForeignKeys = slices.DeleteFunc(next.ForeignKeys, func(fk catalog.ForeignKey) bool {
		return slices.Contains(fk.Columns, id) || fk.RefTable == next.MasterID && slices.Contains(fk.RefColumns, id)
	})
	if len(refs) == 0 {
		return nil
	}
	if !cascade {
		return dependentsError(fmt.Sprintf("column %s of table %s", next.Columns[next.ColumnByID(id)].Name, next.Name), refs)
	}
	s.noteCascade(refs)
	return s.dropForeignKeys(ctx, refs)
}

// indexReferences returns the foreign keys that need t's unique index ix:
// their referenced columns are its key, and no other unique index or the
// primary key has them.
func indexReferences(snap *catalog.Snapshot, t *catalog.Table, ix *catalog.Index) []catalog.FKRef {
	var out []catalog.FKRef
	for _, ref := range snap.ReferencedBy(t) {
		if u := fkUniqueIndex(t, ref.FK.RefColumns); u == nil || u.Name != ix.Name || primaryKeyIs(t, ref.FK.RefColumns) {
			continue
		}
		others := *t
		others.Indexes = slices.DeleteFunc(slices.Clone(t.Indexes), func(o catalog.Index) bool { return o.Name == ix.Name })
		if fkUniqueIndex(&others, ref.FK.RefColumns) == nil {
			out = append(out, ref)
		}
	}
	return out
}

// dropIndexReferences is DROP CONSTRAINT / DROP INDEX of a unique index
// foreign keys need (what names it): 2BP01, or with CASCADE they go.
func (s *Session) dropIndexReferences(ctx context.Context, snap *catalog.Snapshot, t *catalog.Table, ix *catalog.Index, what string, cascade bool) error {
	refs := indexReferences(snap, t, ix)
	if len(refs) == 0 {
		return nil
	}
	if !cascade {
		lines := make([]string, len(refs))
		for i, ref := range refs {
			lines[i] = fmt.Sprintf("constraint %s on table %s depends on index %s", ref.FK.Name, ref.Child.Name, ix.Name)
		}
		return pgerror.New(pgerror.CodeDependentObjectsStillExist, "cannot drop %s because other objects depend on it", what).
			WithDetail("%s", strings.Join(lines, "\n")).
			WithHint("Use DROP ... CASCADE to drop the dependent objects too.")
	}
	s.noteCascade(refs)
	return s.dropForeignKeys(ctx, refs)
}
