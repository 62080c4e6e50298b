package tserver_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/rpc"
	"github.com/shaledb/shaledb/internal/tserver"
	pb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// TestServiceDataAndControlPath drives the TabletServer RPC service the way
// the master and the client will: create a tablet on three nodes, find the
// leader through NOT_LEADER hints, write, read, scan in pages, add a fourth
// replica as learner and promote it, transfer leadership, remove and delete
// a replica; bad requests get their error codes.
func TestServiceDataAndControlPath(t *testing.T) {
	addrs := []string{"127.0.0.1:0", "127.0.0.2:0", "127.0.0.3:0", "127.0.0.4:0"}
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()}
	nodes := startAll(t, dirs, addrs)
	defer func() {
		for _, n := range nodes {
			_ = n.Stop()
		}
	}()
	pool := rpc.NewPool()
	defer pool.Close()
	client := func(addr string) pb.TabletServerClient {
		cc, err := pool.Conn(addr)
		if err != nil {
			t.Fatal(err)
		}
		return pb.NewTabletServerClient(cc)
	}
	ctx := context.Background()
	peerAddrs := map[uint64]string{1: addrs[0], 2: addrs[1], 3: addrs[2], 4: addrs[3]}
	wdesc := tserver.DescriptorToWire(desc)
	for i := 0; i < 3; i++ {
		for attempt := 0; attempt < 2; attempt++ { // creation is idempotent
			resp, err := client(addrs[i]).CreateTablet(ctx, &pb.CreateTabletRequest{Tablet: wdesc, Voters: []uint64{1, 2, 3}, PeerAddrs: peerAddrs})
			if err != nil || resp.GetError().GetCode() != pb.TabletError_OK {
				t.Fatalf("create on node %d: %v %v", i+1, err, resp.GetError())
			}
		}
	}

	// Writes go to node 1 first and follow NOT_LEADER hints.
	addr := addrs[0]
	write := func(wb *docdb.WriteBatch) *pb.WriteResponse {
		t.Helper()
		var resp *pb.WriteResponse
		consensustest.Retry(t, 20*time.Second, "write", func(ctx context.Context) error {
			var err error
			resp, err = client(addr).Write(ctx, &pb.WriteRequest{TabletId: desc.ID, Batch: wb.Marshal()})
			if err != nil {
				return err
			}
			if e := resp.GetError(); e.GetCode() != pb.TabletError_OK {
				if e.GetCode() == pb.TabletError_NOT_LEADER && e.GetLeaderAddr() != "" {
					addr = e.GetLeaderAddr()
				} else if e.GetCode() == pb.TabletError_NOT_LEADER {
					addr = addrs[(indexOf(addrs, addr)+1)%3]
				}
				return fmt.Errorf("%v", e)
			}
			return nil
		})
		return resp
	}
	w := write(put(0, 25))
	if w.GetWriteTime() == 0 || w.GetServerTime() < w.GetWriteTime() {
		t.Fatalf("write time %d, server time %d", w.GetWriteTime(), w.GetServerTime())
	}

	r, err := client(addr).Read(ctx, &pb.ReadRequest{TabletId: desc.ID, RowKey: rowKey(7)})
	if err != nil || r.GetError() != nil || !r.GetFound() {
		t.Fatalf("read: %v %v found=%v", err, r.GetError(), r.GetFound())
	}
	v, err := docdb.DecodeValue(r.GetRow().GetColumns()[0].GetValue())
	if err != nil || string(v.Bytes) != "v7" {
		t.Fatalf("read value %v %v", v, err)
	}
	// Existence only.
	r, _ = client(addr).Read(ctx, &pb.ReadRequest{TabletId: desc.ID, RowKey: rowKey(7), Projection: &pb.Projection{}})
	if !r.GetFound() || len(r.GetRow().GetColumns()) != 0 {
		t.Fatalf("existence read: %v", r)
	}

	// Follower reads: each follower fetches a safe point from the leader,
	// which covers the acknowledged write, and serves the row itself.
	for _, f := range addrs[:3] {
		if f == addr {
			continue
		}
		fr, err := client(f).Read(ctx, &pb.ReadRequest{TabletId: desc.ID, RowKey: rowKey(7), Consistency: pb.ReadConsistency_FOLLOWER_BOUNDED_STALENESS})
		if err != nil || fr.GetError() != nil || !fr.GetFound() {
			t.Fatalf("follower read at %s: %v %v found=%v", f, err, fr.GetError(), fr.GetFound())
		}
		if fr.GetReadTime() < w.GetWriteTime() {
			t.Fatalf("follower read at %d, before the acknowledged write at %d", fr.GetReadTime(), w.GetWriteTime())
		}
		fs, err := client(f).Scan(ctx, &pb.ScanRequest{TabletId: desc.ID, Span: &pb.Span{Start: desc.Span.Start, End: desc.Span.End},
			Consistency: pb.ReadConsistency_FOLLOWER_BOUNDED_STALENESS})
		if err != nil || fs.GetError() != nil || len(fs.GetRows()) != 25 {
			t.Fatalf("follower scan at %s: %v %v %d rows", f, err, fs.GetError(), len(fs.GetRows()))
		}
	}

	// Scan in pages of 10, following the resume span.
	var got int
	span := &pb.Span{Start: desc.Span.Start, End: desc.Span.End}
	for pages := 0; span != nil; pages++ {
		s, err := client(addr).Scan(ctx, &pb.ScanRequest{TabletId: desc.ID, Span: span, Limit: 10})
		if err != nil || s.GetError() != nil {
			t.Fatalf("scan: %v %v", err, s.GetError())
		}
		got += len(s.GetRows())
		span = s.GetResumeSpan()
		if pages > 5 {
			t.Fatal("scan does not end")
		}
	}
	if got != 25 {
		t.Fatalf("scanned %d rows, want 25", got)
	}

	// Bad input.
	for _, c := range []struct {
		what string
		call func() (*pb.TabletError, error)
		want pb.TabletError_Code
	}{
		{"unknown tablet", func() (*pb.TabletError, error) {
			r, err := client(addr).Read(ctx, &pb.ReadRequest{TabletId: 999, RowKey: rowKey(1)})
			return r.GetError(), err
		}, pb.TabletError_TABLET_NOT_FOUND},
		{"malformed batch", func() (*pb.TabletError, error) {
			r, err := client(addr).Write(ctx, &pb.WriteRequest{TabletId: desc.ID, Batch: []byte{0xff, 0xff, 0xff}})
			return r.GetError(), err
		}, pb.TabletError_INVALID_ARGUMENT},
		{"malformed row key", func() (*pb.TabletError, error) {
			r, err := client(addr).Read(ctx, &pb.ReadRequest{TabletId: desc.ID, RowKey: []byte("junk")})
			return r.GetError(), err
		}, pb.TabletError_INVALID_ARGUMENT},
		{"key of another table", func() (*pb.TabletError, error) {
			k := docdb.DocKey{TableID: tableID + 1, RangeParts: []docdb.KeyPart{{Value: docdb.Int64(1)}}}.Encode()
			r, err := client(addr).Read(ctx, &pb.ReadRequest{TabletId: desc.ID, RowKey: k})
			return r.GetError(), err
		}, pb.TabletError_KEY_OUT_OF_RANGE},
		{"clock far ahead", func() (*pb.TabletError, error) {
			r, err := client(addr).Read(ctx, &pb.ReadRequest{TabletId: desc.ID, RowKey: rowKey(1), ClientTime: w.GetServerTime() + uint64(time.Hour.Microseconds())<<12})
			return r.GetError(), err
		}, pb.TabletError_CLOCK_SKEW},
		{"follower read of a time past its safe point", func() (*pb.TabletError, error) {
			f := addrs[(indexOf(addrs, addr)+1)%3]
			r, err := client(f).Read(ctx, &pb.ReadRequest{TabletId: desc.ID, RowKey: rowKey(1), Consistency: pb.ReadConsistency_FOLLOWER_BOUNDED_STALENESS,
				ReadTime: w.GetServerTime() + uint64(time.Second.Microseconds())<<12})
			return r.GetError(), err
		}, pb.TabletError_STALE_FOLLOWER},
	} {
		e, err := c.call()
		if err != nil || e.GetCode() != c.want {
			t.Errorf("%s: got %v %v, want %v", c.what, err, e, c.want)
		}
	}

	// A fourth replica: created empty on node 4, added as learner, promoted.
	if resp, err := client(addrs[3]).CreateTablet(ctx, &pb.CreateTabletRequest{Tablet: wdesc, PeerAddrs: peerAddrs}); err != nil || resp.GetError() != nil {
		t.Fatalf("create on node 4: %v %v", err, resp.GetError())
	}
	change := func(op pb.ChangeReplicasRequest_Op, node uint64) {
		t.Helper()
		consensustest.Retry(t, 20*time.Second, op.String(), func(ctx context.Context) error {
			resp, err := client(addr).ChangeReplicas(ctx, &pb.ChangeReplicasRequest{TabletId: desc.ID, Op: op, NodeId: node, NodeAddr: peerAddrs[node]})
			if err != nil {
				return err
			}
			if e := resp.GetError(); e != nil {
				if e.GetLeaderAddr() != "" {
					addr = e.GetLeaderAddr()
				}
				return fmt.Errorf("%v", e)
			}
			return nil
		})
	}
	change(pb.ChangeReplicasRequest_ADD_LEARNER, 4)
	consensustest.WaitFor(t, 20*time.Second, "node 4 applies the snapshot", func() bool {
		l, err := client(addrs[3]).ListTablets(ctx, &pb.ListTabletsRequest{})
		return err == nil && len(l.GetTablets()) == 1 && l.GetTablets()[0].GetAppliedIndex() > 0 &&
			l.GetTablets()[0].GetRole() == pb.TabletStatus_LEARNER
	})
	change(pb.ChangeReplicasRequest_PROMOTE_LEARNER, 4)

	// Move leadership to node 4, which then serves the data.
	consensustest.Retry(t, 20*time.Second, "transfer", func(ctx context.Context) error {
		resp, err := client(addr).TransferLeader(ctx, &pb.TransferLeaderRequest{TabletId: desc.ID, ToNode: 4})
		if err != nil {
			return err
		}
		if e := resp.GetError(); e != nil && e.GetCode() != pb.TabletError_NOT_LEADER {
			return fmt.Errorf("%v", e)
		}
		l, err := client(addrs[3]).ListTablets(ctx, &pb.ListTabletsRequest{})
		if err != nil || !l.GetTablets()[0].GetHasLease() {
			return fmt.Errorf("node 4 does not hold the lease yet (%v)", err)
		}
		return nil
	})
	addr = addrs[3]
	r, err = client(addr).Read(ctx, &pb.ReadRequest{TabletId: desc.ID, RowKey: rowKey(24)})
	if err != nil || r.GetError() != nil || !r.GetFound() {
		t.Fatalf("read at node 4: %v %v", err, r.GetError())
	}

	// Remove node 1's replica, then delete it there.
	change(pb.ChangeReplicasRequest_REMOVE_REPLICA, 1)
	for attempt := 0; attempt < 2; attempt++ { // deletion is idempotent
		if resp, err := client(addrs[0]).DeleteTablet(ctx, &pb.DeleteTabletRequest{TabletId: desc.ID}); err != nil || resp.GetError() != nil {
			t.Fatalf("delete on node 1: %v %v", err, resp.GetError())
		}
	}
	if l, _ := client(addrs[0]).ListTablets(ctx, &pb.ListTabletsRequest{}); len(l.GetTablets()) != 0 {
		t.Fatalf("node 1 still lists %d tablets", len(l.GetTablets()))
	}
	write(put(25, 30))
	r, err = client(addr).Read(ctx, &pb.ReadRequest{TabletId: desc.ID, RowKey: rowKey(29)})
	if err != nil || !r.GetFound() {
		t.Fatalf("read after removal: %v %v", err, r.GetError())
	}
}

func indexOf(xs []string, x string) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return 0
}
