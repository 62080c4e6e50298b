package consensus

import (
	"bytes"
	"strings"
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/shaledb/shaledb/internal/storage"
)

// TestSnapshotHeaderLocals: a header's local spans survive the round trip,
// a header without them (from a node that sends none) still decodes, and
// a local span outside the group's local keys or over the runtime's own
// is refused.
func TestSnapshotHeaderLocals(t *testing.T) {
	const group = 9
	prefix := storage.AppliedRequestPrefix(group)
	own := storage.Span{Start: prefix, End: storage.PrefixEnd(prefix)}
	h := snapshotHeader{
		group:  group,
		msg:    &raftpb.Message{Type: raftpb.MessageType_MsgSnap.Enum()},
		spans:  []storage.Span{{Start: []byte("a"), End: []byte("b")}},
		locals: []storage.Span{own},
	}
	b, err := h.marshal()
	if err != nil {
		t.Fatal(err)
	}
	var got snapshotHeader
	if err := got.unmarshal(b); err != nil {
		t.Fatal(err)
	}
	if got.group != group || len(got.spans) != 1 || len(got.locals) != 1 || !bytes.Equal(got.locals[0].Start, own.Start) || !bytes.Equal(got.locals[0].End, own.End) || !proto.Equal(got.msg, h.msg) {
		t.Fatalf("round trip: %+v", got)
	}
	h.locals = nil
	b, _ = h.marshal()
	old := b[:len(b)-1] // without the count of local spans
	got = snapshotHeader{}
	if err := got.unmarshal(old); err != nil || len(got.locals) != 0 || len(got.spans) != 1 {
		t.Fatalf("header without local spans: %+v, %v", got, err)
	}

	if err := checkLocalSpans(group, []storage.Span{own}); err != nil {
		t.Fatalf("the applied request span: %v", err)
	}
	for name, s := range map[string]storage.Span{
		"another group's":   {Start: storage.AppliedRequestPrefix(group + 1), End: storage.PrefixEnd(storage.AppliedRequestPrefix(group + 1))},
		"the whole group's": storage.LocalGroupSpan(group),
		"the raft log":      {Start: storage.RaftLogKey(group, 5), End: storage.RaftLogKey(group, 9)},
		"the applied state": {Start: storage.AppliedStateKey(group), End: storage.PrefixEnd(storage.AppliedStateKey(group))},
		"the data":          {Start: []byte("a"), End: []byte("b")},
		"an empty one":      {Start: prefix, End: prefix},
	} {
		if err := checkLocalSpans(group, []storage.Span{s}); err == nil || !strings.Contains(err.Error(), "local span") {
			t.Errorf("%s span %s: %v, want refused", name, s, err)
		}
	}
}
