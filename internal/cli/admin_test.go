package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/shaledb/shaledb/internal/master/masterpb"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

func render(t *testing.T, tb table) string {
	t.Helper()
	var b bytes.Buffer
	if err := tb.write(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestAdminTables(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	for _, tc := range []struct {
		name string
		got  table
		want string
	}{
		{"masters", mastersTable([]masterRow{
			{NodeID: 1, RPCAddr: "127.0.0.1:7100", HTTPAddr: "127.0.0.1:7000", IsLeader: true},
			{NodeID: 12, RPCAddr: "127.0.0.12:7100", HTTPAddr: "127.0.0.12:7000"},
		}), `
NODE  RPC              HTTP             ROLE
1     127.0.0.1:7100   127.0.0.1:7000   LEADER
12    127.0.0.12:7100  127.0.0.12:7000  FOLLOWER
`},
		{"tservers", tserversTable([]tserverRow{
			{NodeID: 1, RPCAddr: "127.0.0.1:7100", HTTPAddr: "127.0.0.1:7000", Placement: "c.r.z1", State: "LIVE",
				Tablets: 12, Leaders: 4, DataBytes: 3 << 20, LastHeartbeatMs: 999_600},
			{NodeID: 2, RPCAddr: "127.0.0.2:7100", State: "DEAD", Blacklisted: true, DataBytes: 1536},
		}, now), `
NODE  RPC             HTTP            PLACEMENT  STATE  BLACKLISTED  TABLETS  LEADERS  DATA     HEARTBEAT
1     127.0.0.1:7100  127.0.0.1:7000  c.r.z1     LIVE   no           12       4        3.0 MiB  400ms ago
2     127.0.0.2:7100                  -          DEAD   yes          0        0        1.5 KiB  never
`},
		{"tables", tablesTable([]tableRow{
			{TableID: 3, Namespace: "default", Name: "kv", State: "RUNNING", Partitioning: "hash", NumTablets: 12, ReplicationFactor: 3},
		}), `
ID  NAMESPACE  NAME  STATE    PARTITIONING  TABLETS  RF
3   default    kv    RUNNING  hash          12       3
`},
		{"tablets", tabletsTable([]tabletRow{
			{TabletID: 7, Range: "hash [0x0000, 0x5555)", LeaderNode: 2, SizeBytes: 10,
				Replicas: []replicaRow{{NodeID: 1, Role: "VOTER"}, {NodeID: 2, Role: "VOTER"}, {NodeID: 4, Role: "LEARNER"}}},
			{TabletID: 8, Range: "hash [0x5555, 0x10000)"},
		}), `
TABLET  RANGE                   LEADER  REPLICAS        SIZE
7       hash [0x0000, 0x5555)   2       1,2,4(learner)  10 B
8       hash [0x5555, 0x10000)  -       -               0 B
`},
		{"message", messageTable("node 3 blacklisted"), "\nnode 3 blacklisted\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := render(t, tc.got); got != strings.TrimPrefix(tc.want, "\n") {
				t.Errorf("got:\n%s\nwant:\n%s", got, strings.TrimPrefix(tc.want, "\n"))
			}
		})
	}
}

func TestTabletRange(t *testing.T) {
	for _, tc := range []struct {
		d    *tspb.TabletDescriptor
		want string
	}{
		{&tspb.TabletDescriptor{HashStart: 0x8000, HashEnd: 0x10000}, "hash [0x8000, 0x10000)"},
		{&tspb.TabletDescriptor{Span: &tspb.Span{Start: []byte{1, 2}, End: []byte{1, 3}}}, "[0102, 0103)"},
		{&tspb.TabletDescriptor{Span: &tspb.Span{Start: []byte{0xab}}}, "[ab, end)"},
	} {
		if got := tabletRange(tc.d); got != tc.want {
			t.Errorf("tabletRange(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 5 << 30: "5.0 GiB", 1<<40 + 1<<39: "1.5 TiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestHTTPPprof(t *testing.T) {
	mux := http.NewServeMux()
	registerPprof(mux)
	srv := httptest.NewServer(mux)
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") {
		t.Errorf("/debug/pprof/: %d", code)
	}
	if code, _ := get("/nothing"); code != 404 {
		t.Errorf("/nothing: %d", code)
	}
}

// fakeMaster answers ListTServers and MoveReplica like a master leader
// would: a move is done after doneAfter calls; one never done (doneAfter
// 0) has each call wait until shortly before its deadline.
type fakeMaster struct {
	masterpb.UnimplementedMasterServer
	doneAfter int

	mu    sync.Mutex
	calls []*masterpb.MoveReplicaRequest
}

func (f *fakeMaster) ListTServers(ctx context.Context, _ *masterpb.ListTServersRequest) (*masterpb.ListTServersResponse, error) {
	return &masterpb.ListTServersResponse{Tservers: []*masterpb.TServerInfo{
		{NodeId: 1, RpcAddr: "127.0.0.1:7100"}, {NodeId: 2, RpcAddr: "127.0.0.2:7100"}, {NodeId: 4, RpcAddr: "127.0.0.4:7100"},
	}}, nil
}

func (f *fakeMaster) MoveReplica(ctx context.Context, req *masterpb.MoveReplicaRequest) (*masterpb.MoveReplicaResponse, error) {
	f.mu.Lock()
	f.calls = append(f.calls, req)
	n := len(f.calls)
	f.mu.Unlock()
	if req.GetTabletId() == 404 {
		return &masterpb.MoveReplicaResponse{Error: &masterpb.MasterError{Code: masterpb.MasterError_NOT_FOUND, Message: "master: not found: tablet 404"}}, nil
	}
	if f.doneAfter > 0 && n >= f.doneAfter {
		return &masterpb.MoveReplicaResponse{Done: true, Step: "done", LeaderMoved: true, ElapsedMs: 1234, Tablet: &masterpb.TabletLocation{
			LeaderNode: 4,
			Replicas:   []*masterpb.Replica{{NodeId: 1, Addr: "127.0.0.1:7100"}, {NodeId: 4, Addr: "127.0.0.4:7100"}},
		}}, nil
	}
	if d, ok := ctx.Deadline(); ok && f.doneAfter == 0 {
		select {
		case <-time.After(time.Until(d) - 100*time.Millisecond):
		case <-ctx.Done():
		}
	}
	return &masterpb.MoveReplicaResponse{Step: "add-learner", ElapsedMs: 800}, nil
}

func startFakeMaster(t *testing.T, f *fakeMaster) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	masterpb.RegisterMasterServer(s, f)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return lis.Addr().String()
}

// TestMoveReplicaCommand runs `shale admin move-replica` against a fake
// master: arguments checked before any call, nodes resolved by address,
// the move asked again until done, and its outcome printed as a message,
// as JSON, or as an error.
func TestMoveReplicaCommand(t *testing.T) {
	shale := func(args ...string) (string, string, int) {
		var out, errOut bytes.Buffer
		code := run(args, &out, &errOut)
		return out.String(), errOut.String(), code
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"admin", "move-replica", "1000", "1"}, "accepts 3 arg(s), received 2"},
		{[]string{"admin", "move-replica", "x", "1", "4"}, `tablet "x": want a tablet id`},
		{[]string{"admin", "move-replica", "1000", "node1", "4"}, `node "node1": want a node id or an RPC address`},
	} {
		if _, errOut, code := shale(tc.args...); code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("shale %v: exit %d, stderr %q; want an error with %q", tc.args, code, errOut, tc.want)
		}
	}

	// Done on the second call: the first one answered "not yet".
	f := &fakeMaster{doneAfter: 2}
	addr := startFakeMaster(t, f)
	out, errOut, code := shale("admin", "--master-addrs", addr, "--timeout", "15s", "move-replica", "1000", "127.0.0.2", "4")
	if code != 0 || out != "tablet 1000: replica moved from node 2 to node 4 in 1.2s (leadership moved off node 2 first)\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	f.mu.Lock()
	calls := f.calls
	f.mu.Unlock()
	if len(calls) != 2 || calls[1].GetFromNode() != 2 || calls[1].GetToNode() != 4 || calls[1].GetTabletId() != 1000 {
		t.Fatalf("calls %v: want the move of tablet 1000 from 2 to 4 asked twice", calls)
	}

	f = &fakeMaster{doneAfter: 1}
	addr = startFakeMaster(t, f)
	out, errOut, code = shale("admin", "--master-addrs", addr, "move-replica", "1000", "2", "127.0.0.4:7100", "--json")
	var doc struct {
		TabletID    uint64       `json:"tablet_id"`
		From        uint64       `json:"from_node"`
		To          uint64       `json:"to_node"`
		Done        bool         `json:"done"`
		LeaderMoved bool         `json:"leader_moved"`
		Leader      uint64       `json:"leader_node"`
		Replicas    []replicaRow `json:"replicas"`
	}
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil {
		t.Fatalf("exit %d, %v: stdout %q, stderr %q", code, err, out, errOut)
	}
	if doc.TabletID != 1000 || doc.From != 2 || doc.To != 4 || !doc.Done || !doc.LeaderMoved || doc.Leader != 4 ||
		len(doc.Replicas) != 2 || doc.Replicas[1].NodeID != 4 || doc.Replicas[1].Role != "VOTER" {
		t.Fatalf("json %+v", doc)
	}

	// Not done in time: an error saying where the move is.
	f = &fakeMaster{}
	addr = startFakeMaster(t, f)
	_, errOut, code = shale("admin", "--master-addrs", addr, "--timeout", "1500ms", "move-replica", "1000", "2", "4")
	if code == 0 || !strings.Contains(errOut, "tablet 1000: the replica is still moving from node 2 to node 4 (step add-learner") ||
		!strings.Contains(errOut, "the master carries on") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}

	// The master's refusal.
	_, errOut, code = shale("admin", "--master-addrs", addr, "move-replica", "404", "2", "4")
	if code == 0 || !strings.Contains(errOut, "MoveReplica: master: not found: tablet 404") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}
