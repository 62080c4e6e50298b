package consensus_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/shaledb/shaledb/internal/consensus"
	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/storage"
)

// kvSM is a toy state machine: a command "key=value" sets a key in the
// group's own data span.
type kvSM struct {
	group uint64
	node  uint64
}

// gates lets a test hold a node's scheduler: applying "gate=name" tells
// gate name's entered which node entered, then waits for release.
var gates sync.Map // name -> *gate

type gate struct {
	entered chan uint64
	release chan struct{}
}

func newGate(name string) *gate {
	g := &gate{entered: make(chan uint64, 8), release: make(chan struct{})}
	gates.Store(name, g)
	return g
}

func (s *kvSM) prefix() []byte {
	return binary.BigEndian.AppendUint64([]byte{storage.DataPrefix}, s.group)
}

func (s *kvSM) Apply(b *pebble.Batch, e consensus.Entry) any {
	k, v, ok := bytes.Cut(e.Data, []byte("="))
	if !ok {
		return fmt.Errorf("bad command %q", e.Data)
	}
	if string(k) == "stall" {
		// A long apply: the node's scheduler runs no cycle meanwhile.
		d, err := time.ParseDuration(string(v))
		if err != nil {
			return err
		}
		time.Sleep(d)
	}
	if string(k) == "gate" {
		if g, ok := gates.Load(string(v)); ok {
			g.(*gate).entered <- s.node
			<-g.(*gate).release
		}
	}
	if err := b.Set(append(s.prefix(), k...), v, nil); err != nil {
		return err
	}
	return e.Index
}

func (s *kvSM) SnapshotSpans() []storage.Span {
	p := s.prefix()
	return []storage.Span{{Start: p, End: storage.PrefixEnd(p)}}
}

func (s *kvSM) Restored() error { return nil }

func (s *kvSM) get(eng *storage.Engine, key string) (string, bool) {
	v, closer, err := eng.Get(append(s.prefix(), key...))
	if err != nil {
		return "", false
	}
	defer closer.Close()
	return string(v), true
}

func (s *kvSM) count(eng *storage.Engine) int {
	sp := s.SnapshotSpans()[0]
	it, err := eng.NewIter(&pebble.IterOptions{LowerBound: sp.Start, UpperBound: sp.End})
	if err != nil {
		return -1
	}
	defer it.Close()
	n := 0
	for it.First(); it.Valid(); it.Next() {
		n++
	}
	return n
}

const groupID = 7

func testConfig() consensus.Config {
	return consensus.Config{
		TickInterval:         20 * time.Millisecond,
		ElectionTicks:        10,
		VoteRefusalWindow:    300 * time.Millisecond,
		LeaseDuration:        240 * time.Millisecond,
		LogTruncateThreshold: 50,
	}
}

// startCluster runs n nodes; nodes in voters bootstrap the group.
func startCluster(t *testing.T, n int, voters []uint64) *consensustest.Cluster {
	return startClusterWith(t, testConfig(), n, voters)
}

func startClusterWith(t *testing.T, cfg consensus.Config, n int, voters []uint64) *consensustest.Cluster {
	return consensustest.NewCluster(t, n, consensustest.Options{
		Runtime: cfg,
		OnStart: func(nd *consensustest.Node) {
			var boot []uint64
			for _, v := range voters {
				if v == nd.ID {
					boot = voters
				}
			}
			if _, err := nd.Runtime.CreateGroup(consensus.GroupConfig{ID: groupID, StateMachine: &kvSM{group: groupID, node: nd.ID}, Bootstrap: boot}); err != nil {
				t.Fatalf("node %d: create group: %v", nd.ID, err)
			}
		},
	})
}

func leaderOf(c *consensustest.Cluster) *consensustest.Node {
	for _, n := range c.Nodes() {
		if !c.Running(n.ID) {
			continue
		}
		if g, ok := n.Runtime.Group(groupID); ok && g.Status().Role == consensus.RoleLeader && g.HasLease() {
			return n
		}
	}
	return nil
}

func waitLeader(t *testing.T, c *consensustest.Cluster) *consensustest.Node {
	t.Helper()
	var l *consensustest.Node
	consensustest.WaitFor(t, 15*time.Second, "a leader with a lease", func() bool {
		l = leaderOf(c)
		return l != nil
	})
	return l
}

// propose writes key=value through the current leader, retrying on
// leadership changes, and returns once it is applied there.
func propose(t *testing.T, c *consensustest.Cluster, key, value string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		l := leaderOf(c)
		if l == nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		g, _ := l.Runtime.Group(groupID)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := g.Propose(ctx, []byte(key+"="+value))
		cancel()
		if err == nil {
			return
		}
	}
	t.Fatalf("could not write %s", key)
}

func TestReplicationFailoverAndRestart(t *testing.T) {
	c := startCluster(t, 3, []uint64{1, 2, 3})
	sm := &kvSM{group: groupID}
	waitLeader(t, c)
	for i := 0; i < 100; i++ {
		propose(t, c, fmt.Sprintf("k%03d", i), fmt.Sprintf("v%d", i))
	}
	for _, n := range c.Nodes() {
		consensustest.WaitFor(t, 10*time.Second, fmt.Sprintf("node %d applies 100 keys", n.ID), func() bool {
			return sm.count(n.Engine) == 100
		})
	}

	// Kill the leader: a new one is elected and every acknowledged write is there.
	old := waitLeader(t, c)
	c.StopNode(old.ID)
	nl := waitLeader(t, c)
	if nl.ID == old.ID {
		t.Fatal("stopped node still leader")
	}
	for i := 0; i < 100; i++ {
		if v, ok := sm.get(nl.Engine, fmt.Sprintf("k%03d", i)); !ok || v != fmt.Sprintf("v%d", i) {
			t.Fatalf("new leader %d lost k%03d: %q %v", nl.ID, i, v, ok)
		}
	}
	for i := 100; i < 200; i++ {
		propose(t, c, fmt.Sprintf("k%03d", i), fmt.Sprintf("v%d", i))
	}

	// The old leader restarts from disk and catches up.
	c.StartNode(old.ID)
	consensustest.WaitFor(t, 15*time.Second, "restarted node catches up", func() bool {
		return sm.count(c.Node(old.ID).Engine) == 200
	})
	for _, n := range c.Nodes() {
		g, _ := n.Runtime.Group(groupID)
		st := g.Status()
		if st.FirstIndex <= 6 {
			t.Errorf("node %d: log never truncated (first index %d)", n.ID, st.FirstIndex)
		}
	}
}

func TestAddLearnerBySnapshotThenRemovePeer(t *testing.T) {
	c := startCluster(t, 4, []uint64{1, 2, 3})
	sm := &kvSM{group: groupID}
	for i := 0; i < 300; i++ {
		propose(t, c, fmt.Sprintf("k%04d", i), "x")
	}
	l := waitLeader(t, c)
	g, _ := l.Runtime.Group(groupID)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := g.AddLearner(ctx, 4); err != nil {
		t.Fatalf("add learner: %v", err)
	}
	n4 := c.Node(4)
	consensustest.WaitFor(t, 20*time.Second, "learner receives the snapshot", func() bool {
		return n4.Runtime.Metrics().SnapshotsApplied > 0 && sm.count(n4.Engine) == 300
	})
	// The sender counts the snapshot once its stream is closed, which may be
	// a moment after the learner applied it.
	consensustest.WaitFor(t, 5*time.Second, "the leader counts the snapshot sent", func() bool {
		return l.Runtime.Metrics().SnapshotsSent > 0
	})
	if err := g.PromoteLearner(ctx, 4); err != nil {
		t.Fatalf("promote: %v", err)
	}
	// Remove a follower that is not the leader.
	var victim uint64
	for _, id := range []uint64{1, 2, 3} {
		if id != l.ID {
			victim = id
			break
		}
	}
	if err := g.RemoveReplica(ctx, victim); err != nil {
		t.Fatalf("remove %d: %v", victim, err)
	}
	c.StopNode(victim)
	for i := 300; i < 350; i++ {
		propose(t, c, fmt.Sprintf("k%04d", i), "y")
	}
	consensustest.WaitFor(t, 10*time.Second, "node 4 applies new writes as a voter", func() bool {
		return sm.count(n4.Engine) == 350
	})
	st := g.Status()
	if len(st.Voters) != 3 {
		t.Fatalf("voters after add+remove: %v", st.Voters)
	}
}

func TestLeaderTransfer(t *testing.T) {
	c := startCluster(t, 3, []uint64{1, 2, 3})
	sm := &kvSM{group: groupID}
	propose(t, c, "a", "1")
	l := waitLeader(t, c)
	target := l.ID%3 + 1
	g, _ := l.Runtime.Group(groupID)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.TransferLeadership(ctx, target); err != nil {
		t.Fatalf("transfer %d -> %d: %v", l.ID, target, err)
	}
	nl := waitLeader(t, c)
	if nl.ID != target {
		t.Fatalf("leader after transfer: %d, want %d", nl.ID, target)
	}
	propose(t, c, "b", "2")
	if v, ok := sm.get(nl.Engine, "a"); !ok || v != "1" {
		t.Fatalf("new leader lost a: %q %v", v, ok)
	}
}

// TestTransferToStoppedNodeRefused: a leader asked to transfer to a voter
// whose node stopped refuses at once and keeps serving (raft would leave
// it without a lease until an election timeout gives the transfer up);
// HandOff picks the voter that is still up.
func TestTransferToStoppedNodeRefused(t *testing.T) {
	c := startCluster(t, 3, []uint64{1, 2, 3})
	propose(t, c, "a", "1")
	l := waitLeader(t, c)
	down := l.ID%3 + 1
	up := 6 - l.ID - down
	c.StopNode(down)
	g, _ := l.Runtime.Group(groupID)
	lease := testConfig().LeaseDuration
	consensustest.WaitFor(t, 10*time.Second, "the stopped node's acks age past the lease", func() bool {
		return time.Since(l.Transport.LeaseAck(down)) > lease
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.TransferLeadership(ctx, down); !errors.Is(err, consensus.ErrTransferTargetUnreachable) {
		t.Fatalf("transfer to stopped node %d: %v, want ErrTransferTargetUnreachable", down, err)
	}
	if !g.HasLease() {
		t.Fatal("the leader lost its lease over a refused transfer")
	}
	propose(t, c, "b", "2")
	moved, err := g.HandOff(ctx)
	if err != nil || !moved {
		t.Fatalf("hand-off: moved %v, %v", moved, err)
	}
	if nl := waitLeader(t, c); nl.ID != up {
		t.Fatalf("leader after the hand-off: %d, want %d (the live voter)", nl.ID, up)
	}
	propose(t, c, "c", "3")
}

// TestTransferToNodeThatJustStopped: a transfer to a voter whose node
// stopped a moment ago (still heard from within the lease) gives up once
// the node goes silent, not at the caller's deadline, and the group goes
// on.
func TestTransferToNodeThatJustStopped(t *testing.T) {
	c := startCluster(t, 3, []uint64{1, 2, 3})
	propose(t, c, "a", "1")
	l := waitLeader(t, c)
	down := l.ID%3 + 1
	g, _ := l.Runtime.Group(groupID)
	c.StopNode(down)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := g.TransferLeadership(ctx, down); !errors.Is(err, consensus.ErrTransferTargetUnreachable) {
		t.Fatalf("transfer to node %d that just stopped: %v, want ErrTransferTargetUnreachable", down, err)
	}
	propose(t, c, "b", "2")
}

func TestQuiescedGroupKeepsLeaseAndFailsOver(t *testing.T) {
	c := startCluster(t, 3, []uint64{1, 2, 3})
	propose(t, c, "a", "1")
	consensustest.WaitFor(t, 10*time.Second, "every replica quiesces", func() bool {
		for _, n := range c.Nodes() {
			g, _ := n.Runtime.Group(groupID)
			if !g.Status().Quiesced {
				return false
			}
		}
		return true
	})
	l := leaderOf(c)
	if l == nil {
		t.Fatal("quiesced leader lost its lease")
	}
	// While quiesced, ticks stop: no raft messages flow for the group.
	before := l.Runtime.Metrics().MessagesSent
	frames := l.Transport.Stats().FramesSent
	g, _ := l.Runtime.Group(groupID)
	// Several liveness intervals later (4 frames to each of 2 peers), the
	// lease is still held, renewed by liveness frames alone.
	consensustest.WaitFor(t, 10*time.Second, "8 more liveness frames", func() bool {
		return l.Transport.Stats().FramesSent >= frames+8
	})
	if !g.HasLease() {
		t.Fatal("quiesced leader's lease lapsed although its peers are live")
	}
	if after := l.Runtime.Metrics().MessagesSent; after != before {
		t.Fatalf("quiesced leader sent %d raft messages", after-before)
	}
	c.StopNode(l.ID)
	nl := waitLeader(t, c)
	if nl.ID == l.ID {
		t.Fatal("stopped node still leads")
	}
	propose(t, c, "b", "2")
}

// TestVoteRefusalAfterStart: for VoteRefusalWindow after a start, a
// replica that has followed a leader refuses every vote (it may have
// acknowledged one whose lease still runs), while a new group's replicas,
// which never followed anyone, elect a leader at once. Before, a new
// tablet on freshly started nodes waited out the window for a leader.
func TestVoteRefusalAfterStart(t *testing.T) {
	cfg := testConfig()
	cfg.VoteRefusalWindow = time.Minute
	c := startClusterWith(t, cfg, 3, []uint64{1, 2, 3})
	start := time.Now()
	waitLeader(t, c) // within 15 s: well inside the window
	t.Logf("a new group elected a leader %v after its nodes started", time.Since(start).Round(time.Millisecond))
	propose(t, c, "a", "1")
	sm := &kvSM{group: groupID}
	for _, n := range c.Nodes() {
		consensustest.WaitFor(t, 10*time.Second, fmt.Sprintf("node %d applies a", n.ID), func() bool {
			_, ok := sm.get(n.Engine, "a")
			return ok
		})
	}
	for _, n := range c.Nodes() {
		c.StopNode(n.ID)
	}
	for _, n := range c.Nodes() {
		c.StartNode(n.ID)
	}
	consensustest.WaitFor(t, 15*time.Second, "restarted replicas refusing votes", func() bool {
		k := 0
		for _, n := range c.Nodes() {
			if n.Runtime.Metrics().VotesRefused > 0 {
				k++
			}
		}
		return k >= 2
	})
	for _, n := range c.Nodes() {
		if g, ok := n.Runtime.Group(groupID); ok && g.Status().Role == consensus.RoleLeader {
			t.Fatalf("node %d leads inside the refusal window after a restart of every node", n.ID)
		}
	}
}

// TestStallKeepsLeader: every node of a group stalls for five election
// timeouts applying one entry (as a bulk load's apply did); afterwards the
// same leader leads in the same term. Ticks piled up during the stall were
// stepped all at once: the leader stepped down for want of a quorum it had
// not heard yet, and followers campaigned.
func TestStallKeepsLeader(t *testing.T) {
	c := startCluster(t, 3, []uint64{1, 2, 3})
	propose(t, c, "a", "1")
	l := waitLeader(t, c)
	g, _ := l.Runtime.Group(groupID)
	term := g.Status().Term
	stall := 5 * time.Duration(testConfig().ElectionTicks) * testConfig().TickInterval
	ctx, cancel := context.WithTimeout(context.Background(), 10*stall)
	defer cancel()
	if _, err := g.Propose(ctx, []byte("stall="+stall.String())); err != nil {
		t.Fatal(err)
	}
	propose(t, c, "b", "2")
	for _, n := range c.Nodes() {
		ng, _ := n.Runtime.Group(groupID)
		if st := ng.Status(); st.Term != term || st.Leader != l.ID {
			t.Fatalf("node %d after the stall: term %d leader %d, want term %d leader %d", n.ID, st.Term, st.Leader, term, l.ID)
		}
	}
}

// TestCycleProposalsShareAppend: commands proposed while the leader's
// scheduler is busy go to the followers together, in one append each, not
// one append per command.
func TestCycleProposalsShareAppend(t *testing.T) {
	c := startCluster(t, 3, []uint64{1, 2, 3})
	propose(t, c, "warm", "1")
	l := waitLeader(t, c)
	g, _ := l.Runtime.Group(groupID)
	gt := newGate(t.Name())
	hold, err := g.ProposeAsync([]byte("gate=" + t.Name()))
	if err != nil {
		t.Fatal(err)
	}
	for node := range gt.entered {
		if node == l.ID {
			break
		}
	}
	const n = 64
	pending := make([]*consensus.Pending, n)
	for i := range pending {
		if pending[i], err = g.ProposeAsync(fmt.Appendf(nil, "k%d=v", i)); err != nil {
			t.Fatal(err)
		}
	}
	before := l.Runtime.Metrics()
	close(gt.release)
	if _, err := hold.Await(); err != nil {
		t.Fatal(err)
	}
	for i, p := range pending {
		if _, err := p.Await(); err != nil {
			t.Fatalf("command %d: %v", i, err)
		}
	}
	sent := l.Runtime.Metrics().MessagesSent - before.MessagesSent
	t.Logf("%d commands proposed in one cycle: %d raft messages sent by the leader", n, sent)
	if sent >= n {
		t.Errorf("%d commands proposed in one cycle cost %d raft messages from the leader, want fewer than %d", n, sent, n)
	}
}

// TestCommitOnlyAppendsHeld: a leader holds back the appends that only
// carry a new commit index; the next append carries the index instead (here
// the next proposal's, which follows at once), and followers learn the last
// one from a held append sent after the delay. Without the hold each
// proposal costs an append and a commit-only append per follower.
func TestCommitOnlyAppendsHeld(t *testing.T) {
	c := startCluster(t, 3, []uint64{1, 2, 3})
	propose(t, c, "warm", "1")
	l := waitLeader(t, c)
	g, _ := l.Runtime.Group(groupID)
	before := l.Runtime.Metrics()
	const n = 40
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := g.Propose(ctx, fmt.Appendf(nil, "k%d=v", i))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	after := l.Runtime.Metrics()
	held, replaced := after.CommitsHeld-before.CommitsHeld, after.CommitsReplaced-before.CommitsReplaced
	t.Logf("%d proposals: %d raft messages sent by the leader, %d commit-only appends held, %d replaced by the next append",
		n, after.MessagesSent-before.MessagesSent, held, replaced)
	// Most follow within the delay; a loaded machine may let some go out.
	if replaced < n/4 {
		t.Errorf("%d of %d held commit-only appends replaced by the next append for %d proposals, want at least %d", replaced, held, n, n/4)
	}
	sm := &kvSM{group: groupID}
	last := fmt.Sprintf("k%d", n-1)
	for _, nd := range c.Nodes() {
		consensustest.WaitFor(t, 5*time.Second, "every replica applied the last entry", func() bool {
			_, ok := sm.get(nd.Engine, last)
			return ok
		})
	}
}

// holdFS holds the WAL fsyncs of an engine while armed: each sync of a
// *.log file reports itself on entered and waits for release.
type holdFS struct {
	vfs.FS
	armed   *atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (fs holdFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return holdFile{File: f, fs: fs}, nil
}

func (fs holdFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	return fs.wrap(name, f, err)
}

func (fs holdFS) ReuseForWrite(old, name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(old, name, c)
	return fs.wrap(name, f, err)
}

type holdFile struct {
	vfs.File
	fs holdFS
}

func (f holdFile) hold() {
	if f.fs.armed.Load() {
		f.fs.entered <- struct{}{}
		<-f.fs.release
	}
}

func (f holdFile) Sync() error     { f.hold(); return f.File.Sync() }
func (f holdFile) SyncData() error { f.hold(); return f.File.SyncData() }
func (f holdFile) SyncTo(n int64) (bool, error) {
	f.hold()
	return f.File.SyncTo(n)
}

// TestNewEntriesWaitForFsync: while the fsync of one group's write runs,
// a write proposed on another group waits for it (its new entry goes in
// the next cycle, with whatever else came meanwhile) instead of starting a
// cycle of its own; both writes complete once the disk answers. Each write
// starting its own cycle made small cycles under load, a log write, an
// fsync and an append per follower for each.
func TestNewEntriesWaitForFsync(t *testing.T) {
	var armed atomic.Bool
	hfs := holdFS{armed: &armed, entered: make(chan struct{}, 16), release: make(chan struct{})}
	groups := []uint64{groupID, groupID + 1}
	c := consensustest.NewCluster(t, 1, consensustest.Options{
		Runtime: testConfig(),
		WrapFS: func(_ uint64, fs vfs.FS) vfs.FS {
			hfs.FS = fs
			return hfs
		},
		OnStart: func(nd *consensustest.Node) {
			for _, id := range groups {
				if _, err := nd.Runtime.CreateGroup(consensus.GroupConfig{ID: id, StateMachine: &kvSM{group: id, node: nd.ID}, Bootstrap: []uint64{1}}); err != nil {
					t.Fatalf("create group %d: %v", id, err)
				}
			}
		},
	})
	n := c.Node(1)
	var gs []*consensus.Group
	for _, id := range groups {
		g, _ := n.Runtime.Group(id)
		consensustest.WaitFor(t, 15*time.Second, "a leader", func() bool { return g.Status().Role == consensus.RoleLeader })
		consensustest.Retry(t, 10*time.Second, "a first write", func(ctx context.Context) error {
			_, err := g.Propose(ctx, []byte("warm=1"))
			return err
		})
		gs = append(gs, g)
	}
	var releaseOnce sync.Once
	release := func() {
		releaseOnce.Do(func() {
			armed.Store(false)
			close(hfs.release)
		})
	}
	t.Cleanup(release) // before the cluster stops, which waits for the disk
	armed.Store(true)
	first, err := gs[0].ProposeAsync([]byte("a=1"))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-hfs.entered: // the first write's cycle is in its fsync
	case <-time.After(10 * time.Second):
		t.Fatal("the first write's fsync never started")
	}
	before := n.Runtime.Metrics().Deferred
	second, err := gs[1].ProposeAsync([]byte("b=1"))
	if err != nil {
		t.Fatal(err)
	}
	consensustest.WaitFor(t, 5*time.Second, "the second write to wait for the first's fsync", func() bool {
		return n.Runtime.Metrics().Deferred > before
	})
	release()
	for i, p := range []*consensus.Pending{first, second} {
		if _, err := p.Await(); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	for i, k := range []string{"a", "b"} {
		if v, ok := (&kvSM{group: groups[i]}).get(n.Engine, k); !ok || v != "1" {
			t.Errorf("group %d: %s = %q, %v after the write", groups[i], k, v, ok)
		}
	}
}
