package tablet

import (
	"encoding/binary"
	"fmt"

	"github.com/shaledb/shaledb/internal/storage"
)

// Descriptor names a tablet and the span of row keys it owns.
type Descriptor struct {
	ID      uint64
	TableID uint32
	Span    storage.Span
}

func (d Descriptor) marshal() []byte {
	b := binary.BigEndian.AppendUint64(nil, d.ID)
	b = binary.BigEndian.AppendUint32(b, d.TableID)
	b = binary.AppendUvarint(b, uint64(len(d.Span.Start)))
	b = append(b, d.Span.Start...)
	b = binary.AppendUvarint(b, uint64(len(d.Span.End)))
	return append(b, d.Span.End...)
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
	return d, nil
}
