package catalog

import (
	"context"
	"strconv"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// StorageColumn is the master column name of a SQL column: names in storage
// are by id so RENAME COLUMN touches only the SQL metadata.
func StorageColumn(c *Column) string {
	if int(c.ID) < len(storageNames) {
		return storageNames[c.ID]
	}
	return "c" + strconv.FormatUint(uint64(c.ID), 10)
}

// storageNames are the storage names of the first column ids, made once:
// every row read or written looks them up.
var storageNames = func() (names [512]string) {
	for i := range names {
		names[i] = "c" + strconv.Itoa(i)
	}
	return names
}()

// MasterSchema builds the master's column schema of t: key columns first in
// key order, then the others.
func MasterSchema(t *Table) *masterpb.Schema {
	s := &masterpb.Schema{Version: t.Version}
	for _, k := range t.Key {
		c := &t.Columns[k.Column]
		s.Columns = append(s.Columns, &masterpb.ColumnSchema{Id: c.ID, Name: StorageColumn(c),
			Type: types.StorageType(c.Type).String(), IsHashKey: k.Hash, IsRangeKey: !k.Hash, Descending: k.Desc})
	}
	for i := range t.Columns {
		if t.IsKey(i) {
			continue
		}
		c := &t.Columns[i]
		s.Columns = append(s.Columns, &masterpb.ColumnSchema{Id: c.ID, Name: StorageColumn(c),
			Type: types.StorageType(c.Type).String(), Nullable: true})
	}
	return s
}

// EnsureDefaults creates the default databases and their public schemas
// when a new cluster has none.
func (c *Cache) EnsureDefaults(ctx context.Context) error {
	s, err := c.Get(ctx)
	if err != nil {
		return err
	}
	for _, db := range []string{DefaultDatabase, "postgres"} {
		if _, ok := s.Databases[db]; ok {
			continue
		}
		if err := c.CreateDatabase(ctx, db); err != nil && !client.IsCode(err, masterpb.MasterError_ALREADY_EXISTS) {
			return err
		}
	}
	return nil
}

// update applies a conditional catalog object change, retrying when other
// DDL moved the version in between; build is called with the current
// snapshot and fills the request.
func (c *Cache) update(ctx context.Context, build func(s *Snapshot, req *masterpb.UpdateCatalogObjectsRequest) error) error {
	for attempt := 0; ; attempt++ {
		s, err := c.Get(ctx)
		if err != nil {
			return err
		}
		req := &masterpb.UpdateCatalogObjectsRequest{ExpectedVersion: s.Version, Put: map[string][]byte{}}
		if err := build(s, req); err != nil {
			return err
		}
		v, err := c.cl.UpdateCatalogObjects(ctx, req)
		if client.IsCode(err, masterpb.MasterError_CONFLICT) && attempt < 20 {
			c.Refresh()
			continue
		}
		if err != nil {
			return err
		}
		c.NoteVersion(v)
		return nil
	}
}

// newOID gives an object created at catalog version v+1 a unique OID.
func newOID(s *Snapshot) uint32 { return FirstUserOID + 1<<24 + uint32(s.Version) + 1 }

// CreateDatabase creates a database with its public schema.
func (c *Cache) CreateDatabase(ctx context.Context, name string) error {
	return c.update(ctx, func(s *Snapshot, req *masterpb.UpdateCatalogObjectsRequest) error {
		req.CreateOnly = true
		req.Put[dbKey(name)] = encode(&Database{Name: name, OID: newOID(s)})
		req.Put[schemaKey(name, "public")] = encode(&Schema{Database: name, Name: "public", OID: newOID(s) + 1<<20})
		return nil
	})
}

// DropDatabase drops a database's catalog objects (its tables are dropped
// by the caller first).
func (c *Cache) DropDatabase(ctx context.Context, name string) error {
	return c.update(ctx, func(s *Snapshot, req *masterpb.UpdateCatalogObjectsRequest) error {
		req.Delete = append(req.Delete, dbKey(name))
		for sc := range s.Schemas[name] {
			req.Delete = append(req.Delete, schemaKey(name, sc))
		}
		for _, q := range s.Sequences[name] {
			req.Delete = append(req.Delete, seqKey(name, q.Schema, q.Name))
		}
		return nil
	})
}

// CreateSchema creates a schema in db.
func (c *Cache) CreateSchema(ctx context.Context, db, name string) error {
	return c.update(ctx, func(s *Snapshot, req *masterpb.UpdateCatalogObjectsRequest) error {
		req.CreateOnly = true
		req.Put[schemaKey(db, name)] = encode(&Schema{Database: db, Name: name, OID: newOID(s)})
		return nil
	})
}

// DropSchema drops a schema's object and the sequences in it (they live
// in the catalog, not in tables, so nothing else drops them).
func (c *Cache) DropSchema(ctx context.Context, db, name string) error {
	return c.update(ctx, func(s *Snapshot, req *masterpb.UpdateCatalogObjectsRequest) error {
		req.Delete = append(req.Delete, schemaKey(db, name))
		for _, q := range s.Sequences[db] {
			if q.Schema == name {
				req.Delete = append(req.Delete, seqKey(db, q.Schema, q.Name))
			}
		}
		return nil
	})
}

// PutSequence creates (createOnly) or replaces a sequence definition.
func (c *Cache) PutSequence(ctx context.Context, q *Sequence, createOnly bool) error {
	return c.update(ctx, func(s *Snapshot, req *masterpb.UpdateCatalogObjectsRequest) error {
		req.CreateOnly = createOnly
		if q.OID == 0 {
			q.OID = newOID(s)
		}
		req.Put[seqKey(q.Database, q.Schema, q.Name)] = encode(q)
		return nil
	})
}

// DropSequence drops a sequence definition.
func (c *Cache) DropSequence(ctx context.Context, q *Sequence) error {
	return c.update(ctx, func(s *Snapshot, req *masterpb.UpdateCatalogObjectsRequest) error {
		req.Delete = append(req.Delete, seqKey(q.Database, q.Schema, q.Name))
		return nil
	})
}

// PutView creates (createOnly) or replaces a view definition; check runs
// against the snapshot the change is made over (again if other DDL moved
// the catalog in between), so a name taken meanwhile is seen.
func (c *Cache) PutView(ctx context.Context, v *View, createOnly bool, check func(s *Snapshot) error) error {
	return c.update(ctx, func(s *Snapshot, req *masterpb.UpdateCatalogObjectsRequest) error {
		if err := check(s); err != nil {
			return err
		}
		req.CreateOnly = createOnly
		if v.OID == 0 {
			v.OID = newOID(s)
		}
		req.Put[viewKey(v.Database, v.Schema, v.Name)] = encode(v)
		return nil
	})
}

// RenameView replaces old by next (another name or other column names) in
// one catalog change; check runs against the snapshot it is made over.
func (c *Cache) RenameView(ctx context.Context, old, next *View, check func(s *Snapshot) error) error {
	return c.update(ctx, func(s *Snapshot, req *masterpb.UpdateCatalogObjectsRequest) error {
		if err := check(s); err != nil {
			return err
		}
		if k := viewKey(old.Database, old.Schema, old.Name); k != viewKey(next.Database, next.Schema, next.Name) {
			req.Delete = append(req.Delete, k)
		}
		req.Put[viewKey(next.Database, next.Schema, next.Name)] = encode(next)
		return nil
	})
}

// DropViews drops view definitions in one catalog change.
func (c *Cache) DropViews(ctx context.Context, views []*View) error {
	if len(views) == 0 {
		return nil
	}
	return c.update(ctx, func(s *Snapshot, req *masterpb.UpdateCatalogObjectsRequest) error {
		for _, v := range views {
			req.Delete = append(req.Delete, viewKey(v.Database, v.Schema, v.Name))
		}
		return nil
	})
}

// CreateTable creates t's storage table with its metadata.
func (c *Cache) CreateTable(ctx context.Context, t *Table, part *masterpb.Partitioning, ifNotExists bool) error {
	_, err := c.cl.CreateTable(ctx, &masterpb.CreateTableRequest{
		Namespace: MasterNamespace(t.Database), Name: MasterName(t.Schema, t.Name),
		Schema: MasterSchema(t), Partitioning: part, IfNotExists: ifNotExists, SqlMetadata: EncodeTable(t),
	})
	c.Refresh()
	return err
}

// DropTable drops t's storage table.
func (c *Cache) DropTable(ctx context.Context, t *Table) error {
	err := c.cl.DropTable(ctx, MasterNamespace(t.Database), MasterName(t.Schema, t.Name), true)
	c.Refresh()
	return err
}

// AlterTable replaces t's metadata (and columns) by next, failing with a
// CONFLICT error when t is no longer the current version.
func (c *Cache) AlterTable(ctx context.Context, t, next *Table) error {
	return c.alterTable(ctx, t, next, nil)
}

// ReplaceTable alters t as AlterTable does into next, whose name is old's,
// and drops old in the same catalog change: no moment in which neither
// exists (a rewrite's new table taking the old one's place).
func (c *Cache) ReplaceTable(ctx context.Context, t, next, old *Table) error {
	return c.alterTable(ctx, t, next, old)
}

func (c *Cache) alterTable(ctx context.Context, t, next, replaced *Table) error {
	req := &masterpb.AlterTableRequest{TableId: t.MasterID, ExpectedSchemaVersion: t.Version,
		Schema: MasterSchema(next), SqlMetadata: EncodeTable(next), SetSqlMetadata: true}
	if next.Name != t.Name || next.Schema != t.Schema {
		req.NewName = MasterName(next.Schema, next.Name)
	}
	if replaced != nil {
		req.ReplaceTableId = replaced.MasterID
	}
	_, v, err := c.cl.AlterTable(ctx, req)
	if err == nil {
		c.NoteVersion(v)
	} else {
		c.Refresh()
	}
	return err
}

// Open opens t's storage table through the client.
func (c *Cache) Open(ctx context.Context, t *Table) (*client.Table, error) {
	return c.cl.OpenTableAt(ctx, MasterNamespace(t.Database), MasterName(t.Schema, t.Name), t.MasterID, t.Version)
}
