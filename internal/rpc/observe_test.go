package rpc

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

type recorder struct {
	mu      sync.Mutex
	started []string
	handled []codes.Code
}

func (r *recorder) RPCStarted(method string, stream bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started = append(r.started, method)
}

func (r *recorder) RPCHandled(method string, stream bool, code codes.Code, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handled = append(r.handled, code)
}

func TestObserverSeesCalls(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	srv := NewServer(ObserverOptions(rec)...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	p := NewPool()
	defer p.Close()
	cc, err := p.Conn(lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := healthpb.NewHealthClient(cc)
	if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{Service: "nope"}); err == nil {
		t.Fatal("unknown service answered")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.started) != 2 || rec.started[0] != "/grpc.health.v1.Health/Check" {
		t.Fatalf("started %v", rec.started)
	}
	if len(rec.handled) != 2 || rec.handled[0] != codes.OK || rec.handled[1] != codes.NotFound {
		t.Fatalf("handled %v", rec.handled)
	}
}
