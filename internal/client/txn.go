package client

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
	"github.com/shaledb/shaledb/internal/txn"
)

// Isolation is a transaction's isolation level.
type Isolation int

// Isolation levels.
const (
	// Snapshot: every read sees the snapshot of the transaction's first
	// operation; a write (or row lock) of a row changed after it fails
	// with CodeTxnConflict. PostgreSQL's REPEATABLE READ.
	Snapshot Isolation = iota
	// Serializable: reads take share locks (strict two-phase locking), so
	// write skew cannot happen; reads see the latest committed data once
	// locked. Scans lock the key span they covered (range locks), so no
	// row can appear in it either (no phantoms).
	Serializable
	// ReadCommitted: every statement (StartStatement) reads one snapshot
	// of the latest committed data, fixed by its first read as a snapshot
	// transaction's is; rows read after locking them (GetForUpdate,
	// GetLocked) are their newest versions. Writes never fail for a newer
	// version (last writer wins, as PostgreSQL's READ COMMITTED for blind
	// writes; use GetForUpdate to read-modify-write).
	ReadCommitted
)

func (i Isolation) String() string {
	return [...]string{"SNAPSHOT", "SERIALIZABLE", "READ COMMITTED"}[i]
}

// LockMode is a row lock of GetForUpdate and Lock.
type LockMode = tspb.LockMode

// Row lock modes: PostgreSQL's (tablet.LockMode says what each conflicts
// with).
const (
	ForKeyShare    = tspb.LockMode_LOCK_KEY_SHARE
	ForShare       = tspb.LockMode_LOCK_SHARE
	ForNoKeyUpdate = tspb.LockMode_LOCK_NO_KEY_UPDATE
	ForUpdate      = tspb.LockMode_LOCK_UPDATE
)

// WaitPolicy says what to do when a row is locked or written by another
// pending transaction.
type WaitPolicy = tspb.WaitPolicy

// Wait policies.
const (
	// WaitOnConflict queues behind the other transaction (PostgreSQL's
	// behaviour), with deadlock detection.
	WaitOnConflict = tspb.WaitPolicy_WAIT_ON_CONFLICT
	// NoWait fails with CodeLockNotAvailable.
	NoWait = tspb.WaitPolicy_NO_WAIT
	// SkipLocked leaves locked rows out (Lock only).
	SkipLocked = tspb.WaitPolicy_SKIP_LOCKED
	// FailOnConflict fails with CodeTxnConflict at once (fail-fast).
	FailOnConflict = tspb.WaitPolicy_FAIL_ON_CONFLICT
)

// TxnOptions configure Begin.
type TxnOptions struct {
	Isolation Isolation
	// Wait is the policy of writes (default WaitOnConflict).
	Wait WaitPolicy
	// Pipelined: writes return once proposed, and the transaction awaits
	// their replication where it must (pipeline.go). For transactions of
	// several statements; a single write gains nothing.
	Pipelined bool
}

// heartbeatInterval: how often a transaction with a status record
// heartbeats it (records expire after the node's TxnExpiry without one:
// txn.DefaultExpiry, 5 s, or 2 s in test clusters). A heartbeat that fails
// or times out (heartbeatTimeout: a loaded status tablet, a leader change)
// is retried after heartbeatRetry, so one slow call does not cost the
// transaction its record.
const (
	heartbeatInterval = 500 * time.Millisecond
	heartbeatTimeout  = time.Second
	heartbeatRetry    = 50 * time.Millisecond
)

// Txn is a distributed transaction. Its methods must not be called
// concurrently. Every Txn ends with Commit or Rollback.
type Txn struct {
	c     *Client
	id    docdb.TxnID
	opts  TxnOptions
	begin time.Time

	// readTime: the snapshot, fixed by the first read (or, under snapshot
	// isolation, write) of the transaction, or of the statement under
	// read committed; serializable reads take locks and read the latest.
	readTime    hlc.Timestamp
	globalLimit hlc.Timestamp
	lockedReads bool          // see readLocked
	maxTime     hlc.Timestamp // the latest time the transaction used
	writeID     uint32
	// intents: the transaction has written (or tried to write) intents;
	// from then on it has a heartbeat and a status record (see
	// withRecord), and Commit and Rollback have work to do.
	intents bool
	done    bool
	// participants: tablets with intents, by id.
	participants map[uint64]*tabletMeta
	// writes buffers the transaction's own writes for reading them back;
	// own indexes them by row (positions in writes, in order) and
	// ownTables counts them by table. A read looked through every write
	// for its row: a scan after 80,000 inserts took 30 s (quadratic).
	writes    []ownWrite
	own       map[ownKey][]int
	ownTables map[uint32]int
	// blind: tables the transaction writes without keeping its writes
	// for reading back (Blind).
	blind map[uint32]bool
	// ownUnsure: a write failed, and may have landed: reads ask the server
	// (ownRead would miss it).
	ownUnsure  bool
	savepoints []savepoint
	pipe       pipeline // writes in flight (TxnOptions.Pipelined)

	hbStop context.CancelFunc // stops the heartbeat
	hbErr  error
	hbMu   sync.Mutex

	onEnd []func() // see OnEnd
}

type ownWrite struct {
	table  uint32
	rowKey []byte
	op     Op
}

// ownKey names a row the transaction wrote.
type ownKey struct {
	table uint32
	row   string
}

// addOwn keeps w for reading back.
func (tx *Txn) addOwn(w ownWrite) {
	if tx.own == nil {
		tx.own, tx.ownTables = map[ownKey][]int{}, map[uint32]int{}
	}
	k := ownKey{w.table, string(w.rowKey)}
	tx.own[k] = append(tx.own[k], len(tx.writes))
	tx.ownTables[w.table]++
	tx.writes = append(tx.writes, w)
}

// truncateOwn forgets the writes kept after the first n (a savepoint
// rollback).
func (tx *Txn) truncateOwn(n int) {
	for i := len(tx.writes) - 1; i >= n; i-- {
		w := tx.writes[i]
		k := ownKey{w.table, string(w.rowKey)}
		if l := tx.own[k]; len(l) > 1 {
			tx.own[k] = l[:len(l)-1]
		} else {
			delete(tx.own, k)
		}
		if tx.ownTables[w.table]--; tx.ownTables[w.table] == 0 {
			delete(tx.ownTables, w.table)
		}
	}
	tx.writes = tx.writes[:n]
}

// ownOf returns the positions in writes of the row's own writes, in order.
func (tx *Txn) ownOf(table uint32, rowKey []byte) []int {
	if len(tx.own) == 0 {
		return nil // most reads: nothing written, no key to build
	}
	return tx.own[ownKey{table, string(rowKey)}]
}

// Wrote reports whether the transaction has written the row (and kept the
// write for reading back): it holds the row's lock until it ends, so a
// lock taken now would add nothing.
func (tx *Txn) Wrote(t *Table, key Row) (bool, error) {
	if len(tx.own) == 0 {
		return false, nil
	}
	rk, err := t.RowKey(key)
	if err != nil {
		return false, err
	}
	return tx.hasOwn(t.id, rk), nil
}

type savepoint struct {
	name    string
	writeID uint32
	writes  int
}

// Begin starts a transaction. Nothing is sent until its first operation.
func (c *Client) Begin(ctx context.Context, opts TxnOptions) (*Txn, error) {
	var r [8]byte
	if _, err := crand.Read(r[:]); err != nil {
		return nil, err
	}
	now := time.Now()
	return &Txn{c: c, id: txn.NewID(now, r), opts: opts, begin: now, participants: map[uint64]*tabletMeta{}}, nil
}

// ID is the transaction's id.
func (tx *Txn) ID() docdb.TxnID { return tx.id }

// HasIntents reports whether the transaction has written or locked
// anything: whether any tablet holds intents of it.
func (tx *Txn) HasIntents() bool { return len(tx.participants) > 0 }

// ReadTime is the snapshot time (0 until fixed; under read committed the
// current statement's).
func (tx *Txn) ReadTime() hlc.Timestamp { return tx.readTime }

// StartStatement begins a statement: under read committed its first read
// fixes a new snapshot, which its later reads share (PostgreSQL's
// statement snapshot), so a statement reading several rows or tables sees
// them as of one time. A statement run again after a read restart keeps
// its window: see Restart. Other isolation levels ignore it.
func (tx *Txn) StartStatement() {
	if tx.opts.Isolation == ReadCommitted {
		tx.readTime, tx.globalLimit = 0, 0
	}
}

// snapshotReads reports whether reads share a fixed read time once one
// is picked: the transaction's (snapshot) or the statement's (read
// committed). Serializable reads lock and read the latest data.
func (tx *Txn) snapshotReads() bool {
	return tx.opts.Isolation != Serializable && !tx.lockedReads
}

// readLocked runs reads of rows the transaction has locked: under read
// committed each reads the newest version (PostgreSQL re-reads a row it
// locked so, and the lock keeps it from changing), not the statement's
// snapshot, which its other reads keep.
func (tx *Txn) readLocked(read func() error) error {
	if tx.opts.Isolation != ReadCommitted {
		return read()
	}
	return tx.ReadLatest(read)
}

// maxLatestRestarts bounds the times a scan of the newest data reads again
// past a value in its uncertainty window (each pass reads later).
const maxLatestRestarts = 10

// ReadLatest runs reads that must see the newest committed data whatever
// the isolation level (with the transaction's own writes over it), not
// its snapshot: the search for rows referencing a key a statement deleted
// or changed, after it locked that key, must find those committed since
// the snapshot. Writes based on such reads still fail with a conflict
// where the snapshot would have missed a change.
func (tx *Txn) ReadLatest(read func() error) error {
	was := tx.lockedReads
	tx.lockedReads = true
	defer func() { tx.lockedReads = was }()
	return read()
}

func (tx *Txn) txnErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Code: CodeInternal, Op: op, Err: err}
}

func (tx *Txn) check() error {
	if tx.done {
		return &Error{Code: CodeInvalidArgument, Message: "transaction already finished"}
	}
	return nil
}

// checkSettled is check for a step that reads any tablet (scans): it
// waits for the transaction's pipelined writes first.
func (tx *Txn) checkSettled(ctx context.Context) error {
	if err := tx.check(); err != nil {
		return err
	}
	return tx.settled(ctx, 0)
}

// fixReadTime fixes a snapshot transaction's read time at the client's
// clock if no read fixed it yet.
func (tx *Txn) fixReadTime() {
	if tx.opts.Isolation == Snapshot && tx.readTime == 0 {
		tx.readTime = tx.c.clock.Now()
		tx.globalLimit = tx.readTime.Add(tx.c.clock.MaxOffset())
	}
}

// Restart makes a statement that failed with CodeReadRestart (a read met
// a version in the clock uncertainty window) ready to run again at a later
// snapshot: the statement of a read committed transaction, or a snapshot
// transaction that has written and locked nothing (PostgreSQL's REPEATABLE
// READ takes its snapshot at the first statement; the caller knows that no
// earlier statement's results came from the old one). The snapshot moves
// to the version the read met and the window keeps its end, so every
// restart narrows it and a statement restarted again and again ends by the
// time the window closes, however busy its rows (YugabyteDB's restart read
// time). It reports false, changing nothing, for other transactions and
// errors.
func (tx *Txn) Restart(err error) bool {
	at := restartTime(err)
	switch {
	case tx.done || at <= tx.readTime || at > tx.globalLimit:
		return false
	case tx.opts.Isolation == ReadCommitted:
	case tx.opts.Isolation != Snapshot || tx.intents || len(tx.writes) > 0:
		return false
	}
	tx.readTime = at
	return true
}

func (tx *Txn) noteTime(t hlc.Timestamp) {
	tx.maxTime = max(tx.maxTime, t)
}

// withRecord runs write (intents or locks) with the status record taken
// care of. A short transaction (the first write within
// txn.LazyRecordWindow of Begin) never creates its record separately:
// Commit writes it COMMITTED in one Raft write, so the create and commit
// rounds of the classic protocol collapse into one (docs/transactions.md);
// its heartbeat creates the record PENDING if it lives longer than the
// window. A later first write creates the record PENDING before its
// intents (status tablets give up on a missing record soon after the
// window), and so does the client's first transaction, which creates the
// status table on first use.
func (tx *Txn) withRecord(ctx context.Context, op string, write func() error) error {
	if err := tx.heartbeatErr(); err != nil {
		return tx.txnErr(op, err)
	}
	if !tx.intents {
		created := false
		if time.Since(tx.begin) >= txn.LazyRecordWindow || !tx.c.statusTableOpen() {
			if err := tx.createRecord(ctx); err != nil {
				return tx.txnErr(op, err)
			}
			created = true
		}
		tx.intents = true
		hbCtx, stop := context.WithCancel(context.Background())
		tx.hbStop = stop
		go tx.heartbeat(hbCtx, created)
	}
	return write()
}

// createRecord creates the status record PENDING (or finds it).
func (tx *Txn) createRecord(ctx context.Context) error {
	res, err := tx.c.TxnStatus(ctx, tspb.TxnStatusRequest_CREATE, tx.id, 0, nil)
	if err != nil {
		return err
	}
	if res.State != tspb.TxnState_PENDING {
		return &Error{Code: CodeTxnAborted, Message: "transaction " + tx.id.String() + " is " + res.State.String()}
	}
	return nil
}

// heartbeat keeps the status record alive until ctx ends: it creates it
// first unless created, at txn.LazyRecordWindow after Begin, then
// heartbeats it. A record found ABORTED (expired, or a deadlock victim)
// fails the transaction's next operation. A call in flight when the
// transaction finishes is cancelled, not waited for: whether it lands
// before or after the commit or abort, the record ends the same.
func (tx *Txn) heartbeat(hbCtx context.Context, created bool) {
	wait := heartbeatInterval
	if !created {
		wait = time.Until(tx.begin.Add(txn.LazyRecordWindow))
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-hbCtx.Done():
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(hbCtx, heartbeatTimeout)
		op := tspb.TxnStatusRequest_HEARTBEAT
		if !created {
			op = tspb.TxnStatusRequest_CREATE
		}
		res, err := tx.c.TxnStatus(ctx, op, tx.id, 0, nil)
		cancel()
		if err == nil && res.State != tspb.TxnState_PENDING {
			tx.hbMu.Lock()
			tx.hbErr = &Error{Code: CodeTxnAborted, Message: "transaction " + tx.id.String() + " was aborted (expired or a deadlock victim)"}
			tx.hbMu.Unlock()
			return
		}
		if err != nil {
			t.Reset(heartbeatRetry)
			continue
		}
		created = true
		t.Reset(heartbeatInterval)
	}
}

// Isolation is the transaction's isolation level.
func (tx *Txn) Isolation() Isolation { return tx.opts.Isolation }

func (tx *Txn) heartbeatErr() error {
	tx.hbMu.Lock()
	defer tx.hbMu.Unlock()
	return tx.hbErr
}

func (tx *Txn) stopHeartbeat() {
	if tx.hbStop != nil {
		tx.hbStop()
		tx.hbStop = nil
	}
}

// ---- Writes and locks ----

// Put, Update and Delete are the transactional versions of Table's.
func (tx *Txn) Put(ctx context.Context, t *Table, row Row) error {
	return tx.Apply(ctx, t, []Op{{Kind: OpPut, Row: row}})
}

// Update writes some columns of a row.
func (tx *Txn) Update(ctx context.Context, t *Table, row Row) error {
	return tx.Apply(ctx, t, []Op{{Kind: OpUpdate, Row: row}})
}

// Delete deletes a row.
func (tx *Txn) Delete(ctx context.Context, t *Table, key Row) error {
	return tx.Apply(ctx, t, []Op{{Kind: OpDelete, Row: key}})
}

// Apply writes ops as intents (provisional until Commit), one request per
// tablet in parallel. A write conflicting with another pending
// transaction waits for it (TxnOptions.Wait).
func (tx *Txn) Apply(ctx context.Context, t *Table, ops []Op) error {
	_, err := tx.apply(ctx, t, ops, 0)
	return err
}

// ApplyMissing is Apply that also returns the indexes (into ops) of the
// adds (OpAdd) whose row does not exist, which wrote nothing.
func (tx *Txn) ApplyMissing(ctx context.Context, t *Table, ops []Op) (missing []int, err error) {
	return tx.apply(ctx, t, ops, 0)
}

// ApplyUnchangedSince is Apply of rows read at since (ReadForWrite): it
// fails with CodeTxnConflict, writing nothing, if another transaction
// committed a version of a written row after since (a pending writer is
// waited for first). Under read committed this replaces the row lock of a
// read-modify-write: the caller reads again, locked, after a conflict.
func (tx *Txn) ApplyUnchangedSince(ctx context.Context, t *Table, ops []Op, since hlc.Timestamp) error {
	_, err := tx.apply(ctx, t, ops, since)
	return err
}

func (tx *Txn) apply(ctx context.Context, t *Table, ops []Op, since hlc.Timestamp) ([]int, error) {
	if err := tx.check(); err != nil {
		return nil, err
	}
	prepared := make([]keyedOps, 0, len(ops))
	for _, op := range ops {
		k, err := t.prepare(op)
		if err != nil {
			return nil, (&sender{c: tx.c}).finish(ctx, "txn-write", t, err)
		}
		prepared = append(prepared, k)
	}
	tx.fixReadTime()
	// Write ids follow the order of each row's ops (byTablet only groups
	// them by tablet), so the newest write of a key wins when the intents
	// are applied.
	base := tx.writeID
	wops, owner := byTablet(ctx, t, prepared)
	tx.writeID += uint32(len(wops))
	var adds addResults // by index into wops
	err := tx.withRecord(ctx, "txn-write", func() error {
		adds = addResults{}
		return tx.send(ctx, t, wops, nil, 0, tx.opts.Wait, base, nil, &adds, since)
	})
	if err != nil {
		tx.ownUnsure = true
		return nil, tx.applyFailed(ctx, err, owner, base)
	}
	var missing []int
	for _, i := range adds.missing {
		missing = append(missing, owner[i])
	}
	sort.Ints(missing)
	sums := map[int]docdb.WriteOp{} // by the caller's op
	for i, sum := range adds.sums {
		sums[owner[i]] = sum
	}
	for i, op := range ops {
		if _, gone := slices.BinarySearch(missing, i); gone {
			continue // an add that found no row wrote nothing
		}
		if op.Kind == OpAdd {
			// What the transaction reads back is what the tablet wrote.
			sum, ok := sums[i]
			if !ok {
				tx.ownUnsure = true
				return nil, &Error{Code: CodeInternal, Message: fmt.Sprintf("the tablet did not say what add %d wrote", i)}
			}
			if op, err = t.sumAsUpdate(op, sum); err != nil {
				tx.ownUnsure = true
				return nil, err
			}
		}
		if !tx.blind[t.id] {
			tx.addOwn(ownWrite{table: t.id, rowKey: prepared[i].key, op: ownOp(op)})
		}
	}
	return missing, nil
}

// Blind says the transaction will not read back what it writes to t from
// now on: those writes are not kept for its reads, which see t as it was
// before them (the tablets leave a reader's own intents out; the client
// overlays the writes it kept). A bulk write that ends the transaction,
// an autocommit INSERT ... SELECT, then holds none of its rows, where the
// overlay held every one; its reads, as a PostgreSQL statement's, do not
// see its own writes anyway.
func (tx *Txn) Blind(t *Table) {
	if tx.blind == nil {
		tx.blind = map[uint32]bool{}
	}
	tx.blind[t.id] = true
}

// addResults are what the tablets answered about the adds (OpAddColumns)
// of a write, by index into its DocDB ops: those whose row does not exist,
// and what the others wrote.
type addResults struct {
	missing []int
	sums    map[int]docdb.WriteOp
}

// sumAsUpdate is the OpUpdate an add amounts to, given what the tablet
// wrote for it (sum): the key columns of add and the new values.
func (t *Table) sumAsUpdate(add Op, sum docdb.WriteOp) (Op, error) {
	row := Row{}
	for name, v := range add.Row {
		if c, ok := t.schema.byName[name]; ok && c.IsKey() {
			row[name] = v
		}
	}
	for _, cv := range sum.Columns {
		c, ok := t.schema.byID[cv.ID]
		if !ok {
			return Op{}, &Error{Code: CodeInternal, Message: fmt.Sprintf("an add wrote unknown column %d", cv.ID)}
		}
		if sum.Kind == docdb.OpDeleteColumns {
			row[c.Name] = docdb.Null()
		} else {
			row[c.Name] = cv.Value
		}
	}
	return Op{Kind: OpUpdate, Row: row, TTL: add.TTL}, nil
}

// maxRequestBytes is about the most ops bytes one transactional write
// request carries (plus at most one row, MaxRowBytes). Each request is a
// Raft entry: entries of 16 MiB (a batch of 3 MB rows) took seconds each
// to append and sync on every replica of a busy machine, delayed other
// groups' traffic behind them, and made leaders step down mid-write; at 4
// MiB a 90 MB INSERT ... SELECT went through where it had failed.
const maxRequestBytes = 4 << 20

// send routes a transactional write (ops and/or row locks) to the tablets
// of its keys. Ops carry consecutive write ids from base in their order;
// the write id of each op is preserved across tablets. A version of a
// written row newer than since (or, under snapshot isolation, than the
// snapshot) fails the write.
//
// What the tablets answer about the adds (OpAddColumns) goes to adds when
// it is not nil.
func (tx *Txn) send(ctx context.Context, t *Table, ops []docdb.WriteOp, lockRows [][]byte, mode LockMode, wait WaitPolicy, base uint32, skipped *[][]byte, adds *addResults, since hlc.Timestamp) error {
	// Locks alone go to their tablets in key order: two statements that
	// lock the same rows on several tablets at once would each get some
	// first and deadlock; in order, the second queues behind the first.
	s := &sender{c: tx.c, write: true, inOrder: len(ops) == 0 && len(lockRows) > 0}
	checkTime, checkNewer := tx.readTime, tx.opts.Isolation == Snapshot
	if since != 0 {
		checkTime, checkNewer = since, true
	}
	// Items 0..len(ops)-1 are the ops (write id base+i), then the locks.
	keys := make([][]byte, 0, len(ops)+len(lockRows))
	total := 0
	for i := range ops {
		keys = append(keys, ops[i].RowKey)
		total += ops[i].Size()
	}
	// A batch of large rows is many requests, each as slow as its bytes:
	// the operation and each attempt get time for them.
	s.slack = sizeAllowance(min(total, maxRequestBytes+MaxRowBytes))
	ctx, cancel := tx.c.opContextFor(ctx, 2*sizeAllowance(total))
	defer cancel()
	keys = append(keys, lockRows...)
	var mu sync.Mutex
	err := t.routeByTablet(ctx, s, keys, func(tab *tabletMeta, idx []int) error {
		// One request per run of consecutive write ids (the server numbers
		// a request's ops from its write id); the locks ride on the first.
		// A run ends too where its ops reach maxRequestBytes: a batch of
		// large rows made one request larger than a message may be.
		var locks [][]byte
		var runs [][]int
		runBytes := 0
		for _, i := range idx {
			switch n := len(runs); {
			case i >= len(ops):
				locks = append(locks, keys[i])
			case n > 0 && runs[n-1][len(runs[n-1])-1]+1 == i && runBytes < maxRequestBytes:
				runs[n-1] = append(runs[n-1], i)
				runBytes += ops[i].Size()
			default:
				runs = append(runs, []int{i})
				runBytes = ops[i].Size()
			}
		}
		if len(runs) == 0 {
			runs = append(runs, nil)
		}
		if err := tx.settled(ctx, tab.id); err != nil {
			return err
		}
		mu.Lock()
		tx.participants[tab.id] = tab
		mu.Unlock()
		for ri, run := range runs {
			var wb docdb.WriteBatch
			wid := base
			if len(run) > 0 {
				wid = base + uint32(run[0])
			}
			for _, i := range run {
				wb.Ops = append(wb.Ops, ops[i])
			}
			req := &tspb.TxnWriteRequest{TabletId: tab.id, TxnId: tx.id[:], ReadTime: uint64(checkTime),
				CheckNewer: checkNewer, WriteId: wid, Batch: wb.Marshal(), WaitPolicy: wait}
			if ri == 0 && len(locks) > 0 {
				req.LockRows, req.LockMode = locks, mode
			}
			var answer *tspb.TxnWriteResponse // of the attempt that answered
			var final finalAnswer             // its final answer, when pipelined
			err := s.toTablet(ctx, tab, func(ctx context.Context, r *replica) (*tspb.TabletError, error) {
				req.ClientTime = tx.c.now()
				resp, fin, err := tx.writeAt(ctx, r.addr, req)
				if err != nil {
					return nil, err
				}
				final = fin
				tx.c.observe(resp.GetServerTime())
				mu.Lock()
				tx.noteTime(hlc.Timestamp(resp.GetWriteTime()))
				if skipped != nil {
					*skipped = append(*skipped, resp.GetSkippedRows()...)
				}
				mu.Unlock()
				answer = resp
				return resp.GetError(), nil
			})
			if err != nil {
				return remapDuplicate(err, run)
			}
			if final != nil {
				tx.pipe.add(tab.id, final)
			}
			if adds != nil && answer != nil {
				mu.Lock()
				err := adds.note(answer, run)
				mu.Unlock()
				if err != nil {
					return err
				}
			}
		}
		return nil
	})
	return s.finish(ctx, "txn-write", t, err)
}

// Lock locks rows (SELECT ... FOR SHARE / FOR UPDATE without reading
// them). With SkipLocked it returns the keys it could not lock instead of
// waiting.
func (tx *Txn) Lock(ctx context.Context, t *Table, keys []Row, mode LockMode, wait WaitPolicy) (skipped []Row, err error) {
	if err := tx.check(); err != nil {
		return nil, err
	}
	rows := make([][]byte, 0, len(keys))
	byKey := map[string]Row{}
	for _, k := range keys {
		rk, err := t.RowKey(k)
		if err != nil {
			return nil, (&sender{c: tx.c}).finish(ctx, "lock", t, err)
		}
		rows = append(rows, rk)
		byKey[string(rk)] = k
	}
	tx.fixReadTime()
	var sk [][]byte
	// Locks take the current write id, so a savepoint rollback releases
	// the locks taken after it.
	err = tx.withRecord(ctx, "lock", func() error {
		return tx.send(ctx, t, nil, rows, mode, wait, tx.writeID, &sk, nil, 0)
	})
	if err != nil {
		return nil, err
	}
	tx.writeID++
	for _, k := range sk {
		skipped = append(skipped, byKey[string(k)])
	}
	return skipped, nil
}

// ---- Reads ----

// readOptions returns the transaction options and read time of a read.
func (tx *Txn) readOptions() (*tspb.TxnReadOptions, uint64) {
	o := &tspb.TxnReadOptions{TxnId: tx.id[:]}
	if !tx.snapshotReads() || tx.readTime == 0 {
		// Serializable reads read the latest data; the first read of a
		// snapshot transaction (or read committed statement) picks its
		// snapshot at the server, which can then move it past an
		// uncertain value.
		o.AllowRestart = true
		return o, 0
	}
	o.GlobalLimit = uint64(tx.globalLimit)
	return o, uint64(tx.readTime)
}

func (tx *Txn) fixFromRead(rt uint64) {
	if tx.snapshotReads() && tx.readTime == 0 && rt != 0 {
		tx.readTime = hlc.Timestamp(rt)
		tx.globalLimit = tx.readTime.Add(tx.c.clock.MaxOffset())
	}
	tx.noteTime(hlc.Timestamp(rt))
}

// Get reads a row inside the transaction: its own writes included.
func (tx *Txn) Get(ctx context.Context, t *Table, key Row, columns ...string) (Row, bool, error) {
	if err := tx.check(); err != nil {
		return nil, false, err
	}
	if tx.opts.Isolation == Serializable {
		if _, err := tx.Lock(ctx, t, []Row{key}, ForShare, tx.opts.Wait); err != nil {
			return nil, false, err
		}
	}
	return tx.get(ctx, t, key, columns)
}

// GetForUpdate locks a row (FOR UPDATE or FOR SHARE) and reads it. Under
// snapshot isolation a row changed after the snapshot fails with
// CodeTxnConflict, as in PostgreSQL's REPEATABLE READ; under read
// committed the row read is its newest version.
func (tx *Txn) GetForUpdate(ctx context.Context, t *Table, key Row, mode LockMode, wait WaitPolicy, columns ...string) (Row, bool, error) {
	if err := tx.check(); err != nil {
		return nil, false, err
	}
	if _, err := tx.Lock(ctx, t, []Row{key}, mode, wait); err != nil {
		return nil, false, err
	}
	var row Row
	var found bool
	err := tx.readLocked(func() (err error) {
		row, found, err = tx.get(ctx, t, key, columns)
		return err
	})
	return row, found, err
}

// GetLocked is GetMany of rows the transaction has locked (Lock): under
// read committed it reads their newest versions, not the statement's
// snapshot.
func (tx *Txn) GetLocked(ctx context.Context, t *Table, keys []Row, columns ...string) (rows []Row, found []bool, err error) {
	err = tx.readLocked(func() (err error) {
		rows, found, err = tx.GetMany(ctx, t, keys, columns...)
		return err
	})
	return rows, found, err
}

// ReadForWrite reads a row, without locking it, that the caller means to
// write with ApplyUnchangedSince at the returned time: the time the row
// was read at (the snapshot under snapshot isolation). Not for
// serializable transactions, whose reads lock.
func (tx *Txn) ReadForWrite(ctx context.Context, t *Table, key Row, columns ...string) (Row, bool, hlc.Timestamp, error) {
	if err := tx.check(); err != nil {
		return nil, false, 0, err
	}
	if tx.opts.Isolation == Serializable {
		return nil, false, 0, &Error{Code: CodeInvalidArgument, Message: "ReadForWrite: serializable reads lock"}
	}
	rowKey, resp, err := tx.read(ctx, t, key, columns)
	if err != nil {
		return nil, false, 0, err
	}
	row, found, err := tx.finishGet(ctx, t, rowKey, resp, columns)
	at := hlc.Timestamp(resp.GetReadTime())
	if tx.opts.Isolation == Snapshot {
		at = tx.readTime
	}
	return row, found, at, err
}

func (tx *Txn) get(ctx context.Context, t *Table, key Row, columns []string) (Row, bool, error) {
	rowKey, err := t.RowKey(key)
	if err != nil {
		return nil, false, (&sender{c: tx.c}).finish(ctx, "get", t, err)
	}
	if row, found, ok := tx.ownRead(t, rowKey, columns); ok {
		return row, found, nil
	}
	resp, err := tx.readKey(ctx, t, rowKey, columns)
	if err != nil {
		return nil, false, err
	}
	return tx.finishGet(ctx, t, rowKey, resp, columns)
}

// read sends a transactional point read; it changes nothing in tx, so
// reads at a fixed read time may run at once (GetMany).
func (tx *Txn) read(ctx context.Context, t *Table, key Row, columns []string) ([]byte, *tspb.ReadResponse, error) {
	rowKey, err := t.RowKey(key)
	if err != nil {
		return nil, nil, (&sender{c: tx.c}).finish(ctx, "get", t, err)
	}
	resp, err := tx.readKey(ctx, t, rowKey, columns)
	return rowKey, resp, err
}

// readKey is read of the row with key rowKey.
func (tx *Txn) readKey(ctx context.Context, t *Table, rowKey []byte, columns []string) (*tspb.ReadResponse, error) {
	s := &sender{c: tx.c}
	proj, err := t.projection(columns)
	if err != nil {
		return nil, s.finish(ctx, "get", t, err)
	}
	if tx.hasOwn(t.id, rowKey) {
		proj = nil // the overlay needs every column
	}
	ctx, cancel := tx.c.opContext(ctx)
	defer cancel()
	o, rt := tx.readOptions()
	var resp *tspb.ReadResponse
	err = t.routeKey(ctx, s, rowKey, func(tab *tabletMeta) call {
		return func(ctx context.Context, rep *replica) (*tspb.TabletError, error) {
			if err := tx.settled(ctx, tab.id); err != nil {
				return nil, err
			}
			r, err := tx.c.readAt(ctx, rep.addr, &tspb.ReadRequest{TabletId: tab.id, RowKey: rowKey, Projection: proj,
				ReadTime: rt, ClientTime: tx.c.now(), Txn: o})
			if err != nil {
				return nil, err
			}
			tx.c.observe(r.GetServerTime())
			resp = r
			return r.GetError(), nil
		}
	})
	if err != nil {
		return nil, s.finish(ctx, "get", t, err)
	}
	return resp, nil
}

// finishGet notes a read's time and lays the transaction's own writes
// over its row.
func (tx *Txn) finishGet(ctx context.Context, t *Table, rowKey []byte, resp *tspb.ReadResponse, columns []string) (Row, bool, error) {
	tx.fixFromRead(resp.GetReadTime())
	var row Row
	var err error
	found := resp.GetFound()
	if found {
		if row, err = t.decodeRow(resp.GetRow()); err != nil {
			return nil, false, (&sender{c: tx.c}).finish(ctx, "get", t, err)
		}
	}
	row, found = tx.overlay(t, rowKey, row, found)
	if found && len(columns) > 0 {
		row = project(t, row, columns)
	}
	return row, found, nil
}

// getManyParallelism is how many point reads GetMany has in flight.
const getManyParallelism = 16

// GetMany is Get of many rows: found[i] says whether keys[i] exists and
// rows[i] is its row. The reads go out several at a time (after the first
// one, which fixes a snapshot transaction's read time); under serializable
// isolation one Lock call share-locks them all first.
func (tx *Txn) GetMany(ctx context.Context, t *Table, keys []Row, columns ...string) (rows []Row, found []bool, err error) {
	if err := tx.check(); err != nil {
		return nil, nil, err
	}
	rows, found = make([]Row, len(keys)), make([]bool, len(keys))
	if len(keys) == 0 {
		return rows, found, nil
	}
	if tx.opts.Isolation == Serializable {
		if _, err := tx.Lock(ctx, t, keys, ForShare, tx.opts.Wait); err != nil {
			return nil, nil, err
		}
	}
	start := 0
	if tx.snapshotReads() && tx.readTime == 0 {
		if rows[0], found[0], err = tx.get(ctx, t, keys[0], columns); err != nil {
			return nil, nil, err
		}
		start = 1
	}
	type result struct {
		rowKey []byte
		resp   *tspb.ReadResponse
		err    error
	}
	res := make([]result, len(keys))
	sem := make(chan struct{}, getManyParallelism)
	var wg sync.WaitGroup
	for i := start; i < len(keys); i++ {
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			res[i].rowKey, res[i].resp, res[i].err = tx.read(ctx, t, keys[i], columns)
		}(i)
	}
	wg.Wait()
	for i := start; i < len(keys); i++ {
		if res[i].err != nil {
			return nil, nil, res[i].err
		}
		if rows[i], found[i], err = tx.finishGet(ctx, t, res[i].rowKey, res[i].resp, columns); err != nil {
			return nil, nil, err
		}
	}
	return rows, found, nil
}

// Scan reads the rows of a scan inside the transaction (own writes
// included). Under serializable isolation every tablet read-locks the key
// span the scan covered there (up to the last row returned when a limit cut
// it short) as it reads the latest data: until the transaction ends, no
// other transaction can change a row it read or insert one into the span
// (no phantoms). Conflicting writes of pending transactions are waited for
// as TxnOptions.Wait says.
func (tx *Txn) Scan(ctx context.Context, t *Table, opts ScanOptions) ([]Row, error) {
	if err := tx.checkSettled(ctx); err != nil {
		return nil, err
	}
	if opts.FollowerReads {
		return nil, &Error{Code: CodeInvalidArgument, Op: "scan", Table: t.name, Message: "follower reads inside a transaction"}
	}
	if tx.opts.Isolation != Serializable {
		return tx.scan(ctx, t, opts, false)
	}
	// Range locks are intents: the status record is taken care of as for
	// any write. They take the current write id, so a savepoint rollback
	// releases them.
	defer func() { tx.writeID++ }()
	var rows []Row
	err := tx.withRecord(ctx, "scan", func() error {
		var err error
		rows, err = tx.scan(ctx, t, opts, true)
		return err
	})
	return rows, err
}

// Stream starts a scan inside the transaction whose rows the caller pulls
// a page at a time (Scanner.Next) instead of holding them all: a result
// too large for memory. Every page reads at the first one's time. It
// serves the scans that need neither the transaction's own writes (it
// wrote nothing to t) nor locks (serializable isolation read-locks what it
// reads): for the others ok is false, and Scan reads them whole. The first
// page is read before Stream returns, so the transaction's snapshot is
// fixed by then, as after Scan. Then the first page of every tablet of the
// rest of the range is read at once, and each later page while the caller
// works through the one before. SetContext gives the context of each call
// that pulls rows.
func (tx *Txn) Stream(ctx context.Context, t *Table, opts ScanOptions) (sc *Scanner, ok bool, err error) {
	if err := tx.checkSettled(ctx); err != nil {
		return nil, false, err
	}
	if opts.FollowerReads {
		return nil, false, &Error{Code: CodeInvalidArgument, Op: "scan", Table: t.name, Message: "follower reads inside a transaction"}
	}
	if tx.opts.Isolation == Serializable || tx.lockedReads || tx.hasOwnTable(t.id) {
		return nil, false, nil // a read of the newest data may read again (scan)
	}
	sc = t.Scan(ctx, opts)
	o, rt := tx.readOptions()
	sc.txn, sc.readTime = o, rt
	err = sc.prefetch()
	tx.fixFromRead(sc.readTime) // see scan
	if err != nil {
		return nil, true, err
	}
	if err := sc.split(); err != nil {
		return nil, true, err
	}
	// The caller's context may end with its call, before the scan.
	sc.readAhead, sc.ctx, sc.waitCtx = true, context.WithoutCancel(ctx), ctx
	for _, p := range sc.parts {
		p.ctx = sc.ctx // the caller's context comes from nextPart
	}
	return sc, true, nil
}

// scan runs a scan in the transaction; with lock, every page read-locks
// the span it covered (serializable).
func (tx *Txn) scan(ctx context.Context, t *Table, opts ScanOptions, lock bool) ([]Row, error) {
	cols := opts.Columns
	if len(cols) > 0 && tx.hasOwnTable(t.id) {
		opts.Columns = nil
	}
	limit := opts.Limit
	filter, keep := opts.Filter, opts.Keep
	clientFilter := tx.hasOwnTable(t.id) || lock
	if tx.hasOwnTable(t.id) || clientFilter && (filter != nil || keep != nil) {
		// Own deletes may remove rows, a client-side filter may drop
		// them: cut after.
		opts.Limit = 0
	}
	if clientFilter {
		// Own writes may make rows qualify or not, and a locking scan
		// locks what it read whole: filter in the client.
		opts.Filter, opts.Keep = nil, nil
	}
	var rows []Row
	var sc *Scanner
	for restarts := 0; ; restarts++ {
		sc = t.Scan(ctx, opts)
		o, rt := tx.readOptions()
		sc.txn, sc.readTime = o, rt
		rows = rows[:0]
		if lock {
			// Locking pages go one after another: each locks the span it
			// covered before the next starts where it ended.
			o.LockRange, o.WriteId, o.WaitPolicy = true, tx.writeID, tx.opts.Wait
			sc.onLock = func(tab *tabletMeta) { tx.participants[tab.id] = tab }
			for sc.Next() {
				rows = append(rows, sc.Row())
			}
		} else {
			rows, _ = sc.all()
		}
		// Fixed by the first page even when a later one failed: a restart
		// (Txn.Restart) moves on from it.
		tx.fixFromRead(sc.readTime)
		err := sc.Err()
		if err == nil {
			break
		}
		// A read of the newest data (ReadLatest, a read committed locked
		// read) is no part of a snapshot: one that met a value in a later
		// tablet's uncertainty window reads again, past it, instead of
		// failing its statement (whose writes may rule out a restart).
		at := restartTime(err)
		if lock || tx.snapshotReads() || at == 0 || restarts >= maxLatestRestarts {
			return nil, err
		}
		tx.c.observe(uint64(at))
	}
	if tx.hasOwnTable(t.id) {
		// The overlay matches own writes to the rows read by row key.
		keys := make([][]byte, 0, len(rows))
		for _, r := range rows {
			rk, err := t.RowKey(keyOf(t, r))
			if err != nil {
				return nil, err
			}
			keys = append(keys, rk)
		}
		rows = tx.overlayScan(t, sc, rows, keys)
	}
	if clientFilter {
		if filter != nil {
			pd, err := t.compilePushdown(&ScanOptions{Filter: filter})
			if err != nil {
				return nil, (&sender{c: tx.c}).finish(ctx, "scan", t, err)
			}
			rows = t.filterRows(rows, pd.pred)
		}
		var err error
		if rows, err = keepRows(rows, keep); err != nil {
			return nil, err
		}
	}
	if limit > 0 && len(rows) > limit {
		rows = rows[:limit]
	}
	if len(cols) > 0 {
		for i := range rows {
			rows[i] = project(t, rows[i], cols)
		}
	}
	return rows, nil
}

// ---- Own writes ----

func (tx *Txn) hasOwn(table uint32, rowKey []byte) bool {
	return len(tx.ownOf(table, rowKey)) > 0
}

func (tx *Txn) hasOwnTable(table uint32) bool {
	return tx.ownTables[table] > 0
}

// ownRead answers a point read from the transaction's own writes of the
// row when they decide it: whether the row exists, and every column asked
// for (every column when columns is empty). ok is false when the server
// must be asked. What the transaction wrote is what it reads: its intents
// keep every other writer off those columns (and off the row, for a write
// of the row level) until it ends. A transaction that updates a row and
// reads it back (pgbench's TPC-B) saves the read's round trip.
func (tx *Txn) ownRead(t *Table, rowKey []byte, columns []string) (row Row, found, ok bool) {
	var (
		seen       bool
		foundKnown bool            // a write decided whether the row exists
		wiped      bool            // a delete made every column absent
		set        map[string]bool // columns written since (or at all)
	)
	for _, i := range tx.ownOf(t.id, rowKey) {
		w := tx.writes[i]
		if !seen {
			seen, set = true, map[string]bool{}
		}
		switch w.op.Kind {
		case OpDelete:
			foundKnown, wiped = true, true
		case OpPut:
			foundKnown = true
		}
		for name, v := range w.op.Row {
			set[name] = true
			if w.op.Kind == OpUpdate && !v.IsNull() {
				if c, isCol := t.schema.byName[name]; isCol && !c.IsKey() {
					foundKnown = true // an update setting a column makes the row exist
				}
			}
		}
	}
	if !seen || !foundKnown || tx.ownUnsure {
		return nil, false, false
	}
	decided := func(name string) bool {
		c, isCol := t.schema.byName[name]
		return wiped || set[name] || isCol && c.IsKey()
	}
	if len(columns) == 0 {
		for name := range t.schema.byName {
			if !decided(name) {
				return nil, false, false
			}
		}
	}
	for _, name := range columns {
		if !decided(name) {
			return nil, false, false
		}
	}
	row, found = tx.overlay(t, rowKey, nil, false) // the ops carry the key columns
	if found && len(columns) > 0 {
		row = project(t, row, columns)
	}
	return row, found, true
}

// overlay applies the transaction's own writes of a row, in order, to what
// the server returned.
func (tx *Txn) overlay(t *Table, rowKey []byte, row Row, found bool) (Row, bool) {
	for _, i := range tx.ownOf(t.id, rowKey) {
		w := tx.writes[i]
		switch w.op.Kind {
		case OpDelete:
			row, found = nil, false
		case OpPut, OpUpdate:
			if !found {
				row = Row{}
			}
			if w.op.Kind == OpPut {
				found = true
			}
			for name, v := range w.op.Row {
				if v.IsNull() {
					delete(row, name)
				} else {
					row[name] = v
				}
			}
			if !found {
				// An update of an absent row makes it exist if it sets
				// a non-key column.
				for name := range w.op.Row {
					if c, ok := t.schema.byName[name]; ok && !c.IsKey() && !w.op.Row[name].IsNull() {
						found = true
					}
				}
			}
		}
	}
	if found {
		for _, c := range t.schema.HashKey {
			if _, ok := row[c.Name]; !ok {
				row = mergeKey(t, rowKey, row)
				break
			}
		}
	}
	return row, found
}

func mergeKey(t *Table, rowKey []byte, row Row) Row {
	k, err := docdb.DecodeDocKey(rowKey)
	if err != nil {
		return row
	}
	for i, c := range t.schema.HashKey {
		row[c.Name] = k.HashParts[i].Value
	}
	for i, c := range t.schema.RangeKey {
		row[c.Name] = k.RangeParts[i].Value
	}
	return row
}

// overlayScan merges the transaction's own writes into a scan's rows.
func (tx *Txn) overlayScan(t *Table, sc *Scanner, rows []Row, keys [][]byte) []Row {
	lo, hi := scanBounds(t, sc.opts)
	byKey := map[string]int{}
	for i, k := range keys {
		byKey[string(k)] = i
	}
	seen := map[string]bool{}
	for _, w := range tx.writes {
		if w.table != t.id || seen[string(w.rowKey)] {
			continue
		}
		seen[string(w.rowKey)] = true
		if bytes.Compare(w.rowKey, lo) < 0 || (hi != nil && bytes.Compare(w.rowKey, hi) >= 0) {
			continue
		}
		if i, ok := byKey[string(w.rowKey)]; ok {
			r, found := tx.overlay(t, w.rowKey, rows[i], true)
			if found {
				rows[i] = r
			} else {
				rows[i] = nil
			}
			continue
		}
		if r, found := tx.overlay(t, w.rowKey, nil, false); found {
			rows = append(rows, r)
			keys = append(keys, w.rowKey)
		}
	}
	idx := make([]int, 0, len(rows))
	for i := range rows {
		if rows[i] != nil {
			idx = append(idx, i)
		}
	}
	sort.Slice(idx, func(a, b int) bool {
		c := bytes.Compare(keys[idx[a]], keys[idx[b]])
		if sc.opts.Reverse {
			return c > 0
		}
		return c < 0
	})
	out := make([]Row, len(idx))
	for j, i := range idx {
		out[j] = rows[i]
	}
	return out
}

func scanBounds(t *Table, o ScanOptions) (lo, hi []byte) {
	sc := &Scanner{t: t, opts: o}
	if err := sc.bounds(); err != nil {
		return nil, nil
	}
	return sc.lo, sc.hi
}

func keyOf(t *Table, r Row) Row {
	k := Row{}
	for _, c := range t.schema.HashKey {
		k[c.Name] = r[c.Name]
	}
	for _, c := range t.schema.RangeKey {
		k[c.Name] = r[c.Name]
	}
	return k
}

func project(t *Table, r Row, cols []string) Row {
	out := keyOf(t, r)
	for _, c := range cols {
		if v, ok := r[c]; ok {
			out[c] = v
		}
	}
	return out
}

// ---- Savepoints ----

// Savepoint marks a point to roll back to.
func (tx *Txn) Savepoint(name string) error {
	if err := tx.check(); err != nil {
		return err
	}
	tx.savepoints = append(tx.savepoints, savepoint{name: name, writeID: tx.writeID, writes: len(tx.writes)})
	return nil
}

func (tx *Txn) findSavepoint(name string) (int, error) {
	for i := len(tx.savepoints) - 1; i >= 0; i-- {
		if tx.savepoints[i].name == name {
			return i, nil
		}
	}
	return 0, &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("savepoint %q does not exist", name)}
}

// RollbackToSavepoint undoes the writes and locks since the savepoint
// (which stays defined), removing their intents at once.
func (tx *Txn) RollbackToSavepoint(ctx context.Context, name string) error {
	// The removal of the intents must come after the writes it removes.
	if err := tx.checkSettled(ctx); err != nil {
		return err
	}
	i, err := tx.findSavepoint(name)
	if err != nil {
		return err
	}
	sp := tx.savepoints[i]
	tx.savepoints = tx.savepoints[:i+1]
	if sp.writeID == tx.writeID {
		return nil
	}
	if err := tx.resolveAll(ctx, &tspb.TxnResolveRequest{TxnId: tx.id[:], Kind: tspb.TxnResolveRequest_REMOVE_FROM_WRITE_ID, FromWriteId: sp.writeID}); err != nil {
		return err
	}
	tx.truncateOwn(sp.writes)
	return nil
}

// ReleaseSavepoint forgets a savepoint (and the ones after it).
func (tx *Txn) ReleaseSavepoint(name string) error {
	i, err := tx.findSavepoint(name)
	if err != nil {
		return err
	}
	tx.savepoints = tx.savepoints[:i]
	return nil
}

// ---- Commit and rollback ----

// OnEnd registers f to run once the transaction has ended, after Commit
// or Rollback (whatever their outcome): what a caller holds for as long as
// the transaction (YSQL's transaction-level advisory locks) is released
// then, on whichever path the transaction ends.
func (tx *Txn) OnEnd(f func()) {
	tx.onEnd = append(tx.onEnd, f)
}

func (tx *Txn) ended() {
	fs := tx.onEnd
	tx.onEnd = nil
	for _, f := range fs {
		f()
	}
}

// Commit commits the transaction: one write of its status record. The
// participants apply the intents afterwards, in the background: the
// client tells them with its next calls to their nodes (resolveq.go).
func (tx *Txn) Commit(ctx context.Context) error {
	if err := tx.check(); err != nil {
		return err
	}
	tx.done = true
	defer tx.ended()
	if !tx.intents {
		return nil // read only: nothing to commit
	}
	if err := tx.settled(ctx, 0); err != nil {
		_ = tx.abort(context.WithoutCancel(ctx))
		return err
	}
	tx.stopHeartbeat()
	res, err := tx.c.TxnStatus(ctx, tspb.TxnStatusRequest_COMMIT, tx.id, max(tx.maxTime, tx.readTime), nil)
	if err != nil {
		// Unknown outcome: the record decides; the participants resolve
		// the intents from it.
		return &Error{Code: CodeAmbiguous, Op: "commit", Err: err}
	}
	if res.State != tspb.TxnState_COMMITTED {
		tx.resolveAsync(&tspb.TxnResolveRequest{TxnId: tx.id[:], Kind: tspb.TxnResolveRequest_REMOVE})
		return &Error{Code: CodeTxnAborted, Op: "commit", Message: "transaction " + tx.id.String() + " was aborted"}
	}
	tx.c.clock.ForceUpdate(res.CommitTime)
	tx.queueApplies(tx.id, res.CommitTime, res.WaitedOn)
	return nil
}

// Rollback aborts the transaction and removes its intents.
func (tx *Txn) Rollback(ctx context.Context) error {
	if tx.done {
		return nil
	}
	tx.done = true
	defer tx.ended()
	if !tx.intents {
		return nil
	}
	return tx.abort(ctx)
}

// abort writes the record ABORTED (creating it so if it does not exist)
// and removes the intents.
func (tx *Txn) abort(ctx context.Context) error {
	// Writes in flight would leave intents behind the removal.
	_ = tx.settled(ctx, 0)
	tx.stopHeartbeat()
	if _, err := tx.c.TxnStatus(ctx, tspb.TxnStatusRequest_ABORT, tx.id, 0, nil); err != nil {
		return err
	}
	tx.resolveAsync(&tspb.TxnResolveRequest{TxnId: tx.id[:], Kind: tspb.TxnResolveRequest_REMOVE})
	return nil
}

// resolveAll sends a resolve request to every participant and waits.
func (tx *Txn) resolveAll(ctx context.Context, req *tspb.TxnResolveRequest) error {
	ctx, cancel := tx.c.opContext(ctx)
	defer cancel()
	errs := make(chan error, len(tx.participants))
	for _, tab := range tx.participants {
		go func() {
			s := &sender{c: tx.c, write: true}
			errs <- s.toTablet(ctx, tab, func(ctx context.Context, r *replica) (*tspb.TabletError, error) {
				rq := &tspb.TxnResolveRequest{TabletId: tab.id, TxnId: req.GetTxnId(), Kind: req.GetKind(),
					CommitTime: req.GetCommitTime(), FromWriteId: req.GetFromWriteId(), ClientTime: tx.c.now()}
				resp, err := tx.c.txnResolveAt(ctx, r.addr, rq)
				if err != nil {
					return nil, err
				}
				return resp.GetError(), nil
			})
		}()
	}
	var first error
	for range tx.participants {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return tx.txnErr("resolve", first)
	}
	return nil
}

// resolveAsync resolves in the background: a participant that misses it
// resolves the intents itself from the status record.
func (tx *Txn) resolveAsync(req *tspb.TxnResolveRequest) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tx.resolveAll(ctx, req)
	}()
}

// RunTxn runs fn in a transaction and commits it, retrying the whole
// transaction (with backoff) on retryable errors until ctx ends.
func (c *Client) RunTxn(ctx context.Context, opts TxnOptions, fn func(ctx context.Context, tx *Txn) error) error {
	var b backoff
	for {
		tx, err := c.Begin(ctx, opts)
		if err != nil {
			return err
		}
		err = fn(ctx, tx)
		if err == nil {
			err = tx.Commit(ctx)
		} else {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
		if err == nil || !IsRetryable(err) {
			return err
		}
		if !b.wait(ctx) {
			return err
		}
	}
}

// note adds the answer of the request whose ops were ops[run[0]],
// ops[run[1]]...
func (a *addResults) note(resp *tspb.TxnWriteResponse, run []int) error {
	bad := func(i uint32) error {
		return &Error{Code: CodeInternal, Message: fmt.Sprintf("a tablet answered about op %d of a %d-op request", i, len(run))}
	}
	for _, i := range resp.GetMissingOps() {
		if int(i) >= len(run) {
			return bad(i)
		}
		a.missing = append(a.missing, run[i])
	}
	if len(resp.GetSumOps()) == 0 {
		return nil
	}
	var sums docdb.WriteBatch
	if err := sums.Unmarshal(resp.GetSums()); err != nil || len(sums.Ops) != len(resp.GetSumOps()) {
		return &Error{Code: CodeInternal, Message: "a tablet's sums do not decode", Err: err}
	}
	if a.sums == nil {
		a.sums = map[int]docdb.WriteOp{}
	}
	for j, i := range resp.GetSumOps() {
		if int(i) >= len(run) {
			return bad(i)
		}
		a.sums[run[i]] = sums.Ops[j]
	}
	return nil
}
