package consensus

import (
	"sync/atomic"
	"time"
)

// Metrics are cumulative counters of a runtime, read with Runtime.Metrics.
type Metrics struct {
	Cycles              atomic.Uint64
	MessagesSent        atomic.Uint64
	VotesRefused        atomic.Uint64
	DroppedUnknownGroup atomic.Uint64
	ConfChanges         atomic.Uint64
	LogTruncations      atomic.Uint64
	Quiesces            atomic.Uint64
	SnapshotsSent       atomic.Uint64
	SnapshotsFailed     atomic.Uint64
	SnapshotsApplied    atomic.Uint64
	SnapshotBytesSent   atomic.Uint64
	Syncs               atomic.Uint64
	SyncNanos           atomic.Uint64
	CycleNanos          atomic.Uint64
}

// MetricsSnapshot is a plain copy of Metrics.
type MetricsSnapshot struct {
	Cycles, MessagesSent, VotesRefused, DroppedUnknownGroup, ConfChanges, LogTruncations, Quiesces uint64
	SnapshotsSent, SnapshotsFailed, SnapshotsApplied, SnapshotBytesSent                            uint64
	Syncs                                                                                          uint64
	SyncTime, CycleTime                                                                            time.Duration
}

func (m *Metrics) observeSync(d time.Duration) {
	m.Syncs.Add(1)
	m.SyncNanos.Add(uint64(d))
}

func (m *Metrics) observeCycle(d time.Duration) { m.CycleNanos.Add(uint64(d)) }

// Metrics returns a copy of the runtime's counters.
func (rt *Runtime) Metrics() MetricsSnapshot {
	m := &rt.metrics
	return MetricsSnapshot{
		Cycles: m.Cycles.Load(), MessagesSent: m.MessagesSent.Load(), VotesRefused: m.VotesRefused.Load(),
		DroppedUnknownGroup: m.DroppedUnknownGroup.Load(), ConfChanges: m.ConfChanges.Load(),
		LogTruncations: m.LogTruncations.Load(), Quiesces: m.Quiesces.Load(),
		SnapshotsSent: m.SnapshotsSent.Load(), SnapshotsFailed: m.SnapshotsFailed.Load(),
		SnapshotsApplied: m.SnapshotsApplied.Load(), SnapshotBytesSent: m.SnapshotBytesSent.Load(),
		Syncs: m.Syncs.Load(), SyncTime: time.Duration(m.SyncNanos.Load()), CycleTime: time.Duration(m.CycleNanos.Load()),
	}
}
