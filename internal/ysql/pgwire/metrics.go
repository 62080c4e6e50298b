package pgwire

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the server's Prometheus series; a nil *metrics (no
// Registerer) records nothing.
type metrics struct {
	open    prometheus.Gauge
	conns   prometheus.Counter
	queries prometheus.Counter
	errors  *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		return nil, nil
	}
	m := &metrics{
		open: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "shale", Subsystem: "ysql",
			Name: "connections_open", Help: "Client connections currently open."}),
		conns: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "shale", Subsystem: "ysql",
			Name: "connections_total", Help: "Client connections accepted."}),
		queries: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "shale", Subsystem: "ysql",
			Name: "queries_total", Help: "Statements executed (simple-query statements and Execute messages)."}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "shale", Subsystem: "ysql",
			Name: "errors_total", Help: "ErrorResponses sent, by SQLSTATE class (the code's first two characters)."},
			[]string{"class"}),
	}
	for _, c := range []prometheus.Collector{m.open, m.conns, m.queries, m.errors} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *metrics) connOpened() {
	if m != nil {
		m.open.Inc()
		m.conns.Inc()
	}
}

func (m *metrics) connClosed() {
	if m != nil {
		m.open.Dec()
	}
}

func (m *metrics) query() {
	if m != nil {
		m.queries.Inc()
	}
}

func (m *metrics) error(code string) {
	if m != nil && len(code) >= 2 {
		m.errors.WithLabelValues(code[:2]).Inc()
	}
}
