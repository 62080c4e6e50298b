package balancer

import "time"

// Options tune the planner. A zero field takes its default.
type Options struct {
	// FollowerUnavailableTimeout is how long a tserver may be dead before its
	// replicas are re-created elsewhere (--follower-unavailable-timeout).
	// Default 5m.
	FollowerUnavailableTimeout time.Duration
	// MaxConcurrentAdds bounds learner adds (snapshots) in flight across the
	// cluster, counting State.InFlight and the moves of this plan. Default 8.
	MaxConcurrentAdds int
	// MaxConcurrentAddsPerTServer bounds learner adds in flight towards one
	// tserver. Default 2.
	MaxConcurrentAddsPerTServer int
	// MaxLeaderMovesPerRun bounds the TransferLeader moves made for leader
	// balance in one plan. Transfers that drain a blacklisted tserver or
	// clear the way for a removal are not counted, and the first chain of
	// transfers of a run (see balanceLeaders) may exceed it. Default 16.
	MaxLeaderMovesPerRun int
}

// Defaults.
const (
	DefaultFollowerUnavailableTimeout  = 5 * time.Minute
	DefaultMaxConcurrentAdds           = 8
	DefaultMaxConcurrentAddsPerTServer = 2
	DefaultMaxLeaderMovesPerRun        = 16
)

func (o Options) withDefaults() Options {
	if o.FollowerUnavailableTimeout <= 0 {
		o.FollowerUnavailableTimeout = DefaultFollowerUnavailableTimeout
	}
	if o.MaxConcurrentAdds <= 0 {
		o.MaxConcurrentAdds = DefaultMaxConcurrentAdds
	}
	if o.MaxConcurrentAddsPerTServer <= 0 {
		o.MaxConcurrentAddsPerTServer = DefaultMaxConcurrentAddsPerTServer
	}
	if o.MaxLeaderMovesPerRun <= 0 {
		o.MaxLeaderMovesPerRun = DefaultMaxLeaderMovesPerRun
	}
	return o
}
