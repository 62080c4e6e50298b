package client

import (
	"context"
	"sync"

	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
	"github.com/shaledb/shaledb/internal/txn"
)

// statusTable opens (creating it on first use) the transaction status
// table.
type statusTable struct {
	mu sync.Mutex
	t  *Table
}

func (c *Client) statusTable(ctx context.Context) (*Table, error) {
	c.status.mu.Lock()
	defer c.status.mu.Unlock()
	if c.status.t != nil {
		return c.status.t, nil
	}
	t, err := c.OpenTable(ctx, txn.Namespace, txn.TableName)
	if IsTableNotFound(err) {
		_, err = c.CreateTable(ctx, &masterpb.CreateTableRequest{
			Namespace: txn.Namespace, Name: txn.TableName, Schema: txn.Schema(), IfNotExists: true,
		})
		if err == nil {
			t, err = c.OpenTable(ctx, txn.Namespace, txn.TableName)
		}
	}
	if err != nil {
		return nil, err
	}
	c.status.t = t
	return t, nil
}

// statusTableOpen reports whether the client has opened the status table.
func (c *Client) statusTableOpen() bool {
	c.status.mu.Lock()
	defer c.status.mu.Unlock()
	return c.status.t != nil
}

// TxnStatusResult is a status record operation's answer.
type TxnStatusResult struct {
	State      tspb.TxnState
	CommitTime hlc.Timestamp
	WaitingFor []docdb.TxnID
	// WaitedOn (COMMIT, ABORT): a participant asked for the status while
	// the transaction was pending; someone may wait for its resolution.
	WaitedOn bool
}

// TxnStatus runs an operation on the status record of id at the status
// tablet's leader (the tservers' intent resolution uses it too). t is the
// operation's time: the read time of GET, the lower bound of COMMIT.
func (c *Client) TxnStatus(ctx context.Context, op tspb.TxnStatusRequest_Op, id docdb.TxnID, t hlc.Timestamp, waitingFor []docdb.TxnID) (TxnStatusResult, error) {
	st, err := c.statusTable(ctx)
	if err != nil {
		return TxnStatusResult{}, err
	}
	rowKey, err := st.RowKey(Row{"txn_id": docdb.Bytes(id[:])})
	if err != nil {
		return TxnStatusResult{}, err
	}
	ctx, cancel := c.opContext(ctx)
	defer cancel()
	var waits [][]byte
	for _, w := range waitingFor {
		waits = append(waits, append([]byte(nil), w[:]...))
	}
	s := &sender{c: c, write: op != tspb.TxnStatusRequest_GET}
	var resp *tspb.TxnStatusResponse
	err = st.routeKey(ctx, s, rowKey, func(tab *tabletMeta) call {
		return func(ctx context.Context, r *replica) (*tspb.TabletError, error) {
			out, err := c.txnStatusAt(ctx, r.addr, &tspb.TxnStatusRequest{TabletId: tab.id, RowKey: rowKey, TxnId: id[:], Op: op,
				Time: uint64(t), WaitingFor: waits, ClientTime: c.now()})
			if err != nil {
				return nil, err
			}
			c.observe(out.GetServerTime())
			resp = out
			return out.GetError(), nil
		}
	})
	if err != nil {
		return TxnStatusResult{}, s.finish(ctx, "txn-status", st, err)
	}
	res := TxnStatusResult{State: resp.GetState(), CommitTime: hlc.Timestamp(resp.GetCommitTime()), WaitedOn: resp.GetWaitedOn()}
	for _, w := range resp.GetWaitingFor() {
		var id docdb.TxnID
		copy(id[:], w)
		res.WaitingFor = append(res.WaitingFor, id)
	}
	return res, nil
}
