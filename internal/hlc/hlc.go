// Package hlc implements a hybrid logical clock: physical microseconds plus a
// logical counter, packed into one uint64 so that timestamps compare as
// integers and encode in eight bytes.
//
// Every node owns one Clock. Now() stamps local events; Update(remote) is
// called with the timestamp of every message received so that causality is
// preserved across nodes. A remote timestamp further ahead of the local
// physical clock than the configured maximum offset is rejected with
// ErrClockSkew rather than dragging the local clock forward.
package hlc

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// LogicalBits is the number of low bits of a Timestamp holding the logical
// counter; the rest hold physical microseconds since the Unix epoch.
const LogicalBits = 12

const logicalMask = 1<<LogicalBits - 1

// Timestamp is a hybrid time: physical microseconds << LogicalBits | logical.
// The zero value is the minimum; MaxTimestamp is the maximum.
type Timestamp uint64

// MaxTimestamp is larger than every timestamp a clock produces.
const MaxTimestamp = Timestamp(^uint64(0))

// FromMicros builds a timestamp with the given physical part and logical part.
func FromMicros(micros int64, logical uint32) Timestamp {
	return Timestamp(uint64(micros)<<LogicalBits | uint64(logical&logicalMask))
}

// FromTime builds a timestamp with logical zero from a wall-clock time.
func FromTime(t time.Time) Timestamp { return FromMicros(t.UnixMicro(), 0) }

// Physical returns the physical part in microseconds since the Unix epoch.
func (t Timestamp) Physical() int64 { return int64(uint64(t) >> LogicalBits) }

// Logical returns the logical counter.
func (t Timestamp) Logical() uint32 { return uint32(uint64(t) & logicalMask) }

// Time returns the physical part as a time.Time.
func (t Timestamp) Time() time.Time { return time.UnixMicro(t.Physical()) }

// Add returns t moved by d in physical time, keeping the logical part.
func (t Timestamp) Add(d time.Duration) Timestamp {
	return FromMicros(t.Physical()+d.Microseconds(), t.Logical())
}

// Next returns the smallest timestamp greater than t.
func (t Timestamp) Next() Timestamp { return t + 1 }

// Prev returns the largest timestamp smaller than t (t must be non-zero).
func (t Timestamp) Prev() Timestamp { return t - 1 }

// IsZero reports whether t is the zero timestamp.
func (t Timestamp) IsZero() bool { return t == 0 }

// String formats as "physical.logical" in microseconds, e.g. "1700000000000000.3".
func (t Timestamp) String() string { return fmt.Sprintf("%d.%d", t.Physical(), t.Logical()) }

// ErrClockSkew is returned by Update when a remote timestamp is further ahead
// of the local physical clock than the maximum offset allows.
var ErrClockSkew = errors.New("hlc: remote clock too far ahead")

// DefaultMaxOffset is the default bound on clock skew between nodes.
const DefaultMaxOffset = 500 * time.Millisecond

// PhysicalClock returns the current physical time in microseconds since the
// Unix epoch. Tests inject a manual one.
type PhysicalClock func() int64

// WallClock reads the system clock.
func WallClock() int64 { return time.Now().UnixMicro() }

// Clock is a hybrid logical clock, safe for concurrent use.
type Clock struct {
	physical  PhysicalClock
	maxOffset time.Duration

	mu struct {
		sync.Mutex
		last Timestamp
	}
}

// NewClock returns a clock over the given physical clock (nil means the wall
// clock) that rejects remote timestamps more than maxOffset ahead (0 means
// DefaultMaxOffset).
func NewClock(physical PhysicalClock, maxOffset time.Duration) *Clock {
	if physical == nil {
		physical = WallClock
	}
	if maxOffset <= 0 {
		maxOffset = DefaultMaxOffset
	}
	return &Clock{physical: physical, maxOffset: maxOffset}
}

// MaxOffset returns the configured maximum clock skew.
func (c *Clock) MaxOffset() time.Duration { return c.maxOffset }

// Now returns a timestamp greater than every timestamp this clock has returned
// or been updated with.
func (c *Clock) Now() Timestamp {
	pt := FromMicros(c.physical(), 0)
	c.mu.Lock()
	defer c.mu.Unlock()
	if pt > c.mu.last {
		c.mu.last = pt
	} else {
		c.mu.last++
	}
	return c.mu.last
}

// Peek returns the latest timestamp issued or observed, without advancing.
func (c *Clock) Peek() Timestamp {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.last
}

// Update advances the clock past a timestamp received from another node, so
// that every later Now() is greater. It returns ErrClockSkew, and leaves the
// clock alone, if remote is more than the maximum offset ahead of the local
// physical clock.
func (c *Clock) Update(remote Timestamp) error {
	local := c.physical()
	if remote.Physical()-local > c.maxOffset.Microseconds() {
		return fmt.Errorf("%w: remote %s is %v ahead of local physical time (max offset %v)",
			ErrClockSkew, remote, time.Duration(remote.Physical()-local)*time.Microsecond, c.maxOffset)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if remote > c.mu.last {
		c.mu.last = remote
	}
	return nil
}

// ForceUpdate advances the clock past remote with no skew check. It is used
// when applying replicated state, where the timestamp was already accepted
// by a majority and refusing it would stall the replica.
func (c *Clock) ForceUpdate(remote Timestamp) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if remote > c.mu.last {
		c.mu.last = remote
	}
}

// ManualClock is a physical clock for tests, advanced explicitly.
type ManualClock struct {
	mu     sync.Mutex
	micros int64
}

// NewManualClock returns a manual clock starting at the given microseconds.
func NewManualClock(micros int64) *ManualClock { return &ManualClock{micros: micros} }

// Now returns the current manual time; pass m.Now as a PhysicalClock.
func (m *ManualClock) Now() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.micros
}

// Advance moves the manual clock forward by d.
func (m *ManualClock) Advance(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.micros += d.Microseconds()
}

// Set moves the manual clock to micros.
func (m *ManualClock) Set(micros int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.micros = micros
}
