package client

import (
	"context"
	"sync"

	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// Pipelined writes (TxnOptions.Pipelined), as CockroachDB's write
// pipelining: a transactional write returns once its tablet has checked it
// and proposed its intents, not once they are replicated. The tablet
// answers provisionally at the proposal (what the write will write: its
// time, the sums of its adds, the rows it found missing) and again when
// the entry is applied or failed. The transaction's next statements run
// while the intents replicate, and its commit awaits them all: a
// transaction of five writes waits for one replication before its commit
// rather than five.
//
// What must see a write waits for it first: the transaction's next request
// to the same tablet (a read, a write, a lock), any scan, a savepoint
// rollback, the commit and the rollback. The tablet holds the write's
// latches until the entry applies, so other transactions' reads and writes
// of its rows wait as before. A write that fails after its provisional
// answer (the leader lost its lease, the entry was dropped) fails the
// transaction with CodeTxnAborted (40001): its statements may have relied
// on it, so it cannot commit.

// inflightWrite is a pipelined write not yet known to be applied.
type inflightWrite struct {
	tablet uint64
	final  finalAnswer
}

// pipeline is a transaction's pipelined writes in flight.
type pipeline struct {
	mu       sync.Mutex
	inflight []inflightWrite
	err      error // the first write that failed after its provisional answer
}

// add records a write answered provisionally on tablet.
func (p *pipeline) add(tablet uint64, final finalAnswer) {
	p.mu.Lock()
	p.inflight = append(p.inflight, inflightWrite{tablet: tablet, final: final})
	p.mu.Unlock()
}

// settle waits for the writes in flight on tablet (every tablet when
// tablet is 0) and returns the transaction's pipelined failure, if any. A
// write whose wait ends with ctx counts as failed: whether it applied is
// unknown.
func (p *pipeline) settle(ctx context.Context, c *Client, tablet uint64) error {
	p.mu.Lock()
	var wait []inflightWrite
	keep := p.inflight[:0]
	for _, w := range p.inflight {
		if tablet == 0 || w.tablet == tablet {
			wait = append(wait, w)
		} else {
			keep = append(keep, w)
		}
	}
	clear(p.inflight[len(keep):])
	p.inflight = keep
	p.mu.Unlock()
	var first error
	for _, w := range wait {
		resp, err := w.final(ctx)
		if err == nil {
			r := resp.GetTxnWrite()
			c.observe(r.GetServerTime())
			if te := r.GetError(); te != nil {
				err = &tabletError{te}
			}
		}
		if err != nil && first == nil {
			first = err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if first != nil && p.err == nil {
		p.err = &Error{Code: CodeTxnAborted, Op: "txn-write",
			Message: "a write of the transaction failed after it was pipelined", Err: first}
	}
	return p.err
}

// settled is settle for a step that must not go ahead while the
// transaction's writes are in flight (see the top of the file).
func (tx *Txn) settled(ctx context.Context, tablet uint64) error {
	if !tx.opts.Pipelined {
		return nil
	}
	return tx.pipe.settle(ctx, tx.c, tablet)
}

// writeAt sends one TxnWrite attempt, pipelined when the transaction is.
func (tx *Txn) writeAt(ctx context.Context, addr string, req *tspb.TxnWriteRequest) (*tspb.TxnWriteResponse, finalAnswer, error) {
	if !tx.opts.Pipelined {
		resp, err := tx.c.txnWriteAt(ctx, addr, req)
		return resp, nil, err
	}
	return tx.c.txnWritePipelined(ctx, addr, req)
}
