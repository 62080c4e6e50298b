package client

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/master/masterpb"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

func testLocations(id uint32, bounds ...string) *masterpb.GetTableResponse {
	resp := &masterpb.GetTableResponse{Table: &masterpb.TableInfo{TableId: id, Namespace: "ns", Name: "t"}}
	for i := 0; i+1 < len(bounds); i++ {
		var end []byte
		if bounds[i+1] != "" {
			end = []byte(bounds[i+1])
		}
		resp.Tablets = append(resp.Tablets, &masterpb.TabletLocation{
			Tablet:   &tspb.TabletDescriptor{TabletId: uint64(100 + i), Span: &tspb.Span{Start: []byte(bounds[i]), End: end}},
			Replicas: []*masterpb.Replica{{NodeId: 1, Addr: "a1"}, {NodeId: 2, Addr: "a2"}}, LeaderNode: 2,
		})
	}
	return resp
}

func TestLocate(t *testing.T) {
	m := newTableMeta(testLocations(1, "b", "d", "f", ""))
	for _, tc := range []struct {
		key  string
		want uint64 // 0: none
	}{{"a", 0}, {"b", 100}, {"c", 100}, {"d", 101}, {"e", 101}, {"f", 102}, {"zzz", 102}} {
		tab := m.locate([]byte(tc.key))
		var got uint64
		if tab != nil {
			got = tab.id
		}
		if got != tc.want {
			t.Errorf("locate(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
	if i := m.firstEndingAfter([]byte("a")); i != 0 {
		t.Errorf("firstEndingAfter(a) = %d", i)
	}
	if i := m.lastStartingBefore([]byte("d")); i != 0 {
		t.Errorf("lastStartingBefore(d) = %d", i)
	}
	if i := m.lastStartingBefore(nil); i != 2 {
		t.Errorf("lastStartingBefore(nil) = %d", i)
	}
	tab := m.tablets[0]
	if l := tab.leader.Load(); l == nil || l.node != 2 {
		t.Fatalf("leader from the master: %v", l)
	}
	tab.setLeader(1, "")
	if l := tab.leader.Load(); l.addr != "a1" {
		t.Fatalf("hint by node: %v", l)
	}
	tab.setLeader(7, "a7")
	if l := tab.leader.Load(); l.addr != "a7" || l.node != 7 {
		t.Fatalf("hint to a new replica: %v", l)
	}
}

// TestReloadCoalesces: concurrent callers that find the same locations
// stale share one master lookup.
func TestReloadCoalesces(t *testing.T) {
	var calls atomic.Int64
	release := make(chan struct{})
	mc := newMetaCache(func(ctx context.Context, req *masterpb.GetTableRequest) (*masterpb.GetTableResponse, error) {
		calls.Add(1)
		<-release
		return testLocations(req.GetTableId(), "", ""), nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	got := make([]*tableMeta, 32)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := mc.get(ctx, 5, nil)
			if err != nil {
				t.Error(err)
			}
			got[i] = m
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	if calls.Load() != 1 {
		t.Fatalf("%d master lookups for 32 callers", calls.Load())
	}
	for _, m := range got {
		if m != got[0] {
			t.Fatal("callers got different locations")
		}
	}
	// The cached snapshot is served; only a caller holding it as stale
	// reloads, and a caller with an older stale snapshot does not.
	if m, _ := mc.get(ctx, 5, nil); m != got[0] || calls.Load() != 1 {
		t.Fatal("a cached lookup went to the master")
	}
	fresh, _ := mc.get(ctx, 5, got[0])
	if fresh == got[0] || calls.Load() != 2 {
		t.Fatal("a stale snapshot was not reloaded")
	}
	if m, _ := mc.get(ctx, 5, got[0]); m != fresh || calls.Load() != 2 {
		t.Fatal("an already refreshed snapshot was reloaded again")
	}
}

// TestOpenCoalesces: concurrent opens of an uncached name share one
// lookup, and a dropped table is forgotten by name.
func TestOpenCoalesces(t *testing.T) {
	var calls atomic.Int64
	release := make(chan struct{})
	mc := newMetaCache(func(ctx context.Context, req *masterpb.GetTableRequest) (*masterpb.GetTableResponse, error) {
		calls.Add(1)
		<-release
		return testLocations(9, "", ""), nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if m, err := mc.byName(ctx, "ns", "t"); err != nil || m.info.GetTableId() != 9 {
				t.Errorf("byName: %v, %v", m, err)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	if calls.Load() != 1 {
		t.Fatalf("%d master lookups for 16 opens", calls.Load())
	}
	mc.forgetName("ns", "t")
	if _, err := mc.byName(ctx, "ns", "t"); err != nil || calls.Load() != 2 {
		t.Fatalf("after forgetName: %v, %d lookups", err, calls.Load())
	}
}
