package webui

import (
	"testing"

	pb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

func TestRangeOf(t *testing.T) {
	for _, tc := range []struct {
		d    *pb.TabletDescriptor
		want string
	}{
		{&pb.TabletDescriptor{HashStart: 0, HashEnd: 0x4000}, "hash [0x0000, 0x4000)"},
		{&pb.TabletDescriptor{HashStart: 0xC000, HashEnd: 0x10000}, "hash [0xC000, 0x10000)"},
		{&pb.TabletDescriptor{Span: &pb.Span{Start: []byte{0x10, 0xab}, End: []byte{0x11}}}, "key [10ab, 11)"},
		{&pb.TabletDescriptor{Span: &pb.Span{Start: []byte{0x10}}}, "key [10, ∞)"},
	} {
		if got := rangeOf(tc.d); got != tc.want {
			t.Errorf("rangeOf(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestHumanBytes(t *testing.T) {
	for _, tc := range []struct {
		n    uint64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"}, {5 << 30, "5.0 GiB"}} {
		if got := humanBytes(tc.n); got != tc.want {
			t.Errorf("humanBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
