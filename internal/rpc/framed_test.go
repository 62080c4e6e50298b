package rpc

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// muxed starts a Mux on a fresh port with a gRPC health server on its
// gRPC route; it returns the mux and the port's address.
func muxed(t *testing.T) (*Mux, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := NewMux(lis)
	srv := NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(m.GRPC()) }()
	t.Cleanup(func() {
		srv.Stop()
		m.Close()
	})
	return m, lis.Addr().String()
}

// TestFramedConn: on one port, gRPC calls and framed connections both
// work; the messages of concurrent senders arrive whole and each sender's
// in order, many to a write; a message over the limit is refused and the
// connection goes on; a length prefix over the limit ends the reading
// side with an error instead of an allocation; Close ends the peer's Recv.
func TestFramedConn(t *testing.T) {
	m, addr := muxed(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	pool := NewPool()
	defer pool.Close()
	cc, err := pool.Conn(addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("gRPC on the muxed port: %v", err)
	}

	accepted := make(chan *FramedConn, 1)
	go func() {
		c, err := m.Data().Accept()
		if err == nil {
			accepted <- NewFramedConn(c)
		}
	}()
	client, err := DialFramed(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server := <-accepted
	defer server.Close()

	const senders, each = 8, 500
	var wg sync.WaitGroup
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				v := fmt.Appendf(nil, "%d/%d/%s", s, i, bytes.Repeat([]byte{'x'}, i%300))
				if err := client.Send(wrapperspb.Bytes(v)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	next := make([]int, senders)
	for range senders * each {
		var got wrapperspb.BytesValue
		if err := server.Recv(&got); err != nil {
			t.Fatal(err)
		}
		parts := strings.SplitN(string(got.Value), "/", 3)
		s, err1 := strconv.Atoi(parts[0])
		i, err2 := strconv.Atoi(parts[1])
		if err1 != nil || err2 != nil || s < 0 || s >= senders || i != next[s] || len(parts[2]) != i%300 {
			t.Fatalf("message %q: want sender %d's message %d next", got.Value, s, next[s])
		}
		next[s]++
	}
	wg.Wait()

	huge := wrapperspb.Bytes(make([]byte, MaxMessageSize+1))
	if err := client.Send(huge); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("a message over the limit: %v, want ResourceExhausted", err)
	}
	if err := client.Send(wrapperspb.Bytes([]byte("after"))); err != nil {
		t.Fatal(err)
	}
	var got wrapperspb.BytesValue
	if err := server.Recv(&got); err != nil || string(got.Value) != "after" {
		t.Fatalf("after the refused message: %q, %v", got.Value, err)
	}

	// A corrupt length prefix: the reader refuses it.
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	go func() {
		c, err := m.Data().Accept()
		if err == nil {
			accepted <- NewFramedConn(c)
		}
	}()
	if _, err := raw.Write(protowire.AppendVarint([]byte(DataPreface), 1<<40)); err != nil {
		t.Fatal(err)
	}
	bad := <-accepted
	defer bad.Close()
	if err := bad.Recv(&got); err == nil {
		t.Fatal("a length prefix of 1 TiB was accepted")
	}

	// Closing one side ends the other's Recv.
	if err := client.Close(); err != nil {
		t.Fatal(err)
	}
	if err := server.Recv(&got); err == nil {
		t.Fatal("Recv after the peer closed returned a message")
	}
	if err := client.Send(wrapperspb.Bytes([]byte("x"))); err == nil {
		t.Fatal("Send after Close succeeded")
	}
}

// TestDialFramedUnavailable: a port nobody listens on is Unavailable, as
// a gRPC call to it.
func TestDialFramedUnavailable(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	_ = lis.Close()
	if _, err := DialFramed(context.Background(), addr); status.Code(err) != codes.Unavailable {
		t.Fatalf("dial a closed port: %v, want Unavailable", err)
	}
}
