package tablet

import (
	"encoding/binary"
	"fmt"

	"github.com/shaledb/shaledb/internal/storage"
)

// FirstUserTableID is the lowest table id of user tables; the ids below it
// are reserved for system tables (the sys catalog is table 1), which are
// not reachable through the tablet server's data path.
const FirstUserTableID uint32 = 1000

// Descriptor names a tablet and the span of row keys it owns.
type Descriptor struct {
	ID      uint64
	TableID uint32
	Span    storage.Span
	// HashStart and HashEnd bound the hash range [start, end) of a tablet
	// of a hash-partitioned table (HashEnd 0x10000 for the last one); both
	// 0 for a range tablet.
	HashStart, HashEnd uint32
	// SplitInto names the two children once the tablet has split; the
	// tablet then serves nothing and owns no data. SplitKey is where the
	// right child starts.
	SplitInto [2]uint64
	SplitKey  []byte
}

// IsHash reports whether the tablet covers a hash range.
func (d Descriptor) IsHash() bool { return d.HashEnd > d.HashStart }

func (d Descriptor) marshal() []byte {
	b := binary.BigEndian.AppendUint64(nil, d.ID)
	b = binary.BigEndian.AppendUint32(b, d.TableID)
	b = binary.AppendUvarint(b, uint64(len(d.Span.Start)))
	b = append(b, d.Span.Start...)
	b = binary.AppendUvarint(b, uint64(len(d.Span.End)))
	b = append(b, d.Span.End...)
	// Later fields are optional trailing uvarints (older records lack them).
	for _, v := range []uint64{uint64(d.HashStart), uint64(d.HashEnd), d.SplitInto[0], d.SplitInto[1]} {
		b = binary.AppendUvarint(b, v)
	}
	b = binary.AppendUvarint(b, uint64(len(d.SplitKey)))
	return append(b, d.SplitKey...)
}

func unmarshalDescriptor(b []byte) (Descriptor, error) {
	var d Descriptor
	if len(b) < 12 {
		return d, fmt.Errorf("tablet: descriptor too short (%d bytes)", len(b))
	}
	d.ID, d.TableID = binary.BigEndian.Uint64(b), binary.BigEndian.Uint32(b[8:])
	b = b[12:]
	for _, dst := range []*[]byte{&d.Span.Start, &d.Span.End} {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return d, fmt.Errorf("tablet: malformed descriptor")
		}
		*dst = append([]byte(nil), b[k:k+int(n)]...)
		b = b[k+int(n):]
	}
	var tail [5]uint64
	for i := range tail {
		if len(b) == 0 {
			break
		}
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return d, fmt.Errorf("tablet: malformed descriptor")
		}
		tail[i], b = v, b[k:]
	}
	if tail[0] > 0x10000 || tail[1] > 0x10000 {
		return d, fmt.Errorf("tablet: malformed descriptor hash range")
	}
	d.HashStart, d.HashEnd = uint32(tail[0]), uint32(tail[1])
	d.SplitInto = [2]uint64{tail[2], tail[3]}
	if n := tail[4]; n > 0 {
		if uint64(len(b)) < n {
			return d, fmt.Errorf("tablet: malformed descriptor split key")
		}
		d.SplitKey = append([]byte(nil), b[:n]...)
	}
	return d, nil
}
