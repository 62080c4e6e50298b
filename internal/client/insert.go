package client

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/shaledb/shaledb/internal/docdb"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// Insert writes a row that must not exist yet; see OpInsert.
func (t *Table) Insert(ctx context.Context, row Row, opts ...WriteOption) error {
	return t.applyOne(ctx, Op{Kind: OpInsert, Row: row}, opts)
}

// Insert is the transactional Table.Insert.
func (tx *Txn) Insert(ctx context.Context, t *Table, row Row) error {
	return tx.Apply(ctx, t, []Op{{Kind: OpInsert, Row: row}})
}

// DuplicateKeyError is the Err of a CodeDuplicateKey error: the insert that
// met an existing row.
type DuplicateKeyError struct {
	// Index is the op's index in the ops of the Apply that failed (0 for
	// Table.Insert and Txn.Insert).
	Index int
	// RowKey is the row's key (as Table.RowKey encodes it).
	RowKey []byte
	cause  error // the server's answer (its op index counts one request's ops)
}

func (e *DuplicateKeyError) Error() string {
	return fmt.Sprintf("op %d inserts a row that exists (key %x)", e.Index, e.RowKey)
}

func (e *DuplicateKeyError) Unwrap() error { return e.cause }

// DuplicateIndex returns the index, in the ops of the Apply that failed
// with err, of an insert whose row exists; false if err is not
// CodeDuplicateKey. When inserts on several tablets collide, it names one
// of them.
func DuplicateIndex(err error) (int, bool) {
	var d *DuplicateKeyError
	if !hasCode(err, CodeDuplicateKey) || !errors.As(err, &d) {
		return 0, false
	}
	return d.Index, true
}

func duplicateKeyError(te *tspb.TabletError) error {
	return &Error{Code: CodeDuplicateKey, Err: &DuplicateKeyError{Index: int(te.GetOpIndex()), RowKey: te.GetRowKey(), cause: &tabletError{te}}}
}

// remapDuplicate turns the op index of a duplicate-key answer, which counts
// the ops of one request, into owner[index]; other errors pass.
func remapDuplicate(err error, owner []int) error {
	var e *Error
	var d *DuplicateKeyError
	if !errors.As(err, &e) || e.Code != CodeDuplicateKey || !errors.As(e.Err, &d) {
		return err
	}
	if d.Index < 0 || d.Index >= len(owner) {
		return &Error{Code: CodeInternal, Message: fmt.Sprintf("duplicate key answer names op %d of a %d-op request", d.Index, len(owner)), Err: err}
	}
	nd, ne := *d, *e
	nd.Index = owner[d.Index]
	ne.Err = &nd
	return &ne
}

// plainDuplicate maps a plain (Table.Apply) write's duplicate-key answer
// to the caller's op. Plain writes are retried after an ambiguous attempt;
// a duplicate after one may be the row that attempt wrote, so it is
// reported as CodeAmbiguous.
func (s *sender) plainDuplicate(owner []int, err error) error {
	err = remapDuplicate(err, owner)
	if !hasCode(err, CodeDuplicateKey) {
		return err
	}
	s.mu.Lock()
	ambiguous := s.ambiguous
	s.mu.Unlock()
	if ambiguous {
		return &Error{Code: CodeAmbiguous, Message: "an insert found its row after an attempt whose outcome is unknown, which may have written it", Err: err}
	}
	return err
}

// ownOp is the op as the transaction's own-write overlay keeps it: an
// insert that succeeded is a put.
func ownOp(op Op) Op {
	if op.Kind == OpInsert {
		op.Kind = OpPut
	}
	return op
}

// byTablet flattens the DocDB ops of a transactional Apply and orders them
// by tablet (as the meta cache locates them now), and returns, for each,
// the index of the caller's op it comes from. Txn.send sends one request
// per run of consecutive write ids on a tablet, so ops in the caller's
// order would cost a request for almost every op when rows spread over
// tablets; grouped, it is one request per tablet. The sort is stable and
// every op of a row goes to the same tablet, so the ops of each row keep
// their order and the newest write of a row still gets the highest write
// id. A stale cache only costs more requests.
func byTablet(ctx context.Context, t *Table, prepared []keyedOps) ([]docdb.WriteOp, []int) {
	var ops []docdb.WriteOp
	var owner []int
	for i, k := range prepared {
		ops = append(ops, k.ops...)
		for range k.ops {
			owner = append(owner, i)
		}
	}
	if len(ops) < 2 {
		return ops, owner
	}
	m, err := t.c.cache.get(ctx, t.id, nil)
	if err != nil || len(m.tablets) < 2 {
		return ops, owner // send finds out again
	}
	rank := make([]int, len(ops))
	seen := map[*tabletMeta]int{}
	for j := range ops {
		tab := m.locate(ops[j].RowKey)
		r, ok := seen[tab]
		if !ok {
			r = len(seen)
			seen[tab] = r
		}
		rank[j] = r
	}
	if len(seen) < 2 {
		return ops, owner
	}
	perm := make([]int, len(ops))
	for j := range perm {
		perm[j] = j
	}
	sort.SliceStable(perm, func(a, b int) bool { return rank[perm[a]] < rank[perm[b]] })
	sorted := make([]docdb.WriteOp, len(ops))
	sortedOwner := make([]int, len(ops))
	for j, p := range perm {
		sorted[j], sortedOwner[j] = ops[p], owner[p]
	}
	return sorted, sortedOwner
}

// applyFailed finishes a Txn.Apply whose send failed. A duplicate key
// names the caller's op (owner maps send's ops to them), and since the
// batch's other tablets may have written their intents, every intent from
// the batch's first write id on is removed, as a savepoint rollback would:
// the transaction stays usable, as if the Apply had not happened. If that
// fails, the transaction is rolled back and ends.
func (tx *Txn) applyFailed(ctx context.Context, err error, owner []int, base uint32) error {
	err = remapDuplicate(err, owner)
	if !hasCode(err, CodeDuplicateKey) {
		return err
	}
	// The batch's writes answered provisionally land before the removal.
	rerr := tx.settled(ctx, 0)
	if rerr == nil {
		rerr = tx.resolveAll(ctx, &tspb.TxnResolveRequest{TxnId: tx.id[:], Kind: tspb.TxnResolveRequest_REMOVE_FROM_WRITE_ID, FromWriteId: base})
	}
	if rerr == nil {
		return err
	}
	_ = tx.Rollback(context.WithoutCancel(ctx))
	var e *Error
	errors.As(err, &e)
	ne := *e
	ne.Message = fmt.Sprintf("the transaction was rolled back: removing the batch's other writes failed: %v", rerr)
	return &ne
}
