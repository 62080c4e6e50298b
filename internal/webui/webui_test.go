package webui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/server/servertest"
	"github.com/shaledb/shaledb/internal/webui"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	code, body := get(t, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, body)
	}
}

func mustContain(t *testing.T, what, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Fatalf("%s lacks %q:\n%s", what, w, body)
		}
	}
}

// TestPagesOnNonMasterNode serves the UI from the fourth node of a cluster
// (not a master, so every cluster-wide page goes through the master
// leader) and checks that the pages list the nodes and tables, in HTML and
// JSON, escape what they show, and that /metrics has the shale_ series.
func TestPagesOnNonMasterNode(t *testing.T) {
	c := servertest.NewCluster(t, 3)
	ms := c.Masters()
	// A name that must be escaped.
	const name = `kv<script>alert(1)</script>`
	created, err := servertest.Call(t, ms, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.CreateTableResponse, error) {
		return mc.CreateTable(ctx, servertest.KVTable(name, 4))
	})
	if err != nil {
		t.Fatal(err)
	}
	tableID := created.GetTable().GetTableId()
	s := c.Servers[c.AddNode()]
	if s.Master() != nil {
		t.Fatal("the fourth node became a master")
	}

	mux := http.NewServeMux()
	webui.Register(mux, s)
	hs := httptest.NewServer(mux)
	defer hs.Close()

	// Wait until the master sees four live tservers and every tablet of
	// the table has a leader.
	var tss []webui.TServer
	consensustest.WaitFor(t, 30*time.Second, "four live tservers", func() bool {
		getJSON(t, hs.URL+"/tservers?format=json", &tss)
		live := 0
		for _, ts := range tss {
			if ts.State == "LIVE" && !ts.LastHeartbeat.IsZero() {
				live++
			}
		}
		return live == 4
	})
	var table webui.TableDetail
	consensustest.WaitFor(t, 30*time.Second, "leaders of the table's tablets", func() bool {
		getJSON(t, fmt.Sprintf("%s/tables/%d?format=json", hs.URL, tableID), &table)
		for _, tb := range table.TabletList {
			if tb.LeaderNode == 0 {
				return false
			}
		}
		return len(table.TabletList) == 4
	})
	if table.Name != name || table.ReplicationFactor != 3 || len(table.Columns) != 2 {
		t.Fatalf("table: %+v", table)
	}
	for _, tb := range table.TabletList {
		if len(tb.Replicas) != 3 || !strings.HasPrefix(tb.Range, "hash [0x") {
			t.Fatalf("tablet: %+v", tb)
		}
	}

	var o webui.Overview
	getJSON(t, hs.URL+"/?format=json", &o)
	if o.NodeID != 4 || o.ClusterID == "" || o.Masters != 3 || o.MasterLeader == nil || o.TServersLive != 4 || o.Tables != 1 {
		t.Fatalf("overview: %+v", o)
	}
	var masters []webui.Master
	getJSON(t, hs.URL+"/masters?format=json", &masters)
	if len(masters) != 3 {
		t.Fatalf("masters: %+v", masters)
	}
	var tables []webui.Table
	getJSON(t, hs.URL+"/tables?format=json", &tables)
	if len(tables) != 1 || tables[0].ID != tableID || tables[0].Tablets != 4 || tables[0].Namespace != "test" {
		t.Fatalf("tables: %+v", tables)
	}
	// The balancer moves replicas to the new node.
	var local []webui.LocalTablet
	consensustest.WaitFor(t, 30*time.Second, "replicas on the fourth node", func() bool {
		getJSON(t, hs.URL+"/tablets?format=json", &local)
		return len(local) > 0 && local[0].Term > 0 && local[0].AppliedIndex > 0
	})

	// HTML pages.
	code, body := get(t, hs.URL+"/")
	if code != http.StatusOK {
		t.Fatalf("/: %d", code)
	}
	mustContain(t, "/", body, o.ClusterID, "Master leader", "4 live")
	_, body = get(t, hs.URL+"/tservers")
	for _, a := range c.Addrs {
		mustContain(t, "/tservers", body, a)
	}
	mustContain(t, "/tservers", body, "c.r.z0", "LIVE")
	_, body = get(t, hs.URL+"/masters")
	mustContain(t, "/masters", body, "LEADER", c.Addrs[0], c.Addrs[1], c.Addrs[2])
	for _, page := range []string{"/tables", fmt.Sprintf("/tables/%d", tableID)} {
		_, body = get(t, hs.URL+page)
		mustContain(t, page, body, "kv&lt;script&gt;alert(1)&lt;/script&gt;")
		if strings.Contains(body, "<script>") {
			t.Fatalf("%s: unescaped table name", page)
		}
	}
	_, body = get(t, fmt.Sprintf("%s/tables/%d", hs.URL, tableID))
	mustContain(t, "/tables/{id}", body, "hash [0x0000, ", "VOTER", "LEADER")
	_, body = get(t, hs.URL+"/tablets")
	mustContain(t, "/tablets", body, "Applied index")

	// Errors.
	if code, _ := get(t, hs.URL+"/tables/999?format=json"); code != http.StatusNotFound {
		t.Fatalf("unknown table: %d", code)
	}
	if code, _ := get(t, hs.URL+"/tables/nope"); code != http.StatusBadRequest {
		t.Fatalf("bad table id: %d", code)
	}

	// Metrics.
	code, body = get(t, hs.URL+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	mustContain(t, "/metrics", body, "shale_raft_proposals_total", "shale_raft_fsync_duration_seconds_bucket",
		"shale_pebble_read_amplification", "shale_tablets_hosted", "shale_transport_frames_sent_total",
		`shale_rpc_server_handling_seconds_bucket{method="CreateTablet",service="shaledb.tserver.TabletServer",le=`,
		"go_goroutines", "process_cpu_seconds_total")
	if strings.Contains(body, "\nshale_tablets_hosted 0\n") || strings.Contains(body, "\nshale_raft_messages_received_total 0\n") {
		t.Fatalf("/metrics: no tablets or no raft messages on the fourth node:\n%s", body)
	}
}
