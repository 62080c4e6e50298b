package transport

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestSnapshotArrivesIntact streams ~8 MiB in uneven chunks (some larger
// than the 1 MiB wire chunk) and checks the receiver sees the header and the
// exact bytes.
func TestSnapshotArrivesIntact(t *testing.T) {
	c := newCluster(t, 2, nil)
	a, b := c.node(1), c.node(2)

	data := make([]byte, 8<<20+12345)
	src := rand.NewChaCha8([32]byte{7})
	_, _ = src.Read(data)
	rng := rand.New(src)
	want := sha256.Sum256(data)

	type result struct {
		from   uint64
		header string
		sum    [32]byte
		n      int
	}
	got := make(chan result, 1)
	b.h.mu.Lock()
	b.h.snapshot = func(ctx context.Context, from uint64, s *SnapshotStream) error {
		h := sha256.New()
		n := 0
		for {
			chunk, err := s.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			n += len(chunk)
			h.Write(chunk)
		}
		var sum [32]byte
		copy(sum[:], h.Sum(nil))
		got <- result{from: from, header: string(s.Header), sum: sum, n: n}
		return nil
	}
	b.h.mu.Unlock()

	err := a.t.SendSnapshot(context.Background(), 2, []byte("tablet 17 @ 1234"), func(send func([]byte) error) error {
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 1+rng.IntN(3<<20))
			if err := send(rest[:n]); err != nil {
				return err
			}
			rest = rest[n:]
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.from != 1 || r.header != "tablet 17 @ 1234" || r.n != len(data) || r.sum != want {
		t.Fatalf("received from %d header %q %d bytes sum %x; want from 1, %d bytes sum %x",
			r.from, r.header, r.n, r.sum, len(data), want)
	}
}

// TestSnapshotHandlerError checks the receiver's error comes back from
// SendSnapshot, whether the receiver read everything or gave up early.
func TestSnapshotHandlerError(t *testing.T) {
	c := newCluster(t, 2, nil)
	a, b := c.node(1), c.node(2)
	b.h.mu.Lock()
	b.h.snapshot = func(ctx context.Context, from uint64, s *SnapshotStream) error {
		if bytes.Equal(s.Header, []byte("early")) {
			return errors.New("disk full before the first chunk")
		}
		for {
			if _, err := s.Recv(); errors.Is(err, io.EOF) {
				return errors.New("checksum mismatch")
			} else if err != nil {
				return err
			}
		}
	}
	b.h.mu.Unlock()

	chunk := make([]byte, 256<<10)
	for _, tc := range []struct {
		header, want string
		chunks       int
	}{
		{"late", "checksum mismatch", 4},
		{"early", "disk full before the first chunk", 64},
	} {
		err := a.t.SendSnapshot(context.Background(), 2, []byte(tc.header), func(send func([]byte) error) error {
			for range tc.chunks {
				if err := send(chunk); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: SendSnapshot = %v, want an error containing %q", tc.header, err, tc.want)
		}
	}

	// The sender's own failure is returned as is, and the stream is abandoned.
	boom := errors.New("pebble iterator failed")
	err := a.t.SendSnapshot(context.Background(), 2, []byte("late"), func(send func([]byte) error) error {
		if err := send(chunk); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("SendSnapshot = %v, want %v", err, boom)
	}
}
