package cli

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

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
