package metrics

import (
	"github.com/cockroachdb/pebble/v2"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/shaledb/shaledb/internal/consensus"
	"github.com/shaledb/shaledb/internal/consensus/transport"
	"github.com/shaledb/shaledb/internal/tserver"
)

// NodeSource says where a node's collectors read from at scrape time.
type NodeSource struct {
	// Raft returns the consensus runtime's counters and histograms.
	Raft func() consensus.MetricsSnapshot
	// Transport returns the raft transport's counters.
	Transport func() transport.Stats
	// Pebble returns the engine's metrics; nil once it is closed.
	Pebble func() *pebble.Metrics
	// Tablets returns the number of tablet replicas hosted and of those
	// that are raft leaders.
	Tablets func() (hosted, leaders int)
	// Intents returns the number of transaction intents stored in the
	// tablet replicas hosted (left by pending transactions, or by
	// finished ones not yet resolved here); false once the engine is
	// closed.
	Intents func() (int, bool)
}

// ForNode reads the metrics of a tablet server.
func ForNode(n *tserver.Node) NodeSource {
	return NodeSource{
		Raft:      n.Runtime().Metrics,
		Transport: n.Transport().Stats,
		Pebble:    n.Engine().Metrics,
		Tablets: func() (hosted, leaders int) {
			for _, tb := range n.Tablets() {
				hosted++
				if tb.Group().Status().Role == consensus.RoleLeader {
					leaders++
				}
			}
			return hosted, leaders
		},
		Intents: func() (total int, ok bool) {
			ok = n.Engine().WhileOpen(func() {
				for _, tb := range n.Tablets() {
					if c, err := tb.IntentCount(); err == nil {
						total += c
					}
				}
			})
			return total, ok
		},
	}
}

func raftCollector(snap func() consensus.MetricsSnapshot) prometheus.Collector {
	type S = consensus.MetricsSnapshot
	const sub = "raft"
	return &snapCollector[S]{
		snap: func() (S, bool) { return snap(), true },
		fields: []field[S]{
			counter(sub, "proposals_total", "Commands and membership changes proposed on this node.", func(s S) float64 { return float64(s.Proposals) }),
			counter(sub, "entries_applied_total", "Committed log entries applied on this node.", func(s S) float64 { return float64(s.EntriesApplied) }),
			counter(sub, "messages_sent_total", "Raft messages handed to the transport.", func(s S) float64 { return float64(s.MessagesSent) }),
			counter(sub, "messages_received_total", "Raft messages received from the transport.", func(s S) float64 { return float64(s.MessagesReceived) }),
			counter(sub, "messages_dropped_unknown_group_total", "Received raft messages for groups this node does not host.", func(s S) float64 { return float64(s.DroppedUnknownGroup) }),
			counter(sub, "scheduler_cycles_total", "Scheduler cycles (one group commit each).", func(s S) float64 { return float64(s.Cycles) }),
			counter(sub, "scheduler_cycles_overlapped_total", "Scheduler cycles started while an earlier cycle's fsync was running.", func(s S) float64 { return float64(s.CyclesOverlapped) }),
			counter(sub, "scheduler_deferred_total", "Times a group's new log entries waited for an earlier cycle's fsync to share the next cycle.", func(s S) float64 { return float64(s.Deferred) }),
			counter(sub, "fsyncs_total", "Raft log fsyncs.", func(s S) float64 { return float64(s.Syncs) }),
			counter(sub, "votes_refused_total", "Vote requests refused while a leader was alive.", func(s S) float64 { return float64(s.VotesRefused) }),
			counter(sub, "conf_changes_total", "Membership changes applied.", func(s S) float64 { return float64(s.ConfChanges) }),
			counter(sub, "log_truncations_total", "Raft log truncations.", func(s S) float64 { return float64(s.LogTruncations) }),
			counter(sub, "quiesces_total", "Times an idle group quiesced.", func(s S) float64 { return float64(s.Quiesces) }),
			counter(sub, "commits_held_total", "Commit-only appends held back to ride on the next append.", func(s S) float64 { return float64(s.CommitsHeld) }),
			counter(sub, "commits_replaced_total", "Held commit-only appends a later append made unnecessary.", func(s S) float64 { return float64(s.CommitsReplaced) }),
			counter(sub, "snapshots_sent_total", "Snapshots sent to other replicas.", func(s S) float64 { return float64(s.SnapshotsSent) }),
			counter(sub, "snapshots_failed_total", "Snapshots that failed to send.", func(s S) float64 { return float64(s.SnapshotsFailed) }),
			counter(sub, "snapshots_applied_total", "Snapshots received and applied.", func(s S) float64 { return float64(s.SnapshotsApplied) }),
			counter(sub, "snapshot_bytes_sent_total", "Bytes of snapshot data sent.", func(s S) float64 { return float64(s.SnapshotBytesSent) }),
		},
		hists: []histField[S]{
			histogram(sub, "cycle_duration_seconds", "Duration of one scheduler cycle.", func(s S) consensus.HistogramSnapshot { return s.CycleLatency }),
			histogram(sub, "fsync_duration_seconds", "Duration of the raft log fsync of one cycle.", func(s S) consensus.HistogramSnapshot { return s.SyncLatency }),
			histogram(sub, "apply_duration_seconds", "Time one cycle spent applying committed entries.", func(s S) consensus.HistogramSnapshot { return s.ApplyLatency }),
			histogram(sub, "proposal_duration_seconds", "Time from a local proposal to its application.", func(s S) consensus.HistogramSnapshot { return s.ProposalLatency }),
		},
	}
}

func transportCollector(snap func() transport.Stats) prometheus.Collector {
	type S = transport.Stats
	const sub = "transport"
	dropped := prometheus.NewDesc(name(sub, "frames_dropped_total"), "Frames discarded because the link was down, by direction.", []string{"direction"}, nil)
	return &snapCollector[S]{
		snap: func() (S, bool) { return snap(), true },
		fields: []field[S]{
			counter(sub, "frames_sent_total", "Frames sent to other nodes.", func(s S) float64 { return float64(s.FramesSent) }),
			counter(sub, "frames_received_total", "Frames received from other nodes.", func(s S) float64 { return float64(s.FramesReceived) }),
			counter(sub, "messages_sent_total", "Raft messages sent, coalesced heartbeats included.", func(s S) float64 { return float64(s.MessagesSent) }),
			counter(sub, "messages_received_total", "Raft messages received, coalesced heartbeats included.", func(s S) float64 { return float64(s.MessagesReceived) }),
			counter(sub, "heartbeats_coalesced_total", "Heartbeats and responses sent as compact coalesced tuples.", func(s S) float64 { return float64(s.HeartbeatsCoalesced) }),
			counter(sub, "bytes_sent_total", "Encoded frame bytes sent.", func(s S) float64 { return float64(s.BytesSent) }),
			counter(sub, "bytes_received_total", "Encoded frame bytes received.", func(s S) float64 { return float64(s.BytesReceived) }),
			counter(sub, "messages_dropped_total", "Raft messages given to the transport and never sent.", func(s S) float64 { return float64(s.MessagesDropped) }),
			counter(sub, "frames_rejected_skew_total", "Frames refused for a clock too far ahead.", func(s S) float64 { return float64(s.FramesRejectedSkew) }),
		},
		extraDesc: []*prometheus.Desc{dropped},
		extra: func(s S, ch chan<- prometheus.Metric) {
			ch <- prometheus.MustNewConstMetric(dropped, prometheus.CounterValue, float64(s.FramesDroppedOut), "out")
			ch <- prometheus.MustNewConstMetric(dropped, prometheus.CounterValue, float64(s.FramesDroppedIn), "in")
		},
	}
}

func pebbleCollector(snap func() *pebble.Metrics) prometheus.Collector {
	type S = *pebble.Metrics
	const sub = "pebble"
	levelFiles := prometheus.NewDesc(name(sub, "level_files"), "SSTables per LSM level.", []string{"level"}, nil)
	levelBytes := prometheus.NewDesc(name(sub, "level_size_bytes"), "Bytes of SSTables per LSM level.", []string{"level"}, nil)
	levels := []string{"0", "1", "2", "3", "4", "5", "6"}
	return &snapCollector[S]{
		snap: func() (S, bool) { m := snap(); return m, m != nil },
		fields: []field[S]{
			counter(sub, "compactions_total", "Compactions completed.", func(m S) float64 { return float64(m.Compact.Count) }),
			gauge(sub, "compactions_in_progress", "Compactions running.", func(m S) float64 { return float64(m.Compact.NumInProgress) }),
			gauge(sub, "compaction_debt_bytes", "Estimated bytes to compact for the LSM to reach a stable state.", func(m S) float64 { return float64(m.Compact.EstimatedDebt) }),
			counter(sub, "flushes_total", "Memtable flushes completed.", func(m S) float64 { return float64(m.Flush.Count) }),
			counter(sub, "flushed_bytes_total", "Bytes of sstables written by memtable flushes.", func(m S) float64 {
				return levelsSum(m, func(l *pebble.LevelMetrics) uint64 { return l.TableBytesFlushed })
			}),
			counter(sub, "compacted_bytes_total", "Bytes of sstables written by compactions.", func(m S) float64 {
				return levelsSum(m, func(l *pebble.LevelMetrics) uint64 { return l.TableBytesCompacted })
			}),
			gauge(sub, "tombstones", "Deletions (point and range) in the sstables, approximately.", func(m S) float64 { return float64(m.Keys.TombstoneCount) }),
			counter(sub, "ingestions_total", "SSTable ingestions (snapshots, splits).", func(m S) float64 { return float64(m.Ingest.Count) }),
			gauge(sub, "memtable_size_bytes", "Bytes allocated by memtables (including queued for flush).", func(m S) float64 { return float64(m.MemTable.Size) }),
			gauge(sub, "memtables", "Memtables, including queued for flush.", func(m S) float64 { return float64(m.MemTable.Count) }),
			gauge(sub, "l0_files", "SSTables in L0.", func(m S) float64 { return float64(m.Levels[0].TablesCount) }),
			gauge(sub, "l0_sublevels", "Sublevels of L0.", func(m S) float64 { return float64(m.Levels[0].Sublevels) }),
			gauge(sub, "read_amplification", "Read amplification: L0 sublevels plus non-empty lower levels.", func(m S) float64 { return float64(m.ReadAmp()) }),
			gauge(sub, "disk_usage_bytes", "Disk space used by the engine (tables, WAL, manifests).", func(m S) float64 { return float64(m.DiskSpaceUsage()) }),
			gauge(sub, "live_sstables_size_bytes", "Bytes of live SSTables.", func(m S) float64 { return float64(m.Total().TablesSize) }),
			gauge(sub, "block_cache_size_bytes", "Bytes in the block cache.", func(m S) float64 { return float64(m.BlockCache.Size) }),
			counter(sub, "block_cache_hits_total", "Block cache hits.", func(m S) float64 { return float64(m.BlockCache.Hits) }),
			counter(sub, "block_cache_misses_total", "Block cache misses.", func(m S) float64 { return float64(m.BlockCache.Misses) }),
			gauge(sub, "wal_size_bytes", "Live bytes in the write-ahead log.", func(m S) float64 { return float64(m.WAL.Size) }),
			counter(sub, "wal_bytes_written_total", "Bytes written to the write-ahead log.", func(m S) float64 { return float64(m.WAL.BytesWritten) }),
			counter(sub, "wal_fsyncs_total", "fdatasync calls on the write-ahead log (one covers every batch queued behind it).", walFsyncs),
			gauge(sub, "table_iterators", "Open SSTable iterators.", func(m S) float64 { return float64(m.TableIters) }),
		},
		extraDesc: []*prometheus.Desc{levelFiles, levelBytes},
		extra: func(m S, ch chan<- prometheus.Metric) {
			for i, l := range levels {
				ch <- prometheus.MustNewConstMetric(levelFiles, prometheus.GaugeValue, float64(m.Levels[i].TablesCount), l)
				ch <- prometheus.MustNewConstMetric(levelBytes, prometheus.GaugeValue, float64(m.Levels[i].TablesSize), l)
			}
		},
	}
}

// walFsyncs is the number of WAL syncs Pebble timed: the sample count of
// its fsync latency histogram. The raft metric fsyncs_total counts the
// scheduler cycles that waited for a sync, several of which one fdatasync
// may cover.
func walFsyncs(m *pebble.Metrics) float64 {
	h := m.LogWriter.FsyncLatency
	if h == nil {
		return 0
	}
	var d dto.Metric
	if err := h.Write(&d); err != nil {
		return 0
	}
	return float64(d.GetHistogram().GetSampleCount())
}

// levelsSum sums a per-level figure over the LSM's levels (Metrics.Total
// adds the WAL's bytes to the flushed ones).
func levelsSum(m *pebble.Metrics, f func(*pebble.LevelMetrics) uint64) float64 {
	var n uint64
	for i := range m.Levels {
		n += f(&m.Levels[i])
	}
	return float64(n)
}

type tabletCounts struct{ hosted, leaders int }

func tabletsCollector(snap func() (hosted, leaders int)) prometheus.Collector {
	type S = tabletCounts
	return &snapCollector[S]{
		snap: func() (S, bool) { h, l := snap(); return S{h, l}, true },
		fields: []field[S]{
			gauge("", "tablets_hosted", "Tablet replicas hosted on this node.", func(s S) float64 { return float64(s.hosted) }),
			gauge("", "tablet_leaders", "Tablet replicas on this node that are raft leaders.", func(s S) float64 { return float64(s.leaders) }),
		},
	}
}

func intentsCollector(snap func() (int, bool)) prometheus.Collector {
	return &snapCollector[int]{
		snap: snap,
		fields: []field[int]{
			gauge("txn", "intents", "Transaction intents stored in the tablet replicas on this node.", func(n int) float64 { return float64(n) }),
		},
	}
}
