package client

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/shaledb/shaledb/internal/docdb"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// OpKind is the kind of a write Op.
type OpKind int

// Write kinds.
const (
	// OpPut inserts or replaces the given columns and writes the row's
	// liveness marker (an upsert, as CQL INSERT). Every key column is
	// required; absent non-key columns are left as they are.
	OpPut OpKind = iota + 1
	// OpUpdate writes the given columns only (UPDATE): it writes no
	// liveness marker.
	OpUpdate
	// OpDelete deletes the row named by the key columns.
	OpDelete
	// OpInsert writes the row as OpPut does, but only if it does not
	// exist (SQL INSERT): the tablet checks it under the row's lock, and a
	// row that exists (committed, or written earlier by the same
	// transaction or batch) fails the op's tablet batch with
	// CodeDuplicateKey, naming the op (DuplicateIndex).
	OpInsert
	// OpAdd adds to integer columns of a row that exists (SQL UPDATE ...
	// SET c = c + x): Row holds the key columns and, for each column to
	// change, the delta as an Int64 value. The tablet leader reads the row
	// under its lock and writes the sums, so the caller needs no read of
	// its own; the transaction learns the sums and reads them back as its
	// own writes. An add whose row does not exist writes nothing;
	// Txn.ApplyMissing and Table.ApplyExisting report it. A NULL column
	// stays NULL; a sum outside the column's type fails the op's tablet
	// batch with CodeOutOfRange. Outside a transaction only through
	// Table.ApplyExisting, whose requests apply at most once however often
	// they are retried.
	OpAdd
)

var opNames = [...]string{"", "put", "update", "delete", "insert", "add"}

// Op is one write of Apply. A NULL value deletes that column.
type Op struct {
	Kind OpKind
	Row  Row
	// TTL, if positive, makes every value the op writes expire after it.
	TTL time.Duration
}

// WriteOption modifies a single-row write.
type WriteOption func(*Op)

// WithTTL sets the time to live of the values a write writes.
func WithTTL(ttl time.Duration) WriteOption { return func(op *Op) { op.TTL = ttl } }

// Put inserts or replaces a row (an upsert); see OpPut.
func (t *Table) Put(ctx context.Context, row Row, opts ...WriteOption) error {
	return t.applyOne(ctx, Op{Kind: OpPut, Row: row}, opts)
}

// Update writes some columns of a row; see OpUpdate.
func (t *Table) Update(ctx context.Context, row Row, opts ...WriteOption) error {
	return t.applyOne(ctx, Op{Kind: OpUpdate, Row: row}, opts)
}

// Delete deletes the row with key's key columns.
func (t *Table) Delete(ctx context.Context, key Row, opts ...WriteOption) error {
	return t.applyOne(ctx, Op{Kind: OpDelete, Row: key}, opts)
}

func (t *Table) applyOne(ctx context.Context, op Op, opts []WriteOption) error {
	for _, o := range opts {
		o(&op)
	}
	return t.apply(ctx, opNames[op.Kind], []Op{op})
}

// Apply runs a batch of writes: it groups them by tablet and sends one
// Write per tablet, in parallel. The ops of one tablet apply atomically, in
// order; there is no atomicity across tablets. Writes are idempotent, so a
// failed or ambiguous attempt is retried until the deadline; an error that
// IsAmbiguous leaves open which ops applied.
func (t *Table) Apply(ctx context.Context, ops []Op) error {
	return t.apply(ctx, "apply", ops)
}

// keyedOps are the DocDB ops of one Op, with its row key.
type keyedOps struct {
	key []byte
	ops []docdb.WriteOp
}

func (t *Table) prepare(op Op) (keyedOps, error) {
	key, err := t.RowKey(op.Row)
	if err != nil {
		return keyedOps{}, err
	}
	if op.TTL < 0 {
		return keyedOps{}, invalidf("negative TTL %v", op.TTL)
	}
	k := keyedOps{key: key}
	switch op.Kind {
	case OpPut, OpUpdate, OpInsert:
		vals, nulls, err := t.columnValues(op.Row)
		if err != nil {
			return keyedOps{}, err
		}
		kind := docdb.OpPutRow
		if op.Kind == OpInsert {
			kind = docdb.OpInsertRow
		}
		if op.Kind == OpUpdate {
			kind = docdb.OpPutColumns
			if len(vals) == 0 && len(nulls) == 0 {
				return keyedOps{}, invalidf("update sets no column")
			}
		}
		if kind != docdb.OpPutColumns || len(vals) > 0 {
			k.ops = append(k.ops, docdb.WriteOp{Kind: kind, RowKey: key, Columns: vals, TTL: op.TTL})
		}
		if len(nulls) > 0 {
			k.ops = append(k.ops, docdb.WriteOp{Kind: docdb.OpDeleteColumns, RowKey: key, Columns: nulls})
		}
	case OpAdd:
		var deltas []docdb.ColumnValue
		for name, v := range op.Row {
			c, ok := t.schema.byName[name]
			switch {
			case !ok:
				return keyedOps{}, invalidf("unknown column %q", name)
			case c.IsKey():
				continue
			case c.Type != docdb.TypeInt16 && c.Type != docdb.TypeInt32 && c.Type != docdb.TypeInt64:
				return keyedOps{}, invalidf("add to column %q of type %s: integers only", name, c.Type)
			case v.Type != docdb.TypeInt64:
				return keyedOps{}, invalidf("add to column %q: the delta must be an int64, not %s", name, v.Type)
			}
			deltas = append(deltas, docdb.ColumnValue{ID: c.ID, Value: v})
		}
		if len(deltas) == 0 {
			return keyedOps{}, invalidf("add changes no column")
		}
		sort.Slice(deltas, func(i, j int) bool { return deltas[i].ID < deltas[j].ID })
		k.ops = append(k.ops, docdb.WriteOp{Kind: docdb.OpAddColumns, RowKey: key, Columns: deltas, TTL: op.TTL})
	case OpDelete:
		for name := range op.Row {
			if c, ok := t.schema.byName[name]; !ok || !c.IsKey() {
				return keyedOps{}, invalidf("delete takes key columns only, not %q", name)
			}
		}
		k.ops = append(k.ops, docdb.WriteOp{Kind: docdb.OpDeleteRow, RowKey: key, TTL: op.TTL})
	default:
		return keyedOps{}, invalidf("unknown op kind %d", op.Kind)
	}
	if n := k.size(); n > MaxRowBytes {
		return keyedOps{}, &Error{Code: CodeTooLarge, Message: fmt.Sprintf("row is too big: size %d, maximum size %d", n, MaxRowBytes)}
	}
	return k, nil
}

// MaxRowBytes bounds what one row's write may carry. Requests and Raft
// entries hold whole rows, and RPC messages are at most rpc.MaxMessageSize
// (64 MiB): a larger row failed on every attempt until the deadline, as a
// timeout. Transactional writes split their requests by size
// (maxRequestBytes), and a scan page holds a few MiB of rows
// (tablet.ScanPageBytes) plus at most one row.
const MaxRowBytes = 32 << 20

// size is about the bytes k's ops take in a request.
func (k *keyedOps) size() int {
	n := 0
	for i := range k.ops {
		n += k.ops[i].Size()
	}
	return n
}

// ApplyExisting applies ops to rows that exist, SQL's UPDATE and DELETE
// outside a transaction: its updates (OpUpdate), adds (OpAdd) and deletes
// (OpDelete) of a row that does not exist write nothing, and it returns
// their indexes (into ops). Inserts (OpInsert) fail on an existing row as
// Apply's do (CodeDuplicateKey, never CodeAmbiguous: an earlier attempt
// of the request answers for itself). Each tablet's request carries an id of its
// own, the same on every attempt, so that it applies at most once
// (tablet.WriteOnce): an add applied twice would add twice, and a second
// delete would find no row. The ops of one tablet apply atomically, over
// each row's latest committed version: an autocommit UPDATE or DELETE of
// one row is one request to one tablet.
func (t *Table) ApplyExisting(ctx context.Context, ops []Op) ([]int, error) {
	return t.applyOps(ctx, "apply", ops, true)
}

func (t *Table) apply(ctx context.Context, name string, ops []Op) error {
	_, err := t.applyOps(ctx, name, ops, false)
	return err
}

// applyOps is Apply, and ApplyExisting when once is set.
func (t *Table) applyOps(ctx context.Context, name string, ops []Op, once bool) ([]int, error) {
	s := &sender{c: t.c, write: true}
	prepared := make([]keyedOps, 0, len(ops))
	total := 0
	for _, op := range ops {
		if op.Kind == OpAdd && !once {
			return nil, s.finish(ctx, name, t, invalidf("an add (OpAdd) needs a transaction or ApplyExisting"))
		}
		k, err := t.prepare(op)
		if err != nil {
			return nil, s.finish(ctx, name, t, err)
		}
		prepared = append(prepared, k)
		total += k.size()
	}
	if len(prepared) == 0 {
		return nil, nil
	}
	// Large rows take longer (sizeAllowance); the tablets' writes run at
	// once, so each attempt may be as large as the whole.
	s.slack = sizeAllowance(total)
	ctx, cancel := t.c.opContextFor(ctx, 2*s.slack)
	defer cancel()
	missing, err := t.write(ctx, s, prepared, once)
	return missing, s.finish(ctx, name, t, err)
}

// write routes ops to their tablets, one Write per tablet in parallel.
// With once, each request carries a request id and write returns the
// caller's ops that found no row, in order.
func (t *Table) write(ctx context.Context, s *sender, pending []keyedOps, once bool) ([]int, error) {
	keys := make([][]byte, len(pending))
	for i, k := range pending {
		keys[i] = k.key
	}
	var mu sync.Mutex
	var missing []int
	err := t.routeByTablet(ctx, s, keys, func(tab *tabletMeta, idx []int) error {
		var wb docdb.WriteBatch
		var owner []int // the caller's op of each op of wb
		for _, i := range idx {
			wb.Ops = append(wb.Ops, pending[i].ops...)
			for range pending[i].ops {
				owner = append(owner, i)
			}
		}
		batch := wb.Marshal()
		var id []byte
		done := s.plainDuplicate
		if once {
			// One id for every attempt of this request (toTablet retries
			// it as it is); a request routed again is a new one. An
			// attempt whose outcome was unknown answers for itself (its
			// id): a duplicate key is another writer's row.
			id = make([]byte, 16)
			if _, err := crand.Read(id); err != nil {
				return err
			}
			done = func(owner []int, err error) error { return remapDuplicate(err, owner) }
		}
		return done(owner, s.toTablet(ctx, tab, func(ctx context.Context, r *replica) (*tspb.TabletError, error) {
			resp, err := t.c.writeAt(ctx, r.addr, &tspb.WriteRequest{TabletId: tab.id, Batch: batch, ClientTime: t.c.now(), RequestId: id})
			if err != nil {
				return nil, err
			}
			t.c.observe(resp.GetServerTime())
			if resp.GetError() == nil {
				mu.Lock()
				for _, i := range resp.GetMissingOps() {
					if int(i) < len(owner) {
						missing = append(missing, owner[i])
					}
				}
				mu.Unlock()
			}
			return resp.GetError(), nil
		}))
	})
	sort.Ints(missing)
	return slices.Compact(missing), err
}

// routeByTablet groups the items named by keys (row keys) by tablet and
// calls send once per tablet, in parallel, with the items' indexes in
// order; the items of a tablet that proved stale (*rerouteError) are
// routed again with fresh locations.
func (t *Table) routeByTablet(ctx context.Context, s *sender, keys [][]byte, send func(tab *tabletMeta, idx []int) error) error {
	pending := make([]int, len(keys))
	for i := range pending {
		pending[i] = i
	}
	var stale *tableMeta
	var b backoff
	for {
		m, err := t.c.cache.get(ctx, t.id, stale)
		if err != nil {
			if IsTableNotFound(err) || ctx.Err() != nil {
				return err
			}
			s.note(err, false)
			if !b.wait(ctx) {
				return ctx.Err()
			}
			continue
		}
		groups := map[*tabletMeta][]int{}
		var order []*tabletMeta
		var next []int
		for _, i := range pending {
			tab := m.locate(keys[i])
			if tab == nil {
				next = append(next, i)
				continue
			}
			if groups[tab] == nil {
				order = append(order, tab)
			}
			groups[tab] = append(groups[tab], i)
		}
		errs := make([]error, len(order))
		switch {
		case len(order) == 1:
			errs[0] = send(order[0], groups[order[0]])
		case s.inOrder:
			slices.SortFunc(order, func(a, b *tabletMeta) int { return bytes.Compare(a.start, b.start) })
			for i, tab := range order {
				if errs[i] = send(tab, groups[tab]); errs[i] != nil {
					var re *rerouteError
					if !errors.As(errs[i], &re) {
						break
					}
				}
			}
		default:
			var wg sync.WaitGroup
			for i, tab := range order {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = send(tab, groups[tab])
				}()
			}
			wg.Wait()
		}
		var first error
		for i, err := range errs {
			var re *rerouteError
			switch {
			case err == nil:
			case errors.As(err, &re):
				next = append(next, groups[order[i]]...)
			case first == nil:
				first = err
			}
		}
		if first != nil {
			return first
		}
		if len(next) == 0 {
			return nil
		}
		pending, stale = next, m
		if !b.wait(ctx) {
			return ctx.Err()
		}
	}
}

// ReadOptions configure a read.
type ReadOptions struct {
	// Columns to return (key columns are always returned); none: all.
	Columns []string
	// FollowerReads lets any replica answer if its data is at most
	// MaxStaleness old (default 10 s); it falls back to the leader when
	// the replica cannot (STALE_FOLLOWER) or does not support it.
	FollowerReads bool
	MaxStaleness  time.Duration
}

func (o *ReadOptions) staleness() uint32 {
	if o.MaxStaleness <= 0 {
		return 10_000
	}
	return uint32(max(o.MaxStaleness.Milliseconds(), 1))
}

// Get reads one row by its key columns; found is false if it does not
// exist.
func (t *Table) Get(ctx context.Context, key Row, columns ...string) (Row, bool, error) {
	return t.Read(ctx, key, ReadOptions{Columns: columns})
}

// Read is Get with options.
func (t *Table) Read(ctx context.Context, key Row, opts ReadOptions) (Row, bool, error) {
	s := &sender{c: t.c}
	rowKey, err := t.RowKey(key)
	if err != nil {
		return nil, false, s.finish(ctx, "get", t, err)
	}
	proj, err := t.projection(opts.Columns)
	if err != nil {
		return nil, false, s.finish(ctx, "get", t, err)
	}
	ctx, cancel := t.c.opContext(ctx)
	defer cancel()
	var resp *tspb.ReadResponse
	read := func(tab *tabletMeta, consistency tspb.ReadConsistency) call {
		return func(ctx context.Context, rep *replica) (*tspb.TabletError, error) {
			r, err := t.c.readAt(ctx, rep.addr, &tspb.ReadRequest{TabletId: tab.id, RowKey: rowKey, Projection: proj,
				Consistency: consistency, MaxStalenessMs: opts.staleness(), ClientTime: t.c.now()})
			if err != nil {
				return nil, err
			}
			t.c.observe(r.GetServerTime())
			resp = r
			return r.GetError(), nil
		}
	}
	followed := false
	if opts.FollowerReads {
		if m, err := t.c.cache.get(ctx, t.id, nil); err == nil {
			if tab := m.locate(rowKey); tab != nil {
				followed = t.c.tryFollower(ctx, s, tab, read(tab, tspb.ReadConsistency_FOLLOWER_BOUNDED_STALENESS))
			}
		}
	}
	if !followed {
		err = t.routeKey(ctx, s, rowKey, func(tab *tabletMeta) call { return read(tab, tspb.ReadConsistency_LEADER) })
		if err != nil {
			return nil, false, s.finish(ctx, "get", t, err)
		}
	}
	if !resp.GetFound() {
		return nil, false, nil
	}
	row, err := t.decodeRow(resp.GetRow())
	if err != nil {
		return nil, false, s.finish(ctx, "get", t, err)
	}
	return row, true, nil
}

// tryFollower makes one follower read attempt at a random replica; false
// means read at the leader instead. A replica that refuses the consistency
// as unsupported turns follower reads off for a minute.
func (c *Client) tryFollower(ctx context.Context, s *sender, tab *tabletMeta, f call) bool {
	if time.Now().UnixNano() < c.followerOffUntil.Load() || len(tab.replicas) == 0 {
		return false
	}
	r := &tab.replicas[rand.IntN(len(tab.replicas))]
	te, err := s.attempt(ctx, nil, r, f)
	if err != nil {
		return false
	}
	switch te.GetCode() {
	case tspb.TabletError_OK:
		return true
	case tspb.TabletError_INVALID_ARGUMENT:
		c.followerOffUntil.Store(time.Now().Add(time.Minute).UnixNano())
	}
	return false
}
