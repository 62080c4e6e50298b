package docdb

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// Wire format of a WriteBatch (replicated through Raft, so it must be
// deterministic and stable):
//
//	format (1 byte, = 1) | uvarint op count | ops…
//	op:  kind (1) | uvarint key len | row key | zig-zag varint TTL ns | uvarint column count | columns…
//	put column:    uvarint id | uvarint len | value encoding
//	delete column: uvarint id
//
// OpDeleteRow carries no columns and OpDeleteColumns no values: what an op
// kind ignores is not encoded, so equal batches encode equally.
const batchFormat byte = 1

// Marshal encodes the batch.
func (b *WriteBatch) Marshal() []byte {
	dst := make([]byte, 0, 64)
	dst = append(dst, batchFormat)
	dst = binary.AppendUvarint(dst, uint64(len(b.Ops)))
	var val []byte
	for i := range b.Ops {
		op := &b.Ops[i]
		dst = append(dst, byte(op.Kind))
		dst = binary.AppendUvarint(dst, uint64(len(op.RowKey)))
		dst = append(dst, op.RowKey...)
		dst = binary.AppendVarint(dst, int64(op.TTL))
		if op.Kind == OpDeleteRow {
			dst = binary.AppendUvarint(dst, 0)
			continue
		}
		dst = binary.AppendUvarint(dst, uint64(len(op.Columns)))
		for _, c := range op.Columns {
			dst = binary.AppendUvarint(dst, uint64(c.ID))
			if op.Kind == OpDeleteColumns {
				continue
			}
			val = AppendValue(val[:0], c.Value)
			dst = binary.AppendUvarint(dst, uint64(len(val)))
			dst = append(dst, val...)
		}
	}
	return dst
}

// batchDecoder reads the wire format with bounds checks everywhere; every
// count is checked against the bytes left before anything is allocated, so
// hostile input cannot make Unmarshal allocate much more than its size.
type batchDecoder struct {
	buf []byte
	err error
}

func (d *batchDecoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("docdb: malformed write batch: %s", fmt.Sprintf(format, args...))
	}
}

func (d *batchDecoder) readByte() byte {
	if d.err != nil || len(d.buf) < 1 {
		d.fail("truncated")
		return 0
	}
	c := d.buf[0]
	d.buf = d.buf[1:]
	return c
}

func (d *batchDecoder) uvarint(max uint64, what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf)
	if n <= 0 {
		d.fail("bad %s", what)
		return 0
	}
	d.buf = d.buf[n:]
	if v > max {
		d.fail("%s %d exceeds %d", what, v, max)
		return 0
	}
	return v
}

func (d *batchDecoder) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.buf)
	if n <= 0 {
		d.fail("bad %s", what)
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *batchDecoder) readBytes(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if uint64(len(d.buf)) < n {
		d.fail("truncated")
		return nil
	}
	b := d.buf[:n:n]
	d.buf = d.buf[n:]
	return b
}

// Unmarshal decodes a batch encoded by Marshal, replacing b's ops. It
// rejects malformed input with an error and never panics. The decoded row
// keys and values share one private copy of data.
func (b *WriteBatch) Unmarshal(data []byte) error {
	d := batchDecoder{buf: append([]byte(nil), data...)}
	if f := d.readByte(); d.err == nil && f != batchFormat {
		return fmt.Errorf("docdb: malformed write batch: unknown format %d", f)
	}
	// An op takes at least 4 bytes, a column at least 1.
	nOps := d.uvarint(uint64(len(d.buf)/4), "op count")
	var ops []WriteOp
	if d.err == nil && nOps > 0 {
		ops = make([]WriteOp, nOps)
	}
	for i := range ops {
		op := &ops[i]
		op.Kind = OpKind(d.readByte())
		if d.err == nil && (op.Kind == 0 || op.Kind > maxOpKind) {
			d.fail("op %d: bad kind %d", i, op.Kind)
		}
		op.RowKey = d.readBytes(d.uvarint(uint64(len(d.buf)), "key length"))
		op.TTL = time.Duration(d.varint("ttl"))
		nCols := d.uvarint(uint64(len(d.buf)), "column count")
		if d.err != nil {
			break
		}
		if op.Kind == OpDeleteRow && nCols != 0 {
			d.fail("op %d: delete_row with columns", i)
			break
		}
		if nCols > 0 {
			op.Columns = make([]ColumnValue, nCols)
		}
		for j := range op.Columns {
			c := &op.Columns[j]
			c.ID = uint32(d.uvarint(math.MaxUint32, "column id"))
			if op.Kind == OpDeleteColumns {
				continue
			}
			raw := d.readBytes(d.uvarint(uint64(len(d.buf)), "value length"))
			if d.err != nil {
				break
			}
			v, err := DecodeValue(raw)
			if err != nil {
				d.fail("op %d column %d: %v", i, c.ID, err)
				break
			}
			c.Value = v
		}
		if d.err != nil {
			break
		}
	}
	if d.err == nil && len(d.buf) != 0 {
		d.fail("%d trailing bytes", len(d.buf))
	}
	if d.err != nil {
		return d.err
	}
	b.Ops = ops
	return nil
}
