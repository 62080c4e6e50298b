// Package metrics exports a node's metrics in Prometheus format. Each node
// has its own Registry (never the global default one, so that the nodes of
// an in-process test cluster do not collide), holding:
//
//   - the Go runtime and process collectors;
//   - RPC counts and latency histograms per method, fed by the gRPC
//     interceptors of rpc.ObserverOptions;
//   - collectors that read the node's existing counters at scrape time:
//     the consensus runtime (consensus.Runtime.Metrics), the raft transport
//     (transport.Stats), Pebble (pebble.Metrics) and the tablets hosted.
//
// Every series is named shale_…
//
// Usage:
//
//	reg := metrics.NewRegistry()
//	node, err := tserver.Start(tserver.Config{…, ServerOptions: reg.ServerOptions()})
//	reg.AddNode(metrics.ForNode(node))
//	mux.Handle("/metrics", reg.Handler())
package metrics
