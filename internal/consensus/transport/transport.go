package transport

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/grpc"

	"github.com/shaledb/shaledb/internal/consensus/transport/transportpb"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/rpc"
)

// Message is one raft message of one group (tablet).
type Message struct {
	Group uint64
	Msg   *raftpb.Message
}

// Handler receives what the transport delivers. Its methods are called from
// transport goroutines, never after Stop has returned.
type Handler interface {
	// HandleMessages delivers, in order, the messages of one frame received
	// from node `from`. Called from that peer's receive goroutine; must not
	// block for long.
	HandleMessages(from uint64, msgs []Message)
	// HandleUnreachable reports that frames to node `to` could not be
	// delivered (connection broken / dial failed / queue overflow), so raft can be
	// told. Called from the sender goroutine of `to`.
	HandleUnreachable(to uint64)
	// HandleSnapshot consumes one incoming snapshot stream; returning nil
	// acknowledges it to the sender.
	HandleSnapshot(ctx context.Context, from uint64, s *SnapshotStream) error
}

// Config configures a Transport.
type Config struct {
	NodeID   uint64
	Resolver func(node uint64) (addr string, err error) // node id -> "host:port" of its gRPC server
	Handler  Handler
	// Pool supplies client connections. If nil the Transport creates its own
	// and closes it in Stop.
	Pool *rpc.Pool
	// LivenessInterval: a peer with nothing else to send gets an empty frame
	// this often so liveness and lease acks keep flowing. Default 250ms.
	LivenessInterval time.Duration
	// MaxQueuedMessages per destination before messages are dropped (raft
	// retransmits) and HandleUnreachable is called. Default 10000.
	MaxQueuedMessages int
	// Clock, if set, stamps every outgoing frame with a hybrid time and is
	// updated from every frame received (hlc.Clock.Update). A frame whose
	// time is beyond the clock's maximum offset is refused: a node with a
	// runaway clock is cut off rather than dragging every clock forward.
	Clock *hlc.Clock
	// Logger for rare events (refused frames). Default slog.Default().
	Logger *slog.Logger
}

const (
	defaultLivenessInterval  = 250 * time.Millisecond
	defaultMaxQueuedMessages = 10000
)

var (
	// ErrStopped is returned by SendSnapshot once the Transport is stopping.
	ErrStopped = errors.New("transport: stopped")
	// ErrLinkDown is returned by SendSnapshot to a node whose link is down
	// (SetLinkDown).
	ErrLinkDown = errors.New("transport: link down")
)

// Transport sends and receives the raft messages of all groups of one node.
// All methods are safe for concurrent use.
type Transport struct {
	cfg     Config
	ownPool bool

	// start is the origin of this node's sent_at clock. incarnation tells a
	// restarted Transport's clock apart from its predecessor's, so a peer's
	// ack of an old frame is never mistaken for an ack of a new one.
	start       time.Time
	incarnation uint64

	// ctx is cancelled by Stop; every goroutine and connection derives from it.
	ctx    context.Context
	cancel context.CancelFunc
	// wg counts every goroutine the Transport owns, including gRPC handlers
	// that are running transport code. Add only under mu with !stopped.
	wg sync.WaitGroup

	stats counters
	// lastSkewLog (unix nanoseconds) rate-limits clock skew warnings.
	lastSkewLog atomic.Int64

	mu struct {
		sync.Mutex
		stopped bool
		peers   map[uint64]*peer
	}
}

// New returns a Transport. Nothing is sent until Send names a peer, and
// nothing is received until Serve is given its listener (and Register
// attaches its snapshot service to the node's gRPC server).
func New(cfg Config) *Transport {
	if cfg.LivenessInterval <= 0 {
		cfg.LivenessInterval = defaultLivenessInterval
	}
	if cfg.MaxQueuedMessages <= 0 {
		cfg.MaxQueuedMessages = defaultMaxQueuedMessages
	}
	if cfg.Handler == nil {
		cfg.Handler = nopHandler{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	t := &Transport{
		cfg:         cfg,
		start:       time.Now(),
		incarnation: rand.Uint64() | 1, // never 0, which means "none" on the wire
	}
	if t.cfg.Pool == nil {
		t.cfg.Pool = rpc.NewPool()
		t.ownPool = true
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.mu.peers = make(map[uint64]*peer)
	return t
}

// Register registers the transport's gRPC service on the node's shared
// server.
func (t *Transport) Register(s *grpc.Server) {
	transportpb.RegisterRaftTransportServer(s, &service{t: t})
}

// Send queues msgs for node `to` and returns at once; the peer's sender
// goroutine delivers them. Send takes ownership of the messages: the caller
// must not modify them afterwards. Messages beyond MaxQueuedMessages are
// dropped and reported through HandleUnreachable. Send with no messages just
// makes sure a connection to `to` exists, so liveness frames start flowing.
func (t *Transport) Send(to uint64, msgs []Message) {
	p := t.peer(to, true)
	if p == nil {
		return
	}
	if dropped := p.enqueue(msgs, t.cfg.MaxQueuedMessages); dropped > 0 {
		t.stats.messagesDropped.Add(uint64(dropped))
	}
}

// LastHeard returns the local time the latest frame from node arrived, or
// the zero time if none has.
func (t *Transport) LastHeard(node uint64) time.Time {
	if p := t.lookup(node); p != nil {
		return p.lastHeard()
	}
	return time.Time{}
}

// LeaseAck returns the local send time of the latest frame node has
// acknowledged receiving, or the zero time if none. A leader holding a lease
// may count node's vote as fresh as of this time.
func (t *Transport) LeaseAck(node uint64) time.Time {
	if p := t.lookup(node); p != nil {
		if ns := p.leaseAck(); ns != 0 {
			return t.timeOf(ns)
		}
	}
	return time.Time{}
}

// SetLinkDown is fault injection for tests: while down, every frame to and
// from node is dropped (on Send and on receive) and snapshot RPCs fail.
func (t *Transport) SetLinkDown(node uint64, down bool) {
	if p := t.peer(node, false); p != nil {
		p.setDown(down)
	}
}

// Stats returns the cumulative counters.
func (t *Transport) Stats() Stats { return t.stats.snapshot() }

// Stop closes all connections and waits for every transport goroutine to exit.
// Handler methods are not called after Stop returns. Stop is idempotent.
func (t *Transport) Stop() {
	t.mu.Lock()
	if t.mu.stopped {
		t.mu.Unlock()
		return
	}
	t.mu.stopped = true
	t.mu.Unlock()
	t.cancel()
	t.wg.Wait()
	if t.ownPool {
		t.cfg.Pool.Close()
	}
}

// track registers one more running goroutine, unless the Transport is
// stopping; the caller must call t.wg.Done when it returns true.
func (t *Transport) track() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.stopped {
		return false
	}
	t.wg.Add(1)
	return true
}

// peer returns the state of node, creating it if needed; with startSender it
// also makes sure the node's sender goroutine runs. It returns nil once the
// Transport is stopping.
func (t *Transport) peer(node uint64, startSender bool) *peer {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.mu.stopped {
		return nil
	}
	p, ok := t.mu.peers[node]
	if !ok {
		p = newPeer(node)
		t.mu.peers[node] = p
	}
	if startSender && !p.senderStarted {
		p.senderStarted = true
		t.wg.Add(1)
		go t.runSender(p)
	}
	return p
}

// lookup returns the state of node without creating it.
func (t *Transport) lookup(node uint64) *peer {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.mu.peers[node]
}

// now is this node's sent_at clock: monotonic nanoseconds since start, plus
// one so that 0 can mean "none".
func (t *Transport) now() int64 { return int64(time.Since(t.start)) + 1 }

// timeOf converts a value of the sent_at clock back to local time.
func (t *Transport) timeOf(ns int64) time.Time { return t.start.Add(time.Duration(ns - 1)) }

// nopHandler stands in for a nil Config.Handler (a send-only Transport).
type nopHandler struct{}

func (nopHandler) HandleMessages(uint64, []Message) {}
func (nopHandler) HandleUnreachable(uint64)         {}
func (nopHandler) HandleSnapshot(context.Context, uint64, *SnapshotStream) error {
	return errors.New("transport: no handler")
}
