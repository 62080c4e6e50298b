package client

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestOpCtx: an operation's context without a timer of its own still ends
// at its deadline for everyone who looks: Err, Done, a child context with
// a later deadline (a master call's), and an attempt's context.
func TestOpCtx(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.Background())
	defer cancelParent()

	oc := newOpCtx(parent, time.Now().Add(50*time.Millisecond))
	if err := oc.Err(); err != nil {
		t.Fatalf("fresh op: %v", err)
	}
	actx, acancel := attemptContext(oc, time.Hour)
	defer acancel()
	if d, _ := actx.Deadline(); !d.Equal(oc.deadline) {
		t.Fatalf("attempt deadline %v, want the op's %v", d, oc.deadline)
	}
	child, ccancel := context.WithTimeout(oc, time.Hour)
	defer ccancel()
	select {
	case <-child.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a child with a later deadline did not end at the op's")
	}
	<-actx.Done()
	if !errors.Is(oc.Err(), context.DeadlineExceeded) || !errors.Is(actx.Err(), context.DeadlineExceeded) {
		t.Fatalf("after the deadline: op %v, attempt %v", oc.Err(), actx.Err())
	}

	// Err alone (no Done ever asked) sees the deadline pass.
	lazy := newOpCtx(parent, time.Now().Add(time.Millisecond))
	for lazy.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	if !errors.Is(lazy.Err(), context.DeadlineExceeded) || lazy.timed != nil {
		t.Fatalf("lazy op: %v (timer made: %v)", lazy.Err(), lazy.timed != nil)
	}

	// A short attempt ends first; the op goes on.
	long := newOpCtx(parent, time.Now().Add(time.Hour))
	short, scancel := attemptContext(long, 10*time.Millisecond)
	defer scancel()
	<-short.Done()
	if long.Err() != nil {
		t.Fatalf("op ended with its attempt: %v", long.Err())
	}

	// Released: Canceled, Done closed, later attempts born ended.
	long.release()
	if !errors.Is(long.Err(), context.Canceled) {
		t.Fatalf("released: %v", long.Err())
	}
	<-long.Done()
	late, lcancel := attemptContext(long, time.Hour)
	defer lcancel()
	if late.Err() == nil {
		t.Fatal("an attempt of a released op is live")
	}

	// The parent's cancellation reaches the op and its attempts.
	op := newOpCtx(parent, time.Now().Add(time.Hour))
	at, atcancel := attemptContext(op, time.Hour)
	defer atcancel()
	cancelParent()
	<-op.Done()
	<-at.Done()
	if !errors.Is(op.Err(), context.Canceled) || !errors.Is(at.Err(), context.Canceled) {
		t.Fatalf("parent cancelled: op %v, attempt %v", op.Err(), at.Err())
	}
}
