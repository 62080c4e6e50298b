package tablet

import (
	"context"
	"errors"
	"sync"

	"github.com/shaledb/shaledb/internal/storage"
)

// latches serialize conflicting operations on the same rows of a tablet:
// writes conflict with writes and reads of the same row, and with scans
// whose span covers the row. Held only for the duration of one operation.
type latches struct {
	mu sync.Mutex
	// changed is closed and replaced when a latch is released while
	// someone waits (waiting > 0); most releases have no one to wake.
	changed chan struct{}
	waiting int
	writes  map[string]int
	reads   map[string]int
	spans   map[*storage.Span]struct{}
}

// ErrWouldWait: an operation under a WithoutWaiting context had to wait (for a
// latch, the lease's start, or another transaction's status) and did not.
var ErrWouldWait = errors.New("tablet: the operation would wait")

type noWaitKey struct{}

// WithoutWaiting marks ctx so that reads under it fail with ErrWouldWait
// rather than wait. A node serves such reads on the goroutine that received them
// (the connection's reader, the gateway's own call) and hands the ones
// that fail to a worker, which may wait.
func WithoutWaiting(ctx context.Context) context.Context {
	return context.WithValue(ctx, noWaitKey{}, true)
}

func noWait(ctx context.Context) bool { return ctx.Value(noWaitKey{}) != nil }

func newLatches() *latches {
	return &latches{
		changed: make(chan struct{}),
		writes:  make(map[string]int),
		reads:   make(map[string]int),
		spans:   make(map[*storage.Span]struct{}),
	}
}

// wait blocks until conflict() is false, then runs take, all under mu.
func (l *latches) wait(ctx context.Context, conflict func() bool, take func()) error {
	l.mu.Lock()
	for conflict() {
		if noWait(ctx) {
			l.mu.Unlock()
			return ErrWouldWait
		}
		ch := l.changed
		l.waiting++
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			l.mu.Lock()
			l.waiting--
			l.mu.Unlock()
			return ctx.Err()
		}
		l.mu.Lock()
		l.waiting--
	}
	take()
	l.mu.Unlock()
	return nil
}

func (l *latches) releaseLocked() {
	if l.waiting > 0 {
		close(l.changed)
		l.changed = make(chan struct{})
	}
}

// acquireWrite latches rows for writing.
func (l *latches) acquireWrite(ctx context.Context, keys []string) (func(), error) {
	conflict := func() bool {
		for _, k := range keys {
			if l.writes[k] > 0 || l.reads[k] > 0 {
				return true
			}
			for s := range l.spans {
				if s.Contains([]byte(k)) {
					return true
				}
			}
		}
		return false
	}
	take := func() {
		for _, k := range keys {
			l.writes[k]++
		}
	}
	if err := l.wait(ctx, conflict, take); err != nil {
		return nil, err
	}
	return func() {
		l.mu.Lock()
		for _, k := range keys {
			if l.writes[k]--; l.writes[k] == 0 {
				delete(l.writes, k)
			}
		}
		l.releaseLocked()
		l.mu.Unlock()
	}, nil
}

// acquireRead latches one row for reading.
func (l *latches) acquireRead(ctx context.Context, key string) (func(), error) {
	if err := l.wait(ctx, func() bool { return l.writes[key] > 0 }, func() { l.reads[key]++ }); err != nil {
		return nil, err
	}
	return func() {
		l.mu.Lock()
		if l.reads[key]--; l.reads[key] == 0 {
			delete(l.reads, key)
		}
		l.releaseLocked()
		l.mu.Unlock()
	}, nil
}

// acquireSpan latches a span of rows for reading (a scan).
func (l *latches) acquireSpan(ctx context.Context, span storage.Span) (func(), error) {
	s := &span
	conflict := func() bool {
		for k := range l.writes {
			if s.Contains([]byte(k)) {
				return true
			}
		}
		return false
	}
	if err := l.wait(ctx, conflict, func() { l.spans[s] = struct{}{} }); err != nil {
		return nil, err
	}
	return func() {
		l.mu.Lock()
		delete(l.spans, s)
		l.releaseLocked()
		l.mu.Unlock()
	}, nil
}
