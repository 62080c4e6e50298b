package tserver_test

import (
	"time"

	"github.com/shaledb/shaledb/internal/consensus"
	"github.com/shaledb/shaledb/internal/storage"
)

// storageOpts keeps test engines small: several run at once on CI.
var storageOpts = storage.Options{CacheSize: 16 << 20, MemTableSize: 8 << 20}

// testRaft is the raft timing of the tests' nodes: fast failover, with room
// for a loaded 2-core machine running several tests at once.
func testRaft() consensus.Config {
	return consensus.Config{
		TickInterval:      25 * time.Millisecond,
		ElectionTicks:     10,
		VoteRefusalWindow: 500 * time.Millisecond,
		LeaseDuration:     400 * time.Millisecond,
	}
}
