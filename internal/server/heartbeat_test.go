package server

import (
	"slices"
	"testing"

	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

func status(id, applied uint64, role tspb.TabletStatus_Role) *tspb.TabletStatus {
	return &tspb.TabletStatus{Tablet: &tspb.TabletDescriptor{TabletId: id}, AppliedIndex: applied, Role: role, Voters: []uint64{1, 2, 3}}
}

// TestIncrementalReports: the first report is full; after it is
// acknowledged only changed and removed tablets travel; a leader that asks
// for a full report gets one.
func TestIncrementalReports(t *testing.T) {
	h := &heartbeater{needFull: true}
	ids := func(r []*tspb.TabletStatus) []uint64 {
		var out []uint64
		for _, s := range r {
			out = append(out, s.GetTablet().GetTabletId())
		}
		slices.Sort(out)
		return out
	}
	reported := func(statuses []*tspb.TabletStatus) ([]uint64, []uint64, bool) {
		req := h.request(statuses, 0)
		var sts []*tspb.TabletStatus
		for _, r := range req.GetTablets() {
			sts = append(sts, r.GetStatus())
		}
		removed := append([]uint64(nil), req.GetRemovedTablets()...)
		slices.Sort(removed)
		return ids(sts), removed, req.GetFullReport()
	}
	ack := func() { h.sent, h.needFull = h.pending, false } // what send does on OK

	all := []*tspb.TabletStatus{status(1, 5, 0), status(2, 5, 1), status(3, 5, 0)}
	if got, _, full := reported(all); !full || !slices.Equal(got, []uint64{1, 2, 3}) {
		t.Fatalf("first report: %v full=%v", got, full)
	}
	ack()
	if got, removed, full := reported(all); full || len(got) != 0 || len(removed) != 0 {
		t.Fatalf("idle report: %v removed %v full=%v", got, removed, full)
	}
	ack()
	next := []*tspb.TabletStatus{status(1, 6, 0), status(2, 5, 0), status(4, 5, 0)}
	got, removed, _ := reported(next)
	if !slices.Equal(got, []uint64{1, 2, 4}) || !slices.Equal(removed, []uint64{3}) {
		t.Fatalf("changes: %v removed %v", got, removed)
	}
	// Not acknowledged: the same changes are sent again.
	if again, removedAgain, _ := reported(next); !slices.Equal(again, got) || !slices.Equal(removedAgain, removed) {
		t.Fatalf("unacknowledged changes not resent: %v %v", again, removedAgain)
	}
	ack()
	h.needFull = true // a new leader asked
	if got, _, full := reported(next); !full || !slices.Equal(got, []uint64{1, 2, 4}) {
		t.Fatalf("full report on request: %v full=%v", got, full)
	}
}
