package server_test

import (
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/consensus"
	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/server/servertest"
)

// TestNewTableTabletsElectAtOnce: the tablets of a table created on nodes
// that have just started elect their leaders in one campaign each: no vote
// request is dropped for a tablet a node did not have yet, and every new
// tablet's term is its first leader's. The master creates each tablet's
// first voter (which campaigns at once) after the others; created
// together, its vote requests could find no replica and the tablet waited
// an election timeout. Other messages dropped for a missing tablet, and
// votes refused (a new tablet's replicas, which never followed a leader,
// refuse none in the nodes' first VoteRefusalWindow), are logged: a quiet
// machine has none, but under the race detector on a loaded one the
// masters' traffic drops some and a slow follower's pre-vote is refused.
func TestNewTableTabletsElectAtOnce(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	c.WaitMasters(10 * time.Second)
	// Adding the masters may drop messages (for the catalog replica a
	// node has not created yet): count from here.
	before := map[uint64][3]uint64{}
	for _, s := range c.Servers {
		m := s.Node().Runtime().Metrics()
		before[s.NodeID()] = [3]uint64{m.DroppedUnknownGroup, m.VotesRefused, m.DroppedVotes}
	}
	table := c.CreateKVTable(t, "kv", 12)
	consensustest.WaitFor(t, 20*time.Second, "a leader for each of the 12 tablets on every replica", func() bool {
		k := 0
		for _, s := range c.Servers {
			for _, tb := range s.Node().Tablets() {
				if tb.Descriptor().TableID == table && tb.Group().Status().Leader != 0 {
					k++
				}
			}
		}
		return k == 36
	})
	terms := map[uint64]bool{}
	for _, s := range c.Servers {
		m, b := s.Node().Runtime().Metrics(), before[s.NodeID()]
		if votes := m.DroppedVotes - b[2]; votes != 0 {
			t.Errorf("node %d: %d vote requests dropped for a missing tablet", s.NodeID(), votes)
		}
		if dropped, refused := m.DroppedUnknownGroup-b[0], m.VotesRefused-b[1]; dropped != 0 || refused != 0 {
			t.Logf("node %d: %d raft messages dropped for a missing tablet, %d votes refused", s.NodeID(), dropped, refused)
		}
		for _, tb := range s.Node().Tablets() {
			if tb.Descriptor().TableID == table {
				terms[tb.Group().Status().Term] = true
			}
		}
	}
	if len(terms) != 1 || !terms[consensus.InitialTerm+1] {
		t.Errorf("the new tablets' terms are %v, want all %d: some needed more than one election", terms, consensus.InitialTerm+1)
	}
}
