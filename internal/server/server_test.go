package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/consensus"
	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/master"
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

// TestBootstrapJoinDDLAndMasterFailover: the first node bootstraps a
// cluster, two joiners become masters (three sys catalog voters), a hash
// table's tablets are placed on all three nodes with elected leaders, and
// after the master leader stops, DDL keeps working; the stopped node comes
// back as itself.
func TestBootstrapJoinDDLAndMasterFailover(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	pool := rpc.NewPool()
	defer pool.Close()
	ms := client.NewMasters(pool, c.Addrs)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	consensustest.WaitFor(t, 20*time.Second, "three master voters", func() bool {
		for _, s := range c.Servers {
			if m := s.Master(); m == nil {
				return false
			}
		}
		tb, ok := c.Servers[0].Node().Tablet(master.SysCatalogTabletID)
		return ok && len(tb.Group().Status().Voters) == 3
	})

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
		r, err := mc.CreateTable(ctx, servertest.KVTable("kv", 8))
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
		r, err := mc.CreateTable(ctx, servertest.KVTable("kv", 8))
		return r.GetError(), err
	})
	if !client.IsCode(err, masterpb.MasterError_ALREADY_EXISTS) {
		t.Fatalf("duplicate table: %v", err)
	}
	bad := servertest.KVTable("bad", 2)
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
		r, err := mc.CreateTable(ctx, servertest.KVTable("kv2", 3))
		return r.GetError(), err
	})
	if !client.IsCode(err, masterpb.MasterError_NOT_ENOUGH_TSERVERS) {
		t.Fatalf("RF 3 table on two live nodes: %v", err)
	}
	rf1 := servertest.KVTable("kv2", 3)
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
	a := servertest.NewCluster(t, 1)
	b := servertest.NewCluster(t, 1)
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
	c := servertest.NewCluster(t, 3)
	pool := rpc.NewPool()
	defer pool.Close()
	ms := client.NewMasters(pool, c.Addrs)
	if _, err := servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.CreateTableResponse, error) {
		return mc.CreateTable(ctx, servertest.KVTable("kv", 12))
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

// TestSplitTabletThroughMaster: the master splits a tablet; the catalog
// then routes to the two children with the parent's replicas, and every
// node drops its copy of the parent.
func TestSplitTabletThroughMaster(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	pool := rpc.NewPool()
	defer pool.Close()
	ms := client.NewMasters(pool, c.Addrs)
	if _, err := servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.CreateTableResponse, error) {
		return mc.CreateTable(ctx, servertest.KVTable("kv", 2))
	}); err != nil {
		t.Fatal(err)
	}
	getTable := func() *masterpb.GetTableResponse {
		r, err := servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.GetTableResponse, error) {
			return mc.GetTable(ctx, &masterpb.GetTableRequest{Namespace: "test", Name: "kv"})
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	var before *masterpb.GetTableResponse
	consensustest.WaitFor(t, 20*time.Second, "leaders known", func() bool {
		before = getTable()
		for _, l := range before.GetTablets() {
			if l.GetLeaderNode() == 0 {
				return false
			}
		}
		return true
	})
	parent := before.GetTablets()[0].GetTablet()
	sp, err := servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.SplitTabletResponse, error) {
		return mc.SplitTablet(ctx, &masterpb.SplitTabletRequest{TabletId: parent.GetTabletId()})
	})
	if err != nil {
		t.Fatal(err)
	}
	if sp.GetLeft().GetHashStart() != parent.GetHashStart() || sp.GetLeft().GetHashEnd() != sp.GetRight().GetHashStart() ||
		sp.GetRight().GetHashEnd() != parent.GetHashEnd() {
		t.Fatalf("children %v %v of %v", sp.GetLeft(), sp.GetRight(), parent)
	}
	after := getTable()
	if len(after.GetTablets()) != 3 {
		t.Fatalf("%d tablets after the split, want 3", len(after.GetTablets()))
	}
	// The tablets still tile the table's span in key order.
	for i := 1; i < len(after.GetTablets()); i++ {
		if string(after.GetTablets()[i-1].GetTablet().GetSpan().GetEnd()) != string(after.GetTablets()[i].GetTablet().GetSpan().GetStart()) {
			t.Fatalf("gap or overlap between tablets %d and %d", i-1, i)
		}
	}
	consensustest.WaitUntil(t, 20*time.Second, "parent replicas deleted and children led", func() string {
		for i, s := range c.Servers {
			if _, ok := s.Node().Tablet(parent.GetTabletId()); ok {
				return fmt.Sprintf("server %d still holds the parent", i)
			}
		}
		for _, l := range getTable().GetTablets() {
			if l.GetLeaderNode() == 0 || len(l.GetReplicas()) != 3 {
				return fmt.Sprintf("tablet %d: leader %d, %d replicas", l.GetTablet().GetTabletId(), l.GetLeaderNode(), len(l.GetReplicas()))
			}
		}
		return ""
	})
	// Splitting the parent again is refused: it no longer exists.
	_, err = servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.SplitTabletResponse, error) {
		return mc.SplitTablet(ctx, &masterpb.SplitTabletRequest{TabletId: parent.GetTabletId()})
	})
	if !client.IsCode(err, masterpb.MasterError_NOT_FOUND) {
		t.Fatalf("split of a split tablet: %v", err)
	}
}

// TestDeadMasterIsReplaced: a master dead for longer than the
// follower-unavailable timeout is replaced by a live tserver: the new one
// takes the master role, joins the sys catalog, and the dead one leaves
// its configuration, so the masters tolerate another failure.
func TestDeadMasterIsReplaced(t *testing.T) {
	c := servertest.NewCluster(t, 4)
	c.WaitMasters(20 * time.Second)
	if c.Servers[3].Master() != nil {
		t.Fatal("the fourth node took the master role at join")
	}
	// Stop a master that is not the leader.
	victim := 2
	if c.Servers[victim].Master().IsLeader() {
		victim = 1
	}
	deadID := c.Servers[victim].NodeID()
	c.Stop(victim)
	ms := c.Masters()
	consensustest.WaitFor(t, 60*time.Second, "the dead master replaced", func() bool {
		r, err := servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.ListMastersResponse, error) {
			return mc.ListMasters(ctx, &masterpb.ListMastersRequest{})
		})
		if err != nil || len(r.GetMasters()) != 3 {
			return false
		}
		for _, m := range r.GetMasters() {
			if m.GetNodeId() == deadID {
				return false
			}
		}
		for _, s := range c.Servers {
			if s == nil || s.Master() == nil {
				continue
			}
			if tb, ok := s.Node().Tablet(master.SysCatalogTabletID); ok && tb.Group().HasLease() {
				st := tb.Group().Status()
				for _, v := range st.Voters {
					if v == deadID {
						return false
					}
				}
				return len(st.Voters) == 3 && len(st.Learners) == 0
			}
		}
		return false
	})
	if c.Servers[3].Master() == nil {
		t.Fatal("the fourth node did not take the master role")
	}
	// The replaced master comes back: it gives up the role and its stale
	// sys catalog replica.
	c.Start(victim, []string{c.Addrs[3]})
	consensustest.WaitFor(t, 30*time.Second, "the returning node gives up the master role", func() bool {
		_, hosts := c.Servers[victim].Node().Tablet(master.SysCatalogTabletID)
		return c.Servers[victim].Master() == nil && !hosts
	})
	// With another master down the remaining two are a quorum of the new
	// configuration: DDL still works.
	for i, s := range c.Servers {
		if s != nil && s.Master() != nil && !s.Master().IsLeader() {
			c.Stop(i)
			break
		}
	}
	if _, err := servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.CreateTableResponse, error) {
		req := servertest.KVTable("after", 2)
		req.ReplicationFactor = 1
		return mc.CreateTable(ctx, req)
	}); err != nil {
		t.Fatal(err)
	}
}

// TestMissingReplicaIsRecreated: a tserver that lost a replica its tablet's
// leader still counts (its creation failed, or its data went) is removed
// from the tablet's configuration after the follower-unavailable timeout,
// and the balancer gives the tablet a fresh third replica by snapshot.
func TestMissingReplicaIsRecreated(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	c.WaitMasters(20 * time.Second)
	ms := c.Masters()
	if _, err := servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.CreateTableResponse, error) {
		return mc.CreateTable(ctx, servertest.KVTable("kv", 1))
	}); err != nil {
		t.Fatal(err)
	}
	var tbl *masterpb.GetTableResponse
	consensustest.WaitFor(t, 20*time.Second, "a leader", func() bool {
		tbl, _ = servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.GetTableResponse, error) {
			return mc.GetTable(ctx, &masterpb.GetTableRequest{Namespace: "test", Name: "kv"})
		})
		return len(tbl.GetTablets()) == 1 && tbl.GetTablets()[0].GetLeaderNode() != 0
	})
	id := tbl.GetTablets()[0].GetTablet().GetTabletId()
	// Drop the replica on a node that is not the leader.
	victim := -1
	for i, s := range c.Servers {
		if s.NodeID() != tbl.GetTablets()[0].GetLeaderNode() {
			victim = i
		}
	}
	if err := c.Servers[victim].Node().DeleteTablet(id); err != nil {
		t.Fatal(err)
	}
	consensustest.WaitFor(t, 30*time.Second, "three caught-up voters again", func() bool {
		for _, s := range c.Servers {
			tb, ok := s.Node().Tablet(id)
			if !ok || tb.Group().Status().AppliedIndex == 0 {
				return false
			}
			if st := tb.Group().Status(); st.Role == consensus.RoleLeader {
				if len(st.Voters) != 3 || len(st.Learners) != 0 {
					return false
				}
			}
		}
		return true
	})
}
