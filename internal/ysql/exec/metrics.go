package exec

import "github.com/prometheus/client_golang/prometheus"

// engineMetrics count how the engine's statements reach the data: as one
// tablet write (the single-row fast path) or in distributed transactions.
type engineMetrics struct {
	singleRow prometheus.Counter
	txns      prometheus.Counter
}

func newEngineMetrics() *engineMetrics {
	return &engineMetrics{
		singleRow: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "shale", Subsystem: "ysql",
			Name: "single_row_writes_total",
			Help: "Statements run on the single-row fast path: one tablet write, no distributed transaction (INSERT of one row, UPDATE and DELETE of one row by its key, alone in their batch)."}),
		txns: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "shale", Subsystem: "ysql",
			Name: "transactions_total",
			Help: "Distributed transactions begun: transaction blocks, batches' implicit transactions, and statements alone in their batch that are not single-row writes."}),
	}
}

// Collectors are the engine's Prometheus series, for the node's registry.
func (e *Engine) Collectors() []prometheus.Collector {
	return []prometheus.Collector{e.metrics.singleRow, e.metrics.txns}
}
