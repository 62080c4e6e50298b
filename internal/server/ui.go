package server

import (
	"sort"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/metrics"
	pb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// What the web UI (internal/webui) reads of a node.

// TabletStatuses reports the tablet replicas hosted on this node.
func (s *Server) TabletStatuses() []*pb.TabletStatus { return s.node.TabletStatuses() }

// MasterClient returns a caller of the master leader, built on the masters
// this node currently knows (the leader its heartbeat last reached first).
func (s *Server) MasterClient() *client.Masters {
	var addrs []string
	if l := s.hb.leaderAddr(); l != "" {
		addrs = append(addrs, l)
	}
	var rest []string
	for _, a := range s.Masters() {
		rest = append(rest, a)
	}
	sort.Strings(rest)
	return client.NewMasters(s.pool, append(addrs, rest...))
}

// Metrics is the node's metrics registry.
func (s *Server) Metrics() *metrics.Registry { return s.reg }
