package transport

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/shaledb/shaledb/internal/rpc"
)

// recorder is a Handler that remembers everything delivered to it.
type recorder struct {
	mu          sync.Mutex
	msgs        map[uint64][]Message // by sender node
	frames      map[uint64]int       // HandleMessages calls by sender node
	unreachable map[uint64]int
	snapshot    func(ctx context.Context, from uint64, s *SnapshotStream) error
}

func newRecorder() *recorder {
	return &recorder{
		msgs:        make(map[uint64][]Message),
		frames:      make(map[uint64]int),
		unreachable: make(map[uint64]int),
	}
}

func (r *recorder) HandleMessages(from uint64, msgs []Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs[from] = append(r.msgs[from], msgs...)
	r.frames[from]++
}

func (r *recorder) HandleUnreachable(to uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unreachable[to]++
}

func (r *recorder) HandleSnapshot(ctx context.Context, from uint64, s *SnapshotStream) error {
	r.mu.Lock()
	fn := r.snapshot
	r.mu.Unlock()
	if fn == nil {
		return fmt.Errorf("no snapshot handler")
	}
	return fn(ctx, from, s)
}

func (r *recorder) received(from uint64) []Message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Message(nil), r.msgs[from]...)
}

func (r *recorder) count(from uint64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.msgs[from])
}

func (r *recorder) unreachableCount(to uint64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.unreachable[to]
}

// node is one in-process node: a gRPC server on its own loopback IP, a pool,
// and a Transport.
type node struct {
	id   uint64
	addr string
	srv  *grpc.Server
	mux  *rpc.Mux
	pool *rpc.Pool
	t    *Transport
	h    *recorder
}

// cluster runs nodes 1..n on 127.0.0.1..127.0.0.n.
type cluster struct {
	tb    testing.TB
	tweak func(*Config)

	mu    sync.Mutex
	addrs map[uint64]string
	nodes map[uint64]*node
}

func newCluster(tb testing.TB, n int, tweak func(*Config)) *cluster {
	c := &cluster{tb: tb, tweak: tweak, addrs: make(map[uint64]string), nodes: make(map[uint64]*node)}
	tb.Cleanup(c.stopAll)
	for id := uint64(1); id <= uint64(n); id++ {
		c.start(id, fmt.Sprintf("127.0.0.%d:0", id))
	}
	return c
}

func (c *cluster) resolve(id uint64) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.addrs[id]; ok {
		return a, nil
	}
	return "", fmt.Errorf("unknown node %d", id)
}

// start starts node id listening on addr (port 0 picks one).
func (c *cluster) start(id uint64, addr string) *node {
	c.tb.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		c.tb.Fatal(err)
	}
	n := &node{id: id, addr: lis.Addr().String(), srv: rpc.NewServer(), pool: rpc.NewPool(), h: newRecorder()}
	cfg := Config{NodeID: id, Resolver: c.resolve, Handler: n.h, Pool: n.pool}
	if c.tweak != nil {
		c.tweak(&cfg)
	}
	n.t = New(cfg)
	n.mux = rpc.NewMux(lis)
	n.t.Register(n.srv)
	go func() { _ = n.srv.Serve(n.mux.GRPC()) }()
	n.t.Serve(n.mux.Raft())
	c.mu.Lock()
	c.addrs[id] = n.addr
	c.nodes[id] = n
	c.mu.Unlock()
	return n
}

func (c *cluster) node(id uint64) *node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id]
}

// stop stops node id's transport, server and pool; its address stays known.
func (c *cluster) stop(id uint64) {
	c.mu.Lock()
	n := c.nodes[id]
	delete(c.nodes, id)
	c.mu.Unlock()
	if n != nil {
		n.t.Stop()
		n.srv.Stop()
		n.mux.Close()
		n.pool.Close()
	}
}

func (c *cluster) stopAll() {
	c.mu.Lock()
	var ids []uint64
	for id := range c.nodes {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	for _, id := range ids {
		c.stop(id)
	}
}

// connectAll makes every node open its streams to every other node and
// waits until each has heard from each other. (Acks need a second round of
// frames, which a test with a long LivenessInterval never sends.)
func (c *cluster) connectAll(ids ...uint64) {
	c.tb.Helper()
	for _, a := range ids {
		for _, b := range ids {
			if a != b {
				c.node(a).t.Send(b, nil)
			}
		}
	}
	waitFor(c.tb, "all pairs to hear each other", func() bool {
		for _, a := range ids {
			for _, b := range ids {
				if a != b && c.node(a).t.LastHeard(b).IsZero() {
					return false
				}
			}
		}
		return true
	})
}

// waitTimeout is generous: conditions normally hold within milliseconds, but
// CI machines under -race can be slow, and a deadline only costs time when
// the test is failing anyway.
const waitTimeout = 20 * time.Second

// waitFor polls cond until it holds or waitTimeout passes.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond) // poll interval, not a wait for the condition
	}
}

func msgApp(group, from, to, index uint64) Message {
	return Message{Group: group, Msg: app(from, to, 1, index, []byte(fmt.Sprintf("g%d-i%d", group, index)))}
}

func heartbeats(from, to uint64, groups int) []Message {
	out := make([]Message, 0, groups)
	for g := 1; g <= groups; g++ {
		out = append(out, Message{Group: uint64(g), Msg: hb(from, to, uint64(g%7+1), uint64(g))})
	}
	return out
}
