package txncheck_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/shaledb/shaledb/internal/txncheck"
)

// bank builds hand-made histories: it keeps the current version of every
// account and a clock that ticks at every operation.
type bank struct {
	h   *txncheck.History
	cur []txncheck.Version
	now int64
}

func newBank(accounts int, initial int64) *bank {
	b := &bank{h: &txncheck.History{Accounts: accounts, Initial: initial}, cur: make([]txncheck.Version, accounts)}
	for i := range b.cur {
		b.cur[i] = txncheck.Version{Balance: initial}
	}
	return b
}

func (b *bank) tick() int64 { b.now += 10; return b.now }

// transfer records a transfer reading the current versions; apply says
// whether its writes take effect (a committed one, or an unknown one that
// did commit).
func (b *bank) transfer(txn string, from, to int, amount int64, o txncheck.Outcome, apply bool) *txncheck.Transfer {
	t := txncheck.Transfer{Txn: txn, From: from, To: to, Amount: amount, ReadFrom: b.cur[from], ReadTo: b.cur[to],
		Invoke: b.tick(), Outcome: o}
	if o != txncheck.Unknown {
		t.Complete = b.tick()
	}
	if apply {
		b.cur[from] = txncheck.Version{Balance: t.ReadFrom.Balance - amount, Writer: txn}
		b.cur[to] = txncheck.Version{Balance: t.ReadTo.Balance + amount, Writer: txn}
	}
	b.h.Transfers = append(b.h.Transfers, t)
	return &b.h.Transfers[len(b.h.Transfers)-1]
}

func (b *bank) read(final bool) *txncheck.Read {
	r := txncheck.Read{Invoke: b.tick(), Balances: append([]txncheck.Version(nil), b.cur...), Final: final}
	r.Complete = b.tick()
	b.h.Reads = append(b.h.Reads, r)
	return &b.h.Reads[len(b.h.Reads)-1]
}

func kinds(r *txncheck.Result) map[string]bool {
	out := map[string]bool{}
	for _, a := range r.Anomalies {
		out[a.Kind] = true
	}
	return out
}

func check(t *testing.T, h *txncheck.History) *txncheck.Result {
	t.Helper()
	r := txncheck.Check(h, txncheck.Options{})
	t.Logf("%s", r)
	return r
}

// mustFind fails unless the result has every anomaly kind of want.
func mustFind(t *testing.T, r *txncheck.Result, want ...string) {
	t.Helper()
	if r.OK() {
		t.Fatal("the history passed")
	}
	k := kinds(r)
	for _, w := range want {
		if !k[w] {
			t.Errorf("no %s anomaly", w)
		}
	}
}

// TestCheckPasses: a valid history of committed, aborted and unknown
// transfers (one that committed, seen only by the final read, one that did
// not) passes every check, and the unknown ones are resolved.
func TestCheckPasses(t *testing.T) {
	b := newBank(4, 100)
	b.transfer("t1", 0, 1, 10, txncheck.Committed, true)
	b.read(false)
	b.transfer("t2", 1, 2, 5, txncheck.Aborted, false)
	b.transfer("t3", 2, 3, 7, txncheck.Committed, true)
	b.transfer("u1", 3, 0, 3, txncheck.Unknown, false) // never applied
	b.read(false)
	b.transfer("t4", 0, 2, 1, txncheck.Committed, true)
	b.transfer("u2", 1, 3, 2, txncheck.Unknown, true) // applied; only the final read sees it
	b.read(true)
	r := check(t, b.h)
	if !r.OK() {
		t.Fatalf("a valid history failed: %s", r)
	}
	if r.Unknown != 2 || r.UnknownCommitted != 1 || r.UnknownAborted != 1 || r.UnknownCommittedTxns[0] != "u2" {
		t.Fatalf("unknown transfers resolved as %+v", r)
	}
	if r.BalanceSolutions != 1 {
		t.Fatalf("balance solutions %d, want exactly 1", r.BalanceSolutions)
	}
}

// TestCheckConcurrentPasses: overlapping operations with a valid
// linearization (a read concurrent with the transfer it does not see yet)
// pass.
func TestCheckConcurrentPasses(t *testing.T) {
	b := newBank(2, 50)
	before := append([]txncheck.Version(nil), b.cur...)
	tr := b.transfer("t1", 0, 1, 5, txncheck.Committed, true)
	// A read that overlaps t1 and still sees the versions before it.
	b.h.Reads = append(b.h.Reads, txncheck.Read{Invoke: tr.Invoke - 5, Complete: tr.Complete + 5, Balances: before})
	b.read(true)
	if r := check(t, b.h); !r.OK() {
		t.Fatalf("a valid concurrent history failed: %s", r)
	}
}

// TestCheckLostUpdate: two committed transfers both read account 0's
// initial balance and both wrote it; the second overwrote the first.
func TestCheckLostUpdate(t *testing.T) {
	b := newBank(3, 100)
	start := append([]txncheck.Version(nil), b.cur...)
	b.transfer("t1", 0, 1, 10, txncheck.Committed, true)
	b.cur[0] = start[0] // t2 reads account 0 as if t1 had not written it
	b.transfer("t2", 0, 2, 20, txncheck.Committed, true)
	b.read(true)
	r := check(t, b.h)
	mustFind(t, r, txncheck.KindLostUpdate, txncheck.KindBalance, txncheck.KindSnapshotTotal)
}

// TestCheckTornTransfer: an unknown transfer (its coordinator killed)
// applied to one account only; totals then differ, the balances admit no
// all-or-nothing resolution, and the versions show the tear.
func TestCheckTornTransfer(t *testing.T) {
	b := newBank(3, 100)
	b.transfer("t1", 0, 1, 10, txncheck.Committed, true)
	u := b.transfer("u", 1, 2, 4, txncheck.Unknown, false)
	b.cur[1] = txncheck.Version{Balance: u.ReadFrom.Balance - u.Amount, Writer: "u"} // only the debit landed
	b.transfer("t2", 2, 0, 1, txncheck.Committed, true)
	b.read(true)
	r := check(t, b.h)
	mustFind(t, r, txncheck.KindTornTransfer, txncheck.KindBalance)
	if r.BalanceSolutions != 0 {
		t.Fatalf("balance solutions %d, want 0", r.BalanceSolutions)
	}
}

// TestCheckWrongSnapshot: two snapshots each see one of two independent
// committed transfers and not the other (a long fork). Every total is
// right and each account on its own is fine; only the dependency graph
// shows the cycle.
func TestCheckWrongSnapshot(t *testing.T) {
	b := newBank(4, 100)
	init := append([]txncheck.Version(nil), b.cur...)
	t1 := b.transfer("t1", 0, 1, 10, txncheck.Committed, true)
	t2 := b.transfer("t2", 2, 3, 10, txncheck.Committed, true)
	after := append([]txncheck.Version(nil), b.cur...)
	// Both reads overlap both transfers, so real time allows either order.
	lo, hi := t1.Invoke-1, t2.Complete+1
	sees1 := []txncheck.Version{after[0], after[1], init[2], init[3]}
	sees2 := []txncheck.Version{init[0], init[1], after[2], after[3]}
	b.h.Reads = append(b.h.Reads,
		txncheck.Read{Proc: "s1", Invoke: lo, Complete: hi, Balances: sees1},
		txncheck.Read{Proc: "s2", Invoke: lo, Complete: hi, Balances: sees2})
	b.read(true)
	r := check(t, b.h)
	mustFind(t, r, txncheck.KindCycle)
	if k := kinds(r); k[txncheck.KindSnapshotTotal] || k[txncheck.KindLinearizability] {
		t.Fatalf("only the cycle should show: %s", r)
	}
	if !strings.Contains(r.Anomalies[0].Detail, "G2") {
		t.Fatalf("want a G2 cycle: %s", r.Anomalies[0].Detail)
	}
}

// TestCheckFracturedRead: a snapshot that sees the second of two
// transfers on one account and not the first on another.
func TestCheckFracturedRead(t *testing.T) {
	b := newBank(3, 100)
	b.transfer("t1", 0, 1, 10, txncheck.Committed, true)
	mid := append([]txncheck.Version(nil), b.cur...)
	b.transfer("t2", 1, 2, 10, txncheck.Committed, true)
	// Sees t2 on account 2 but account 1 as t1 left it: total off by 10,
	// and a cycle read -rw-> t2 -wr-> read.
	b.h.Reads = append(b.h.Reads, txncheck.Read{Invoke: 0, Complete: b.tick(), Balances: []txncheck.Version{mid[0], mid[1], b.cur[2]}})
	b.read(true)
	r := check(t, b.h)
	mustFind(t, r, txncheck.KindSnapshotTotal, txncheck.KindCycle)
}

// TestCheckAbortedRead: a read sees the write of an aborted transfer.
func TestCheckAbortedRead(t *testing.T) {
	b := newBank(2, 100)
	b.transfer("t1", 0, 1, 10, txncheck.Aborted, true) // aborted, yet its writes are visible
	b.read(true)
	r := check(t, b.h)
	mustFind(t, r, txncheck.KindAbortedRead)
}

// TestCheckGarbageRead: a version whose balance is not what its writer
// wrote, and one written by no transfer at all.
func TestCheckGarbageRead(t *testing.T) {
	b := newBank(2, 100)
	b.transfer("t1", 0, 1, 10, txncheck.Committed, true)
	b.cur[0].Balance += 3
	b.cur[1].Balance -= 3
	b.read(false)
	b.cur[0].Balance -= 3
	b.cur[1].Balance += 3
	fin := b.read(true)
	fin.Balances[0].Writer = "nobody"
	r := check(t, b.h)
	mustFind(t, r, txncheck.KindGarbageRead)
	if n := len(r.Anomalies); n < 3 {
		t.Fatalf("want both garbage reads and the invented writer reported: %s", r)
	}
}

// TestCheckStaleRead: a read that began after a transfer had committed
// does not see it. The totals are right and the graph has no cycle (the
// read can be ordered first); only real time (porcupine) refutes it.
func TestCheckStaleRead(t *testing.T) {
	b := newBank(2, 100)
	init := append([]txncheck.Version(nil), b.cur...)
	b.transfer("t1", 0, 1, 10, txncheck.Committed, true)
	b.h.Reads = append(b.h.Reads, txncheck.Read{Invoke: b.tick(), Complete: b.tick(), Balances: init})
	b.read(true)
	r := check(t, b.h)
	mustFind(t, r, txncheck.KindLinearizability)
	if len(r.Anomalies) != 2 || r.Linearizable != porcupine.Illegal {
		t.Fatalf("want exactly the two accounts' linearizability failures: %s", r)
	}
}

// TestCheckNoFinalRead: without a final state nothing can be resolved.
func TestCheckNoFinalRead(t *testing.T) {
	b := newBank(2, 100)
	b.transfer("t1", 0, 1, 10, txncheck.Committed, true)
	b.read(false)
	mustFind(t, check(t, b.h), txncheck.KindInput)
}

// TestRecorderLoad: what a Recorder writes loads back; a transfer whose
// commit never answered is unknown, and the line a killed process cut off
// is dropped and counted.
func TestRecorderLoad(t *testing.T) {
	var p1, p2 bytes.Buffer
	r1, r2 := txncheck.NewRecorder(&p1), txncheck.NewRecorder(&p2)
	r1.Open(2, 100)
	r2.Open(2, 100)
	r1.Transfer(txncheck.Transfer{Txn: "a", From: 0, To: 1, Amount: 5, ReadFrom: txncheck.Version{Balance: 100}, ReadTo: txncheck.Version{Balance: 100}, Invoke: 1})
	r1.Outcome("a", txncheck.Committed, 2)
	r1.Transfer(txncheck.Transfer{Txn: "b", From: 1, To: 0, Amount: 1, Invoke: 3, Complete: 4, Outcome: txncheck.Aborted,
		ReadFrom: txncheck.Version{Balance: 105, Writer: "a"}, ReadTo: txncheck.Version{Balance: 95, Writer: "a"}})
	r2.Transfer(txncheck.Transfer{Txn: "c", From: 1, To: 0, Amount: 2, Invoke: 5,
		ReadFrom: txncheck.Version{Balance: 105, Writer: "a"}, ReadTo: txncheck.Version{Balance: 95, Writer: "a"}})
	r2.Read(txncheck.Read{Invoke: 6, Complete: 7, Balances: []txncheck.Version{{Balance: 97, Writer: "c"}, {Balance: 103, Writer: "c"}}, Final: true})
	if r1.Err() != nil || r2.Err() != nil {
		t.Fatal(r1.Err(), r2.Err())
	}
	p2.WriteString(`{"k":"transfer","txn":"d","fr`) // killed mid-line
	h, err := txncheck.Load(&p1, &p2)
	if err != nil {
		t.Fatal(err)
	}
	if h.Accounts != 2 || h.Initial != 100 || len(h.Transfers) != 3 || len(h.Reads) != 1 || h.Torn != 1 {
		t.Fatalf("loaded %+v", h)
	}
	got := fmt.Sprint(h.Transfers[0].Outcome, h.Transfers[1].Outcome, h.Transfers[2].Outcome)
	if got != "committedabortedunknown" {
		t.Fatalf("outcomes %s", got)
	}
	r := check(t, h)
	if !r.OK() || r.UnknownCommitted != 1 {
		t.Fatalf("%s", r)
	}
	// A cut-off line anywhere but at the end is an error.
	if _, err := txncheck.Load(strings.NewReader("{\"k\":\"open\",\"accounts\":2,\"initial\":1}\n{\"k\":\n{\"k\":\"open\",\"accounts\":2,\"initial\":1}\n")); err == nil {
		t.Fatal("a malformed line in the middle was accepted")
	}
}
