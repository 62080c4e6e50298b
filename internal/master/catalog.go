package master

import (
	"context"
	"fmt"
	"sort"

	"google.golang.org/protobuf/proto"

	"github.com/shaledb/shaledb/internal/docdb"
	pb "github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/tablet"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// The sys catalog is a tablet of a reserved table, replicated over the
// master nodes by the same Multi-Raft machinery as user tablets. Each
// catalog entry is a row keyed (kind, id) whose column 1 holds the entry's
// protobuf encoding.
const (
	SysCatalogTableID  uint32 = 1
	SysCatalogTabletID uint64 = 1

	// User table and tablet ids start above the reserved ones.
	firstTableID         = tablet.FirstUserTableID
	firstTabletID uint64 = 1000
	firstNodeID   uint64 = 1

	entryColumn uint32 = 1
)

// SysCatalogDescriptor is the sys catalog tablet's descriptor, the same on
// every master.
func SysCatalogDescriptor() tablet.Descriptor {
	return tablet.Descriptor{ID: SysCatalogTabletID, TableID: SysCatalogTableID, Span: docdb.TableSpan(SysCatalogTableID)}
}

type entryKind int64

const (
	kindConfig  entryKind = 1
	kindTServer entryKind = 2
	kindTable   entryKind = 3
	kindTablet  entryKind = 4
)

func entryKey(kind entryKind, id uint64) []byte {
	return docdb.DocKey{TableID: SysCatalogTableID, RangeParts: []docdb.KeyPart{
		{Value: docdb.Int64(int64(kind))}, {Value: docdb.Int64(int64(id))},
	}}.Encode()
}

// batch collects catalog mutations to be written in one Raft write.
type batch struct{ wb docdb.WriteBatch }

func (b *batch) put(kind entryKind, id uint64, m proto.Message) {
	data, err := proto.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("master: marshal %T: %v", m, err)) // only on programming errors
	}
	b.wb.Ops = append(b.wb.Ops, docdb.WriteOp{Kind: docdb.OpPutRow, RowKey: entryKey(kind, id),
		Columns: []docdb.ColumnValue{{ID: entryColumn, Value: docdb.Bytes(data)}}})
}

func (b *batch) del(kind entryKind, id uint64) {
	b.wb.Ops = append(b.wb.Ops, docdb.WriteOp{Kind: docdb.OpDeleteRow, RowKey: entryKey(kind, id)})
}

func (b *batch) empty() bool { return len(b.wb.Ops) == 0 }

// catalog is the master leader's in-memory copy of the sys catalog plus
// what it learns from heartbeats. It is rebuilt from the sys catalog each
// time this master becomes leader.
type catalog struct {
	config   *pb.ClusterConfig
	tservers map[uint64]*tserverState
	tables   map[uint32]*pb.TableInfo
	byName   map[string]uint32 // namespace "." name
	tablets  map[uint64]*pb.TabletLocation
	// sqlObjects are the SQL layer's databases, schemas and sequences.
	sqlObjects map[string][]byte
}

// tserverState is a registered tserver and its last heartbeat.
type tserverState struct {
	rec           *pb.TServerRecord
	lastHeartbeat int64 // unix ms; the load time until the first heartbeat
	// heard: a heartbeat reached this leader (placement only trusts those).
	heard bool
	// fullReport: this leader has had a full tablet report from the node,
	// so reported is complete (later reports are incremental).
	fullReport bool
	dataBytes  uint64
	// ysql, ysqlVersion, ysqlDBVersions: the node serves YSQL, the
	// catalog version it knows and, per database, an older one still in
	// use there (its last heartbeat's).
	ysql           bool
	ysqlVersion    uint64
	ysqlDBVersions map[string]uint64
	ysqlConns      uint32 // open YSQL connections
	// reported maps tablet id to the tserver's last report of it.
	reported map[uint64]*reportedReplica
	// missing records, per tablet, since when (unix ms) this tserver has
	// not reported a tablet its leader counts it a voter of.
	missing map[uint64]int64
}

type reportedReplica struct {
	role      int32 // tserverpb.TabletStatus_Role
	term      uint64
	applied   uint64
	size      uint64
	hasLease  bool
	voters    []uint64
	learners  []uint64
	leaderHin uint64
	status    *tspb.TabletStatus
}

func tableKey(namespace, name string) string { return namespace + "." + name }

func newCatalog() *catalog {
	return &catalog{
		tservers: make(map[uint64]*tserverState),
		tables:   make(map[uint32]*pb.TableInfo),
		byName:   make(map[string]uint32),
		tablets:  make(map[uint64]*pb.TabletLocation),
	}
}

// loadCatalog reads every entry of the sys catalog at the leaseholder.
func loadCatalog(ctx context.Context, sys *tablet.Tablet, nowMs int64) (*catalog, error) {
	c := newCatalog()
	span := SysCatalogDescriptor().Span
	for {
		rows, resume, err := sys.Scan(ctx, tablet.ScanOptions{Span: span, Limit: 1000})
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			if err := c.loadRow(r, nowMs); err != nil {
				return nil, err
			}
		}
		if resume == nil {
			break
		}
		span = docdb.ResumeSpan(span, resume, false)
	}
	if c.config == nil {
		return nil, fmt.Errorf("master: sys catalog has no cluster config")
	}
	return c, nil
}

func (c *catalog) loadRow(r docdb.Row, nowMs int64) error {
	k, err := docdb.DecodeDocKey(r.Key)
	if err != nil || len(k.RangeParts) != 2 || len(r.Columns) != 1 {
		return fmt.Errorf("master: malformed sys catalog row %x", r.Key)
	}
	data := r.Columns[0].Value.Bytes
	switch entryKind(k.RangeParts[0].Value.Int) {
	case kindConfig:
		c.config = &pb.ClusterConfig{}
		return proto.Unmarshal(data, c.config)
	case kindTServer:
		rec := &pb.TServerRecord{}
		if err := proto.Unmarshal(data, rec); err != nil {
			return err
		}
		c.tservers[rec.GetNodeId()] = &tserverState{rec: rec, lastHeartbeat: nowMs, reported: map[uint64]*reportedReplica{}}
	case kindTable:
		t := &pb.TableInfo{}
		if err := proto.Unmarshal(data, t); err != nil {
			return err
		}
		c.tables[t.GetTableId()] = t
		c.byName[tableKey(t.GetNamespace(), t.GetName())] = t.GetTableId()
	case kindTablet:
		t := &pb.TabletLocation{}
		if err := proto.Unmarshal(data, t); err != nil {
			return err
		}
		c.tablets[t.GetTablet().GetTabletId()] = t
	case kindSQLObjects:
		o := &pb.CatalogObjects{}
		if err := proto.Unmarshal(data, o); err != nil {
			return err
		}
		c.sqlObjects = o.GetObjects()
	default:
		return fmt.Errorf("master: unknown sys catalog entry kind %d", k.RangeParts[0].Value.Int)
	}
	return nil
}

// tabletsOf returns a table's tablets in key order.
func (c *catalog) tabletsOf(tableID uint32) []*pb.TabletLocation {
	var out []*pb.TabletLocation
	for _, t := range c.tablets {
		if t.GetTablet().GetTableId() == tableID {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return string(out[i].GetTablet().GetSpan().GetStart()) < string(out[j].GetTablet().GetSpan().GetStart())
	})
	return out
}

func errorf(kind error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", kind, fmt.Sprintf(format, args...))
}

func cloneConfig(c *pb.ClusterConfig) *pb.ClusterConfig { return proto.Clone(c).(*pb.ClusterConfig) }
