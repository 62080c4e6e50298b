package catalog

import "sort"

// Referential actions, as pg_constraint's confupdtype/confdeltype spell
// them.
const (
	FKNoAction   = "a"
	FKRestrict   = "r"
	FKCascade    = "c"
	FKSetNull    = "n"
	FKSetDefault = "d"
)

// ForeignKey is a FOREIGN KEY constraint, kept in the child (referencing)
// table's metadata. Columns on both sides are by column id, and the parent
// by its storage table id, so renames of either keep it (a table rebuilt
// under a new id, TRUNCATE or ADD PRIMARY KEY, has its references moved).
// Matching is MATCH SIMPLE: a row with a NULL in any column references
// nothing.
type ForeignKey struct {
	Name       string   `json:"name"`
	Columns    []uint32 `json:"columns"`
	RefTable   uint32   `json:"ref_table"` // the parent's MasterID
	RefColumns []uint32 `json:"ref_columns"`
	OnDelete   string   `json:"on_delete"`
	OnUpdate   string   `json:"on_update"`
	Deferrable bool     `json:"deferrable,omitempty"`
	Deferred   bool     `json:"deferred,omitempty"` // INITIALLY DEFERRED
	// NotValid: added with NOT VALID, the rows before it unchecked (until
	// ALTER TABLE VALIDATE CONSTRAINT).
	NotValid bool `json:"not_valid,omitempty"`
}

// FKRef is a foreign key and the table that holds it.
type FKRef struct {
	Child *Table
	FK    *ForeignKey
}

// ColumnIndexes maps column ids of t to indexes into t.Columns.
func (t *Table) ColumnIndexes(ids []uint32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = t.ColumnByID(id)
	}
	return out
}

// ForeignKey returns t's foreign key of that name.
func (t *Table) ForeignKey(name string) (*ForeignKey, bool) {
	for i := range t.ForeignKeys {
		if t.ForeignKeys[i].Name == name {
			return &t.ForeignKeys[i], true
		}
	}
	return nil, false
}

// ReferencedBy returns the foreign keys that reference t, in the order
// they were created.
func (s *Snapshot) ReferencedBy(t *Table) []FKRef {
	return s.referencing[t.MasterID]
}

// TableByID returns the table whose storage table id is id.
func (s *Snapshot) TableByID(id uint32) (*Table, bool) {
	t, ok := s.ByOID[FirstUserOID+id]
	return t, ok
}

// indexReferences fills s.referencing from every table's foreign keys.
func (s *Snapshot) indexReferences() {
	s.referencing = map[uint32][]FKRef{}
	for _, tables := range s.Tables {
		for _, t := range tables {
			for i := range t.ForeignKeys {
				fk := &t.ForeignKeys[i]
				s.referencing[fk.RefTable] = append(s.referencing[fk.RefTable], FKRef{Child: t, FK: fk})
			}
		}
	}
	// Creation order, as PostgreSQL fires its foreign keys' triggers:
	// tables by id, then each table's keys in the order they were added.
	for _, refs := range s.referencing {
		sort.SliceStable(refs, func(i, j int) bool { return refs[i].Child.MasterID < refs[j].Child.MasterID })
	}
}
