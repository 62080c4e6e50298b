package exec

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/ysql/builtins"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Advisory locks (pg_advisory_lock and its family) are row locks on the
// rows of one system table, keyed by database and PostgreSQL's lock tag.
// The rows are never written: a row lock needs no row. So they are
// cluster-wide, wait in the tablets' wait queues, and a holder that dies
// releases them when its transaction's status record expires.
//
// Transaction-level locks are taken in the statement's transaction and go
// with it. Session-level ones are each key's own transaction, which the
// session keeps open (its heartbeat keeps the record alive) and rolls back
// when the key's last lock is released. While the session holds a key at
// session level, its transaction-level locks on that key go to the key's
// transaction too (the statement's transaction would conflict with it)
// and are dropped when the statement's transaction ends.

const advisoryTable = "ysql_advisory_locks"

// advisoryEngine is the node's part: the table and the sessions holding
// advisory locks (pg_locks).
type advisoryEngine struct {
	mu       sync.Mutex
	table    *client.Table
	sessions map[*Session]struct{}
}

func (e *Engine) advisoryTable(ctx context.Context) (*client.Table, error) {
	e.adv.mu.Lock()
	defer e.adv.mu.Unlock()
	return e.systemTable(ctx, &e.adv.table, advisoryTable, []*masterpb.ColumnSchema{
		{Id: 1, Name: "db", Type: "int64", IsHashKey: true},
		{Id: 2, Name: "classid", Type: "int64", IsHashKey: true},
		{Id: 3, Name: "objid", Type: "int64", IsHashKey: true},
		{Id: 4, Name: "objsubid", Type: "int64", IsHashKey: true},
	})
}

// advKey is one advisory lock: the database's OID and the lock tag.
type advKey struct {
	db  uint32
	tag builtins.AdvisoryKey
}

func (k advKey) row() client.Row {
	return client.Row{"db": docdb.Int64(int64(k.db)), "classid": docdb.Int64(int64(k.tag.ClassID)),
		"objid": docdb.Int64(int64(k.tag.ObjID)), "objsubid": docdb.Int64(int64(k.tag.ObjSubID))}
}

// Lock modes by index: shared, exclusive.
const (
	advShared = 0
	advExcl   = 1
)

var advModes = [2]client.LockMode{client.ForShare, client.ForUpdate}

// advEntry is what the session holds of one key: counts by mode, as
// PostgreSQL counts re-entrant locks.
type advEntry struct {
	sess    [2]int // session level
	xactKey [2]int // transaction level, taken in tx (the session holds the key)
	xactCur [2]int // transaction level, taken in the statement's transaction
	// tx is the key's own transaction (nil: none) and mode what it holds
	// (0: nothing yet).
	tx   *client.Txn
	mode client.LockMode
	// shSavepoint: tx took its exclusive lock after a savepoint over its
	// shared one, so rolling back to it keeps just the shared lock.
	shSavepoint bool
}

// need is the mode tx must hold: -1 none, else advShared or advExcl.
func (a *advEntry) need() int {
	switch {
	case a.sess[advExcl]+a.xactKey[advExcl] > 0:
		return advExcl
	case a.sess[advShared]+a.xactKey[advShared] > 0:
		return advShared
	}
	return -1
}

func (a *advEntry) empty() bool {
	return a.tx == nil && a.xactCur == [2]int{}
}

// advisoryLocks is a session's advisory locks.
type advisoryLocks struct {
	mu   sync.Mutex // pg_locks reads keys and waiting from other sessions
	keys map[advKey]*advEntry
	// hooked is the statement transaction whose end is hooked (OnEnd);
	// taken lists its transaction-level locks in order, and marks its
	// savepoints (of marksTx) as positions in taken, for ROLLBACK TO
	// SAVEPOINT to release those taken after one, as PostgreSQL does.
	hooked     *client.Txn
	taken      []advTaken
	marks      []advMark
	marksTx    *client.Txn
	registered bool
	waiting    *advWait
}

type advTaken struct {
	key   advKey
	mode  int
	inKey bool // in the key's own transaction (xactKey), else xactCur
}

type advMark struct {
	name string
	n    int
}

type advWait struct {
	key   advKey
	mode  int
	since time.Time
}

// advisoryIn is builtins.Advisory for a statement running in tx.
type advisoryIn struct {
	s  *Session
	tx *client.Txn
}

func (a *advisoryIn) AdvisoryLock(ctx context.Context, r builtins.AdvisoryRequest) (bool, error) {
	s := a.s
	if r.UnlockAll {
		s.advisoryUnlockAll(ctx)
		return true, nil
	}
	snap, err := s.snapshot(ctx)
	if err != nil {
		return false, err
	}
	db, ok := snap.Databases[s.db]
	if !ok {
		return false, pgerror.New(pgerror.CodeInvalidCatalogName, "database %q does not exist", s.db)
	}
	k, m := advKey{db: db.OID, tag: r.Key}, advExcl
	if r.Shared {
		m = advShared
	}
	switch {
	case r.Unlock:
		return s.advisoryUnlock(ctx, k, m), nil
	case r.Xact:
		return s.advisoryXact(ctx, a.tx, k, m, r.Try)
	}
	return s.advisorySession(ctx, k, m, r.Try)
}

// advEntry returns the session's entry for k, making it (and registering
// the session for pg_locks) if needed.
func (s *Session) advEntry(k advKey) *advEntry {
	st := s.advState()
	if !st.registered {
		st.registered = true
		s.e.adv.mu.Lock()
		if s.e.adv.sessions == nil {
			s.e.adv.sessions = map[*Session]struct{}{}
		}
		s.e.adv.sessions[s] = struct{}{}
		s.e.adv.mu.Unlock()
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	a := st.keys[k]
	if a == nil {
		a = &advEntry{}
		st.keys[k] = a
	}
	return a
}

func (s *Session) advState() *advisoryLocks {
	if s.adv == nil {
		s.adv = &advisoryLocks{keys: map[advKey]*advEntry{}}
	}
	return s.adv
}

// advUpdate changes the session's lock state under its mutex (pg_locks
// reads it), dropping k's entry if it holds nothing after.
func (s *Session) advUpdate(k advKey, a *advEntry, f func()) {
	s.adv.mu.Lock()
	defer s.adv.mu.Unlock()
	f()
	if a.empty() {
		delete(s.adv.keys, k)
	}
}

func (s *Session) advisorySession(ctx context.Context, k advKey, m int, try bool) (bool, error) {
	a := s.advEntry(k)
	ok, err := s.advLockInKey(ctx, k, a, m, try)
	s.advUpdate(k, a, func() {
		if ok {
			a.sess[m]++
		}
	})
	return ok, err
}

func (s *Session) advisoryXact(ctx context.Context, tx *client.Txn, k advKey, m int, try bool) (bool, error) {
	if tx == nil {
		return false, errNeedsTxn // the single-row fast path: run it in a transaction
	}
	a := s.advEntry(k)
	if s.adv.hooked != tx {
		s.adv.hooked = tx
		tx.OnEnd(func() { s.advisoryTxnEnded(tx) })
	}
	if a.tx != nil {
		ok, err := s.advLockInKey(ctx, k, a, m, try)
		s.advUpdate(k, a, func() {
			if ok {
				a.xactKey[m]++
				s.adv.taken = append(s.adv.taken, advTaken{key: k, mode: m, inKey: true})
			}
		})
		return ok, err
	}
	ok, err := s.advLock(ctx, tx, k, m, try)
	s.advUpdate(k, a, func() {
		if ok {
			a.xactCur[m]++
			s.adv.taken = append(s.adv.taken, advTaken{key: k, mode: m})
		}
	})
	return ok, err
}

// advisorySavepoint notes a savepoint of the block's transaction.
func (s *Session) advisorySavepoint(name string) {
	st := s.advState()
	if st.marksTx != s.txn {
		st.marks, st.marksTx = nil, s.txn
	}
	st.marks = append(st.marks, advMark{name: name, n: len(st.taken)})
}

// advisoryReleaseSavepoint forgets a savepoint and the ones after it
// (their locks stay with the transaction).
func (s *Session) advisoryReleaseSavepoint(name string) {
	if i := s.advMark(name); i >= 0 {
		s.adv.marks = s.adv.marks[:i]
	}
}

// advisoryRollbackTo releases the transaction-level locks taken after the
// savepoint: the transaction's own went with its rollback, those in keys'
// transactions go here.
func (s *Session) advisoryRollbackTo(ctx context.Context, name string) {
	i := s.advMark(name)
	if i < 0 {
		return
	}
	st := s.adv
	st.marks = st.marks[:i+1]
	undo := st.taken[st.marks[i].n:]
	st.taken = st.taken[:st.marks[i].n]
	for _, x := range undo {
		a := st.keys[x.key]
		if a == nil {
			continue
		}
		s.advUpdate(x.key, a, func() {
			if x.inKey {
				a.xactKey[x.mode]--
			} else {
				a.xactCur[x.mode]--
			}
		})
		s.advSettle(ctx, x.key, a)
	}
}

// advMark is the position of the latest savepoint name of the block's
// transaction in the marks, -1 if none.
func (s *Session) advMark(name string) int {
	if s.adv == nil || s.adv.marksTx != s.txn {
		return -1
	}
	for i := len(s.adv.marks) - 1; i >= 0; i-- {
		if s.adv.marks[i].name == name {
			return i
		}
	}
	return -1
}

// advLockInKey takes mode m in k's own transaction, starting it or
// raising its mode as needed. A lock not taken leaves it as it was.
func (s *Session) advLockInKey(ctx context.Context, k advKey, a *advEntry, m int, try bool) (bool, error) {
	if a.mode == client.ForUpdate || a.mode == advModes[m] {
		return true, nil
	}
	if a.xactCur[advExcl] > 0 || m == advExcl && a.xactCur[advShared] > 0 {
		// The statement's transaction holds the key in a conflicting
		// mode: the key's own transaction would wait for it forever.
		return false, pgerror.New(pgerror.CodeFeatureNotSupported,
			"a session-level advisory lock on a key this transaction holds a conflicting transaction-level lock on is not supported")
	}
	if a.tx == nil {
		tx, err := s.e.begin(ctx, client.TxnOptions{Isolation: client.Snapshot})
		if err != nil {
			return false, err
		}
		a.tx = tx
	} else if !a.shSavepoint {
		if err := a.tx.Savepoint(advSavepoint); err != nil {
			return false, err
		}
		a.shSavepoint = true
	}
	ok, err := s.advLock(ctx, a.tx, k, m, try)
	code, _ := client.CodeOf(err)
	switch {
	case ok:
		a.mode = advModes[m]
	case a.mode == 0:
		rollback(ctx, a.tx)
		a.tx, a.shSavepoint = nil, false
	case code == client.CodeDeadlock || code == client.CodeTxnAborted:
		// The key's transaction is aborted (a deadlock victim: two
		// sessions raising their shared locks): its shared lock is gone
		// with it (PostgreSQL's victim would keep it). Said so, and not
		// retried as a statement's conflict is: the retry would wait
		// for the other session, and the caller would not know.
		s.advLost(ctx, k, a)
		err = pgerror.New(pgerror.CodeDeadlockDetected, "deadlock detected").
			WithDetail("The session's shared advisory lock on the key was released with it: %v", err)
	default:
		s.advUndoExclusive(ctx, k, a)
	}
	return ok, err
}

// advLost forgets k's own transaction and the session's locks in it.
func (s *Session) advLost(ctx context.Context, k advKey, a *advEntry) {
	rollback(ctx, a.tx)
	s.advUpdate(k, a, func() {
		a.tx, a.mode, a.shSavepoint, a.sess, a.xactKey = nil, 0, false, [2]int{}, [2]int{}
	})
}

// advSavepoint is the savepoint of a key's transaction below its
// exclusive lock.
const advSavepoint = "shared"

// advUndoExclusive rolls a key's transaction back to its shared lock; a
// transaction that cannot has lost the key.
func (s *Session) advUndoExclusive(ctx context.Context, k advKey, a *advEntry) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := a.tx.RollbackToSavepoint(rctx, advSavepoint); err != nil {
		s.advLost(ctx, k, a)
		return
	}
	a.mode = client.ForShare
}

// advLock locks k's row in tx: at once or not at all when try, else
// waiting until it is free, the statement ends (statement_timeout, a
// cancel) or a deadlock is found.
func (s *Session) advLock(ctx context.Context, tx *client.Txn, k advKey, m int, try bool) (bool, error) {
	t, err := s.e.advisoryTable(ctx)
	if err != nil {
		return false, err
	}
	rows := []client.Row{k.row()}
	if try {
		_, err := tx.Lock(ctx, t, rows, advModes[m], client.NoWait)
		if code, _ := client.CodeOf(err); code == client.CodeLockNotAvailable {
			return false, nil
		}
		return err == nil, err
	}
	s.adv.mu.Lock()
	s.adv.waiting = &advWait{key: k, mode: m, since: time.Now()}
	s.adv.mu.Unlock()
	defer func() {
		s.adv.mu.Lock()
		s.adv.waiting = nil
		s.adv.mu.Unlock()
	}()
	for {
		_, err := tx.Lock(ctx, t, rows, advModes[m], client.WaitOnConflict)
		if err == nil {
			return true, nil
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		// A wait longer than the client's operation timeout: PostgreSQL
		// waits on (taking a lock twice in one transaction is harmless).
		if code, _ := client.CodeOf(err); code != client.CodeTimeout && code != client.CodeAmbiguous && !errors.Is(err, context.DeadlineExceeded) {
			return false, err
		}
	}
}

// advSettle makes k's own transaction hold what the counts need: it ends
// with the key's last lock, and drops to shared when it can.
func (s *Session) advSettle(ctx context.Context, k advKey, a *advEntry) {
	if a.tx == nil {
		return
	}
	switch need := a.need(); {
	case need < 0:
		rollback(ctx, a.tx)
		s.advUpdate(k, a, func() { a.tx, a.mode, a.shSavepoint = nil, 0, false })
	case need == advShared && a.mode == client.ForUpdate && a.shSavepoint:
		s.advUndoExclusive(ctx, k, a)
	}
	// An exclusive lock taken before the shared one stays until both go
	// (docs/ysql.md).
}

// advisoryUnlock releases one session-level lock of k in mode m.
func (s *Session) advisoryUnlock(ctx context.Context, k advKey, m int) bool {
	var a *advEntry
	if s.adv != nil {
		s.adv.mu.Lock()
		a = s.adv.keys[k]
		s.adv.mu.Unlock()
	}
	if a == nil || a.sess[m] == 0 {
		s.notice("WARNING", "01000", "you don't own a lock of type %s", advModeName[m])
		return false
	}
	s.advUpdate(k, a, func() { a.sess[m]-- })
	s.advSettle(ctx, k, a)
	return true
}

var advModeName = [2]string{"ShareLock", "ExclusiveLock"}

// advisoryUnlockAll releases the session-level locks
// (pg_advisory_unlock_all, DISCARD ALL).
func (s *Session) advisoryUnlockAll(ctx context.Context) {
	if s.adv == nil {
		return
	}
	for k, a := range s.advKeys() {
		s.advUpdate(k, a, func() { a.sess = [2]int{} })
		s.advSettle(ctx, k, a)
	}
}

// advKeys is a copy of the session's entries, to change them while
// going through them.
func (s *Session) advKeys() map[advKey]*advEntry {
	s.adv.mu.Lock()
	defer s.adv.mu.Unlock()
	out := make(map[advKey]*advEntry, len(s.adv.keys))
	for k, a := range s.adv.keys {
		out[k] = a
	}
	return out
}

// advisoryTxnEnded drops the transaction-level locks of tx, which ended.
func (s *Session) advisoryTxnEnded(tx *client.Txn) {
	if s.adv.hooked == tx {
		s.adv.hooked, s.adv.taken = nil, nil
	}
	ctx := context.Background()
	for k, a := range s.advKeys() {
		s.advUpdate(k, a, func() { a.xactCur, a.xactKey = [2]int{}, [2]int{} })
		s.advSettle(ctx, k, a)
	}
}

// advisoryClose releases everything at the session's end.
func (s *Session) advisoryClose() {
	if s.adv == nil {
		return
	}
	for k, a := range s.advKeys() {
		if a.tx != nil {
			rollback(context.Background(), a.tx)
		}
		s.advUpdate(k, a, func() { *a = advEntry{} })
	}
	s.e.adv.mu.Lock()
	delete(s.e.adv.sessions, s)
	s.e.adv.mu.Unlock()
}

// advisoryLockRows are pg_locks' rows: the advisory locks this node's
// sessions hold and wait for (PostgreSQL's columns; one row per key,
// mode and session, as its lock manager shows them).
func (e *Engine) advisoryLockRows() []plan.Row {
	e.adv.mu.Lock()
	sessions := make([]*Session, 0, len(e.adv.sessions))
	for s := range e.adv.sessions {
		sessions = append(sessions, s)
	}
	e.adv.mu.Unlock()
	sort.Slice(sessions, func(i, j int) bool { return sessions[i].pid < sessions[j].pid })
	var out []plan.Row
	row := func(s *Session, k advKey, m int, granted bool, since time.Time) plan.Row {
		wait := types.NullDatum
		if !granted {
			wait = types.DMicros(since.UnixMicro() - types.PGEpochUnixMicros)
		}
		return plan.Row{dStr("advisory"), dOID(k.db), dNull(), dNull(), dNull(), dNull(), dNull(),
			dOID(k.tag.ClassID), dOID(k.tag.ObjID), dInt(int64(k.tag.ObjSubID)), dNull(), dInt(int64(s.pid)),
			dStr(advModeName[m]), dBool(granted), dBool(false), wait}
	}
	for _, s := range sessions {
		s.adv.mu.Lock()
		keys := make([]advKey, 0, len(s.adv.keys))
		for k := range s.adv.keys {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return advLess(keys[i], keys[j]) })
		for _, k := range keys {
			a := s.adv.keys[k]
			for m := range 2 {
				if a.sess[m]+a.xactKey[m]+a.xactCur[m] > 0 {
					out = append(out, row(s, k, m, true, time.Time{}))
				}
			}
		}
		if w := s.adv.waiting; w != nil {
			out = append(out, row(s, w.key, w.mode, false, w.since))
		}
		s.adv.mu.Unlock()
	}
	return out
}

func advLess(a, b advKey) bool {
	if a.db != b.db {
		return a.db < b.db
	}
	if a.tag.ClassID != b.tag.ClassID {
		return a.tag.ClassID < b.tag.ClassID
	}
	if a.tag.ObjID != b.tag.ObjID {
		return a.tag.ObjID < b.tag.ObjID
	}
	return a.tag.ObjSubID < b.tag.ObjSubID
}
