package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/rpc"
	"github.com/shaledb/shaledb/internal/server"
	"github.com/shaledb/shaledb/internal/server/servertest"
)

// spread returns max-min of replicas and of leaders over live tservers.
func spread(ts []*masterpb.TServerInfo) (replicas, leaders uint32) {
	var rmin, rmax, lmin, lmax uint32 = 1 << 31, 0, 1 << 31, 0
	for _, x := range ts {
		if x.GetState() != masterpb.TServerInfo_LIVE {
			continue
		}
		rmin, rmax = min(rmin, x.GetTablets()), max(rmax, x.GetTablets())
		lmin, lmax = min(lmin, x.GetLeaders()), max(lmax, x.GetLeaders())
	}
	return rmax - rmin, lmax - lmin
}

func kvTable(name string, tablets uint32) *masterpb.CreateTableRequest {
	return &masterpb.CreateTableRequest{
		Namespace: "test", Name: name,
		Schema: &masterpb.Schema{Columns: []*masterpb.ColumnSchema{
			{Id: 1, Name: "k", Type: "text", IsHashKey: true},
			{Id: 2, Name: "v", Type: "bytes", Nullable: true},
		}},
		Partitioning: &masterpb.Partitioning{Kind: masterpb.Partitioning_HASH, NumTablets: tablets},
	}
}

// TestBootstrapJoinDDLAndMasterFailover: the first node bootstraps a
// cluster, two joiners become masters (three sys catalog voters), a hash
// table's tablets are placed on all three nodes with elected leaders, and
// after the master leader stops, DDL keeps working; the stopped node comes
// back as itself.
func TestBootstrapJoinDDLAndMasterFailover(t *testing.T) {
	c := servertest.New(t, 3)
	pool := rpc.NewPool()
	defer pool.Close()
	ms := client.NewMasters(pool, c.Addrs)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	c.WaitMasters(20 * time.Second)

	var masters *masterpb.ListMastersResponse
	if err := ms.Call(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
		r, err := mc.ListMasters(ctx, &masterpb.ListMastersRequest{})
		masters = r
		return r.GetError(), err
	}); err != nil {
		t.Fatal(err)
	}
	if len(masters.GetMasters()) != 3 {
		t.Fatalf("masters: %v", masters.GetMasters())
	}

	start := time.Now()
	var created *masterpb.CreateTableResponse
	if err := ms.Call(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
		r, err := mc.CreateTable(ctx, kvTable("kv", 8))
		created = r
		return r.GetError(), err
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("CreateTable of 8 tablets (RF3) took %v", time.Since(start))
	if created.GetTable().GetTableId() == 0 {
		t.Fatal("no table id")
	}
	// The same name again is refused; with if_not_exists it is fine.
	err := ms.Call(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
		r, err := mc.CreateTable(ctx, kvTable("kv", 8))
		return r.GetError(), err
	})
	if !client.IsCode(err, masterpb.MasterError_ALREADY_EXISTS) {
		t.Fatalf("duplicate table: %v", err)
	}
	bad := kvTable("bad", 2)
	bad.Schema.Columns[0].Type = "nonsense"
	err = ms.Call(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
		r, err := mc.CreateTable(ctx, bad)
		return r.GetError(), err
	})
	if !client.IsCode(err, masterpb.MasterError_INVALID_ARGUMENT) {
		t.Fatalf("bad column type: %v", err)
	}

	// Every tablet gets its three replicas and an elected leader, reported
	// back through heartbeats.
	consensustest.WaitFor(t, 20*time.Second, "leaders of every tablet known to the master", func() bool {
		var tbl *masterpb.GetTableResponse
		err := ms.Call(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
			r, err := mc.GetTable(ctx, &masterpb.GetTableRequest{Namespace: "test", Name: "kv"})
			tbl = r
			return r.GetError(), err
		})
		if err != nil || len(tbl.GetTablets()) != 8 {
			return false
		}
		for _, loc := range tbl.GetTablets() {
			if loc.GetLeaderNode() == 0 || len(loc.GetReplicas()) != 3 {
				return false
			}
		}
		return true
	})
	for i, s := range c.Servers {
		if n := len(s.Node().Tablets()); n != 8+1 {
			t.Fatalf("node %d hosts %d tablets, want 8 and the sys catalog", i+1, n)
		}
	}

	// Stop the master leader; the others elect a new one and DDL works.
	var leaderIdx int
	for i, s := range c.Servers {
		if s.Master().IsLeader() {
			leaderIdx = i
		}
	}
	c.Servers[leaderIdx].Stop()
	c.Servers[leaderIdx] = nil
	// With one of three nodes down an RF 3 table cannot be placed; RF 1 can.
	start = time.Now()
	err = ms.Call(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
		r, err := mc.CreateTable(ctx, kvTable("kv2", 3))
		return r.GetError(), err
	})
	if !client.IsCode(err, masterpb.MasterError_NOT_ENOUGH_TSERVERS) {
		t.Fatalf("RF 3 table on two live nodes: %v", err)
	}
	rf1 := kvTable("kv2", 3)
	rf1.ReplicationFactor = 1
	if err := ms.Call(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
		r, err := mc.CreateTable(ctx, rf1)
		return r.GetError(), err
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("DDL after master leader failover answered in %v", time.Since(start))

	// The stopped node restarts as itself and hosts its tablets again.
	c.Start(leaderIdx, []string{c.Addrs[(leaderIdx+1)%3]})
	if got := c.Servers[leaderIdx].NodeID(); got != uint64(leaderIdx+1) {
		t.Fatalf("restarted node has id %d, want %d", got, leaderIdx+1)
	}
	var ts *masterpb.ListTServersResponse
	consensustest.WaitFor(t, 20*time.Second, "three live tservers", func() bool {
		err := ms.Call(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
			r, err := mc.ListTServers(ctx, &masterpb.ListTServersRequest{})
			ts = r
			return r.GetError(), err
		})
		if err != nil || len(ts.GetTservers()) != 3 {
			return false
		}
		for _, x := range ts.GetTservers() {
			if x.GetState() != masterpb.TServerInfo_LIVE {
				return false
			}
		}
		return true
	})

	// Drop a table: gone from the catalog, replicas deleted.
	if err := ms.Call(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
		r, err := mc.DropTable(ctx, &masterpb.DropTableRequest{Namespace: "test", Name: "kv2"})
		return r.GetError(), err
	}); err != nil {
		t.Fatal(err)
	}
	consensustest.WaitFor(t, 20*time.Second, "kv2's replicas deleted everywhere", func() bool {
		for _, s := range c.Servers {
			if len(s.Node().Tablets()) != 8+1 {
				return false
			}
		}
		return true
	})
}

// TestDataDirOfAnotherCluster: a node whose data dir belongs to another
// cluster is refused with a clear error.
func TestDataDirOfAnotherCluster(t *testing.T) {
	a := servertest.New(t, 1)
	b := servertest.New(t, 1)
	cfg := b.Config(0, []string{a.Addrs[0]})
	b.Servers[0].Stop()
	b.Servers[0] = nil
	cfg.RPCAddr = "127.0.0.1:0"
	s, err := server.Start(cfg)
	if err == nil {
		s.Stop()
		t.Fatal("a node of cluster B joined cluster A")
	}
	t.Logf("refused: %v", err)
}

// TestAddNodeRebalancesAndDeadNodeIsReplaced: a fourth node receives about
// a quarter of the replicas and leaders; when a node then dies for longer
// than the follower-unavailable timeout its replicas are re-created on the
// others.
func TestAddNodeRebalancesAndDeadNodeIsReplaced(t *testing.T) {
	c := servertest.New(t, 3)
	pool := rpc.NewPool()
	defer pool.Close()
	ms := client.NewMasters(pool, c.Addrs)
	if _, err := servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.CreateTableResponse, error) {
		return mc.CreateTable(ctx, kvTable("kv", 12))
	}); err != nil {
		t.Fatal(err)
	}
	listTS := func() []*masterpb.TServerInfo {
		r, err := servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.ListTServersResponse, error) {
			return mc.ListTServers(ctx, &masterpb.ListTServersRequest{})
		})
		if err != nil {
			t.Fatal(err)
		}
		return r.GetTservers()
	}
	var ts []*masterpb.TServerInfo
	balanced := func(nodes int, replicas uint32) func() bool {
		return func() bool {
			ts = listTS()
			var live, total, leaders uint32
			for _, x := range ts {
				if x.GetState() == masterpb.TServerInfo_LIVE {
					live++
					total += x.GetTablets()
					leaders += x.GetLeaders()
				}
			}
			rs, ls := spread(ts)
			return live == uint32(nodes) && total == replicas && leaders == 12 && rs <= 1 && ls <= 1
		}
	}
	consensustest.WaitFor(t, 30*time.Second, "12 tablets on 3 nodes with leaders spread", balanced(3, 36))

	start := time.Now()
	added := c.AddNode()
	consensustest.WaitFor(t, 60*time.Second, "the new node filled to a quarter", balanced(4, 36))
	t.Logf("node %d filled in %v: %v", added+1, time.Since(start), summary(ts))

	// Node 4 dies; after the timeout its replicas move to the other three.
	c.Servers[added].Stop()
	c.Servers[added] = nil
	start = time.Now()
	consensustest.WaitFor(t, 60*time.Second, "the dead node's replicas re-created", func() bool {
		ts = listTS()
		for _, x := range ts {
			if x.GetState() == masterpb.TServerInfo_LIVE && x.GetTablets() != 12 {
				return false
			}
		}
		return true
	})
	t.Logf("re-replicated in %v (timeout 2s): %v", time.Since(start), summary(ts))
}

func summary(ts []*masterpb.TServerInfo) string {
	out := ""
	for _, x := range ts {
		out += fmt.Sprintf("[node %d %s: %d replicas, %d leaders] ", x.GetNodeId(), x.GetState(), x.GetTablets(), x.GetLeaders())
	}
	return out
}
