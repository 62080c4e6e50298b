package storage

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// TestFreshEngineFlushesRampingMemtables: Pebble grows a new engine's
// memtables from 256 KiB and flushes none until the queued ones reach half
// of MemTableSize, so 24 MiB written into a fresh engine left 7 memtables
// for every read to seek. The engine flushes them once rampMemtables are
// queued, and loses nothing.
func TestFreshEngineFlushesRampingMemtables(t *testing.T) {
	e, err := Open(t.TempDir(), Options{Comparer: pebble.DefaultComparer, MemTableSize: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	before := rampFlushes.Load()
	val := make([]byte, 1000)
	const batches, perBatch = 384, 64 // 24 MiB of values
	for i := range batches {
		b := e.NewBatch()
		for j := range perBatch {
			if err := b.Set(binary.BigEndian.AppendUint64(nil, uint64(i*perBatch+j)), val, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Commit(NoSync); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	// At most rampMemtables stay: a rotation while a ramp flush runs is
	// not looked at again (looking again flushed more small memtables
	// during pgbench -i, and TPC-B right after it fell from 95-154 to 70
	// tps), so the last writes may leave exactly that many.
	for e.Metrics().MemTable.Count > rampMemtables {
		if time.Now().After(deadline) {
			t.Fatalf("%d memtables after 24 MiB written", e.Metrics().MemTable.Count)
		}
		time.Sleep(10 * time.Millisecond) // polling Pebble's flush; no event to wait on
	}
	if rampFlushes.Load() == before {
		t.Fatal("no ramp flush was asked for")
	}
	for _, k := range []uint64{0, 12345, batches*perBatch - 1} {
		v, closer, err := e.Get(binary.BigEndian.AppendUint64(nil, k))
		if err != nil || len(v) != len(val) {
			t.Fatalf("key %d: %d bytes, %v", k, len(v), err)
		}
		_ = closer.Close()
	}
}
