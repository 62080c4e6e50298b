package client

import (
	"bytes"
	"context"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/shaledb/shaledb/internal/master/masterpb"
)

// The meta cache maps a table to its tablets (sorted by span start), and
// each tablet to its replicas and last known leader, in the manner of
// tikv's RegionCache. Locations are immutable snapshots (tableMeta) that a
// reload replaces whole; only a tablet's leader changes in place, as
// NOT_LEADER hints and successful answers reveal it. Concurrent reloads of
// one table share one master call.

// replica is one replica of a tablet.
type replica struct {
	node uint64
	addr string
}

// tabletMeta is one tablet of a tableMeta.
type tabletMeta struct {
	id         uint64
	start, end []byte // [start, end); end nil: unbounded
	replicas   []replica
	leader     atomic.Pointer[replica] // nil: unknown
}

func (tm *tabletMeta) contains(key []byte) bool {
	return bytes.Compare(key, tm.start) >= 0 && (tm.end == nil || bytes.Compare(key, tm.end) < 0)
}

// setLeader records node (at addr, or at the address of that replica) as
// the leader.
func (tm *tabletMeta) setLeader(node uint64, addr string) {
	for i := range tm.replicas {
		r := &tm.replicas[i]
		if (node != 0 && r.node == node) || (node == 0 && addr != "" && r.addr == addr) {
			if addr == "" || addr == r.addr {
				tm.leader.Store(r)
				return
			}
		}
	}
	if addr != "" {
		// A replica the cached locations do not know yet (moved here).
		tm.leader.Store(&replica{node: node, addr: addr})
	}
}

// tableMeta is one snapshot of a table's locations.
type tableMeta struct {
	info    *masterpb.TableInfo
	tablets []*tabletMeta // sorted by start
}

// firstEndingAfter returns the index of the first tablet whose end is above
// key (len(tablets) if none).
func (m *tableMeta) firstEndingAfter(key []byte) int {
	return sort.Search(len(m.tablets), func(i int) bool {
		e := m.tablets[i].end
		return e == nil || bytes.Compare(e, key) > 0
	})
}

// locate returns the tablet holding key, or nil.
func (m *tableMeta) locate(key []byte) *tabletMeta {
	i := m.firstEndingAfter(key)
	if i < len(m.tablets) && m.tablets[i].contains(key) {
		return m.tablets[i]
	}
	return nil
}

// lastStartingBefore returns the index of the last tablet whose start is
// below end (nil: unbounded), or -1.
func (m *tableMeta) lastStartingBefore(end []byte) int {
	if end == nil {
		return len(m.tablets) - 1
	}
	return sort.Search(len(m.tablets), func(i int) bool { return bytes.Compare(m.tablets[i].start, end) >= 0 }) - 1
}

func newTableMeta(resp *masterpb.GetTableResponse) *tableMeta {
	m := &tableMeta{info: resp.GetTable()}
	for _, loc := range resp.GetTablets() {
		d := loc.GetTablet()
		tm := &tabletMeta{id: d.GetTabletId(), start: d.GetSpan().GetStart(), end: d.GetSpan().GetEnd()}
		if len(tm.end) == 0 {
			tm.end = nil
		}
		for _, r := range loc.GetReplicas() {
			if r.GetRole() == masterpb.Replica_VOTER {
				tm.replicas = append(tm.replicas, replica{node: r.GetNodeId(), addr: r.GetAddr()})
			}
		}
		if l := loc.GetLeaderNode(); l != 0 {
			for i := range tm.replicas {
				if tm.replicas[i].node == l {
					tm.leader.Store(&tm.replicas[i])
				}
			}
		}
		m.tablets = append(m.tablets, tm)
	}
	sort.Slice(m.tablets, func(i, j int) bool { return bytes.Compare(m.tablets[i].start, m.tablets[j].start) < 0 })
	return m
}

// loadCall is one master lookup that concurrent callers share.
type loadCall struct {
	done chan struct{}
	meta *tableMeta
	err  error
}

// wait returns the lookup's outcome, or ctx's error if ctx ends first.
func (c *loadCall) wait(ctx context.Context) (*tableMeta, error) {
	select {
	case <-c.done:
		return c.meta, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type cacheEntry struct {
	meta *tableMeta
	load *loadCall
}

// metaCache holds the locations of the tables in use, by table id, and
// the ids of table names.
type metaCache struct {
	load func(ctx context.Context, req *masterpb.GetTableRequest) (*masterpb.GetTableResponse, error)

	mu struct {
		sync.Mutex
		byID      map[uint32]*cacheEntry
		byName    map[string]uint32
		nameLoads map[string]*loadCall
	}
	// loads counts master lookups (for tests).
	loads atomic.Int64
}

func newMetaCache(load func(ctx context.Context, req *masterpb.GetTableRequest) (*masterpb.GetTableResponse, error)) *metaCache {
	mc := &metaCache{load: load}
	mc.mu.byID = map[uint32]*cacheEntry{}
	mc.mu.byName = map[string]uint32{}
	mc.mu.nameLoads = map[string]*loadCall{}
	return mc
}

func tableName(ns, name string) string { return ns + "." + name }

// byName returns the cached locations of a table by name, loading them on
// a miss (once for all concurrent callers).
func (mc *metaCache) byName(ctx context.Context, ns, name string) (*tableMeta, error) {
	key := tableName(ns, name)
	mc.mu.Lock()
	if id, ok := mc.mu.byName[key]; ok && mc.mu.byID[id] != nil && mc.mu.byID[id].meta != nil {
		m := mc.mu.byID[id].meta
		mc.mu.Unlock()
		return m, nil
	}
	call := mc.mu.nameLoads[key]
	if call == nil {
		call = &loadCall{done: make(chan struct{})}
		mc.mu.nameLoads[key] = call
		go mc.loadName(ctx, ns, name, call)
	}
	mc.mu.Unlock()
	return call.wait(ctx)
}

func (mc *metaCache) loadName(ctx context.Context, ns, name string, call *loadCall) {
	lctx, cancel := detached(ctx)
	defer cancel()
	resp, err := mc.fetch(lctx, &masterpb.GetTableRequest{Namespace: ns, Name: name})
	key := tableName(ns, name)
	mc.mu.Lock()
	defer mc.mu.Unlock()
	delete(mc.mu.nameLoads, key)
	defer close(call.done)
	if err != nil {
		call.err = err
		return
	}
	m := newTableMeta(resp)
	id := m.info.GetTableId()
	e := mc.mu.byID[id]
	if e == nil {
		e = &cacheEntry{}
		mc.mu.byID[id] = e
	}
	if e.meta == nil {
		e.meta = m
	}
	mc.mu.byName[key] = id
	call.meta = e.meta
}

// detached is ctx without its cancellation but with its deadline: a shared
// lookup outlives the caller that started it (others may wait on it).
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	lctx := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(lctx, dl)
	}
	return lctx, func() {}
}

// get returns the locations of table id: the cached ones unless they are
// stale (the snapshot a caller found wanting), in which case it reloads
// them from the master, once for all concurrent callers.
func (mc *metaCache) get(ctx context.Context, id uint32, stale *tableMeta) (*tableMeta, error) {
	mc.mu.Lock()
	e := mc.mu.byID[id]
	if e == nil {
		e = &cacheEntry{}
		mc.mu.byID[id] = e
	}
	if e.meta != nil && e.meta != stale {
		m := e.meta
		mc.mu.Unlock()
		return m, nil
	}
	call := e.load
	if call == nil {
		call = &loadCall{done: make(chan struct{})}
		e.load = call
		go mc.reload(ctx, id, e, call)
	}
	mc.mu.Unlock()
	return call.wait(ctx)
}

// reload runs one shared lookup of a table's locations.
func (mc *metaCache) reload(ctx context.Context, id uint32, e *cacheEntry, call *loadCall) {
	lctx, cancel := detached(ctx)
	defer cancel()
	resp, err := mc.fetch(lctx, &masterpb.GetTableRequest{TableId: id})
	mc.mu.Lock()
	if err == nil {
		call.meta = newTableMeta(resp)
		e.meta = call.meta
	} else {
		call.err = err
		if IsTableNotFound(err) {
			mc.forgetLocked(id)
		}
	}
	e.load = nil
	mc.mu.Unlock()
	close(call.done)
}

func (mc *metaCache) fetch(ctx context.Context, req *masterpb.GetTableRequest) (*masterpb.GetTableResponse, error) {
	mc.loads.Add(1)
	resp, err := mc.load(ctx, req)
	if err != nil {
		return nil, err
	}
	if resp.GetTable().GetState() == masterpb.TableInfo_DELETING {
		return nil, &Error{Code: CodeTableNotFound, Table: tableName(resp.GetTable().GetNamespace(), resp.GetTable().GetName()),
			Message: "the table is being dropped"}
	}
	return resp, nil
}

// forgetLocked drops a table (dropped, or found missing) from the cache.
func (mc *metaCache) forgetLocked(id uint32) {
	delete(mc.mu.byID, id)
	for name, x := range mc.mu.byName {
		if x == id {
			delete(mc.mu.byName, name)
		}
	}
}

// forgetName drops a table from the cache by name.
func (mc *metaCache) forgetName(ns, name string) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	if id, ok := mc.mu.byName[tableName(ns, name)]; ok {
		mc.forgetLocked(id)
	}
}

// forget drops a table from the cache by id (its schema changed).
func (mc *metaCache) forget(id uint32) {
	mc.mu.Lock()
	defer mc.mu.Unlock()
	mc.forgetLocked(id)
}
