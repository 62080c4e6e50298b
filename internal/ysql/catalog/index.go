package catalog

import (
	"context"
	"fmt"

	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Secondary indexes. An index is a master table of its own (own tablets),
// named like a table ("<schema>:<index>" in the database's namespace, so
// index and table names share one namespace as in pg_class), whose
// sql_metadata only says which table it indexes (Table.IndexOf). Its
// definition and state live in the indexed table's metadata
// (Table.Indexes), so one AlterTable of that table moves the index from
// one state to the next, and every DML statement planned against a table
// version knows exactly which indexes to maintain.
//
// Rows follow YugabyteDB's DocDB layout of a secondary index:
//
//   - non-unique: key = the index columns (HASH/ASC/DESC as declared)
//     followed by the base table's primary-key columns not already among
//     them (ASC); value = the INCLUDE columns. Every base row has exactly
//     one index row.
//   - unique: key = the index columns followed by ybuniqueidxkeysuffix,
//     which is NULL when no index column is NULL and otherwise the base
//     row's encoded key, so that rows with NULLs never collide (PostgreSQL
//     semantics); value = the primary-key columns not among the index
//     columns, then the INCLUDE columns. Two rows with equal non-NULL
//     index values have the same index key: the tablet's insert check
//     (DUPLICATE_KEY) is the uniqueness check.
//
// Index key columns are nullable key columns: NULL sorts first ascending
// and last descending.

// IndexState is how far an index is on its way to being used.
type IndexState string

// Index states, in the order CREATE INDEX goes through them (YugabyteDB's
// DELETE_ONLY, WRITE_AND_DELETE, backfill, READ_WRITE_AND_DELETE). Each
// step is a catalog version every node reaches before the next: no node
// inserts index rows before every node deletes them (no dangling rows),
// and the backfill reads at a time when every node maintains the index.
const (
	// IndexDeleteOnly: writers delete the index rows of rows they delete
	// or change, and insert none.
	IndexDeleteOnly IndexState = "delete_only"
	// IndexWriteOnly: writers maintain the index; readers do not use it
	// (being backfilled, or being dropped).
	IndexWriteOnly IndexState = "write_only"
	// IndexReady: maintained and used by readers.
	IndexReady IndexState = ""
)

// IndexColumn is an index key column: a base column (by id, which never
// changes) and its layout.
type IndexColumn struct {
	ID   uint32 `json:"id"`
	Hash bool   `json:"hash,omitempty"`
	Desc bool   `json:"desc,omitempty"`
}

// Index is a secondary index of a table.
type Index struct {
	Name     string        `json:"name"`
	MasterID uint32        `json:"master_id"`
	Columns  []IndexColumn `json:"columns"`
	// Include are the covered (INCLUDE) columns, by id.
	Include []uint32 `json:"include,omitempty"`
	Unique  bool     `json:"unique,omitempty"`
	// Constraint: the index backs a UNIQUE constraint of that name
	// (pg_constraint); DROP INDEX refuses it, ALTER TABLE DROP
	// CONSTRAINT drops it.
	Constraint bool `json:"constraint,omitempty"`
	// Predicate is a partial index's WHERE (SQL text over the table's
	// columns; "" = every row).
	Predicate string     `json:"predicate,omitempty"`
	State     IndexState `json:"state,omitempty"`
}

// OID is the index's pg_class oid.
func (ix *Index) OID() uint32 { return FirstUserOID + ix.MasterID }

// Readable reports whether queries may read the index.
func (ix *Index) Readable() bool { return ix.State == IndexReady }

// Inserts reports whether writers insert index rows (not only delete).
func (ix *Index) Inserts() bool { return ix.State != IndexDeleteOnly }

// Range reports whether the index is range partitioned (no hash column).
func (ix *Index) Range() bool { return len(ix.Columns) > 0 && !ix.Columns[0].Hash }

// ColumnByID returns the index in Columns of the column with id, or -1.
func (t *Table) ColumnByID(id uint32) int {
	for i := range t.Columns {
		if t.Columns[i].ID == id {
			return i
		}
	}
	return -1
}

// Index returns the named index of t.
func (t *Table) Index(name string) (*Index, bool) {
	for i := range t.Indexes {
		if t.Indexes[i].Name == name {
			return &t.Indexes[i], true
		}
	}
	return nil, false
}

// SuffixColumnID is the storage column id of a unique index's
// ybuniqueidxkeysuffix (above any column id a table hands out).
const SuffixColumnID = 1<<31 - 1

// SuffixColumn is the storage name of a unique index's key suffix.
const SuffixColumn = "ybuniqueidxkeysuffix"

// IndexPart is one column of an index row: a base column (Col, an index
// into the table's Columns) or, with Col -1, the unique suffix.
type IndexPart struct {
	Col  int
	Hash bool
	Desc bool
}

// IndexLayout is how an index's rows are laid out (see the package notes).
type IndexLayout struct {
	Key    []IndexPart
	Values []int // base column indexes
	// KeyCols is the number of leading Key parts that are index columns.
	KeyCols int
}

// Layout computes the row layout of index ix of t.
func (t *Table) Layout(ix *Index) IndexLayout {
	var l IndexLayout
	in := map[int]bool{}
	for _, c := range ix.Columns {
		i := t.ColumnByID(c.ID)
		l.Key = append(l.Key, IndexPart{Col: i, Hash: c.Hash, Desc: c.Desc})
		in[i] = true
	}
	l.KeyCols = len(l.Key)
	if ix.Unique {
		l.Key = append(l.Key, IndexPart{Col: -1})
	}
	for _, k := range t.Key {
		if in[k.Column] {
			continue
		}
		in[k.Column] = true
		if ix.Unique {
			l.Values = append(l.Values, k.Column)
		} else {
			l.Key = append(l.Key, IndexPart{Col: k.Column})
		}
	}
	for _, id := range ix.Include {
		if i := t.ColumnByID(id); !in[i] {
			in[i] = true
			l.Values = append(l.Values, i)
		}
	}
	return l
}

// Covers reports whether every column in cols (indexes into the table's
// Columns) is in the index row.
func (l IndexLayout) Covers(cols []int) bool {
	for _, c := range cols {
		if !l.Holds(c) {
			return false
		}
	}
	return true
}

// Holds reports whether the index row holds column col (an index into the
// table's Columns), under the column's storage name.
func (l IndexLayout) Holds(col int) bool {
	for _, p := range l.Key {
		if p.Col == col {
			return true
		}
	}
	for _, v := range l.Values {
		if v == col {
			return true
		}
	}
	return false
}

// IndexSchema is the master column schema of index ix of t.
func IndexSchema(t *Table, ix *Index) *masterpb.Schema {
	l := t.Layout(ix)
	s := &masterpb.Schema{}
	for _, p := range l.Key {
		if p.Col < 0 {
			s.Columns = append(s.Columns, &masterpb.ColumnSchema{Id: SuffixColumnID, Name: SuffixColumn,
				Type: "bytes", IsRangeKey: true, Nullable: true})
			continue
		}
		c := &t.Columns[p.Col]
		s.Columns = append(s.Columns, &masterpb.ColumnSchema{Id: c.ID, Name: StorageColumn(c),
			Type: types.StorageType(c.Type).String(), IsHashKey: p.Hash, IsRangeKey: !p.Hash, Descending: p.Desc, Nullable: true})
	}
	for _, i := range l.Values {
		c := &t.Columns[i]
		s.Columns = append(s.Columns, &masterpb.ColumnSchema{Id: c.ID, Name: StorageColumn(c),
			Type: types.StorageType(c.Type).String(), Nullable: true})
	}
	return s
}

// IndexRef names an index and its table.
type IndexRef struct {
	Table *Table
	Index *Index
}

// Index returns schema.name in db.
func (s *Snapshot) Index(db, schema, name string) (IndexRef, bool) {
	r, ok := s.Indexes[db][schema+"."+name]
	return r, ok
}

// indexMasterName is the master table name of an index.
func indexMasterName(t *Table, ix *Index) string { return MasterName(t.Schema, ix.Name) }

// CreateIndexTable creates the storage table of index ix of t and sets
// ix.MasterID; the index is not part of t until t's metadata lists it.
func (c *Cache) CreateIndexTable(ctx context.Context, t *Table, ix *Index, part *masterpb.Partitioning) error {
	meta := &Table{Database: t.Database, Schema: t.Schema, Name: ix.Name, IndexOf: t.QualifiedName()}
	info, err := c.cl.CreateTable(ctx, &masterpb.CreateTableRequest{
		Namespace: MasterNamespace(t.Database), Name: indexMasterName(t, ix),
		Schema: IndexSchema(t, ix), Partitioning: part, SqlMetadata: EncodeTable(meta),
	})
	c.Refresh()
	if err != nil {
		return err
	}
	ix.MasterID = info.GetTableId()
	return nil
}

// DropIndexTable drops the storage table of index ix of t.
func (c *Cache) DropIndexTable(ctx context.Context, t *Table, ix *Index) error {
	err := c.cl.DropTable(ctx, MasterNamespace(t.Database), indexMasterName(t, ix), true)
	c.Refresh()
	return err
}

// WaitForNodes waits until every node that serves YSQL and has not been
// dead for the master's dead-after time acts on catalog version v or
// newer in database db (exec.Engine.CatalogVersionInUse, reported by
// heartbeats): no statement or transaction of db that saw an older catalog
// is still running anywhere.
func (c *Cache) WaitForNodes(ctx context.Context, db string, v uint64, poll func(context.Context) error) error {
	for {
		tss, err := c.cl.TServers(ctx)
		if err != nil {
			return err
		}
		behind := 0
		for _, ts := range tss {
			if ts.GetState() == masterpb.TServerInfo_DEAD {
				continue
			}
			inUse := ts.GetYsqlCatalogVersion()
			if old, ok := ts.GetYsqlDbCatalogVersions()[db]; ok {
				inUse = min(inUse, old)
			}
			if !ts.GetHeard() || ts.GetYsql() && inUse < v {
				behind++
			}
		}
		if behind == 0 {
			return nil
		}
		if err := poll(ctx); err != nil {
			return fmt.Errorf("waiting for %d nodes to reach catalog version %d: %w", behind, v, err)
		}
	}
}
