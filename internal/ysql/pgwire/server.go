package pgwire

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// Defaults for the zero values of Config.
const (
	DefaultMaxMessageSize  = 64 << 20
	DefaultStartupTimeout  = time.Minute
	DefaultShutdownTimeout = 5 * time.Second
)

// ErrServerClosed is returned by Serve once Close has been called.
var ErrServerClosed = errors.New("pgwire: server closed")

// Config configures a Server.
type Config struct {
	// Engine opens a Session per connection. Required.
	Engine Engine
	// MaxMessageSize bounds the body of one frontend message (a Bind with
	// a large parameter, a CopyData); larger messages close the connection
	// with a FATAL 08P01. 0 means DefaultMaxMessageSize.
	MaxMessageSize int
	// MaxConnections refuses sessions beyond this many with FATAL 53300;
	// 0 means no limit.
	MaxConnections int
	// StartupTimeout bounds the time from accept to the startup message
	// (PostgreSQL's authentication_timeout). 0 means DefaultStartupTimeout.
	StartupTimeout time.Duration
	// ShutdownTimeout bounds how long Close lets a connection write its
	// last messages before its writes fail. 0 means DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// Logger gets connection-level events; nil means slog.Default().
	Logger *slog.Logger
	// Registerer, when set, gets the server's metrics.
	Registerer prometheus.Registerer

	// watchDelay overrides how long a call runs before the disconnect
	// watch starts (watch.go); for tests.
	watchDelay time.Duration
}

// Server serves the PostgreSQL protocol on one or more listeners.
type Server struct {
	cfg Config
	log *slog.Logger
	m   *metrics

	// ctx is the parent of every connection's context; Close cancels it
	// (and each running statement's, which do not derive from it: conn.begin).
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[uint32]*conn // by backend PID: CancelRequest and Close find them here
	nextPID   uint32
	sessions  int // connections past startup, for MaxConnections
	closing   atomic.Bool
	wg        sync.WaitGroup

	// panics counts connections that ended in a recovered panic;
	// readAhead the bytes the disconnect watch read ahead. For tests.
	panics    atomic.Int64
	readAhead atomic.Int64
}

// errShutdown is the cause of every statement context cancelled by Close.
var errShutdown = &pgerror.Error{Severity: pgerror.SeverityFatal, Code: pgerror.CodeAdminShutdown,
	Message: "terminating connection due to administrator command"}

// NewServer returns a server; it serves nothing until Serve.
func NewServer(cfg Config) (*Server, error) {
	if cfg.Engine == nil {
		return nil, errors.New("pgwire: Config.Engine is required")
	}
	if cfg.MaxMessageSize <= 0 {
		cfg.MaxMessageSize = DefaultMaxMessageSize
	}
	if cfg.StartupTimeout <= 0 {
		cfg.StartupTimeout = DefaultStartupTimeout
	}
	if cfg.watchDelay <= 0 {
		cfg.watchDelay = watchDelay
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	return &Server{
		cfg: cfg, log: log.With("component", "pgwire"), m: m,
		ctx: ctx, cancel: cancel,
		listeners: make(map[net.Listener]struct{}),
		conns:     make(map[uint32]*conn),
	}, nil
}

// Serve accepts connections on ln until Close, serving each on its own
// goroutine. It returns ErrServerClosed after Close, or the error that
// stopped accepting.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
	}()

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				// Out of file descriptors or similar: wait rather than spin.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", "err", err, "backoff", backoff)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		if !s.start(nc) {
			nc.Close()
			return ErrServerClosed
		}
	}
}

// start registers a new connection and runs it; false once closing.
func (s *Server) start(nc net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing.Load() {
		return false
	}
	pid := s.allocPID()
	c := newConn(s, nc, pid)
	s.conns[pid] = c
	s.wg.Add(1)
	go c.serve()
	return true
}

// allocPID returns a PID no live connection has. Called with mu held.
func (s *Server) allocPID() uint32 {
	for {
		s.nextPID++
		if _, used := s.conns[s.nextPID]; s.nextPID != 0 && !used {
			return s.nextPID
		}
	}
}

// done unregisters a finished connection.
func (s *Server) done(c *conn) {
	s.mu.Lock()
	delete(s.conns, c.pid)
	if c.admitted {
		s.sessions--
	}
	s.mu.Unlock()
	s.wg.Done()
}

// admit counts a new session against MaxConnections.
func (s *Server) admit() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.MaxConnections > 0 && s.sessions >= s.cfg.MaxConnections {
		return false
	}
	s.sessions++
	return true
}

// Close stops accepting, cancels every running statement, ends every
// connection with FATAL 57P01 and waits for their goroutines. An engine
// call that ignores its cancelled context holds Close up until it returns.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closing.Swap(true) {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	var err error
	for ln := range s.listeners {
		if e := ln.Close(); e != nil && err == nil {
			err = e
		}
	}
	conns := make([]*conn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()

	s.cancel(errShutdown)
	for _, c := range conns {
		// Statement contexts do not derive from s.ctx (conn.begin):
		// cancel each running one. One that begins after this sees
		// closing, set above, and cancels itself.
		c.cancelRunning(errShutdown)
		c.wake()
	}
	s.wg.Wait()
	return err
}

// numConns is the number of live connections, including ones still in
// startup.
func (s *Server) numConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}
