package consensus

import (
	"sync/atomic"
	"time"
)

// Metrics are cumulative counters and latency histograms of a runtime, read
// with Runtime.Metrics. They are plain atomics owned by the runtime (no
// metrics library, no global state): an exporter reads a snapshot when it
// is scraped.
type Metrics struct {
	Cycles atomic.Uint64
	// CyclesOverlapped counts cycles started while an earlier cycle's
	// fsync was still running.
	CyclesOverlapped atomic.Uint64
	// Deferred counts the times a group's new log entries waited for an
	// earlier cycle's fsync instead of starting a cycle of their own.
	Deferred            atomic.Uint64
	MessagesSent        atomic.Uint64
	MessagesReceived    atomic.Uint64
	VotesRefused        atomic.Uint64
	DroppedUnknownGroup atomic.Uint64
	// DroppedVotes: the dropped vote and pre-vote requests among them (a
	// new group's first campaign reaching a replica not created yet).
	DroppedVotes      atomic.Uint64
	ConfChanges       atomic.Uint64
	LogTruncations    atomic.Uint64
	Quiesces          atomic.Uint64
	SnapshotsSent     atomic.Uint64
	SnapshotsFailed   atomic.Uint64
	SnapshotsApplied  atomic.Uint64
	SnapshotBytesSent atomic.Uint64
	Syncs             atomic.Uint64
	SyncNanos         atomic.Uint64
	CycleNanos        atomic.Uint64
	// Proposals counts commands and membership changes handed to raft on
	// this node (as leader).
	Proposals atomic.Uint64
	// EntriesApplied counts committed log entries applied to the state
	// machines of this node's replicas.
	EntriesApplied atomic.Uint64
	// CommitsHeld counts commit-only appends held back (holdcommit.go),
	// CommitsReplaced those of them a later append made unnecessary.
	CommitsHeld, CommitsReplaced atomic.Uint64

	// CycleLatency is the duration of one scheduler cycle.
	CycleLatency Histogram
	// SyncLatency is the duration of the raft log fsync of one cycle.
	SyncLatency Histogram
	// ApplyLatency is the time one cycle spends applying committed entries
	// (every group's, in one batch).
	ApplyLatency Histogram
	// ProposalLatency is the time from a local proposal to its application
	// (the proposer's answer).
	ProposalLatency Histogram
}

// MetricsSnapshot is a plain copy of Metrics.
type MetricsSnapshot struct {
	Cycles, CyclesOverlapped, Deferred, MessagesSent, MessagesReceived, VotesRefused, DroppedUnknownGroup, ConfChanges uint64
	DroppedVotes                                                                                                       uint64
	LogTruncations, Quiesces, CommitsHeld, CommitsReplaced                                                             uint64
	SnapshotsSent, SnapshotsFailed, SnapshotsApplied, SnapshotBytesSent                                                uint64
	Syncs                                                                                                              uint64
	Proposals, EntriesApplied                                                                                          uint64
	SyncTime, CycleTime                                                                                                time.Duration

	CycleLatency, SyncLatency, ApplyLatency, ProposalLatency HistogramSnapshot
}

func (m *Metrics) observeSync(d time.Duration) {
	m.Syncs.Add(1)
	m.SyncNanos.Add(uint64(d))
	m.SyncLatency.Observe(d)
}

func (m *Metrics) observeCycle(d time.Duration) {
	m.CycleNanos.Add(uint64(d))
	m.CycleLatency.Observe(d)
}

// Metrics returns a copy of the runtime's counters and histograms.
func (rt *Runtime) Metrics() MetricsSnapshot {
	m := &rt.metrics
	return MetricsSnapshot{
		Cycles: m.Cycles.Load(), CyclesOverlapped: m.CyclesOverlapped.Load(), Deferred: m.Deferred.Load(), MessagesSent: m.MessagesSent.Load(), MessagesReceived: m.MessagesReceived.Load(),
		VotesRefused: m.VotesRefused.Load(), DroppedUnknownGroup: m.DroppedUnknownGroup.Load(), ConfChanges: m.ConfChanges.Load(),
		DroppedVotes:   m.DroppedVotes.Load(),
		LogTruncations: m.LogTruncations.Load(), Quiesces: m.Quiesces.Load(),
		CommitsHeld: m.CommitsHeld.Load(), CommitsReplaced: m.CommitsReplaced.Load(),
		SnapshotsSent: m.SnapshotsSent.Load(), SnapshotsFailed: m.SnapshotsFailed.Load(),
		SnapshotsApplied: m.SnapshotsApplied.Load(), SnapshotBytesSent: m.SnapshotBytesSent.Load(),
		Syncs: m.Syncs.Load(), Proposals: m.Proposals.Load(), EntriesApplied: m.EntriesApplied.Load(),
		SyncTime: time.Duration(m.SyncNanos.Load()), CycleTime: time.Duration(m.CycleNanos.Load()),
		CycleLatency: m.CycleLatency.Snapshot(), SyncLatency: m.SyncLatency.Snapshot(),
		ApplyLatency: m.ApplyLatency.Snapshot(), ProposalLatency: m.ProposalLatency.Snapshot(),
	}
}

// LatencyBuckets are the upper bounds of every Histogram's buckets: powers
// of two from 16µs to about 8.4s (an fsync on a fast SSD is tens of µs, a
// stalled disk seconds). Observations above the last bound are only in the
// total count.
var LatencyBuckets = func() []time.Duration {
	out := make([]time.Duration, 20)
	for i := range out {
		out[i] = (16 * time.Microsecond) << i
	}
	return out
}()

// Histogram is a lock-free latency histogram over LatencyBuckets. The zero
// value is ready to use.
type Histogram struct {
	counts [20]atomic.Uint64 // per bucket, not cumulative
	count  atomic.Uint64
	sum    atomic.Uint64 // nanoseconds
}

// Observe records one duration.
func (h *Histogram) Observe(d time.Duration) {
	if d < 0 {
		d = 0
	}
	for i, b := range LatencyBuckets {
		if d <= b {
			h.counts[i].Add(1)
			break
		}
	}
	h.count.Add(1)
	h.sum.Add(uint64(d))
}

// HistogramSnapshot is a copy of a Histogram. Counts[i] is the number of
// observations at most Bounds[i] (cumulative, as Prometheus wants it).
type HistogramSnapshot struct {
	Bounds []time.Duration
	Counts []uint64
	Count  uint64
	Sum    time.Duration
}

// Snapshot copies the histogram. Concurrent observations may make Count
// run slightly ahead of the buckets; never behind.
func (h *Histogram) Snapshot() HistogramSnapshot {
	s := HistogramSnapshot{Bounds: LatencyBuckets, Counts: make([]uint64, len(LatencyBuckets))}
	var cum uint64
	for i := range s.Counts {
		cum += h.counts[i].Load()
		s.Counts[i] = cum
	}
	s.Count = max(h.count.Load(), cum)
	s.Sum = time.Duration(h.sum.Load())
	return s
}
