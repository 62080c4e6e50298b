package server_test

import (
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/server/servertest"
)

// TestLeaseEndsWithMajority checks the safety side of leader leases: once a
// majority of a tablet's replicas is gone, the survivor stops claiming the
// lease (after LeaseDuration, plus scheduling slack on a busy machine), so it
// cannot serve stale reads while the others could elect a new leader.
func TestLeaseEndsWithMajority(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	c.WaitMasters(10 * time.Second)
	c.CreateKVTable(t, "kv", 6)
	n := c.Servers[0].Node()
	held := func() int {
		k := 0
		for _, tb := range n.Tablets() {
			if tb.Group().HasLease() {
				k++
			}
		}
		return k
	}
	// Wait until node 1 leads something, so there is a lease to lose.
	deadline := time.Now().Add(30 * time.Second)
	for held() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("node 1 never held a lease")
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.Stop(1)
	c.Stop(2)
	stopped := time.Now()
	for held() > 0 {
		if time.Since(stopped) > 10*time.Second {
			t.Fatalf("node 1 still holds %d leases %v after its peers stopped (lease %v)", held(), time.Since(stopped), servertest.FastRaft().LeaseDuration)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("leases gone %v after the peers stopped", time.Since(stopped))
}
