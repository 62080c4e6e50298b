package tserver_test

// The child side of TestCrashDurability: one tablet server in its own
// process with a tiny HTTP API for the parent test. Test-only; production
// clients will talk to the tserver's gRPC service.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/consensus"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/tablet"
	"github.com/shaledb/shaledb/internal/tserver"
)

// Environment of a crash child process.
const (
	envChild = "SHALE_CRASH_CHILD" // "1" in a child
	envNode  = "SHALE_CRASH_NODE"  // node id
	envDir   = "SHALE_CRASH_DIR"   // data directory
	envPeers = "SHALE_CRASH_PEERS" // "1=ip:port,2=ip:port,..." raft addresses, own included
	envHTTP  = "SHALE_CRASH_HTTP"  // ip:port of the test API
)

// crashDesc is the one RF3 tablet of the crash test: rows of table 9, column
// 1 holds the key (a string) and column 2 its value.
var crashDesc = tablet.Descriptor{ID: 9, TableID: 9, Span: docdb.TableSpan(9)}

func crashRowKey(k string) []byte {
	return docdb.DocKey{TableID: crashDesc.TableID, RangeParts: []docdb.KeyPart{{Value: docdb.Text(k)}}}.Encode()
}

// childStatus is the answer of GET /status.
type childStatus struct {
	Node    uint64
	Leader  uint64
	Lease   bool
	Term    uint64
	Commit  uint64
	Applied uint64
}

// TestCrashChildProcess is not a test: TestCrashDurability runs the test
// binary again with this test selected and SHALE_CRASH_CHILD=1 to get a
// tablet server process it can SIGKILL.
func TestCrashChildProcess(t *testing.T) {
	if os.Getenv(envChild) != "1" {
		t.Skip("runs only as a child of TestCrashDurability")
	}
	id, err := strconv.ParseUint(os.Getenv(envNode), 10, 64)
	if err != nil {
		t.Fatalf("%s: %v", envNode, err)
	}
	peers := map[uint64]string{}
	for _, kv := range strings.Split(os.Getenv(envPeers), ",") {
		k, addr, _ := strings.Cut(kv, "=")
		pid, err := strconv.ParseUint(k, 10, 64)
		if err != nil {
			t.Fatalf("%s: %q: %v", envPeers, kv, err)
		}
		peers[pid] = addr
	}
	n, err := tserver.Start(tserver.Config{
		NodeID: id, ListenAddr: peers[id], DataDir: os.Getenv(envDir),
		Peers: peers, Raft: testRaft(), Engine: storageOpts,
	})
	if err != nil {
		t.Fatal(err)
	}
	tb, ok := n.Tablet(crashDesc.ID)
	if !ok {
		if tb, err = n.CreateTablet(crashDesc, []uint64{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
	}
	lis, err := net.Listen("tcp", os.Getenv(envHTTP))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: childAPI(n, tb)}
	go func() { _ = srv.Serve(lis) }()

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
	_ = srv.Close()
	if err := n.Stop(); err != nil {
		t.Fatal(err)
	}
}

// childAPI serves:
//
//	POST /put  k=&v=  200 once the write is acknowledged; 503 + X-Leader
//	                  at a non-leader; 500 otherwise (outcome unknown)
//	GET  /get?k=      200 + value, 404, or 503 + X-Leader (leaseholder read)
//	GET  /scan        JSON {key: value} of every row, at the leaseholder;
//	                  with local=1 from this replica's engine, any role
//	GET  /status      JSON childStatus
func childAPI(n *tserver.Node, tb *tablet.Tablet) http.Handler {
	fail := func(w http.ResponseWriter, err error) {
		if leader, ok := consensus.IsNotLeader(err); ok {
			w.Header().Set("X-Leader", strconv.FormatUint(leader, 10))
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /put", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		k, v := r.FormValue("k"), r.FormValue("v")
		_, err := tb.Write(ctx, &docdb.WriteBatch{Ops: []docdb.WriteOp{{
			Kind: docdb.OpPutRow, RowKey: crashRowKey(k),
			Columns: []docdb.ColumnValue{{ID: 1, Value: docdb.Text(k)}, {ID: 2, Value: docdb.Text(v)}},
		}}})
		if err != nil {
			fail(w, err)
			return
		}
		fmt.Fprint(w, "ok")
	})
	mux.HandleFunc("GET /get", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		row, found, err := tb.Get(ctx, crashRowKey(r.FormValue("k")), []uint32{2})
		switch {
		case err != nil:
			fail(w, err)
		case !found || len(row.Columns) == 0:
			http.NotFound(w, r)
		default:
			fmt.Fprint(w, string(row.Columns[0].Value.Bytes))
		}
	})
	mux.HandleFunc("GET /scan", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		var rows []docdb.Row
		var err error
		if r.FormValue("local") == "1" {
			rows, _, err = docdb.Scan(n.Engine(), docdb.ScanOptions{ReadOptions: docdb.ReadOptions{ReadTime: hlc.MaxTimestamp - 1}, Span: crashDesc.Span})
		} else {
			rows, _, err = tb.Scan(ctx, tablet.ScanOptions{})
		}
		if err != nil {
			fail(w, err)
			return
		}
		out := make(map[string]string, len(rows))
		for _, row := range rows {
			if len(row.Columns) != 2 {
				fail(w, errors.New("row without key and value columns"))
				return
			}
			out[string(row.Columns[0].Value.Bytes)] = string(row.Columns[1].Value.Bytes)
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		st := tb.Group().Status()
		_ = json.NewEncoder(w).Encode(childStatus{
			Node: st.Node, Leader: st.Leader, Lease: tb.Group().HasLease(),
			Term: st.Term, Commit: st.Commit, Applied: st.AppliedIndex,
		})
	})
	return mux
}
