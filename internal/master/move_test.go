package master

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/master/balancer"
	pb "github.com/shaledb/shaledb/internal/master/masterpb"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// The unit tests here drive the move logic on a hand-made catalog; the
// cluster test is TestMoveReplica in internal/server.

func testMaster() *Master {
	m := &Master{cfg: Config{TServerDeadAfter: 5 * time.Second, FollowerUnavailableTimeout: time.Minute}}
	m.mu.moves = map[uint64]*inflightMove{}
	m.mu.replicaMoves = map[uint64]*replicaMove{}
	m.mu.movedRecently = map[uint64]*replicaMove{}
	return m
}

// testCatalog is four live tservers (one zone each) and a table of RF 3
// with four tablets, three replicas per tserver: 1000 on 1,2,3; 1001 on
// 2,1,4; 1002 on 3,1,4; 1003 on 4,2,3, each led by its first replica.
func testCatalog(now time.Time) *catalog {
	c := newCatalog()
	c.config = &pb.ClusterConfig{ReplicationFactor: 3}
	for id := uint64(1); id <= 4; id++ {
		c.tservers[id] = &tserverState{
			rec: &pb.TServerRecord{NodeId: id, RpcAddr: addrOf(id),
				Placement: &pb.Placement{Cloud: "c", Region: "r", Zone: fmt.Sprintf("z%d", id)}},
			heard: true, lastHeartbeat: now.UnixMilli(), fullReport: true, reported: map[uint64]*reportedReplica{},
		}
	}
	c.tables[3] = &pb.TableInfo{TableId: 3, ReplicationFactor: 3}
	for i, nodes := range [][]uint64{{1, 2, 3}, {2, 1, 4}, {3, 1, 4}, {4, 2, 3}} {
		setTablet(c, 1000+uint64(i), nodes[0], nodes, nil)
	}
	return c
}

func addrOf(node uint64) string { return fmt.Sprintf("127.0.0.%d:7100", node) }

// setTablet makes the catalog show a tablet as its leader reports it,
// every replica caught up (applied index 100).
func setTablet(c *catalog, id, leader uint64, voters, learners []uint64) {
	loc := &pb.TabletLocation{Tablet: &tspb.TabletDescriptor{TabletId: id, TableId: 3}, LeaderNode: leader}
	for _, ts := range c.tservers {
		delete(ts.reported, id)
	}
	for _, v := range voters {
		loc.Replicas = append(loc.Replicas, &pb.Replica{NodeId: v, Addr: addrOf(v), Role: pb.Replica_VOTER})
		role := tspb.TabletStatus_FOLLOWER
		if v == leader {
			role = tspb.TabletStatus_LEADER
		}
		c.tservers[v].reported[id] = &reportedReplica{role: int32(role), applied: 100, voters: voters, learners: learners}
	}
	for _, l := range learners {
		loc.Replicas = append(loc.Replicas, &pb.Replica{NodeId: l, Addr: addrOf(l), Role: pb.Replica_LEARNER})
		c.tservers[l].reported[id] = &reportedReplica{role: int32(tspb.TabletStatus_LEARNER), applied: 100}
	}
	c.tablets[id] = loc
}

// TestMoveReplicaSteps walks a move of tablet 1000 from its leader (node
// 1) to node 4 through the states the tablet reports show, checking the
// step taken in each.
func TestMoveReplicaSteps(t *testing.T) {
	now := time.Now()
	m := testMaster()
	c := testCatalog(now)
	rm := &replicaMove{tablet: 1000, from: 1, to: 4, started: now}
	step := func(what string, want balancer.Move, wantTarget, wantStep string) {
		t.Helper()
		st, err := m.nextMoveStep(c, rm, now)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if want.Kind != 0 {
			want.Tablet, want.Reason = 1000, ReasonMoveReplica
		}
		if st.done || st.mv != want || st.targetAddr != wantTarget || rm.step != wantStep {
			t.Fatalf("%s: step %+v (done %v, target %q, %q), want %+v (target %q, %q)", what, st.mv, st.done, st.targetAddr, rm.step, want, wantTarget, wantStep)
		}
		if want.Kind != 0 && st.leaderAddr != addrOf(c.tablets[1000].GetLeaderNode()) {
			t.Fatalf("%s: issued through %q, want the leader", what, st.leaderAddr)
		}
	}

	step("start", balancer.Move{Kind: balancer.AddLearner, TServer: 4}, addrOf(4), "add-learner")

	// A balancer move of the tablet issued earlier goes first.
	m.mu.moves[1000] = &inflightMove{move: balancer.Move{Kind: balancer.TransferLeader, Tablet: 1000, TServer: 2, From: 1}, issued: now}
	step("balancer move in flight", balancer.Move{}, "", stepWaiting)
	setTablet(c, 1000, 2, []uint64{1, 2, 3}, nil)
	step("balancer move done", balancer.Move{Kind: balancer.AddLearner, TServer: 4}, addrOf(4), "add-learner")
	if _, ok := m.mu.moves[1000]; ok {
		t.Fatal("the finished balancer move is still in flight")
	}
	setTablet(c, 1000, 1, []uint64{1, 2, 3}, nil)

	// No trusted leader: the leader hint's tserver does not say so.
	c.tservers[1].reported[1000].role = int32(tspb.TabletStatus_FOLLOWER)
	step("no leader", balancer.Move{}, "", stepWaiting)
	setTablet(c, 1000, 1, []uint64{1, 2, 3}, nil)

	setTablet(c, 1000, 1, []uint64{1, 2, 3}, []uint64{4})
	c.tservers[4].reported[1000].applied = 0
	step("learner receiving its snapshot", balancer.Move{}, "", "add-learner")
	c.tservers[4].reported[1000].applied = 95
	step("learner caught up", balancer.Move{Kind: balancer.PromoteLearner, TServer: 4}, addrOf(4), "promote")

	setTablet(c, 1000, 1, []uint64{1, 2, 3, 4}, nil)
	step("promoted, the source leads", balancer.Move{Kind: balancer.TransferLeader, TServer: 4, From: 1}, "", "transfer-leader")
	setTablet(c, 1000, 4, []uint64{1, 2, 3, 4}, nil)
	step("leadership moved", balancer.Move{Kind: balancer.RemoveReplica, TServer: 1}, addrOf(1), "remove")

	setTablet(c, 1000, 4, []uint64{2, 3, 4}, nil)
	st, err := m.nextMoveStep(c, rm, now)
	if err != nil || !st.done || rm.step != stepDone {
		t.Fatalf("after the removal: %+v, %v, step %q; want done", st, err, rm.step)
	}

	c.tablets[1000].SplitInto = []uint64{1010, 1011}
	if _, err := m.nextMoveStep(c, rm, now); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a split tablet: %v, want not found", err)
	}
	delete(c.tablets, 1000)
	if _, err := m.nextMoveStep(c, rm, now); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a dropped tablet: %v, want not found", err)
	}
}

func TestMoveReplicaChecks(t *testing.T) {
	now := time.Now()
	m := testMaster()
	c := testCatalog(now)
	setTablet(c, 1001, 2, []uint64{1, 2}, []uint64{4})                                                        // 4 is a learner
	c.tservers[5] = &tserverState{rec: &pb.TServerRecord{NodeId: 5}, reported: map[uint64]*reportedReplica{}} // never heard
	for _, tc := range []struct {
		name             string
		tablet, from, to uint64
		mod              func()
		want             error
		msg              string
	}{
		{name: "ok", tablet: 1000, from: 1, to: 4},
		{name: "unknown tablet", tablet: 999, from: 1, to: 4, want: ErrNotFound, msg: "tablet 999"},
		{name: "sys catalog", tablet: SysCatalogTabletID, from: 1, to: 4, want: ErrInvalidArgument, msg: "sys catalog"},
		{name: "same node", tablet: 1000, from: 1, to: 1, want: ErrInvalidArgument, msg: "both the source and the destination"},
		{name: "unknown node", tablet: 1000, from: 1, to: 9, want: ErrNotFound, msg: "node 9"},
		{name: "from holds none", tablet: 1000, from: 4, to: 1, want: ErrInvalidArgument, msg: "node 4 holds no replica of tablet 1000"},
		{name: "from is a learner", tablet: 1001, from: 4, to: 3, want: ErrInvalidArgument, msg: "learner"},
		{name: "to holds one", tablet: 1000, from: 1, to: 2, want: ErrAlreadyExists, msg: "node 2 already holds a replica of tablet 1000 (a voter)"},
		{name: "to holds a learner", tablet: 1001, from: 1, to: 4, want: ErrAlreadyExists, msg: "(a learner)"},
		{name: "to never heard", tablet: 1000, from: 1, to: 5, want: ErrInvalidArgument, msg: "node 5 is not live"},
		{name: "to dead", tablet: 1000, from: 1, to: 4, want: ErrInvalidArgument, msg: "node 4 is not live",
			mod: func() { c.tservers[4].lastHeartbeat = now.Add(-time.Minute).UnixMilli() }},
		{name: "to blacklisted", tablet: 1000, from: 1, to: 4, want: ErrInvalidArgument, msg: "node 4 is blacklisted",
			mod: func() { c.tservers[4].lastHeartbeat = now.UnixMilli(); c.config.Blacklist = []uint64{4} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.mod != nil {
				tc.mod()
			}
			err := m.checkMove(c, tc.tablet, tc.from, tc.to, now)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want %v with %q", err, tc.want, tc.msg)
			}
		})
	}
}

// TestMoveReplicaHoldsOffBalancer: mid-move, the tablet has four replicas;
// left to itself the planner would take one for an excess replica and
// remove it (undoing the move when it picks the new one). With the move
// registered, the planner leaves the tablet alone and counts the loads as
// they will be after the move.
func TestMoveReplicaHoldsOffBalancer(t *testing.T) {
	now := time.Now()
	for _, mid := range []struct {
		name              string
		voters, learners  []uint64
		leader            uint64
		wantTouchesTarget bool
	}{
		{name: "learner added", voters: []uint64{1, 2, 3}, learners: []uint64{4}, leader: 1},
		{name: "promoted", voters: []uint64{1, 2, 3, 4}, leader: 2, wantTouchesTarget: true},
	} {
		t.Run(mid.name, func(t *testing.T) {
			m := testMaster()
			c := testCatalog(now)
			setTablet(c, 1000, mid.leader, mid.voters, mid.learners)
			opts := balancer.Options{FollowerUnavailableTimeout: m.cfg.FollowerUnavailableTimeout}
			movesOf := func(moves []balancer.Move) []balancer.Move {
				var out []balancer.Move
				for _, mv := range moves {
					if mv.Tablet == 1000 {
						out = append(out, mv)
					}
				}
				return out
			}

			free := movesOf(balancer.Plan(m.balancerState(c, now), opts))
			if len(free) == 0 {
				t.Fatal("without the move registered the planner leaves the tablet alone: the test shows nothing")
			}
			if mid.wantTouchesTarget && free[0].TServer != 4 {
				t.Fatalf("without the move registered: %v, want the new replica on 4 removed (the move undone)", free)
			}

			m.mu.replicaMoves[1000] = &replicaMove{tablet: 1000, from: 1, to: 4, started: now}
			st := m.balancerState(c, now)
			if got := movesOf(balancer.Plan(st, opts)); len(got) > 0 {
				t.Fatalf("with the move registered the planner moves %v", got)
			}
			if !slices.ContainsFunc(st.InFlight, func(mv balancer.Move) bool {
				return mv.Kind == balancer.RemoveReplica && mv.Tablet == 1000 && mv.TServer == 1
			}) {
				t.Fatalf("in flight %v: the source's removal is missing", st.InFlight)
			}
		})
	}
}
