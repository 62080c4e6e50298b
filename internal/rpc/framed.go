package rpc

import (
	"bufio"
	"context"
	"net"
	"runtime"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"storj.io/drpc/drpcmigrate"
)

// The data path between nodes (reads, writes and scans, many calls in
// flight at once, each a few hundred bytes) travels as protobuf messages,
// each prefixed by its varint length, on a plain TCP connection to the
// node's RPC port, rather than on a gRPC stream. A gRPC stream message
// passes through four goroutines on its way (the sender's loopy writer, the
// receiver's HTTP/2 reader, then the stream's reader) and HTTP/2 framing
// and flow control; here the sender writes the socket itself and the
// receiver's reading goroutine is the stream's. The port tells the two
// apart by the connection's first bytes: DataPreface here, HTTP/2's
// client preface ("PRI * HTTP/2.0...") for gRPC.

// DataPreface opens a framed data connection. Its length is the number of
// bytes the port reads before it routes a connection.
const DataPreface = "SHALEDS1"

// RaftPreface opens a connection that carries one node's Raft messages to
// another (consensus/transport), framed the same way.
const RaftPreface = "SHALERF1"

// Framed connection timings: a peer that stops answering (powered off,
// cut off) is noticed in seconds, as gRPC's keepalive notices it, rather
// than after the kernel's retransmission timeout of many minutes.
const (
	framedDialTimeout = 5 * time.Second
	// framedKeepalive: idle time before the first TCP keepalive probe and
	// the interval of the next ones; framedProbes unanswered probes end
	// the connection.
	framedKeepalive = keepaliveTime
	framedProbes    = 2
	// framedUserTimeout: data written and not acknowledged for this long
	// ends the connection (TCP_USER_TIMEOUT, where the system has it).
	framedUserTimeout = keepaliveTime + keepaliveTimeout
)

// minBatch: a write of fewer bytes first lets other senders add theirs.
const minBatch = 1000

// readBufferSize is a framed connection's read buffer: a message that fits
// is decoded in place; larger ones are read into their own buffer.
const readBufferSize = 64 << 10

// FrameReader reads varint-length-prefixed protobuf messages from a
// connection (a framed data connection's answers, a peer's Raft frames).
type FrameReader struct{ r *bufio.Reader }

// NewFrameReader reads from c through a buffer of readBufferSize.
func NewFrameReader(c net.Conn) *FrameReader {
	return &FrameReader{r: bufio.NewReaderSize(c, readBufferSize)}
}

// Recv reads the next message into m; one over MaxMessageSize is an error.
func (f *FrameReader) Recv(m proto.Message) error {
	return protodelim.UnmarshalOptions{MaxSize: MaxMessageSize}.UnmarshalFrom(f.r, m)
}

// FramedConn carries protobuf messages on a connection. Send may be called
// from several goroutines; Recv from one at a time.
type FramedConn struct {
	c net.Conn
	r *FrameReader

	mu      sync.Mutex
	pending []byte // encoded messages not yet written
	err     error  // the write that broke the connection
	// kick wakes the writer: there is something pending.
	kick chan struct{}
	done chan struct{} // closed by Close: the writer stops
	once sync.Once
}

// NewFramedConn wraps a connection whose preface has been read (the
// server's side: Mux.Data hands out such connections) or written
// (DialPreface).
func NewFramedConn(c net.Conn) *FramedConn {
	f := &FramedConn{c: c, r: NewFrameReader(c), kick: make(chan struct{}, 1), done: make(chan struct{})}
	go f.writer()
	return f
}

// DialFramed connects to a node's RPC port and opens a framed data
// connection. Failures are Unavailable, as a gRPC call's would be.
func DialFramed(ctx context.Context, addr string) (*FramedConn, error) {
	c, err := DialPreface(ctx, addr, DataPreface)
	if err != nil {
		return nil, err
	}
	return NewFramedConn(c), nil
}

// DialPreface connects to a node's RPC port, sends preface, and sets the
// framed connections' keepalive timings. Failures are Unavailable.
func DialPreface(ctx context.Context, addr, preface string) (net.Conn, error) {
	d := net.Dialer{Timeout: framedDialTimeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "rpc: connection to %s: %v", addr, err)
	}
	if _, err := c.Write([]byte(preface)); err != nil {
		_ = c.Close()
		return nil, status.Errorf(codes.Unavailable, "rpc: connection to %s: %v", addr, err)
	}
	setKeepalive(c)
	return c, nil
}

// Send queues m for the connection's writer, which writes everything
// queued since its last write in one write: concurrent senders share a
// socket write (a write to a local peer costs about as much as the request
// it carries; writing each message at once cost more than it saved). A nil
// error therefore means queued; when the write fails the connection closes
// and the peer's answers never come, which the reader sees. A message over
// MaxMessageSize is refused with ResourceExhausted, as gRPC refuses it,
// and the connection goes on.
func (f *FramedConn) Send(m proto.Message) error {
	size := proto.Size(m)
	if size > MaxMessageSize {
		return status.Errorf(codes.ResourceExhausted, "rpc: message of %d bytes is over the limit of %d", size, MaxMessageSize)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	n := len(f.pending)
	b := protowire.AppendVarint(f.pending, uint64(size))
	b, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(b, m)
	if err != nil {
		f.pending = b[:n]
		return status.Errorf(codes.Internal, "rpc: encode %T: %v", m, err)
	}
	f.pending = b
	if n == 0 {
		select {
		case f.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// writer writes what Send queues until the connection closes.
func (f *FramedConn) writer() {
	var spare []byte
	for {
		select {
		case <-f.kick:
		case <-f.done:
			return
		}
		// A small batch waits for the goroutines ready to run to queue
		// theirs first, as gRPC's writer does: under load it halves the
		// writes.
		f.mu.Lock()
		small := len(f.pending) < minBatch
		f.mu.Unlock()
		if small {
			runtime.Gosched()
		}
		f.mu.Lock()
		out := f.pending
		f.pending = spare[:0]
		f.mu.Unlock()
		if len(out) == 0 {
			continue
		}
		if _, err := f.c.Write(out); err != nil {
			f.mu.Lock()
			if f.err == nil {
				f.err = err
			}
			f.mu.Unlock()
			_ = f.Close() // a part may be out: nothing after it could be read
			return
		}
		spare = nil
		if cap(out) <= readBufferSize {
			spare = out // large buffers are rare: do not keep them
		}
	}
}

// Recv reads the next message into m.
func (f *FramedConn) Recv(m proto.Message) error { return f.r.Recv(m) }

// Close closes the connection; a Recv in progress returns an error, and
// what is queued is not written.
func (f *FramedConn) Close() error {
	f.once.Do(func() {
		f.mu.Lock()
		if f.err == nil {
			f.err = net.ErrClosed
		}
		f.mu.Unlock()
		close(f.done)
	})
	return f.c.Close()
}

// setKeepalive turns on TCP keepalive probes and the user timeout at the
// framed timings: DialPreface on the dialing side, the Mux's routes on the
// accepting side.
func setKeepalive(c net.Conn) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	_ = tc.SetKeepAliveConfig(net.KeepAliveConfig{
		Enable: true, Idle: framedKeepalive, Interval: keepaliveTimeout, Count: framedProbes})
	if rc, err := tc.SyscallConn(); err == nil {
		_ = controlFramed("", "", rc)
	}
}

// Mux splits a node's RPC listener: connections that open with DataPreface
// are framed data connections (Data), with RaftPreface Raft message
// connections (Raft), the others are gRPC's (GRPC).
type Mux struct {
	m      *drpcmigrate.ListenMux
	data   net.Listener
	raft   net.Listener
	cancel context.CancelFunc
	done   chan struct{}
}

// NewMux starts routing lis's connections. Close stops it.
func NewMux(lis net.Listener) *Mux {
	m := &Mux{m: drpcmigrate.NewListenMux(lis, len(DataPreface)), done: make(chan struct{})}
	m.data = keepaliveListener{m.m.Route(DataPreface)}
	m.raft = keepaliveListener{m.m.Route(RaftPreface)}
	var ctx context.Context
	ctx, m.cancel = context.WithCancel(context.Background())
	go func() {
		defer close(m.done)
		_ = m.m.Run(ctx)
	}()
	return m
}

// GRPC is the listener of the gRPC connections.
func (m *Mux) GRPC() net.Listener { return m.m.Default() }

// Data is the listener of the framed data connections, their preface read.
func (m *Mux) Data() net.Listener { return m.data }

// Raft is the listener of the Raft message connections, their preface read.
func (m *Mux) Raft() net.Listener { return m.raft }

// Close closes the listener and both routes, and waits for the router.
func (m *Mux) Close() {
	m.cancel()
	<-m.done
	_ = m.data.Close()
	_ = m.raft.Close()
}

// keepaliveListener sets the framed timings on the connections it accepts.
type keepaliveListener struct{ net.Listener }

func (l keepaliveListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		setKeepalive(c)
	}
	return c, err
}
