package txn

import (
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/tablet"
)

func TestIDTime(t *testing.T) {
	now := time.Unix(1_800_000_000, 123_456_789)
	id := NewID(now, [8]byte{1, 2, 3, 4, 5, 6, 7, 8})
	if got := IDTime(id); !got.Equal(now) {
		t.Fatalf("IDTime = %v, want %v", got, now)
	}
	if later := NewID(now.Add(time.Nanosecond), [8]byte{}); string(later[:]) <= string(id[:]) {
		t.Fatal("a later id does not sort after an earlier one")
	}
}

// TestTransitionMissingRecord: intents may exist before their record (a
// short transaction creates it with its commit), so a missing record is
// PENDING while the transaction is young, and is written ABORTED once it
// is older than the window for lazy records plus the expiry, after which neither CREATE nor COMMIT revives
// it.
func TestTransitionMissingRecord(t *testing.T) {
	const expiry = 2 * time.Second
	born := time.Unix(1_800_000_000, 0)
	id := NewID(born, [8]byte{9})
	young := hlc.FromTime(born.Add(LazyRecordWindow + expiry - time.Millisecond))
	old := hlc.FromTime(born.Add(LazyRecordWindow + expiry + time.Millisecond))
	commitHT := young + 7

	for _, tc := range []struct {
		name      string
		op        Op
		now       hlc.Timestamp
		write     bool
		state     tablet.TxnState
		stateNext tablet.TxnState // of the written record
	}{
		{"get young", OpGet, young, false, tablet.TxnPending, 0},
		{"get old", OpGet, old, true, tablet.TxnAborted, tablet.TxnAborted},
		{"create", OpCreate, old, true, tablet.TxnPending, tablet.TxnPending},
		{"commit young", OpCommit, young, true, tablet.TxnCommitted, tablet.TxnCommitted},
		{"commit old", OpCommit, old, true, tablet.TxnCommitted, tablet.TxnCommitted},
		{"abort", OpAbort, young, true, tablet.TxnAborted, tablet.TxnAborted},
		{"heartbeat", OpHeartbeat, young, false, tablet.TxnAborted, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next, write, ans := Transition(tc.op, id, Record{}, false, tc.now, commitHT, expiry)
			if write != tc.write || ans.State != tc.state {
				t.Fatalf("write %v answer %v, want write %v answer %v", write, ans.State, tc.write, tc.state)
			}
			if write && next.State != tc.stateNext {
				t.Fatalf("writes %v, want %v", next.State, tc.stateNext)
			}
			if tc.op == OpCommit && (next.CommitHT != commitHT || ans.CommitHT != commitHT) {
				t.Fatalf("commit time %v / %v, want %v", next.CommitHT, ans.CommitHT, commitHT)
			}
		})
	}

	// Once GET wrote the old record ABORTED, a late CREATE or COMMIT finds
	// it so.
	aborted, _, _ := Transition(OpGet, id, Record{}, false, old, 0, expiry)
	for _, op := range []Op{OpCreate, OpCommit, OpHeartbeat} {
		if _, write, ans := Transition(op, id, aborted, true, old, old, expiry); write || ans.State != tablet.TxnAborted {
			t.Fatalf("op %d on an aborted record: write %v answer %v", op, write, ans.State)
		}
	}
	// A committed record stays committed at its time.
	committed, _, _ := Transition(OpCommit, id, Record{}, false, young, commitHT, expiry)
	for _, op := range []Op{OpGet, OpCreate, OpCommit, OpAbort} {
		if _, write, ans := Transition(op, id, committed, true, old, old, expiry); write || ans.State != tablet.TxnCommitted || ans.CommitHT != commitHT {
			t.Fatalf("op %d on a committed record: write %v answer %+v", op, write, ans)
		}
	}
}
