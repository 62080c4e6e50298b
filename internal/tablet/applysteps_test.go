package tablet_test

import (
	"context"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/tablet"
)

// TestLargeApplyInSteps: a large transaction's apply, and a large aborted
// one's removal, go in bounded Raft entries (at least one per step of
// intents), leave no intent on any replica, and every read that runs
// while the steps go on sees the whole committed transaction (the part
// applied as versions, the rest through an overlay of its intents), or
// nothing of the aborted one, without waiting for the steps. One entry of
// a bulk load's million intents stalled every tablet of its node.
func TestLargeApplyInSteps(t *testing.T) {
	const step = 16
	rows := tablet.DeferMaxIntents + 88 // applied at once, not queued
	defer tablet.SetIntentStep(step)()
	h, res := newTxnHarness(t)
	id := desc.ID
	leader, clock := h.leaseholder(t, id)

	// resolve runs op on the leader while reads scan the tablet, and
	// checks that every read returns want rows and that op took at least
	// rows/step entries.
	resolve := func(what string, want int, op func(ctx context.Context) error) {
		t.Helper()
		intents, err := leader.IntentCount()
		if err != nil || intents < rows {
			t.Fatalf("%s: %d intents before (%v), want at least %d", what, intents, err, rows)
		}
		before := leader.Group().Status().AppliedIndex
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- op(ctx) }()
		reads := 0
		for finished := false; !finished; {
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				finished = true
			default:
			}
			got, _, err := scanAll(ctx, leader, tablet.TxnRead{Txn: testTxnID("reader"), AllowRestart: true})
			if err != nil {
				t.Fatalf("%s: read %d: %v", what, reads, err)
			}
			if len(got) != want {
				t.Fatalf("%s: read %d returned %d rows, want %d", what, reads, len(got), want)
			}
			reads++
		}
		// Each row is one stored (packed) intent; a step takes at most
		// step of them.
		if entries := leader.Group().Status().AppliedIndex - before; entries < uint64(rows/step) {
			t.Fatalf("%s: %d intents (%d rows) resolved in %d entries, want steps of at most %d", what, intents, rows, entries, step)
		}
		for _, r := range h.replicasOf(id) {
			consensustest.WaitFor(t, 20*time.Second, what+": no intent left on any replica", func() bool {
				n, err := r.IntentCount()
				if err != nil {
					t.Fatal(err)
				}
				return n == 0
			})
		}
		t.Logf("%s: %d intents, %d reads meanwhile", what, intents, reads)
	}

	big := testTxnID("big")
	for from := 0; from < rows; from += 100 {
		h.writeIntents(t, id, big, from, min(from+100, rows))
	}
	commit := clock.Now()
	res.set(big, tablet.TxnStatus{State: tablet.TxnCommitted, CommitHT: commit})
	resolve("apply", rows, func(ctx context.Context) error { return leader.ApplyTxn(ctx, big, commit) })

	aborted := testTxnID("aborted")
	for from := rows; from < 2*rows; from += 100 {
		h.writeIntents(t, id, aborted, from, min(from+100, 2*rows))
	}
	res.set(aborted, tablet.TxnStatus{State: tablet.TxnAborted})
	resolve("removal", rows, func(ctx context.Context) error { return leader.RemoveTxn(ctx, aborted, false, 0) })
}
