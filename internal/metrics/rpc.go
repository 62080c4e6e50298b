package metrics

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
)

// RPCMetrics counts the RPCs a node's gRPC server handles, per service and
// method, and keeps a latency histogram per unary method. It implements
// rpc.Observer.
type RPCMetrics struct {
	started *prometheus.CounterVec
	handled *prometheus.CounterVec
	latency *prometheus.HistogramVec
}

func newRPCMetrics() *RPCMetrics {
	return &RPCMetrics{
		started: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "rpc", Name: "server_started_total",
			Help: "RPCs started on the server, by service, method and type (unary or stream).",
		}, []string{"service", "method", "type"}),
		handled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Subsystem: "rpc", Name: "server_handled_total",
			Help: "RPCs completed on the server, by service, method, type and gRPC status code.",
		}, []string{"service", "method", "type", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Subsystem: "rpc", Name: "server_handling_seconds",
			Help:    "Time the server spent handling a unary RPC, by service and method.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 18), // 50µs to 6.5s
		}, []string{"service", "method"}),
	}
}

// splitMethod turns "/pkg.Service/Method" into its service and method.
func splitMethod(full string) (service, method string) {
	full = strings.TrimPrefix(full, "/")
	if i := strings.LastIndexByte(full, '/'); i >= 0 {
		return full[:i], full[i+1:]
	}
	return "unknown", full
}

func rpcType(stream bool) string {
	if stream {
		return "stream"
	}
	return "unary"
}

// RPCStarted implements rpc.Observer.
func (m *RPCMetrics) RPCStarted(full string, stream bool) {
	s, meth := splitMethod(full)
	m.started.WithLabelValues(s, meth, rpcType(stream)).Inc()
}

// RPCHandled implements rpc.Observer.
func (m *RPCMetrics) RPCHandled(full string, stream bool, code codes.Code, d time.Duration) {
	s, meth := splitMethod(full)
	m.handled.WithLabelValues(s, meth, rpcType(stream), code.String()).Inc()
	if !stream {
		m.latency.WithLabelValues(s, meth).Observe(d.Seconds())
	}
}

// Describe implements prometheus.Collector.
func (m *RPCMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.started.Describe(ch)
	m.handled.Describe(ch)
	m.latency.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *RPCMetrics) Collect(ch chan<- prometheus.Metric) {
	m.started.Collect(ch)
	m.handled.Collect(ch)
	m.latency.Collect(ch)
}
