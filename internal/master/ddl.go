package master

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/shaledb/shaledb/internal/docdb"
	pb "github.com/shaledb/shaledb/internal/master/masterpb"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// Errors of catalog operations; the service maps them to MasterError codes.
var (
	ErrNotFound          = errors.New("master: not found")
	ErrAlreadyExists     = errors.New("master: already exists")
	ErrInvalidArgument   = errors.New("master: invalid argument")
	ErrNotEnoughTServers = errors.New("master: not enough live tservers")
	ErrWrongCluster      = errors.New("master: wrong cluster")
	ErrUnavailable       = errors.New("master: unavailable")
)

const maxHashTablets = 0x10000

// validateTable checks a CreateTable request.
func validateTable(req *pb.CreateTableRequest) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
	}
	if req.GetName() == "" || req.GetNamespace() == "" {
		return bad("a table needs a namespace and a name")
	}
	if strings.ContainsAny(req.GetName()+req.GetNamespace(), ".\x00") {
		return bad("names may not contain '.' or NUL")
	}
	cols := req.GetSchema().GetColumns()
	if len(cols) == 0 {
		return bad("table %q has no columns", req.GetName())
	}
	ids, names := map[uint32]bool{}, map[string]bool{}
	var hashKeys, rangeKeys int
	for _, c := range cols {
		if c.GetId() == 0 {
			return bad("column %q: id 0 is reserved", c.GetName())
		}
		if ids[c.GetId()] || names[c.GetName()] {
			return bad("duplicate column %q (id %d)", c.GetName(), c.GetId())
		}
		ids[c.GetId()], names[c.GetName()] = true, true
		if _, ok := docdb.ParseValueType(c.GetType()); !ok || c.GetType() == "null" {
			return bad("column %q: unknown type %q", c.GetName(), c.GetType())
		}
		if c.GetIsHashKey() && c.GetIsRangeKey() {
			return bad("column %q cannot be both a hash and a range key", c.GetName())
		}
		if c.GetIsHashKey() {
			hashKeys++
		}
		if c.GetIsRangeKey() {
			rangeKeys++
		}
	}
	if hashKeys+rangeKeys == 0 {
		return bad("table %q has no primary key column", req.GetName())
	}
	p := req.GetPartitioning()
	switch p.GetKind() {
	case pb.Partitioning_HASH:
		if hashKeys == 0 {
			return bad("hash partitioning needs at least one hash key column")
		}
		if p.GetNumTablets() > 4096 {
			return bad("at most 4096 tablets per table, not %d", p.GetNumTablets())
		}
		if len(p.GetSplitPoints()) > 0 {
			return bad("split points are for range partitioning")
		}
	case pb.Partitioning_RANGE:
		if hashKeys > 0 {
			return bad("range partitioning takes no hash key columns")
		}
		if p.GetNumTablets() > 0 && int(p.GetNumTablets()) != len(p.GetSplitPoints())+1 {
			return bad("range partitioning: %d split points make %d tablets, not %d", len(p.GetSplitPoints()), len(p.GetSplitPoints())+1, p.GetNumTablets())
		}
	default:
		return bad("unknown partitioning %v", p.GetKind())
	}
	if rf := req.GetReplicationFactor(); rf < 0 || rf > 7 || (rf != 0 && rf%2 == 0) {
		return bad("replication factor %d: use 1, 3, 5 or 7", rf)
	}
	return nil
}

// tabletSpans computes the descriptors of a new table's tablets (ids left
// 0).
func tabletSpans(tableID uint32, p *pb.Partitioning, n int) ([]*tspb.TabletDescriptor, error) {
	var out []*tspb.TabletDescriptor
	if p.GetKind() == pb.Partitioning_HASH {
		for i := 0; i < n; i++ {
			lo, hi := uint32(i*maxHashTablets/n), uint32((i+1)*maxHashTablets/n)
			s := docdb.HashSpan(tableID, lo, hi)
			out = append(out, &tspb.TabletDescriptor{TableId: tableID, Span: &tspb.Span{Start: s.Start, End: s.End}, HashStart: lo, HashEnd: hi})
		}
		return out, nil
	}
	table := docdb.TableSpan(tableID)
	bounds := [][]byte{table.Start}
	for _, sp := range p.GetSplitPoints() {
		// Split points are encoded range key prefixes (docdb.AppendKey of
		// the leading range key columns), which the table's key prefix
		// turns into row key bounds, or whole keys of this table.
		if len(sp) > 0 && sp[0] != table.Start[0] {
			sp = append(append([]byte(nil), table.Start...), sp...)
		}
		if !table.Contains(sp) || string(sp) <= string(bounds[len(bounds)-1]) {
			return nil, fmt.Errorf("%w: split point %x is not an ascending key of table %d", ErrInvalidArgument, sp, tableID)
		}
		bounds = append(bounds, sp)
	}
	bounds = append(bounds, table.End)
	for i := 0; i+1 < len(bounds); i++ {
		out = append(out, &tspb.TabletDescriptor{TableId: tableID, Span: &tspb.Span{Start: bounds[i], End: bounds[i+1]}})
	}
	return out, nil
}

// liveTServers returns the tservers that heartbeated recently and are not
// blacklisted, by id.
func (m *Master) liveTServers(c *catalog, nowMs int64) []*tserverState {
	black := map[uint64]bool{}
	for _, id := range c.config.GetBlacklist() {
		black[id] = true
	}
	var out []*tserverState
	for id, ts := range c.tservers {
		if !black[id] && ts.heard && nowMs-ts.lastHeartbeat <= m.cfg.TServerDeadAfter.Milliseconds() {
			out = append(out, ts)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rec.GetNodeId() < out[j].rec.GetNodeId() })
	return out
}

// placeReplicas picks rf tservers for each new tablet: fewest replicas
// first (counting the ones placed so far), in distinct zones while there
// are enough zones.
func placeReplicas(c *catalog, live []*tserverState, rf, tablets int) [][]uint64 {
	load := map[uint64]int{}
	for _, t := range c.tablets {
		for _, r := range t.GetReplicas() {
			load[r.GetNodeId()]++
		}
	}
	zoneOf := func(ts *tserverState) string {
		p := ts.rec.GetPlacement()
		return p.GetCloud() + "." + p.GetRegion() + "." + p.GetZone()
	}
	out := make([][]uint64, tablets)
	for i := range out {
		zones := map[string]bool{}
		chosen := map[uint64]bool{}
		for len(out[i]) < rf {
			var best *tserverState
			for _, ts := range live {
				id := ts.rec.GetNodeId()
				if chosen[id] {
					continue
				}
				if best == nil {
					best = ts
					continue
				}
				bz, tz := zones[zoneOf(best)], zones[zoneOf(ts)]
				if bz != tz {
					if bz {
						best = ts
					}
					continue
				}
				if load[id] < load[best.rec.GetNodeId()] {
					best = ts
				}
			}
			id := best.rec.GetNodeId()
			chosen[id], zones[zoneOf(best)] = true, true
			load[id]++
			out[i] = append(out[i], id)
		}
	}
	return out
}

// CreateTable creates a table and its tablets' replicas.
func (m *Master) CreateTable(ctx context.Context, req *pb.CreateTableRequest) (*pb.TableInfo, error) {
	if err := validateTable(req); err != nil {
		return nil, err
	}
	// Right after a master failover no tserver has reached the new leader
	// yet: give heartbeats a moment rather than failing the DDL.
	m.waitLiveTServers(ctx, int(req.GetReplicationFactor()))
	m.ddl.Lock()
	var info *pb.TableInfo
	var created []*pb.TabletLocation
	var b batch
	nowMs := time.Now().UnixMilli()
	err := m.withCatalog(func(c *catalog) error {
		if id, ok := c.byName[tableKey(req.GetNamespace(), req.GetName())]; ok {
			if req.GetIfNotExists() {
				info = c.tables[id]
				return nil
			}
			return fmt.Errorf("%w: table %s.%s", ErrAlreadyExists, req.GetNamespace(), req.GetName())
		}
		rf := int(req.GetReplicationFactor())
		if rf == 0 {
			rf = int(c.config.GetReplicationFactor())
		}
		live := m.liveTServers(c, nowMs)
		if len(live) < rf {
			return fmt.Errorf("%w: %d live tservers for replication factor %d", ErrNotEnoughTServers, len(live), rf)
		}
		part := proto.Clone(req.GetPartitioning()).(*pb.Partitioning)
		if part == nil {
			part = &pb.Partitioning{}
		}
		n := int(part.GetNumTablets())
		if part.GetKind() == pb.Partitioning_RANGE {
			n = len(part.GetSplitPoints()) + 1
		} else if n == 0 {
			n = m.cfg.TabletsPerTServer * len(live)
		}
		part.NumTablets = uint32(n)
		cfg := proto.Clone(c.config).(*pb.ClusterConfig)
		tableID := cfg.GetNextTableId()
		cfg.NextTableId++
		cfg.CatalogVersion++
		descs, err := tabletSpans(tableID, part, n)
		if err != nil {
			return err
		}
		schema := proto.Clone(req.GetSchema()).(*pb.Schema)
		if schema.GetVersion() == 0 {
			schema.Version = 1
		}
		info = &pb.TableInfo{TableId: tableID, Namespace: req.GetNamespace(), Name: req.GetName(), Schema: schema,
			Partitioning: part, ReplicationFactor: int32(rf), SqlMetadata: req.GetSqlMetadata()}
		placement := placeReplicas(c, live, rf, n)
		for i, d := range descs {
			d.TabletId = cfg.GetNextTabletId()
			cfg.NextTabletId++
			loc := &pb.TabletLocation{Tablet: d}
			for _, node := range placement[i] {
				loc.Replicas = append(loc.Replicas, &pb.Replica{NodeId: node, Addr: c.tservers[node].rec.GetRpcAddr()})
			}
			created = append(created, loc)
			b.put(kindTablet, d.GetTabletId(), loc)
		}
		b.put(kindTable, uint64(tableID), info)
		b.put(kindConfig, 0, cfg)
		return nil
	})
	if err == nil && len(created) > 0 {
		err = m.commit(ctx, &b, func(c *catalog) {
			c.config = proto.Clone(c.config).(*pb.ClusterConfig)
			c.config.NextTableId = info.GetTableId() + 1
			c.config.NextTabletId = created[len(created)-1].GetTablet().GetTabletId() + 1
			c.config.CatalogVersion++
			c.tables[info.GetTableId()] = info
			c.byName[tableKey(info.GetNamespace(), info.GetName())] = info.GetTableId()
			for _, t := range created {
				c.tablets[t.GetTablet().GetTabletId()] = t
			}
		})
	}
	m.ddl.Unlock()
	if err != nil {
		return nil, err
	}
	// The replicas are created on the master's own context: a caller that
	// gives up (a table of thousands of tablets takes a while) must not
	// leave tablets that exist in the catalog but on no tserver.
	done := make(chan struct{})
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer close(done)
		cctx, cancel := context.WithTimeout(m.ctx, 10*time.Minute)
		defer cancel()
		m.createReplicas(cctx, created)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return info, nil
}

// maxParallelCreates bounds the CreateTablet RPCs in flight for one DDL.
const maxParallelCreates = 64

// waitLiveTServers waits, up to TServerDeadAfter, until rf tservers (0:
// the cluster's factor) are live.
func (m *Master) waitLiveTServers(ctx context.Context, rf int) {
	deadline := time.Now().Add(m.cfg.TServerDeadAfter)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		enough := true
		_ = m.withCatalog(func(c *catalog) error {
			want := rf
			if want == 0 {
				want = int(c.config.GetReplicationFactor())
			}
			enough = len(m.liveTServers(c, time.Now().UnixMilli())) >= want
			return nil
		})
		if enough {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// createReplicas asks every replica's tserver to create its tablet, in
// parallel. A replica that cannot be created now is repaired later by the
// balancer (the tablet has a majority elsewhere, or waits for it).
//
// The first voter of a tablet campaigns as soon as its replica exists
// (tserver.CreateTablet), so it is created last: created together with
// the others, its vote requests could reach a tserver before that one had
// the tablet and were dropped, and the tablet then waited an election
// timeout (1-2 s) for a leader.
func (m *Master) createReplicas(ctx context.Context, tablets []*pb.TabletLocation) {
	type create struct {
		addr string
		req  *tspb.CreateTabletRequest
	}
	var others, firsts []create
	for _, t := range tablets {
		voters := make([]uint64, 0, len(t.GetReplicas()))
		addrs := map[uint64]string{}
		for _, r := range t.GetReplicas() {
			voters = append(voters, r.GetNodeId())
			addrs[r.GetNodeId()] = r.GetAddr()
		}
		// Rotated by tablet id, so that a new table's leaders start
		// spread over its tservers.
		if k := int(t.GetTablet().GetTabletId() % uint64(max(len(voters), 1))); k > 0 {
			voters = append(append([]uint64(nil), voters[k:]...), voters[:k]...)
		}
		req := &tspb.CreateTabletRequest{Tablet: t.GetTablet(), Voters: voters, PeerAddrs: addrs}
		for _, r := range t.GetReplicas() {
			c := create{addr: r.GetAddr(), req: req}
			if r.GetNodeId() == voters[0] {
				firsts = append(firsts, c)
			} else {
				others = append(others, c)
			}
		}
	}
	sem := make(chan struct{}, maxParallelCreates)
	for _, wave := range [][]create{others, firsts} {
		var wg sync.WaitGroup
		for _, c := range wave {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				err := m.tserverCall(ctx, c.addr, func(ctx context.Context, tc tspb.TabletServerClient) (*tspb.TabletError, error) {
					resp, err := tc.CreateTablet(ctx, c.req)
					return resp.GetError(), err
				})
				if err != nil {
					m.log.Warn("master: create replica", "tablet", c.req.GetTablet().GetTabletId(), "addr", c.addr, "err", err)
				}
			}()
		}
		wg.Wait()
	}
}

// tserverCall calls a tserver with a few quick retries on transport errors.
func (m *Master) tserverCall(ctx context.Context, addr string, call func(context.Context, tspb.TabletServerClient) (*tspb.TabletError, error)) error {
	cc, err := m.pool.Conn(addr)
	if err != nil {
		return err
	}
	client := tspb.NewTabletServerClient(cc)
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		terr, err := call(cctx, client)
		cancel()
		if err == nil && terr.GetCode() == tspb.TabletError_OK {
			return nil
		}
		if err == nil {
			return fmt.Errorf("%s: %s", terr.GetCode(), terr.GetMessage())
		}
		last = err
		if ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(50<<attempt) * time.Millisecond)
	}
	return last
}

// DropTable removes a table from the catalog; its replicas are deleted
// right away where reachable, and by heartbeat cleanup otherwise.
func (m *Master) DropTable(ctx context.Context, req *pb.DropTableRequest) error {
	m.ddl.Lock()
	var info *pb.TableInfo
	var tablets []*pb.TabletLocation
	var b batch
	err := m.withCatalog(func(c *catalog) error {
		id, ok := c.byName[tableKey(req.GetNamespace(), req.GetName())]
		if !ok {
			if req.GetIfExists() {
				return nil
			}
			return fmt.Errorf("%w: table %s.%s", ErrNotFound, req.GetNamespace(), req.GetName())
		}
		info = c.tables[id]
		tablets = c.tabletsOf(id)
		for _, t := range tablets {
			b.del(kindTablet, t.GetTablet().GetTabletId())
		}
		b.del(kindTable, uint64(id))
		bumpCatalogVersion(c, &b)
		return nil
	})
	if err == nil && info != nil {
		err = m.commit(ctx, &b, func(c *catalog) {
			c.config = proto.Clone(c.config).(*pb.ClusterConfig)
			c.config.CatalogVersion++
			delete(c.tables, info.GetTableId())
			delete(c.byName, tableKey(info.GetNamespace(), info.GetName()))
			for _, t := range tablets {
				delete(c.tablets, t.GetTablet().GetTabletId())
			}
		})
	}
	m.ddl.Unlock()
	if err != nil || info == nil {
		return err
	}
	m.deleteReplicas(ctx, tablets)
	return nil
}

// deleteReplicas asks every replica of the tablets of a dropped table to
// delete its copy (best effort: a replica that misses the call finds its
// tablet gone from the catalog at its next heartbeat).
func (m *Master) deleteReplicas(ctx context.Context, tablets []*pb.TabletLocation) {
	var wg sync.WaitGroup
	for _, t := range tablets {
		for _, r := range t.GetReplicas() {
			wg.Add(1)
			go func(id uint64, addr string) {
				defer wg.Done()
				_ = m.tserverCall(ctx, addr, func(ctx context.Context, c tspb.TabletServerClient) (*tspb.TabletError, error) {
					resp, err := c.DeleteTablet(ctx, &tspb.DeleteTabletRequest{TabletId: id})
					return resp.GetError(), err
				})
			}(t.GetTablet().GetTabletId(), r.GetAddr())
		}
	}
	wg.Wait()
}
