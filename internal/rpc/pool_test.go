package rpc

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

func TestPoolSharesConnAndServes(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	p := NewPool()
	addr := lis.Addr().String()
	a, err := p.Conn(addr)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Conn(addr)
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Fatal("Conn returned two connections for one address")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := healthpb.NewHealthClient(a).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("status %v", resp.GetStatus())
	}

	p.Close()
	if _, err := p.Conn(addr); !errors.Is(err, ErrPoolClosed) {
		t.Fatalf("Conn after Close: %v, want ErrPoolClosed", err)
	}
	p.Close() // idempotent
}
