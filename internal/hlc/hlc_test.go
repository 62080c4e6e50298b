package hlc

import (
	"errors"
	"sync"
	"testing"
	"time"
)

func TestTimestampParts(t *testing.T) {
	ts := FromMicros(1_700_000_000_000_000, 7)
	if ts.Physical() != 1_700_000_000_000_000 || ts.Logical() != 7 {
		t.Fatalf("parts: got %d.%d", ts.Physical(), ts.Logical())
	}
	if got := ts.String(); got != "1700000000000000.7" {
		t.Fatalf("String: %q", got)
	}
	if ts.Next() <= ts || ts.Prev() >= ts {
		t.Fatal("Next/Prev do not order")
	}
	if FromMicros(5, 0) <= FromMicros(4, logicalMask) {
		t.Fatal("physical part must dominate logical part")
	}
	if ts.Add(time.Second).Physical() != ts.Physical()+1_000_000 {
		t.Fatal("Add")
	}
}

func TestNowMonotonicWhenPhysicalStalls(t *testing.T) {
	m := NewManualClock(1000)
	c := NewClock(m.Now, time.Second)
	a := c.Now()
	b := c.Now()
	if b <= a || b.Physical() != 1000 || b.Logical() != a.Logical()+1 {
		t.Fatalf("stalled physical clock: a=%s b=%s", a, b)
	}
	m.Advance(time.Millisecond)
	d := c.Now()
	if d.Physical() != 2000 || d.Logical() != 0 {
		t.Fatalf("after advance: %s", d)
	}
	// Physical clock going backwards never makes Now go backwards.
	m.Set(500)
	if e := c.Now(); e <= d {
		t.Fatalf("went backwards: %s after %s", e, d)
	}
}

func TestUpdate(t *testing.T) {
	m := NewManualClock(1_000_000)
	c := NewClock(m.Now, 100*time.Millisecond)
	remote := FromMicros(1_050_000, 3)
	if err := c.Update(remote); err != nil {
		t.Fatalf("within max offset: %v", err)
	}
	if now := c.Now(); now <= remote {
		t.Fatalf("Now %s not after remote %s", now, remote)
	}
	far := FromMicros(1_000_000+200_000, 0)
	err := c.Update(far)
	if !errors.Is(err, ErrClockSkew) {
		t.Fatalf("want ErrClockSkew, got %v", err)
	}
	if c.Peek() >= far {
		t.Fatal("rejected update moved the clock")
	}
	c.ForceUpdate(far)
	if c.Now() <= far {
		t.Fatal("ForceUpdate did not move the clock")
	}
}

func TestConcurrentNowUnique(t *testing.T) {
	m := NewManualClock(42)
	c := NewClock(m.Now, 0)
	const goroutines, each = 8, 500
	var mu sync.Mutex
	seen := make(map[Timestamp]bool)
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]Timestamp, 0, each)
			for i := 0; i < each; i++ {
				local = append(local, c.Now())
			}
			mu.Lock()
			defer mu.Unlock()
			for _, ts := range local {
				if seen[ts] {
					t.Errorf("duplicate timestamp %s", ts)
				}
				seen[ts] = true
			}
		}()
	}
	wg.Wait()
	if len(seen) != goroutines*each {
		t.Fatalf("got %d unique timestamps", len(seen))
	}
}
