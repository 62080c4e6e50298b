package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/rpc"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// Config configures a Client.
type Config struct {
	// Masters are master RPC addresses (host:port); at least one.
	Masters []string
	// Pool is the connection pool to share; nil: the client makes its own
	// and closes it on Close.
	Pool *rpc.Pool
	// Timeout is the deadline of an operation whose context has none (or
	// a later one). Default 10 s.
	Timeout time.Duration
	// AttemptTimeout bounds one RPC attempt inside an operation, so that a
	// hung node costs a retry rather than the whole deadline. Default 3 s.
	AttemptTimeout time.Duration
	// LeaseProbeAfter: an attempt at a tablet's leader unanswered this
	// long makes the client ask the tablet's other replicas whether one
	// of them holds the lease now; if one does, the attempt is given up
	// (as a timed-out one would be) and the request goes there, instead
	// of waiting out AttemptTimeout on a hung or cut-off leader. Default
	// 1 s; negative: never.
	LeaseProbeAfter time.Duration
	// Clock is the client's hybrid clock; nil: a new wall clock.
	Clock *hlc.Clock
	// Local, when set, serves the data calls to LocalAddr (the tserver
	// address of the node the client runs in) in process: a gateway's
	// calls to the tablets its own node leads skip the loopback
	// connection (a gRPC frame each way, its marshalling and syscalls).
	Local     LocalServer
	LocalAddr string
}

// LocalServer serves data requests in process: a node's own tserver. It
// answers as the data stream would (errors of the call inside the
// response; an error of its own, such as Unavailable once the node
// stops, as a failed call); it may keep no reference to req once it
// returns.
type LocalServer interface {
	ServeData(ctx context.Context, req *tspb.DataRequest) (*tspb.DataResponse, error)
}

// EarlyServer is a LocalServer that answers a pipelined TxnWrite twice
// (tspb.DataRequest.pipelined): early gets the provisional answer once the
// write is proposed, and the final answer is returned. A LocalServer
// without it has its pipelined writes run as plain ones.
type EarlyServer interface {
	ServeDataEarly(ctx context.Context, req *tspb.DataRequest, early func(*tspb.DataResponse)) (*tspb.DataResponse, error)
}

// Client is a connection to a cluster: DDL through the master leader, and
// data operations routed to tablet leaders through the meta cache. It is
// safe for concurrent use.
type Client struct {
	cfg     Config
	pool    *rpc.Pool
	ownPool bool
	masters *Masters
	clock   *hlc.Clock
	cache   *metaCache
	// followerOffUntil (unix ns): follower reads were refused as
	// unsupported; read at leaders until then.
	followerOffUntil atomic.Int64
	data             dataConns // data streams to tservers
	status           statusTable
	resolves         resolveQueues // APPLY notifications waiting for a call to ride on
	leaseMoves       atomic.Int64  // Stats.LeaseMoves
}

// Open returns a client of the cluster whose masters are cfg.Masters and
// checks that a master leader answers within ctx.
func Open(ctx context.Context, cfg Config) (*Client, error) {
	if len(cfg.Masters) == 0 {
		return nil, errors.New("client: no master addresses")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.AttemptTimeout <= 0 {
		cfg.AttemptTimeout = 3 * time.Second
	}
	if cfg.LeaseProbeAfter == 0 {
		cfg.LeaseProbeAfter = time.Second
	}
	c := &Client{cfg: cfg, pool: cfg.Pool, clock: cfg.Clock}
	if c.pool == nil {
		c.pool, c.ownPool = rpc.NewPool(), true
	}
	if c.clock == nil {
		c.clock = hlc.NewClock(nil, 0)
	}
	c.masters = NewMasters(c.pool, cfg.Masters)
	c.cache = newMetaCache(c.getTable)
	if err := c.masterCall(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
		r, err := mc.ListMasters(ctx, &masterpb.ListMastersRequest{})
		return r.GetError(), err
	}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close releases the client's connections (if it owns its pool).
func (c *Client) Close() {
	c.flushAllResolves()
	c.closeData()
	if c.ownPool {
		c.pool.Close()
	}
}

// Clock is the client's hybrid clock.
func (c *Client) Clock() *hlc.Clock { return c.clock }

// Masters is the client's master caller (for operator RPCs).
func (c *Client) Masters() *Masters { return c.masters }

// opContext applies the default deadline unless ctx has an earlier one.
func (c *Client) opContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return c.opContextFor(ctx, 0)
}

// opContextFor is opContext for an operation that may take extra time
// beyond the default (sizeAllowance).
func (c *Client) opContextFor(ctx context.Context, extra time.Duration) (context.Context, context.CancelFunc) {
	d := time.Now().Add(c.cfg.Timeout + extra)
	if dl, ok := ctx.Deadline(); ok && !dl.After(d) {
		return ctx, func() {}
	}
	oc := newOpCtx(ctx, d)
	return oc, oc.release
}

func (c *Client) masterCall(ctx context.Context, f func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error)) error {
	ctx, cancel := c.opContext(ctx)
	defer cancel()
	return c.masters.Call(ctx, f)
}

// observe folds a server's hybrid time into the client clock. A server
// further ahead than the maximum offset is not followed.
func (c *Client) observe(t uint64) {
	if t != 0 {
		_ = c.clock.Update(hlc.Timestamp(t))
	}
}

func (c *Client) now() uint64 { return uint64(c.clock.Now()) }

// getTable is the meta cache's master lookup.
func (c *Client) getTable(ctx context.Context, req *masterpb.GetTableRequest) (*masterpb.GetTableResponse, error) {
	var resp *masterpb.GetTableResponse
	err := c.masterCall(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
		r, err := mc.GetTable(ctx, req)
		resp = r
		return r.GetError(), err
	})
	if IsCode(err, masterpb.MasterError_NOT_FOUND) {
		name := tableName(req.GetNamespace(), req.GetName())
		if req.GetTableId() != 0 {
			name = ""
		}
		return nil, &Error{Code: CodeTableNotFound, Table: name, Err: err}
	}
	return resp, err
}

// CreateTable creates a table (DDL passthrough to the master leader).
func (c *Client) CreateTable(ctx context.Context, req *masterpb.CreateTableRequest) (*masterpb.TableInfo, error) {
	var info *masterpb.TableInfo
	attempts := 0
	err := c.masterCall(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
		attempts++
		r, err := mc.CreateTable(ctx, req)
		info = r.GetTable()
		return r.GetError(), err
	})
	if err != nil && attempts > 1 && IsCode(err, masterpb.MasterError_ALREADY_EXISTS) {
		// A retry after an attempt whose answer was lost may find the
		// table that attempt created: that is success, not a clash.
		if mine, ok := c.createdByRequest(ctx, req); ok {
			info, err = mine, nil
		}
	}
	if err != nil {
		return nil, err
	}
	c.cache.forgetName(req.GetNamespace(), req.GetName())
	return info, nil
}

// createdByRequest returns the table req names if it is the one req
// describes (same schema and SQL metadata).
func (c *Client) createdByRequest(ctx context.Context, req *masterpb.CreateTableRequest) (*masterpb.TableInfo, bool) {
	r, err := c.getTable(ctx, &masterpb.GetTableRequest{Namespace: req.GetNamespace(), Name: req.GetName()})
	if err != nil {
		return nil, false
	}
	t := r.GetTable()
	if !bytes.Equal(t.GetSqlMetadata(), req.GetSqlMetadata()) || !sameColumns(t.GetSchema(), req.GetSchema()) {
		return nil, false
	}
	return t, true
}

// sameColumns compares two schemas' columns by id, name and type.
func sameColumns(a, b *masterpb.Schema) bool {
	ac, bc := a.GetColumns(), b.GetColumns()
	if len(ac) != len(bc) {
		return false
	}
	for i := range ac {
		if ac[i].GetId() != bc[i].GetId() || ac[i].GetName() != bc[i].GetName() || ac[i].GetType() != bc[i].GetType() {
			return false
		}
	}
	return true
}

// DropTable drops a table; with ifExists a missing table is no error.
func (c *Client) DropTable(ctx context.Context, namespace, name string, ifExists bool) error {
	c.cache.forgetName(namespace, name)
	return c.masterCall(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
		r, err := mc.DropTable(ctx, &masterpb.DropTableRequest{Namespace: namespace, Name: name, IfExists: ifExists})
		return r.GetError(), err
	})
}

// ListTables lists every table.
func (c *Client) ListTables(ctx context.Context) ([]*masterpb.TableInfo, error) {
	var out []*masterpb.TableInfo
	err := c.masterCall(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
		r, err := mc.ListTables(ctx, &masterpb.ListTablesRequest{})
		out = r.GetTables()
		return r.GetError(), err
	})
	return out, err
}

// Table is an open table: its schema and a handle on its locations. A
// Table stays bound to the table it opened; once that table is dropped its
// operations fail with CodeTableNotFound, and OpenTable finds a new table
// of the same name.
type Table struct {
	c      *Client
	id     uint32
	name   string // namespace.name
	info   *masterpb.TableInfo
	schema *Schema
}

// OpenTable opens a table by name, from the meta cache when it is there.
func (c *Client) OpenTable(ctx context.Context, namespace, name string) (*Table, error) {
	ctx, cancel := c.opContext(ctx)
	defer cancel()
	m, err := c.cache.byName(ctx, namespace, name)
	if err != nil {
		if e, ok := err.(*Error); ok && e.Table == "" {
			cp := *e // shared by the callers of one lookup
			cp.Op, cp.Table = "open", tableName(namespace, name)
			return nil, &cp
		}
		return nil, err
	}
	s, err := newSchema(m.info.GetSchema())
	if err != nil {
		return nil, err
	}
	return &Table{c: c, id: m.info.GetTableId(), name: tableName(namespace, name), info: m.info, schema: s}, nil
}

// OpenTableAs opens namespace.name as the table with id, which the
// caller's catalog names so (0: any). A cached table of that name with another id
// (dropped and created again through another client) is forgotten and the
// name looked up again; if the master's table of that name is still not
// id, the caller's catalog is the stale one: CodeTableNotFound.
func (c *Client) OpenTableAs(ctx context.Context, namespace, name string, id uint32) (*Table, error) {
	t, err := c.OpenTable(ctx, namespace, name)
	if err != nil || t.id == id || id == 0 {
		return t, err
	}
	c.cache.forgetName(namespace, name)
	if t, err = c.OpenTable(ctx, namespace, name); err != nil || t.id == id {
		return t, err
	}
	return nil, &Error{Code: CodeTableNotFound, Op: "open", Table: tableName(namespace, name),
		Message: fmt.Sprintf("table id %d was dropped (the name is table %d now)", id, t.id)}
}

// OpenTableAt is OpenTableAs for a caller whose catalog has the table at
// schema version (at least) version: a cached entry of an older version
// (the table altered through another client: a column added, a column
// rewritten) is looked up again. Before, this client went on writing and
// reading with the old columns ("unknown column").
func (c *Client) OpenTableAt(ctx context.Context, namespace, name string, id, version uint32) (*Table, error) {
	t, err := c.OpenTableAs(ctx, namespace, name, id)
	if err != nil || t.schema.Version >= version {
		return t, err
	}
	c.cache.forget(t.id)
	return c.OpenTableAs(ctx, namespace, name, id)
}

// ID is the table's id.
func (t *Table) ID() uint32 { return t.id }

// Name is namespace.name.
func (t *Table) Name() string { return t.name }

// Info is the table's catalog entry as opened.
func (t *Table) Info() *masterpb.TableInfo { return t.info }

// Schema is the table's schema.
func (t *Table) Schema() *Schema { return t.schema }

// IsHash reports whether the table is hash-partitioned.
func (t *Table) IsHash() bool { return len(t.schema.HashKey) > 0 }

// Stats are counters of a client's work.
type Stats struct {
	// TableLoads counts table location lookups at the master.
	TableLoads int64
	// LeaseMoves counts attempts given up because, asked while the
	// attempt went unanswered, another replica held the lease
	// (Config.LeaseProbeAfter).
	LeaseMoves int64
}

// Stats returns the client's counters.
func (c *Client) Stats() Stats {
	return Stats{TableLoads: c.cache.loads.Load(), LeaseMoves: c.leaseMoves.Load()}
}
