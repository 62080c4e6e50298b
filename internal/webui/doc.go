// Package webui serves a node's web UI, in the spirit of the yb-master UI:
// server-rendered HTML pages (html/template, so everything is escaped) of
// the cluster as the master leader sees it, of this node's tablet
// replicas, and the node's Prometheus metrics. Any node serves it; a node
// without the master role asks the master leader through client.Masters.
//
// Pages (GET):
//
//	/                 overview: cluster id, master leader, counts
//	/masters          masters, the leader marked
//	/tservers         tservers: address, placement, state, last heartbeat,
//	                  tablet and leader counts, data size
//	/tables           tables: namespace, name, id, tablet count, RF, state
//	/tables/{id}      a table's tablets: span or hash range, replicas with
//	                  roles, leader, size
//	/tablets          this node's tablet replicas: role, term, applied
//	                  index, leader, lease, size
//	/metrics          Prometheus text format (the node's registry)
//
// Every page except /metrics answers with JSON instead of HTML when asked
// with ?format=json; the JSON is the page's data (the types in views.go),
// or {"error": "..."} with a non-2xx status.
//
// Usage (the HTTP listener belongs to the caller, which also adds
// /debug/pprof):
//
//	mux := http.NewServeMux()
//	webui.Register(mux, srv) // srv *server.Server
//	go http.Serve(lis, mux)
package webui
