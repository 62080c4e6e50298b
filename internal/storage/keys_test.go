package storage

import (
	"bytes"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct{ in, want []byte }{
		{[]byte{0x01}, []byte{0x02}},
		{[]byte{0x01, 0xff}, []byte{0x02}},
		{[]byte{0x01, 0x02, 0xff, 0xff}, []byte{0x01, 0x03}},
		{[]byte{0xff, 0xff}, nil},
	} {
		if got := PrefixEnd(tc.in); !bytes.Equal(got, tc.want) {
			t.Errorf("PrefixEnd(%x) = %x, want %x", tc.in, got, tc.want)
		}
	}
}

func TestLocalKeysOrderedAndScoped(t *testing.T) {
	span := LocalGroupSpan(7)
	keys := [][]byte{HardStateKey(7), TruncatedStateKey(7), AppliedStateKey(7), DescriptorKey(7), RaftLogKey(7, 1), RaftLogKey(7, 1<<40)}
	for _, k := range keys {
		if !span.Contains(k) {
			t.Errorf("key %x outside group span %s", k, span)
		}
		if LocalGroupSpan(8).Contains(k) || LocalGroupSpan(6).Contains(k) {
			t.Errorf("key %x leaks into a neighbouring group", k)
		}
	}
	if bytes.Compare(RaftLogKey(7, 255), RaftLogKey(7, 256)) >= 0 {
		t.Error("raft log keys must order by index")
	}
	idx, err := RaftLogIndex(RaftLogKey(7, 12345))
	if err != nil || idx != 12345 {
		t.Fatalf("RaftLogIndex: %d %v", idx, err)
	}
	if _, err := RaftLogIndex(HardStateKey(7)); err == nil {
		t.Fatal("RaftLogIndex accepted a hard state key")
	}
}

func TestOpenWithoutComparer(t *testing.T) {
	if e, err := Open(t.TempDir(), Options{InMemory: true}); err == nil {
		_ = e.Close()
		t.Fatal("an engine opened without a comparer")
	}
}

func TestEngineSyncedWriteSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	e, err := Open(dir, Options{Comparer: pebble.DefaultComparer})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Set(HardStateKey(1), []byte("hs"), nil); err != nil {
		t.Fatal(err)
	}
	b := e.NewBatch()
	_ = b.Set(RaftLogKey(1, 5), []byte("entry"), nil)
	if err := b.Commit(Sync); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = Open(dir, Options{Comparer: pebble.DefaultComparer})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	v, closer, err := e.Get(RaftLogKey(1, 5))
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	if string(v) != "entry" {
		t.Fatalf("got %q", v)
	}
}
