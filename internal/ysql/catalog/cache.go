package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/master/masterpb"
)

// Snapshot is one consistent version of the catalog. It is immutable:
// sessions hold it for the length of a statement.
type Snapshot struct {
	Version   uint64
	Databases map[string]*Database
	// Schemas by database, then name.
	Schemas map[string]map[string]*Schema
	// Tables by database, then "schema.name".
	Tables    map[string]map[string]*Table
	ByOID     map[uint32]*Table
	Sequences map[string]map[string]*Sequence // by database, then "schema.name"
	// Indexes by database, then "schema.name"; IndexByOID by pg_class oid.
	Indexes    map[string]map[string]IndexRef
	IndexByOID map[uint32]IndexRef
	// Views by database, then "schema.name"; ViewByOID by pg_class oid.
	Views     map[string]map[string]*View
	ViewByOID map[uint32]*View
	// Comments are the COMMENT ON texts (comment.go).
	Comments map[CommentID]string
	// referencing: the foreign keys referencing a table, by its MasterID.
	referencing map[uint32][]FKRef
}

// View returns schema.name in db.
func (s *Snapshot) View(db, schema, name string) (*View, bool) {
	v, ok := s.Views[db][schema+"."+name]
	return v, ok
}

// Dependents returns the views of db that read the table or view
// qualified ("schema.name"), in name order.
func (s *Snapshot) Dependents(db, qualified string) []*View {
	var out []*View
	for _, v := range s.Views[db] {
		for _, d := range v.DependsOn {
			if d == qualified {
				out = append(out, v)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].QualifiedName() < out[j].QualifiedName() })
	return out
}

// Table returns schema.name in db.
func (s *Snapshot) Table(db, schema, name string) (*Table, bool) {
	t, ok := s.Tables[db][schema+"."+name]
	return t, ok
}

// Sequence returns schema.name in db.
func (s *Snapshot) Sequence(db, schema, name string) (*Sequence, bool) {
	q, ok := s.Sequences[db][schema+"."+name]
	return q, ok
}

// Schema returns a schema of db.
func (s *Snapshot) Schema(db, name string) (*Schema, bool) {
	sc, ok := s.Schemas[db][name]
	return sc, ok
}

// Cache keeps the node's catalog snapshot, reloading it from the master
// when a newer catalog version is known (from a heartbeat or from DDL).
type Cache struct {
	cl     *client.Client
	latest atomic.Uint64
	// stale forces the next Get to reload (a data-path error suggested
	// the snapshot is old).
	stale atomic.Bool

	mu   sync.Mutex // serialises reloads
	snap atomic.Pointer[Snapshot]
}

// NewCache returns a cache over the cluster client.
func NewCache(cl *client.Client) *Cache { return &Cache{cl: cl} }

// Client is the cluster client the cache reads through.
func (c *Cache) Client() *client.Client { return c.cl }

// NoteVersion records that the catalog has reached version v (a heartbeat
// said so); the next Get reloads if its snapshot is older.
func (c *Cache) NoteVersion(v uint64) {
	for {
		cur := c.latest.Load()
		if v <= cur || c.latest.CompareAndSwap(cur, v) {
			return
		}
	}
}

// Latest is the newest catalog version noted: a Get from now on returns a
// snapshot at least this new.
func (c *Cache) Latest() uint64 { return c.latest.Load() }

// Get returns a snapshot at least as new as every version noted.
func (c *Cache) Get(ctx context.Context) (*Snapshot, error) {
	if s := c.snap.Load(); s != nil && s.Version >= c.latest.Load() && !c.stale.Load() {
		return s, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.snap.Load(); s != nil && s.Version >= c.latest.Load() && !c.stale.Load() {
		return s, nil
	}
	c.stale.Store(false)
	s, err := c.load(ctx)
	if err != nil {
		return nil, err
	}
	c.snap.Store(s)
	c.NoteVersion(s.Version)
	return s, nil
}

// Refresh forces a reload on the next Get (after DDL, or an error that
// suggests stale metadata).
func (c *Cache) Refresh() { c.stale.Store(true) }

// Fresh returns a snapshot read from the master now: a statement naming
// something this node has not heard of yet (created through another node
// a moment ago) looks again before failing.
func (c *Cache) Fresh(ctx context.Context) (*Snapshot, error) {
	c.Refresh()
	return c.Get(ctx)
}

// Current returns a snapshot at least as new as the master's catalog is
// now, at the cost of one small call when this node's is: DDL decides on
// it, so that an object created or changed through another node a moment
// ago (before this node's heartbeat brought the version) is seen.
func (c *Cache) Current(ctx context.Context) (*Snapshot, error) {
	s, err := c.Get(ctx)
	if err != nil {
		return nil, err
	}
	_, v, unchanged, err := c.cl.CatalogObjects(ctx, s.Version)
	if err != nil {
		return nil, err
	}
	if unchanged {
		return s, nil
	}
	c.NoteVersion(v)
	return c.Get(ctx)
}

func (c *Cache) load(ctx context.Context) (*Snapshot, error) {
	for attempt := 0; ; attempt++ {
		objs, v1, _, err := c.cl.CatalogObjects(ctx, 0)
		if err != nil {
			return nil, err
		}
		tables, v2, err := c.cl.TablesAndVersion(ctx)
		if err != nil {
			return nil, err
		}
		if v1 != v2 && attempt < 5 {
			continue // DDL in between: read both again
		}
		return build(v2, objs, tables)
	}
}

func build(version uint64, objs map[string][]byte, tables []*masterpb.TableInfo) (*Snapshot, error) {
	s := &Snapshot{Version: version, Databases: map[string]*Database{}, Schemas: map[string]map[string]*Schema{},
		Tables: map[string]map[string]*Table{}, ByOID: map[uint32]*Table{}, Sequences: map[string]map[string]*Sequence{},
		Indexes: map[string]map[string]IndexRef{}, IndexByOID: map[uint32]IndexRef{},
		Views: map[string]map[string]*View{}, ViewByOID: map[uint32]*View{}, Comments: map[CommentID]string{}}
	for k, v := range objs {
		kind, _, _ := strings.Cut(k, "/")
		var err error
		switch kind {
		case "db":
			d := &Database{}
			if err = json.Unmarshal(v, d); err == nil {
				s.Databases[d.Name] = d
			}
		case "schema":
			sc := &Schema{}
			if err = json.Unmarshal(v, sc); err == nil {
				if s.Schemas[sc.Database] == nil {
					s.Schemas[sc.Database] = map[string]*Schema{}
				}
				s.Schemas[sc.Database][sc.Name] = sc
			}
		case "seq":
			q := &Sequence{}
			if err = json.Unmarshal(v, q); err == nil {
				if s.Sequences[q.Database] == nil {
					s.Sequences[q.Database] = map[string]*Sequence{}
				}
				s.Sequences[q.Database][q.Schema+"."+q.Name] = q
			}
		case "comment":
			cm := &comment{}
			if err = json.Unmarshal(v, cm); err == nil {
				s.Comments[cm.CommentID] = cm.Text
			}
		case "view":
			w := &View{}
			if err = json.Unmarshal(v, w); err == nil {
				if s.Views[w.Database] == nil {
					s.Views[w.Database] = map[string]*View{}
				}
				s.Views[w.Database][w.QualifiedName()] = w
				s.ViewByOID[w.OID] = w
			}
		}
		if err != nil {
			return nil, fmt.Errorf("catalog: object %q: %w", k, err)
		}
	}
	for _, ti := range tables {
		if len(ti.GetSqlMetadata()) == 0 || ti.GetState() != masterpb.TableInfo_RUNNING {
			continue
		}
		if _, _, _, ok := SplitMasterName(ti.GetNamespace(), ti.GetName()); !ok {
			continue
		}
		t, err := DecodeTable(ti.GetSqlMetadata())
		if err != nil {
			return nil, err
		}
		if t.IndexOf != "" {
			continue // an index's storage: its table's metadata describes it
		}
		t.MasterID, t.Version = ti.GetTableId(), ti.GetSchema().GetVersion()
		if s.Tables[t.Database] == nil {
			s.Tables[t.Database] = map[string]*Table{}
			s.Indexes[t.Database] = map[string]IndexRef{}
		}
		s.Tables[t.Database][t.Schema+"."+t.Name] = t
		s.ByOID[t.OID()] = t
		for i := range t.Indexes {
			ref := IndexRef{Table: t, Index: &t.Indexes[i]}
			s.Indexes[t.Database][t.Schema+"."+t.Indexes[i].Name] = ref
			s.IndexByOID[t.Indexes[i].OID()] = ref
		}
	}
	s.indexReferences()
	return s, nil
}
