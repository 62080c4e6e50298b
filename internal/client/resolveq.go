package client

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// Piggybacked applies. After a commit, every participant must be told to
// apply the transaction's intents (TxnResolve APPLY), and nobody waits for
// that. Rather than one call per participant, the client queues each
// notification for the node it believes leads the participant and sends it
// with its next data stream call to that node (DataRequest.resolves); the
// node queues the apply there (tablet.QueueApply), where it rides on the
// tablet's next Raft entry, which may be that very call's. A node that no
// call reaches within resolveLinger gets the notifications queued for it in
// one call of their own. A notification sent to a node that no longer leads
// the tablet, or lost with a call, is a lost TxnResolve: the participant's
// readers, writers and cleanup loop resolve the intents from the status
// record.

// resolveLinger: how long a queued notification waits for a call to the
// node to ride on.
const resolveLinger = 5 * time.Millisecond

// resolveQueues holds the notifications not sent yet, by node address.
type resolveQueues struct {
	n      atomic.Int64 // notifications queued (the hot path's check)
	mu     sync.Mutex
	byAddr map[string][]*tspb.TxnResolveRequest
}

// queueApplies queues the APPLY notifications of committed transaction id
// for its participants (sent directly for a participant whose leader the
// client does not know). Those of a transaction someone waits for (urgent:
// its record was asked for while pending) go at once, with whatever else
// is queued for their nodes: a writer waiting for a hot row's lock waits
// for this notification, and the linger was up to a tenth of the time the
// lock was held in TPC-B.
func (tx *Txn) queueApplies(id docdb.TxnID, commit hlc.Timestamp, urgent bool) {
	c := tx.c
	q := &c.resolves
	var direct []*tabletMeta
	var arm, queued []string // nodes whose queue this starts; every node queued to
	q.mu.Lock()
	for _, tab := range tx.participants {
		r := tab.leader.Load()
		if r == nil {
			direct = append(direct, tab)
			continue
		}
		if q.byAddr == nil {
			q.byAddr = map[string][]*tspb.TxnResolveRequest{}
		}
		if len(q.byAddr[r.addr]) == 0 {
			arm = append(arm, r.addr)
		}
		if !slices.Contains(queued, r.addr) {
			queued = append(queued, r.addr)
		}
		q.byAddr[r.addr] = append(q.byAddr[r.addr], &tspb.TxnResolveRequest{TabletId: tab.id, TxnId: id[:],
			Kind: tspb.TxnResolveRequest_APPLY, CommitTime: uint64(commit)})
		q.n.Add(1)
	}
	q.mu.Unlock()
	linger := resolveLinger
	if urgent {
		arm, linger = queued, 0
	}
	for _, addr := range arm {
		time.AfterFunc(linger, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c.flushResolves(ctx, addr)
		})
	}
	if len(direct) > 0 {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for _, tab := range direct {
				s := &sender{c: c, write: true}
				_ = s.toTablet(ctx, tab, func(ctx context.Context, r *replica) (*tspb.TabletError, error) {
					resp, err := c.txnResolveAt(ctx, r.addr, &tspb.TxnResolveRequest{TabletId: tab.id, TxnId: id[:],
						Kind: tspb.TxnResolveRequest_APPLY, CommitTime: uint64(commit), ClientTime: c.now()})
					if err != nil {
						return nil, err
					}
					return resp.GetError(), nil
				})
			}
		}()
	}
}

// takeResolves takes the notifications queued for addr.
func (c *Client) takeResolves(addr string) []*tspb.TxnResolveRequest {
	q := &c.resolves
	if q.n.Load() == 0 {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.byAddr[addr]
	if len(out) > 0 {
		delete(q.byAddr, addr)
		q.n.Add(-int64(len(out)))
	}
	return out
}

// flushResolves sends the notifications queued for addr that no call took:
// the first as the call, the others riding on it.
func (c *Client) flushResolves(ctx context.Context, addr string) {
	reqs := c.takeResolves(addr)
	if len(reqs) == 0 {
		return
	}
	now := c.now()
	for _, r := range reqs {
		r.ClientTime = now
	}
	_, _ = c.dataCall(ctx, addr, &tspb.DataRequest{Req: &tspb.DataRequest_TxnResolve{TxnResolve: reqs[0]}, Resolves: reqs[1:]})
}

// flushAllResolves sends every queued notification (Close), for a second
// at most.
func (c *Client) flushAllResolves() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	q := &c.resolves
	q.mu.Lock()
	addrs := make([]string, 0, len(q.byAddr))
	for addr := range q.byAddr {
		addrs = append(addrs, addr)
	}
	q.mu.Unlock()
	var wg sync.WaitGroup
	for _, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.flushResolves(ctx, addr)
		}()
	}
	wg.Wait()
}
