package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"

	"github.com/shaledb/shaledb/internal/rpc"
)

// Namespace prefixes every ShaleDB series.
const Namespace = "shale"

// Registry is one node's metrics registry.
type Registry struct {
	reg *prometheus.Registry
	rpc *RPCMetrics
}

// NewRegistry returns a registry with the Go runtime, process and RPC
// metrics. The node's own collectors are added with AddNode once it runs.
func NewRegistry() *Registry {
	r := &Registry{reg: prometheus.NewRegistry(), rpc: newRPCMetrics()}
	r.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		r.rpc,
	)
	return r
}

// Prometheus returns the underlying registry (to register more collectors
// or to gather).
func (r *Registry) Prometheus() *prometheus.Registry { return r.reg }

// RPC returns the RPC metrics, an rpc.Observer.
func (r *Registry) RPC() *RPCMetrics { return r.rpc }

// ServerOptions are the gRPC server options that feed the RPC metrics.
func (r *Registry) ServerOptions() []grpc.ServerOption { return rpc.ObserverOptions(r.rpc) }

// AddNode registers collectors that read src at every scrape. Nil fields
// of src are skipped.
func (r *Registry) AddNode(src NodeSource) error {
	var cs []prometheus.Collector
	if src.Raft != nil {
		cs = append(cs, raftCollector(src.Raft))
	}
	if src.Transport != nil {
		cs = append(cs, transportCollector(src.Transport))
	}
	if src.Pebble != nil {
		cs = append(cs, pebbleCollector(src.Pebble))
	}
	if src.Tablets != nil {
		cs = append(cs, tabletsCollector(src.Tablets))
	}
	if src.Intents != nil {
		cs = append(cs, intentsCollector(src.Intents))
	}
	for _, c := range cs {
		if err := r.reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// Handler serves the registry in the Prometheus text format (or another
// format the scraper negotiates).
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{Registry: r.reg, ErrorHandling: promhttp.ContinueOnError})
}
