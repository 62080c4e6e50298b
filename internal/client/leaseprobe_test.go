package client_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/status"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/server/servertest"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// hungNode serves a node's data calls by never answering, as a hung
// node's connection would.
type hungNode struct{}

func (hungNode) ServeData(ctx context.Context, _ *tspb.DataRequest) (*tspb.DataResponse, error) {
	<-ctx.Done()
	return nil, status.FromContextError(ctx.Err()).Err()
}

// TestHungLeaderLeaseProbe: calls to the leader the client knows go
// unanswered, as a hung node's would. While that node still holds the
// lease, the lease probes find no other holder and the attempt waits; once
// another replica leads, a request stuck at the hung node moves there as
// soon as a probe finds it, instead of waiting out the attempt timeout.
func TestHungLeaderLeaseProbe(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	const attemptTimeout = 20 * time.Second
	cl := open(t, c)
	tb := create(t, cl, hashTable("kv", 1))
	putKV(t, tb, 0, 10)
	row := client.Row{"k": docdb.Text(key(1))}
	old, err := tb.LeaderOf(ctxT(t), row)
	if err != nil || old == 0 {
		t.Fatalf("leader: %d, %v", old, err)
	}
	oldAddr, err := tb.LeaderAddrOf(ctxT(t), row)
	if err != nil {
		t.Fatal(err)
	}
	id, err := tb.TabletOf(ctxT(t), row)
	if err != nil {
		t.Fatal(err)
	}
	// The master knows the leader, so that a new client's locations name it.
	consensustest.WaitFor(t, 20*time.Second, "the master knows the leader", func() bool {
		resp, err := servertest.Call(t, cl.Masters(), func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.GetTableResponse, error) {
			return mc.GetTable(ctx, &masterpb.GetTableRequest{Namespace: "test", Name: "kv"})
		})
		return err == nil && len(resp.GetTablets()) == 1 && resp.GetTablets()[0].GetLeaderNode() == old
	})
	// A client whose calls to the leader go unanswered (served "in
	// process" by a node that never answers).
	cl = openWith(t, c, client.Config{AttemptTimeout: attemptTimeout, Timeout: time.Minute, LeaseProbeAfter: 100 * time.Millisecond,
		Local: hungNode{}, LocalAddr: oldAddr})
	if tb, err = cl.OpenTable(ctxT(t), "test", "kv"); err != nil {
		t.Fatal(err)
	}
	if l, _ := tb.LeaderOf(ctxT(t), row); l != old {
		t.Fatalf("the hung client takes node %d for the leader, want %d", l, old)
	}

	// The hung node still holds the lease: nothing to move to.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_, _, err = tb.Get(ctx, row)
	cancel()
	if !client.IsTimeout(err) {
		t.Fatalf("get while the hung node holds the lease: %v, want a timeout", err)
	}
	if moves := cl.Stats().LeaseMoves; moves != 0 {
		t.Fatalf("%d lease moves while the hung node held the lease", moves)
	}

	// Another replica takes the lease; the client still takes the hung
	// node for the leader.
	oldTablet, ok := c.Servers[c.Index(old)].Node().Tablet(id)
	if !ok {
		t.Fatalf("node %d has no tablet %d", old, id)
	}
	target := uint64(0)
	for _, v := range oldTablet.Group().Status().Voters {
		if v != old {
			target = v
			break
		}
	}
	consensustest.Retry(t, 20*time.Second, "leadership moves away from the hung node", func(ctx context.Context) error {
		return oldTablet.Group().TransferLeadership(ctx, target)
	})
	consensustest.WaitFor(t, 20*time.Second, "the new leader holds the lease", func() bool {
		nt, ok := c.Servers[c.Index(target)].Node().Tablet(id)
		return ok && nt.Group().HasLease()
	})
	if l, _ := tb.LeaderOf(ctxT(t), row); l != old {
		t.Fatalf("the client already knows the new leader (%d)", l)
	}
	start := time.Now()
	if err := tb.Put(ctxT(t), client.Row{"k": docdb.Text(key(1)), "v": docdb.Int64(100)}); err != nil {
		t.Fatalf("put after the lease moved: %v", err)
	}
	took := time.Since(start)
	if moves := cl.Stats().LeaseMoves; moves != 1 {
		t.Fatalf("%d lease moves, want 1", moves)
	}
	if took >= attemptTimeout {
		t.Fatalf("the put took %v: it waited out the attempt at the hung node", took)
	}
	if l, _ := tb.LeaderOf(ctxT(t), row); l != target {
		t.Fatalf("the client takes node %d for the leader, want %d", l, target)
	}
	got, found, err := tb.Get(ctxT(t), row)
	if err != nil || !found || got["v"].Int != 100 {
		t.Fatalf("get after the move: %v %v %v", got, found, err)
	}
	t.Logf("a put stuck at the hung node moved to node %d after %v (attempt timeout %v)", target, took.Round(time.Millisecond), attemptTimeout)
}
