package master

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"google.golang.org/protobuf/proto"

	pb "github.com/shaledb/shaledb/internal/master/masterpb"
)

// The SQL layer's catalog lives here too: its tables are master tables
// carrying an opaque sql_metadata blob, and its other objects (databases,
// schemas, sequences) are key/value entries of one sys catalog entry. Every
// DDL bumps the cluster's catalog version, which heartbeats carry to every
// node so SQL layers drop stale cached metadata.

// ErrConflict is a conditional catalog change that lost a race.
var ErrConflict = errors.New("master: catalog changed concurrently")

const kindSQLObjects entryKind = 5

// bumpCatalogVersion adds the config with the next catalog version to b
// and returns that version; the caller's apply must bump the in-memory
// config too.
func bumpCatalogVersion(c *catalog, b *batch) uint64 {
	cfg := cloneConfig(c.config)
	cfg.CatalogVersion++
	b.put(kindConfig, 0, cfg)
	return cfg.GetCatalogVersion()
}

func (c *catalog) bumpVersion() {
	c.config = cloneConfig(c.config)
	c.config.CatalogVersion++
}

// AlterTable changes a table's schema, SQL metadata or name.
func (m *Master) AlterTable(ctx context.Context, req *pb.AlterTableRequest) (*pb.TableInfo, uint64, error) {
	m.ddl.Lock()
	info, version, replaced, err := m.alterTable(ctx, req)
	m.ddl.Unlock()
	if err == nil && len(replaced) > 0 {
		m.deleteReplicas(ctx, replaced)
	}
	return info, version, err
}

// alterTable is AlterTable under the DDL lock; it returns the tablets of
// the table it replaced (replace_table_id), whose replicas are to go.
func (m *Master) alterTable(ctx context.Context, req *pb.AlterTableRequest) (*pb.TableInfo, uint64, []*pb.TabletLocation, error) {
	var info, replaced *pb.TableInfo
	var replacedTablets []*pb.TabletLocation
	var version uint64
	var b batch
	err := m.withCatalog(func(c *catalog) error {
		old, ok := c.tables[req.GetTableId()]
		if !ok {
			return errorf(ErrNotFound, "table id %d", req.GetTableId())
		}
		if v := req.GetExpectedSchemaVersion(); v != 0 && v != old.GetSchema().GetVersion() {
			return errorf(ErrConflict, "table %s.%s is at schema version %d, not %d", old.GetNamespace(), old.GetName(),
				old.GetSchema().GetVersion(), v)
		}
		info = proto.Clone(old).(*pb.TableInfo)
		if s := req.GetSchema(); s != nil {
			if err := validateAlteredSchema(old.GetSchema(), s); err != nil {
				return err
			}
			info.Schema = proto.Clone(s).(*pb.Schema)
		}
		info.Schema.Version = old.GetSchema().GetVersion() + 1
		if req.GetSetSqlMetadata() {
			info.SqlMetadata = req.GetSqlMetadata()
		}
		if n := req.GetNewName(); n != "" && n != old.GetName() {
			if id, taken := c.byName[tableKey(old.GetNamespace(), n)]; taken {
				if r := req.GetReplaceTableId(); r == 0 || r != id {
					return errorf(ErrAlreadyExists, "table %s.%s", old.GetNamespace(), n)
				}
				replaced, replacedTablets = c.tables[id], c.tabletsOf(id)
				for _, t := range replacedTablets {
					b.del(kindTablet, t.GetTablet().GetTabletId())
				}
				b.del(kindTable, uint64(id))
			}
			info.Name = n
		}
		b.put(kindTable, uint64(info.GetTableId()), info)
		version = bumpCatalogVersion(c, &b)
		return nil
	})
	if err != nil {
		return nil, 0, nil, err
	}
	err = m.commit(ctx, &b, func(c *catalog) {
		if replaced != nil {
			delete(c.tables, replaced.GetTableId())
			delete(c.byName, tableKey(replaced.GetNamespace(), replaced.GetName()))
			for _, t := range replacedTablets {
				delete(c.tablets, t.GetTablet().GetTabletId())
			}
		}
		old := c.tables[info.GetTableId()]
		delete(c.byName, tableKey(old.GetNamespace(), old.GetName()))
		c.tables[info.GetTableId()] = info
		c.byName[tableKey(info.GetNamespace(), info.GetName())] = info.GetTableId()
		c.bumpVersion()
	})
	if err != nil {
		return nil, 0, nil, err
	}
	return info, version, replacedTablets, nil
}

// validateAlteredSchema keeps the key of a table fixed (changing it means
// rewriting the table, which the SQL layer does as a new table) and column
// ids unique.
func validateAlteredSchema(old, s *pb.Schema) error {
	key := func(cs *pb.ColumnSchema) bool { return cs.GetIsHashKey() || cs.GetIsRangeKey() }
	oldByID := map[uint32]*pb.ColumnSchema{}
	for _, c := range old.GetColumns() {
		oldByID[c.GetId()] = c
	}
	seen := map[uint32]bool{}
	names := map[string]bool{}
	nkey := 0
	for _, c := range s.GetColumns() {
		if seen[c.GetId()] || names[c.GetName()] || c.GetId() == 0 || c.GetName() == "" {
			return errorf(ErrInvalidArgument, "column %d %q repeated or unnamed", c.GetId(), c.GetName())
		}
		seen[c.GetId()], names[c.GetName()] = true, true
		o, existed := oldByID[c.GetId()]
		if key(c) {
			nkey++
			if !existed || !key(o) || o.GetType() != c.GetType() || o.GetIsHashKey() != c.GetIsHashKey() ||
				o.GetDescending() != c.GetDescending() {
				return errorf(ErrInvalidArgument, "the primary key of a table cannot change")
			}
		} else if existed && (key(o) || o.GetType() != c.GetType()) {
			return errorf(ErrInvalidArgument, "column %q cannot change its type or key membership", c.GetName())
		}
	}
	for _, o := range old.GetColumns() {
		if key(o) {
			nkey--
		}
	}
	if nkey != 0 {
		return errorf(ErrInvalidArgument, "the primary key of a table cannot change")
	}
	return nil
}

// CatalogObjects returns the SQL catalog objects and the catalog version;
// objects is nil when the version equals known.
func (m *Master) CatalogObjects(known uint64) (map[string][]byte, uint64, error) {
	var objs map[string][]byte
	var version uint64
	err := m.withCatalog(func(c *catalog) error {
		version = c.config.GetCatalogVersion()
		if known == 0 || known != version {
			objs = maps.Clone(c.sqlObjects)
			if objs == nil {
				objs = map[string][]byte{}
			}
		}
		return nil
	})
	return objs, version, err
}

// UpdateCatalogObjects puts and deletes SQL catalog objects in one write.
func (m *Master) UpdateCatalogObjects(ctx context.Context, req *pb.UpdateCatalogObjectsRequest) (uint64, error) {
	m.ddl.Lock()
	defer m.ddl.Unlock()
	var next map[string][]byte
	var version uint64
	var b batch
	err := m.withCatalog(func(c *catalog) error {
		if v := req.GetExpectedVersion(); v != 0 && v != c.config.GetCatalogVersion() {
			return errorf(ErrConflict, "catalog version is %d, not %d", c.config.GetCatalogVersion(), v)
		}
		next = maps.Clone(c.sqlObjects)
		if next == nil {
			next = map[string][]byte{}
		}
		for k, v := range req.GetPut() {
			if _, exists := next[k]; exists && req.GetCreateOnly() {
				return errorf(ErrAlreadyExists, "catalog object %q", k)
			}
			next[k] = v
		}
		for _, k := range req.GetDelete() {
			delete(next, k)
		}
		b.put(kindSQLObjects, 0, &pb.CatalogObjects{Objects: next})
		version = bumpCatalogVersion(c, &b)
		return nil
	})
	if err != nil {
		return 0, err
	}
	err = m.commit(ctx, &b, func(c *catalog) {
		c.sqlObjects = next
		c.bumpVersion()
	})
	if err != nil {
		return 0, fmt.Errorf("master: update catalog objects: %w", err)
	}
	return version, nil
}

// CatalogVersion returns the current catalog version (0 when not leading).
func (m *Master) CatalogVersion() uint64 {
	var v uint64
	_ = m.withCatalog(func(c *catalog) error { v = c.config.GetCatalogVersion(); return nil })
	return v
}

func (s *service) AlterTable(ctx context.Context, req *pb.AlterTableRequest) (*pb.AlterTableResponse, error) {
	resp := &pb.AlterTableResponse{}
	resp.Error = s.call(func(m *Master) (err error) {
		resp.Table, resp.CatalogVersion, err = m.AlterTable(ctx, req)
		return err
	})
	return resp, nil
}

func (s *service) GetCatalogObjects(ctx context.Context, req *pb.GetCatalogObjectsRequest) (*pb.GetCatalogObjectsResponse, error) {
	resp := &pb.GetCatalogObjectsResponse{}
	resp.Error = s.call(func(m *Master) (err error) {
		resp.Objects, resp.CatalogVersion, err = m.CatalogObjects(req.GetKnownVersion())
		resp.Unchanged = err == nil && resp.Objects == nil
		return err
	})
	return resp, nil
}

func (s *service) UpdateCatalogObjects(ctx context.Context, req *pb.UpdateCatalogObjectsRequest) (*pb.UpdateCatalogObjectsResponse, error) {
	resp := &pb.UpdateCatalogObjectsResponse{}
	resp.Error = s.call(func(m *Master) (err error) {
		resp.CatalogVersion, err = m.UpdateCatalogObjects(ctx, req)
		return err
	})
	return resp, nil
}
