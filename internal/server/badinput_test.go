package server_test

import (
	"context"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/server/servertest"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// rawCodec sends the bytes it is given as the message, so a test can put
// garbage on the wire where a protobuf should be.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error)      { return v.([]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error { *(v.(*[]byte)) = data; return nil }
func (rawCodec) Name() string                       { return "proto" }

// TestMalformedInputKeepsTheNodeUp: garbage on the RPC port, undecodable
// protobufs to every data and control RPC, and well-formed requests with
// bad contents get errors; the node keeps serving correct requests.
func TestMalformedInputKeepsTheNodeUp(t *testing.T) {
	c := servertest.NewCluster(t, 1)
	addr := c.Addrs[0]
	rnd := rand.New(rand.NewPCG(1, 2))

	// Not even HTTP/2.
	for i := 0; i < 5; i++ {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		junk := make([]byte, 1+rnd.IntN(4096))
		for j := range junk {
			junk[j] = byte(rnd.Uint32())
		}
		_, _ = conn.Write(junk)
		conn.Close()
	}

	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	methods := []string{
		"/shaledb.tserver.TabletServer/Write", "/shaledb.tserver.TabletServer/Read", "/shaledb.tserver.TabletServer/Scan",
		"/shaledb.tserver.TabletServer/CreateTablet", "/shaledb.tserver.TabletServer/ChangeReplicas", "/shaledb.tserver.TabletServer/SplitTablet",
		"/shaledb.master.Master/Join", "/shaledb.master.Master/Heartbeat", "/shaledb.master.Master/CreateTable",
		"/shaledb.master.Master/GetTable", "/shaledb.master.Master/SplitTablet",
	}
	for _, m := range methods {
		for i := 0; i < 20; i++ {
			junk := make([]byte, rnd.IntN(256))
			for j := range junk {
				junk[j] = byte(rnd.Uint32())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			var reply []byte
			err := cc.Invoke(ctx, m, junk, &reply, grpc.ForceCodec(rawCodec{}))
			cancel()
			// Either the bytes do not decode (an RPC error) or they decode
			// to some request that is answered with an error or handled;
			// what matters is an answer, not a dropped connection.
			if st, ok := status.FromError(err); err != nil && ok && st.Code() == codes.Unavailable {
				t.Fatalf("%s: the node went away: %v", m, err)
			}
		}
	}

	// Well-formed requests with bad contents.
	ms := c.Masters()
	bad := servertest.KVTable("bad", 2)
	bad.Schema.Columns = nil
	if _, err := servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.CreateTableResponse, error) {
		return mc.CreateTable(ctx, bad)
	}); err == nil {
		t.Fatal("a table without columns was created")
	}
	ts := tspb.NewTabletServerClient(cc)
	r, err := ts.Write(context.Background(), &tspb.WriteRequest{TabletId: 1, Batch: (&docdb.WriteBatch{}).Marshal()})
	if err != nil || r.GetError().GetCode() != tspb.TabletError_INVALID_ARGUMENT {
		t.Fatalf("a write to the sys catalog through the data path: %v %v", err, r.GetError())
	}

	// Still serving.
	if _, err := servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.CreateTableResponse, error) {
		k := servertest.KVTable("good", 2)
		k.ReplicationFactor = 1
		return mc.CreateTable(ctx, k)
	}); err != nil {
		t.Fatalf("after the garbage: %v", err)
	}
}
