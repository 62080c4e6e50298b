package tablet

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
)

// Deferred applies. After a commit the coordinator asks every participant
// to apply the transaction's intents (an APPLY notification riding on its
// next call to the node, or a TxnResolve), and nobody waits for that. So the leader does not give each such apply a Raft entry of its
// own: it queues the (small) transaction, and the next entry it proposes
// carries the apply in front of its own command (cmdApplyTxns); if none
// comes within applyLinger, an entry of its own carries every queued apply.
// Under a steady load a short transaction's apply costs no Raft round of
// its own (on a machine where every round costs CPU on three replicas, that
// was two rounds in five of a two-tablet transaction).
//
// Meanwhile the intents stay, as they would while an apply is in flight:
// readers and writers that meet them find the commit in the queue (no
// status lookup) and apply at once, as they do for any committed
// transaction (ApplyTxn; the queued applies ride along). Writers waiting
// here for the transaction are woken when its apply is queued (nudge): the
// first one's entry carries it, where it used to be applied at once in an
// entry of its own, which each update of a hot row paid before its own. A
// large transaction is applied at once. The queue
// lives in the leader's memory only: a queued apply lost with the
// leadership (or with a proposal that failed) is what a lost TxnResolve
// always was, and is resolved the same way (readers, writers, the cleanup
// loop, through the status record).
const (
	// cmdApplyTxns: the applies of committed transactions, then
	// optionally another command (the entry's own; none for a flush).
	cmdApplyTxns byte = 6
	// deferMaxIntents: a transaction with more intents here is applied in
	// an entry of its own at once (an unrelated write should not carry a
	// bulk load's apply).
	deferMaxIntents = 512
)

// applyLinger: how long a queued apply waits for an entry to ride on (ns;
// tests change it). 50 ms rather than 10: pgbench TPC-B at 8 clients
// (scale 10) went from 6.6 to 5.5 Raft entries a transaction (an account
// tablet sees a write every ~25 ms, so at 10 ms most of its applies took
// an entry of their own) and 274 to 291 tps; the Bank workload's checkers,
// which read rows whose applies wait, were no slower (docs/benchmarks.md).
var applyLinger atomic.Int64

func init() { applyLinger.Store(int64(50 * time.Millisecond)) }

// lingerAfter arms the linger's timers (tests replace it to fire them
// themselves).
var lingerAfter = func(d time.Duration, f func()) { time.AfterFunc(d, f) }

type queuedApply struct {
	txn    docdb.TxnID
	commit hlc.Timestamp
}

// applyQueue is the leader's queue of deferred applies.
type applyQueue struct {
	mu      sync.Mutex
	pending map[docdb.TxnID]hlc.Timestamp
	// gen counts the times the queue went from empty to not: each time
	// arms a flush timer for that generation, which does nothing if an
	// entry took the applies before it fired. So every apply gets its
	// whole linger to ride on an entry (a timer armed for applies an
	// entry took used to flush the next ones early).
	gen uint64
}

// ApplyTxnLater applies txn's intents here at its commit time, soon: it
// queues the apply to ride on the next entry (see above), and wakes the
// writers waiting for txn, unless txn is large, in which case it applies
// at once (ApplyTxn). It must run on the leader. Idempotent.
func (t *Tablet) ApplyTxnLater(ctx context.Context, txn docdb.TxnID, commit hlc.Timestamp) error {
	queued, err := t.QueueApply(ctx, txn, commit)
	if err != nil || queued {
		return err
	}
	return t.ApplyTxn(ctx, txn, commit)
}

// QueueApply is ApplyTxnLater without the apply at once: it reports false
// (and does nothing) when txn must be applied at once (ApplyTxn), and true
// when its apply is queued or it has no intents here.
func (t *Tablet) QueueApply(ctx context.Context, txn docdb.TxnID, commit hlc.Timestamp) (bool, error) {
	live, size, waited := t.txns.info(txn)
	if !live {
		return true, nil // applied or removed here already
	}
	if size > deferMaxIntents {
		return false, nil
	}
	if err := t.leaderReady(ctx); err != nil {
		return false, err
	}
	q := &t.applyQ
	q.mu.Lock()
	if q.pending == nil {
		q.pending = map[docdb.TxnID]hlc.Timestamp{}
	}
	arm := len(q.pending) == 0
	if arm {
		q.gen++
	}
	gen := q.gen
	q.pending[txn] = commit
	q.mu.Unlock()
	if arm {
		lingerAfter(time.Duration(applyLinger.Load()), func() { t.flushApplies(gen) })
	}
	if waited {
		t.txns.nudge(txn)
	}
	return true, nil
}

// queuedCommit returns the commit time of txn if its apply is queued here.
func (t *Tablet) queuedCommit(txn docdb.TxnID) (hlc.Timestamp, bool) {
	q := &t.applyQ
	q.mu.Lock()
	defer q.mu.Unlock()
	c, ok := q.pending[txn]
	return c, ok
}

// takeApplies empties the queue; the flush timer armed for it will find a
// later generation, or none.
func (t *Tablet) takeApplies() []queuedApply {
	q := &t.applyQ
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.pending) == 0 {
		return nil
	}
	out := make([]queuedApply, 0, len(q.pending))
	for txn, c := range q.pending {
		out = append(out, queuedApply{txn, c})
	}
	clear(q.pending)
	return out
}

// flushApplies proposes the queued applies of generation gen in an entry of
// their own, unless an entry took them within applyLinger.
func (t *Tablet) flushApplies(gen uint64) {
	q := &t.applyQ
	q.mu.Lock()
	due := q.gen == gen && len(q.pending) > 0
	q.mu.Unlock()
	if !due {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = t.proposeLatched(ctx, func(hlc.Timestamp) []byte { return encodeApplyTxns(t.takeApplies(), nil) }, func() {})
}

// withQueuedApplies puts the queued applies in front of cmd (see above).
func (t *Tablet) withQueuedApplies(cmd []byte) []byte {
	if len(cmd) == 0 || cmd[0] == cmdApplyTxns {
		return cmd
	}
	if applies := t.takeApplies(); len(applies) > 0 {
		return encodeApplyTxns(applies, cmd)
	}
	return cmd
}

// encodeApplyTxns: cmdApplyTxns | count (4 BE) | count x (txn id | commit
// time (8 BE)) | the entry's own command (may be empty).
func encodeApplyTxns(applies []queuedApply, inner []byte) []byte {
	b := make([]byte, 0, 5+len(applies)*24+len(inner))
	b = append(b, cmdApplyTxns)
	b = binary.BigEndian.AppendUint32(b, uint32(len(applies)))
	for _, a := range applies {
		b = append(b, a.txn[:]...)
		b = binary.BigEndian.AppendUint64(b, uint64(a.commit))
	}
	return append(b, inner...)
}

func decodeApplyTxns(b []byte) ([]queuedApply, []byte, error) {
	if len(b) < 5 {
		return nil, nil, errMalformedCmd
	}
	n := int(binary.BigEndian.Uint32(b[1:]))
	b = b[5:]
	if n > len(b)/24 {
		return nil, nil, errMalformedCmd
	}
	out := make([]queuedApply, n)
	for i := range out {
		copy(out[i].txn[:], b)
		out[i].commit = hlc.Timestamp(binary.BigEndian.Uint64(b[16:]))
		b = b[24:]
	}
	if len(b) > 0 && b[0] == cmdApplyTxns {
		return nil, nil, errMalformedCmd // never nested
	}
	return out, b, nil
}

// applyTxns applies a cmdApplyTxns entry: the applies, then the entry's own
// command, whose result is the entry's.
func (sm *stateMachine) applyTxns(b *pebble.Batch, e entryData) any {
	t := (*Tablet)(sm)
	if err := t.servable(); err != nil {
		return err
	}
	applies, inner, err := decodeApplyTxns(e.data)
	if err != nil {
		return fmt.Errorf("tablet %d: index %d: %w", t.desc.ID, e.index, err)
	}
	for _, a := range applies {
		if _, err := t.applyCommitted(b, a.txn, a.commit, 0); err != nil { // small ones: whole
			return err
		}
	}
	if len(inner) == 0 {
		return hlc.Timestamp(0)
	}
	return e.inner(inner)
}

// entryData is what applyTxns needs of an entry, and how to apply the
// command it wraps.
type entryData struct {
	index uint64
	data  []byte
	inner func(cmd []byte) any
}
