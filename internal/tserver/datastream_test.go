package tserver_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/rpc"
	"github.com/shaledb/shaledb/internal/tablet"
	"github.com/shaledb/shaledb/internal/tserver"
	pb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// oneReplicaNode starts a node holding desc's only replica, its leader;
// it stops when the test ends.
func oneReplicaNode(t *testing.T) *tserver.Node {
	t.Helper()
	n, err := tserver.Start(tserver.Config{NodeID: 1, ListenAddr: "127.0.0.1:0", DataDir: t.TempDir(), Raft: testRaft(), Engine: storageOpts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Stop() })
	if _, err := n.CreateTablet(desc, []uint64{1}); err != nil {
		t.Fatal(err)
	}
	retry(t, []*tserver.Node{n}, "leader", func(ctx context.Context, tb *tablet.Tablet) error { return nil })
	return n
}

// dataStream is a carrier of the data stream: a gRPC Data stream or a
// framed connection.
type dataStream interface {
	Send(*pb.DataRequest) error
	Recv() (*pb.DataResponse, error)
}

// framedStream is a framed connection as a dataStream.
type framedStream struct{ *rpc.FramedConn }

func (f framedStream) Send(r *pb.DataRequest) error { return f.FramedConn.Send(r) }

func (f framedStream) Recv() (*pb.DataResponse, error) {
	r := new(pb.DataResponse)
	if err := f.FramedConn.Recv(r); err != nil {
		return nil, err
	}
	return r, nil
}

// TestDataStream: many reads and writes multiplexed on one data stream are
// each answered once, under their own id, with what the unary calls would
// answer; a cancelled call gets no answer, and the stream goes on; the
// transaction calls are served on it too. Over a gRPC stream and over a
// framed connection on the same port; Stop ends a framed connection.
func TestDataStream(t *testing.T) {
	n := oneReplicaNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Run("grpc", func(t *testing.T) {
		pool := rpc.NewPool()
		defer pool.Close()
		cc, err := pool.Conn(n.Addr())
		if err != nil {
			t.Fatal(err)
		}
		st, err := pb.NewTabletServerClient(cc).Data(ctx)
		if err != nil {
			t.Fatal(err)
		}
		testDataStream(t, n, st, 0)
		if err := st.CloseSend(); err != nil {
			t.Fatal(err)
		}
		consensustest.WaitFor(t, 5*time.Second, "the stream to end", func() bool {
			_, err := st.Recv()
			return err != nil
		})
	})
	t.Run("framed", func(t *testing.T) {
		fc, err := rpc.DialFramed(ctx, n.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer fc.Close()
		st := framedStream{fc}
		testDataStream(t, n, st, 100)
		// A message over the limit is refused before anything goes out;
		// the connection goes on.
		huge := &pb.DataRequest{Id: 1, Req: &pb.DataRequest_Write{Write: &pb.WriteRequest{TabletId: desc.ID,
			Batch: make([]byte, rpc.MaxMessageSize+1)}}}
		if err := st.Send(huge); status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("a message over the limit: %v, want ResourceExhausted", err)
		}
		testDataStream(t, n, st, 200)
		// Stop closes the connection.
		if err := n.Stop(); err != nil {
			t.Fatal(err)
		}
		if r, err := st.Recv(); err == nil {
			t.Fatalf("an answer after Stop: %v", r)
		}
	})
}

// testDataStream runs calls on st against n's tablet, with rows from
// base on.
func testDataStream(t *testing.T, n *tserver.Node, st dataStream, base int) {
	const writes = 50
	for i := 0; i < writes; i++ {
		if err := st.Send(&pb.DataRequest{Id: uint64(i + 1), TimeoutUs: 10_000_000,
			Req: &pb.DataRequest_Write{Write: &pb.WriteRequest{TabletId: desc.ID, Batch: put(base+i, base+i+1).Marshal()}}}); err != nil {
			t.Fatal(err)
		}
	}
	// A call cancelled at once: nothing answers it.
	if err := st.Send(&pb.DataRequest{Id: 1000, Req: &pb.DataRequest_Read{Read: &pb.ReadRequest{TabletId: desc.ID, RowKey: rowKey(base)}}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&pb.DataRequest{Id: 1000, Cancel: true}); err != nil {
		t.Fatal(err)
	}
	got := map[uint64]bool{}
	for len(got) < writes {
		r, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if r.GetId() == 1000 {
			continue // the read may have been answered before the cancel arrived
		}
		if got[r.GetId()] || r.GetId() == 0 || r.GetId() > writes {
			t.Fatalf("unexpected or repeated answer id %d", r.GetId())
		}
		got[r.GetId()] = true
		if w := r.GetWrite(); w == nil || w.GetError() != nil || w.GetWriteTime() == 0 {
			t.Fatalf("answer %d: %v", r.GetId(), r)
		}
	}
	// Reads on the same stream see the writes.
	for i := 0; i < writes; i++ {
		if err := st.Send(&pb.DataRequest{Id: uint64(2000 + i), Req: &pb.DataRequest_Read{Read: &pb.ReadRequest{TabletId: desc.ID, RowKey: rowKey(base + i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	for seen := 0; seen < writes; {
		r, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if r.GetId() < 2000 {
			continue
		}
		seen++
		rd := r.GetRead()
		i := int(r.GetId() - 2000)
		if rd == nil || rd.GetError() != nil || !rd.GetFound() {
			t.Fatalf("read %d: %v", i, r)
		}
		v, err := docdb.DecodeValue(rd.GetRow().GetColumns()[0].GetValue())
		if err != nil || string(v.Bytes) != fmt.Sprintf("v%d", base+i) {
			t.Fatalf("read %d: %v %v", i, v, err)
		}
	}
	// Transaction calls travel the same way: intents written, then
	// removed.
	txnID := make([]byte, 16)
	txnID[0] = byte(1 + base/100)
	call := func(id uint64, req *pb.DataRequest) *pb.DataResponse {
		req.Id = id
		if err := st.Send(req); err != nil {
			t.Fatal(err)
		}
		r, err := st.Recv()
		if err != nil || r.GetId() != id {
			t.Fatalf("answer %v, err %v", r, err)
		}
		return r
	}
	tb, ok := n.Tablet(desc.ID)
	if !ok {
		t.Fatal("no tablet")
	}
	r := call(3000, &pb.DataRequest{Req: &pb.DataRequest_TxnWrite{TxnWrite: &pb.TxnWriteRequest{
		TabletId: desc.ID, TxnId: txnID, Batch: put(base, base+1).Marshal()}}})
	if w := r.GetTxnWrite(); w == nil || w.GetError() != nil || w.GetWriteTime() == 0 {
		t.Fatalf("transactional write: %v", r)
	}
	if c, err := tb.IntentCount(); err != nil || c == 0 {
		t.Fatalf("%d intents after a transactional write (%v)", c, err)
	}
	r = call(3001, &pb.DataRequest{Req: &pb.DataRequest_TxnResolve{TxnResolve: &pb.TxnResolveRequest{
		TabletId: desc.ID, TxnId: txnID, Kind: pb.TxnResolveRequest_REMOVE}}})
	if rs := r.GetTxnResolve(); rs == nil || rs.GetError() != nil {
		t.Fatalf("resolve: %v", r)
	}
	if c, err := tb.IntentCount(); err != nil || c != 0 {
		t.Fatalf("%d intents after removing them (%v)", c, err)
	}
	// A pipelined write answers twice under its id: provisionally once it
	// is proposed, with its write time, then finally once applied.
	pipelined := &pb.DataRequest{Id: 3002, Pipelined: true, TimeoutUs: 10_000_000, Req: &pb.DataRequest_TxnWrite{TxnWrite: &pb.TxnWriteRequest{
		TabletId: desc.ID, TxnId: txnID, Batch: put(base, base+1).Marshal()}}}
	if err := st.Send(pipelined); err != nil {
		t.Fatal(err)
	}
	first, err := st.Recv()
	if err != nil || first.GetId() != 3002 || !first.GetProvisional() {
		t.Fatalf("first answer of a pipelined write: %v, %v", first, err)
	}
	final, err := st.Recv()
	if err != nil || final.GetId() != 3002 || final.GetProvisional() {
		t.Fatalf("final answer of a pipelined write: %v, %v", final, err)
	}
	fw, pw := final.GetTxnWrite(), first.GetTxnWrite()
	if fw.GetError() != nil || pw.GetError() != nil || pw.GetWriteTime() == 0 || fw.GetWriteTime() != pw.GetWriteTime() {
		t.Fatalf("a pipelined write answered %v, then %v", pw, fw)
	}
	if c, err := tb.IntentCount(); err != nil || c == 0 {
		t.Fatalf("%d intents after a pipelined write's final answer (%v)", c, err)
	}
	// One that fails before it is proposed answers once, finally.
	r = call(3003, &pb.DataRequest{Pipelined: true, Req: &pb.DataRequest_TxnWrite{TxnWrite: &pb.TxnWriteRequest{
		TabletId: desc.ID + 1000, TxnId: txnID, Batch: put(base, base+1).Marshal()}}})
	if r.GetProvisional() || r.GetTxnWrite().GetError() == nil {
		t.Fatalf("a pipelined write to a tablet the node lacks: %v", r)
	}
	r = call(3004, &pb.DataRequest{Req: &pb.DataRequest_TxnResolve{TxnResolve: &pb.TxnResolveRequest{
		TabletId: desc.ID, TxnId: txnID, Kind: pb.TxnResolveRequest_REMOVE}}})
	if rs := r.GetTxnResolve(); rs == nil || rs.GetError() != nil {
		t.Fatalf("resolve: %v", r)
	}
}

// TestServeDataInProcess: the node's own calls (ServeData) answer as the
// stream does; calls racing Stop end (answered, cancelled or refused)
// rather than reaching the closed engine, which panics; after Stop every
// call is refused.
func TestServeDataInProcess(t *testing.T) {
	n := oneReplicaNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := n.ServeData(ctx, &pb.DataRequest{Req: &pb.DataRequest_Write{Write: &pb.WriteRequest{TabletId: desc.ID, Batch: put(0, 100).Marshal()}}})
	if w := r.GetWrite(); err != nil || w == nil || w.GetError() != nil || w.GetWriteTime() == 0 {
		t.Fatalf("write: %v %v", r, err)
	}
	scan := &pb.DataRequest{Req: &pb.DataRequest_Scan{Scan: &pb.ScanRequest{TabletId: desc.ID, Span: &pb.Span{Start: desc.Span.Start, End: desc.Span.End}}}}
	r, err = n.ServeData(ctx, scan)
	if sc := r.GetScan(); err != nil || sc == nil || sc.GetError() != nil || len(sc.GetRows()) != 100 {
		t.Fatalf("scan: %d rows, %v", len(r.GetScan().GetRows()), err)
	}
	// Scans in a loop on four goroutines while the node stops.
	var wg sync.WaitGroup
	answered := make([]atomic.Int64, 4)
	for g := range answered {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				r, err := n.ServeData(ctx, scan)
				if status.Code(err) == codes.Unavailable {
					return
				}
				if err != nil {
					t.Errorf("scan: %v", err)
					return
				}
				if len(r.GetScan().GetRows()) == 100 {
					answered[g].Add(1)
				}
			}
		}()
	}
	for answered[0].Load()+answered[1].Load() == 0 && ctx.Err() == nil {
		runtime.Gosched() // until the scans are under way
	}
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if _, err := n.ServeData(ctx, scan); status.Code(err) != codes.Unavailable {
		t.Fatalf("a call after Stop: %v, want Unavailable", err)
	}
}
