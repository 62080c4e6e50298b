package client_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/tablet"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
	"github.com/shaledb/shaledb/internal/txn"
)

// statusRecord reads a transaction's status record straight from the
// status table (found false: there is none).
func statusRecord(t *testing.T, cl *client.Client, id docdb.TxnID) (tablet.TxnState, bool) {
	t.Helper()
	ctx := ctxT(t)
	st, err := cl.OpenTable(ctx, txn.Namespace, txn.TableName)
	if client.IsTableNotFound(err) {
		return 0, false // created on first use
	}
	if err != nil {
		t.Fatal(err)
	}
	r, found, err := st.Get(ctx, client.Row{"txn_id": docdb.Bytes(id[:])})
	if err != nil {
		t.Fatal(err)
	}
	if !found {
		return 0, false
	}
	return tablet.TxnState(r["state"].Int), true
}

// warmUp runs a transaction on every tablet of tb, so that the tablets
// have leaders and the status table exists.
func warmUp(t *testing.T, cl *client.Client, tb *client.Table) {
	t.Helper()
	ops := make([]client.Op, 50)
	for i := range ops {
		ops[i] = client.Op{Kind: client.OpPut, Row: client.Row{"k": docdb.Text(fmt.Sprint("warm", i)), "v": docdb.Int64(0)}}
	}
	if err := cl.RunTxn(ctxT(t), client.TxnOptions{}, func(ctx context.Context, tx *client.Txn) error {
		return tx.Apply(ctx, tb, ops)
	}); err != nil {
		t.Fatal(err)
	}
}

// twoTablets returns two keys of tb on different tablets.
func twoTablets(t *testing.T, tb *client.Table) (string, string) {
	t.Helper()
	first := map[uint64]string{}
	for i := 0; i < 1000; i++ {
		k := "key" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		id, err := tb.TabletOf(ctxT(t), client.Row{"k": docdb.Text(k)})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := first[id]; !ok {
			first[id] = k
			if len(first) == 2 {
				var ks []string
				for _, k := range first {
					ks = append(ks, k)
				}
				return ks[0], ks[1]
			}
		}
	}
	t.Fatal("no two keys on different tablets")
	return "", ""
}

// TestTxnRecordWrittenByCommit: a short transaction writes its intents
// with no status record and creates the record COMMITTED with its commit.
// Meanwhile its intents read as PENDING: readers do not see them and do
// not wait, writers conflict with them (rather than taking them for an
// abandoned transaction's and removing them).
func TestTxnRecordWrittenByCommit(t *testing.T) {
	c, cl, tb := txnSetup(t, "recordless", 4)
	ctx := ctxT(t)
	warmUp(t, cl, tb)
	ka, kb := twoTablets(t, tb)
	start := time.Now()
	tx := begin(t, cl, client.Snapshot)
	if err := tx.Apply(ctx, tb, []client.Op{
		{Kind: client.OpPut, Row: client.Row{"k": docdb.Text(ka), "v": docdb.Int64(1)}},
		{Kind: client.OpPut, Row: client.Row{"k": docdb.Text(kb), "v": docdb.Int64(1)}},
	}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > client.LazyRecordWindow/2 {
		t.Skipf("the first write took %v: too slow to see the transaction without its record", d)
	}
	if st, found := statusRecord(t, cl, tx.ID()); found {
		t.Fatalf("the status record exists (%v) before the commit", st)
	}

	// Readers: plain and transactional, neither sees the intents.
	if _, found, err := tb.Get(ctx, client.Row{"k": docdb.Text(ka)}); err != nil || found {
		t.Fatalf("plain read: found %v err %v", found, err)
	}
	rd := begin(t, cl, client.Snapshot)
	if _, found, err := rd.Get(ctx, tb, client.Row{"k": docdb.Text(kb)}); err != nil || found {
		t.Fatalf("transactional read: found %v err %v", found, err)
	}
	// Writers conflict with a pending transaction.
	for _, wait := range []client.WaitPolicy{client.FailOnConflict, client.NoWait} {
		w, err := cl.Begin(ctx, client.TxnOptions{Wait: wait})
		if err != nil {
			t.Fatal(err)
		}
		err = w.Put(ctx, tb, client.Row{"k": docdb.Text(ka), "v": docdb.Int64(2)})
		if code, _ := client.CodeOf(err); code != client.CodeTxnConflict && code != client.CodeLockNotAvailable {
			t.Fatalf("wait policy %v: writing a row of the pending transaction: %v", wait, err)
		}
		if err := w.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
	}

	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if st, found := statusRecord(t, cl, tx.ID()); !found || st != tablet.TxnCommitted {
		t.Fatalf("after the commit the record is %v (found %v)", st, found)
	}
	for _, k := range []string{ka, kb} {
		if r, found, err := tb.Get(ctx, client.Row{"k": docdb.Text(k)}); err != nil || !found || val(r) != 1 {
			t.Fatalf("%s after the commit: %v %v %v", k, r, found, err)
		}
	}
	if err := rd.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitNoIntents(t, c)
}

// TestTxnRecordlessAbandoned: a transaction that dies before its record
// exists leaves intents whose record never gets created. Once the
// transaction is older than the expiry, the cleanup loop writes its record
// ABORTED and removes the intents; a late CREATE or COMMIT finds it
// aborted.
func TestTxnRecordlessAbandoned(t *testing.T) {
	c, cl, tb := txnSetup(t, "recordless-abandoned", 2)
	ctx := ctxT(t)
	warmUp(t, cl, tb)
	start := time.Now()
	tx := begin(t, cl, client.Snapshot)
	if err := tx.Put(ctx, tb, client.Row{"k": docdb.Text("x"), "v": docdb.Int64(1)}); err != nil {
		t.Fatal(err)
	}
	tx.Abandon() // before its heartbeat would create the record
	if d := time.Since(start); d > client.LazyRecordWindow/2 {
		t.Skipf("the first write took %v: too slow to abandon the transaction before its record exists", d)
	}
	if st, found := statusRecord(t, cl, tx.ID()); found {
		t.Fatalf("the status record exists (%v)", st)
	}
	waitNoIntents(t, c)
	t.Logf("intents removed after %v (expiry 2 s)", time.Since(start).Round(time.Millisecond))
	if st, found := statusRecord(t, cl, tx.ID()); !found || st != tablet.TxnAborted {
		t.Fatalf("the record is %v (found %v), want ABORTED", st, found)
	}
	for _, op := range []tspb.TxnStatusRequest_Op{tspb.TxnStatusRequest_CREATE, tspb.TxnStatusRequest_COMMIT} {
		res, err := cl.TxnStatus(ctx, op, tx.ID(), 0, nil)
		if err != nil || res.State != tspb.TxnState_ABORTED {
			t.Fatalf("late %v: %v %v", op, res.State, err)
		}
	}
	if _, found, err := tb.Get(ctx, client.Row{"k": docdb.Text("x")}); err != nil || found {
		t.Fatalf("the abandoned write is visible: found %v err %v", found, err)
	}
}

// TestTxnRecordCreatedByHeartbeat: a transaction that lives longer gets
// its record from its heartbeat (PENDING, kept alive) and commits as
// usual; one whose first write comes late creates its record before
// writing.
func TestTxnRecordCreatedByHeartbeat(t *testing.T) {
	_, cl, tb := txnSetup(t, "record-heartbeat", 2)
	ctx := ctxT(t)
	warmUp(t, cl, tb)
	tx := begin(t, cl, client.Snapshot)
	if err := tx.Put(ctx, tb, client.Row{"k": docdb.Text("a"), "v": docdb.Int64(1)}); err != nil {
		t.Fatal(err)
	}
	consensustest.WaitFor(t, 10*time.Second, "the heartbeat creates the record", func() bool {
		st, found := statusRecord(t, cl, tx.ID())
		if found && st != tablet.TxnPending {
			t.Fatalf("record %v", st)
		}
		return found
	})
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	late := begin(t, cl, client.Snapshot)
	late.Age(client.LazyRecordWindow)
	if err := late.Put(ctx, tb, client.Row{"k": docdb.Text("b"), "v": docdb.Int64(1)}); err != nil {
		t.Fatal(err)
	}
	if st, found := statusRecord(t, cl, late.ID()); !found || st != tablet.TxnPending {
		t.Fatalf("a late first write: record %v (found %v), want PENDING", st, found)
	}
	if err := late.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if r, found, err := tb.Get(ctx, client.Row{"k": docdb.Text(k)}); err != nil || !found || val(r) != 1 {
			t.Fatalf("%s: %v %v %v", k, r, found, err)
		}
	}
}

// TestTxnRecordCommitRacesGet: a COMMIT of a transaction with no record
// races a GET (a reader or writer that met its intents). For an old
// transaction the GET writes the record ABORTED, so exactly one of them
// wins: never a GET answering ABORTED (after which intents are removed)
// and a COMMIT answering COMMITTED. For a young one the GET answers
// PENDING and the COMMIT always succeeds.
func TestTxnRecordCommitRacesGet(t *testing.T) {
	_, cl, tb := txnSetup(t, "record-race", 2)
	ctx := ctxT(t)
	warmUp(t, cl, tb)
	commits := 0
	for i := 0; i < 40; i++ {
		old := i%2 == 0
		born := time.Now()
		if old {
			born = born.Add(-10 * time.Second) // beyond the window and the 2 s expiry
		}
		id := txn.NewID(born, [8]byte{byte(i), 0xac})
		var get, commit client.TxnStatusResult
		var getErr, commitErr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			get, getErr = cl.TxnStatus(ctx, tspb.TxnStatusRequest_GET, id, 0, nil)
		}()
		commit, commitErr = cl.TxnStatus(ctx, tspb.TxnStatusRequest_COMMIT, id, 0, nil)
		<-done
		if getErr != nil || commitErr != nil {
			t.Fatalf("get: %v, commit: %v", getErr, commitErr)
		}
		switch {
		case commit.State == tspb.TxnState_COMMITTED && get.State == tspb.TxnState_ABORTED:
			t.Fatalf("txn %d (old %v): GET answered ABORTED and COMMIT COMMITTED", i, old)
		case !old && commit.State != tspb.TxnState_COMMITTED:
			t.Fatalf("txn %d: a young transaction's COMMIT answered %v (GET %v)", i, commit.State, get.State)
		case old && commit.State == tspb.TxnState_ABORTED && get.State != tspb.TxnState_ABORTED:
			t.Fatalf("txn %d: COMMIT answered ABORTED, GET %v", i, get.State)
		}
		if commit.State == tspb.TxnState_COMMITTED {
			commits++
		}
		st, found := statusRecord(t, cl, id)
		if want := tablet.TxnState(commit.State); !found || st != want {
			t.Fatalf("txn %d: record %v (found %v), COMMIT answered %v", i, st, found, commit.State)
		}
	}
	t.Logf("%d of 40 commits won", commits)
}
