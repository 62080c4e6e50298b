package server_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/server/servertest"
)

// moveReplica calls MoveReplica until the master answers that the move is
// done (each call waits for the move until shortly before its deadline),
// or fails.
func moveReplica(t *testing.T, ms *client.Masters, tablet, from, to uint64) (*masterpb.MoveReplicaResponse, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for {
		var r *masterpb.MoveReplicaResponse
		err := ms.Call(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
			var err error
			r, err = mc.MoveReplica(ctx, &masterpb.MoveReplicaRequest{TabletId: tablet, FromNode: from, ToNode: to})
			return r.GetError(), err
		})
		if err != nil || r.GetDone() {
			return r, err
		}
		t.Logf("move not done yet: step %s after %dms", r.GetStep(), r.GetElapsedMs())
		if ctx.Err() != nil {
			t.Fatalf("move of tablet %d from %d to %d not done: step %s", tablet, from, to, r.GetStep())
		}
	}
}

// TestMoveReplica: on 4 nodes with a one-tablet table of RF 3, the
// tablet's replica moves from its leader to the node without one, through
// the master. The tablet then has the new replica set with leaders on it,
// the old node drops its copy, and the rows written before are read back
// from the new replica as leader. The master refuses moves of an unknown
// tablet, from a node without a replica, and to a node holding one.
func TestMoveReplica(t *testing.T) {
	c := servertest.NewCluster(t, 4)
	c.WaitMasters(20 * time.Second)
	ms := c.Masters()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := client.Open(ctx, client.Config{Masters: c.Addrs})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	// Every tserver live first, so that the spare one may take a replica.
	consensustest.WaitFor(t, 20*time.Second, "4 live tservers", func() bool {
		r, err := servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.ListTServersResponse, error) {
			return mc.ListTServers(ctx, &masterpb.ListTServersRequest{})
		})
		if err != nil {
			return false
		}
		live := 0
		for _, ts := range r.GetTservers() {
			if ts.GetState() == masterpb.TServerInfo_LIVE {
				live++
			}
		}
		return live == 4
	})
	if _, err := cl.CreateTable(ctx, servertest.KVTable("kv", 1)); err != nil {
		t.Fatal(err)
	}
	tbl, err := cl.OpenTable(ctx, "test", "kv")
	if err != nil {
		t.Fatal(err)
	}
	const rows = 300
	val := func(i int) []byte { return []byte(fmt.Sprintf("value-%d", i)) }
	var ops []client.Op
	for i := range rows {
		ops = append(ops, client.Op{Kind: client.OpPut, Row: client.Row{"k": docdb.Text(fmt.Sprintf("k%04d", i)), "v": docdb.Bytes(val(i))}})
	}
	if err := tbl.Apply(ctx, ops); err != nil {
		t.Fatal(err)
	}

	location := func() *masterpb.TabletLocation {
		r, err := servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.GetTableResponse, error) {
			return mc.GetTable(ctx, &masterpb.GetTableRequest{Namespace: "test", Name: "kv"})
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.GetTablets()) != 1 {
			t.Fatalf("%d tablets, want 1", len(r.GetTablets()))
		}
		return r.GetTablets()[0]
	}
	voters := func(loc *masterpb.TabletLocation) []uint64 {
		var out []uint64
		for _, r := range loc.GetReplicas() {
			if r.GetRole() == masterpb.Replica_VOTER {
				out = append(out, r.GetNodeId())
			}
		}
		slices.Sort(out)
		return out
	}
	var loc *masterpb.TabletLocation
	consensustest.WaitFor(t, 20*time.Second, "3 voters and a leader", func() bool {
		loc = location()
		return len(voters(loc)) == 3 && len(loc.GetReplicas()) == 3 && loc.GetLeaderNode() != 0
	})
	id := loc.GetTablet().GetTabletId()
	from := loc.GetLeaderNode() // the leader: its leadership has to move first
	var to uint64
	for _, s := range c.Servers {
		if !slices.Contains(voters(loc), s.NodeID()) {
			to = s.NodeID()
		}
	}
	var want []uint64
	for _, v := range voters(loc) {
		if v != from {
			want = append(want, v)
		}
	}
	want = append(want, to)
	slices.Sort(want)
	t.Logf("tablet %d on %v led by %d: moving %d -> %d", id, voters(loc), from, from, to)

	start := time.Now()
	r, err := moveReplica(t, ms, id, from, to)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("moved in %v: %v", time.Since(start), r)
	if !r.GetDone() || r.GetStep() != "done" || !r.GetLeaderMoved() {
		t.Fatalf("answer %v: want done, with leadership moved off %d", r, from)
	}
	if got := voters(r.GetTablet()); !slices.Equal(got, want) || len(r.GetTablet().GetReplicas()) != 3 {
		t.Fatalf("answered replicas %v, want voters %v", r.GetTablet().GetReplicas(), want)
	}

	// The catalog keeps the new membership (the balancer has nothing to
	// fix: one replica per node but one), and the old node drops its copy.
	consensustest.WaitFor(t, 20*time.Second, "the new replica set reported, the old copy deleted", func() bool {
		loc = location()
		if !slices.Equal(voters(loc), want) || len(loc.GetReplicas()) != 3 || loc.GetLeaderNode() == 0 {
			return false
		}
		_, onFrom := c.Servers[c.Index(from)].Node().Tablet(id)
		_, onTo := c.Servers[c.Index(to)].Node().Tablet(id)
		return !onFrom && onTo
	})

	// The new replica has the rows: read them with it as the leader.
	if loc.GetLeaderNode() != to {
		if _, err := servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.LeaderStepdownResponse, error) {
			return mc.LeaderStepdown(ctx, &masterpb.LeaderStepdownRequest{TabletId: id, ToNode: to})
		}); err != nil {
			t.Fatal(err)
		}
		consensustest.WaitFor(t, 20*time.Second, "the new replica leads", func() bool { return location().GetLeaderNode() == to })
	}
	for i := range rows {
		row, found, err := tbl.Get(ctx, client.Row{"k": docdb.Text(fmt.Sprintf("k%04d", i))})
		if err != nil {
			t.Fatal(err)
		}
		if !found || string(row["v"].Bytes) != string(val(i)) {
			t.Fatalf("row %d after the move: found %v, %v", i, found, row)
		}
	}

	// The same move again answers that it is done (a caller whose call
	// returned early learns the outcome).
	if r, err := moveReplica(t, ms, id, from, to); err != nil || !r.GetDone() {
		t.Fatalf("the same move again: %v, %v; want done", r, err)
	}

	// Refusals.
	others := slices.DeleteFunc(slices.Clone(want), func(v uint64) bool { return v == to })
	for _, tc := range []struct {
		name             string
		tablet, from, to uint64
		code             masterpb.MasterError_Code
		msg              string
	}{
		{"unknown tablet", 987654, to, from, masterpb.MasterError_NOT_FOUND, "tablet 987654"},
		{"from without a replica", id, from, others[0], masterpb.MasterError_INVALID_ARGUMENT,
			fmt.Sprintf("node %d holds no replica of tablet %d", from, id)},
		{"to holding one", id, to, others[0], masterpb.MasterError_ALREADY_EXISTS,
			fmt.Sprintf("node %d already holds a replica of tablet %d", others[0], id)},
	} {
		_, err := moveReplica(t, ms, tc.tablet, tc.from, tc.to)
		if !client.IsCode(err, tc.code) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want %v with %q", tc.name, err, tc.code, tc.msg)
		}
	}
	if got := voters(location()); !slices.Equal(got, want) {
		t.Fatalf("voters %v after the refused moves, want %v", got, want)
	}
}
