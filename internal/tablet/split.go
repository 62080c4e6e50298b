package tablet

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/shaledb/shaledb/internal/consensus"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/storage"
)

// A split is a Raft command on the parent. Every replica applies it at the
// same log index: in the same engine batch as the parent's applied index it
// writes both children's descriptors and initial raft state (the parent's
// voters) and marks the parent split. The children own sub-spans of the
// very keys the parent held, so no data is copied; each then runs as its
// own group. A child's writes are stamped after every write of the parent:
// applying the parent's entries moved the node clock past them. Writes
// that reach the parent's log after the split are
// refused with ErrTabletSplit, and so is every later operation on the
// parent, so clients reload the table's tablets and go to the children.

// ErrTabletSplit: the tablet has split; its children serve its keys.
var ErrTabletSplit = errors.New("tablet: tablet has split")

// ErrSplitBusy: the tablet cannot split now (a membership change is under
// way); try again later.
var ErrSplitBusy = errors.New("tablet: cannot split during a membership change")

const cmdSplit byte = 2

// SplitResult is what a split produced.
type SplitResult struct {
	Left, Right Descriptor
}

// children derives the two children of a parent split at key (for hash
// tablets the key is the hash midpoint, and the children split the range).
func (d Descriptor) children(left, right uint64, key []byte) [2]Descriptor {
	l := Descriptor{ID: left, TableID: d.TableID, Span: storage.Span{Start: d.Span.Start, End: key}}
	r := Descriptor{ID: right, TableID: d.TableID, Span: storage.Span{Start: key, End: d.Span.End}}
	if d.IsHash() {
		mid := (d.HashStart + d.HashEnd) / 2
		l.HashStart, l.HashEnd = d.HashStart, mid
		r.HashStart, r.HashEnd = mid, d.HashEnd
	}
	return [2]Descriptor{l, r}
}

// splitKey picks where to split: the hash midpoint of a hash tablet, the
// middle row of a range tablet.
func (t *Tablet) splitKey(ctx context.Context) ([]byte, error) {
	d := t.desc
	if d.IsHash() {
		if d.HashEnd-d.HashStart < 2 {
			return nil, fmt.Errorf("tablet %d: hash range [%d, %d) is too small to split", d.ID, d.HashStart, d.HashEnd)
		}
		return docdb.HashSpan(d.TableID, (d.HashStart+d.HashEnd)/2, d.HashEnd).Start, nil
	}
	// Count the rows, then walk to the middle one.
	count := func(stopAt int) (int, []byte, error) {
		span, n := d.Span, 0
		for {
			rows, resume, err := docdb.Scan(t.eng, docdb.ScanOptions{ReadOptions: docdb.ReadOptions{ReadTime: t.clock.Now(), Columns: []uint32{}}, Span: span, Limit: 1000})
			if err != nil {
				return 0, nil, err
			}
			for _, r := range rows {
				if n == stopAt {
					return n, r.Key, nil
				}
				n++
			}
			if resume == nil || ctx.Err() != nil {
				return n, nil, ctx.Err()
			}
			span = docdb.ResumeSpan(span, resume, false)
		}
	}
	n, _, err := count(-1)
	if err != nil {
		return nil, err
	}
	if n < 2 {
		return nil, fmt.Errorf("tablet %d: %d rows, too few to split", d.ID, n)
	}
	_, key, err := count(n / 2)
	return key, err
}

// Split splits the tablet at its leaseholder into children with the given
// ids, at key (nil: the middle). It returns once the split is applied here.
func (t *Tablet) Split(ctx context.Context, leftID, rightID uint64, key []byte) (SplitResult, error) {
	if leftID == 0 || rightID == 0 || leftID == rightID || leftID == t.desc.ID || rightID == t.desc.ID {
		return SplitResult{}, fmt.Errorf("tablet %d: bad child ids %d, %d", t.desc.ID, leftID, rightID)
	}
	// Quiesce the parent's writes: a span latch over everything waits for
	// writes in flight and holds new ones back until the split is decided.
	release, err := t.latches.acquireSpan(ctx, t.desc.Span)
	if err != nil {
		return SplitResult{}, err
	}
	defer release()
	if err := t.servable(); err != nil {
		return SplitResult{}, err
	}
	if key == nil {
		if key, err = t.splitKey(ctx); err != nil {
			return SplitResult{}, err
		}
	}
	if !docdb.IsRowKey(key) && !t.desc.IsHash() {
		return SplitResult{}, fmt.Errorf("tablet %d: split key %x is not a row key", t.desc.ID, key)
	}
	if bytes.Compare(key, t.desc.Span.Start) <= 0 || (t.desc.Span.End != nil && bytes.Compare(key, t.desc.Span.End) >= 0) {
		return SplitResult{}, fmt.Errorf("%w: split key %x not inside %s", ErrKeyOutOfRange, key, t.desc.Span)
	}
	st := t.group.Status()
	if len(st.Learners) > 0 {
		return SplitResult{}, ErrSplitBusy
	}
	cmd := []byte{cmdSplit}
	cmd = binary.BigEndian.AppendUint64(cmd, leftID)
	cmd = binary.BigEndian.AppendUint64(cmd, rightID)
	cmd = binary.BigEndian.AppendUint32(cmd, uint32(len(st.Voters)))
	for _, v := range st.Voters {
		cmd = binary.BigEndian.AppendUint64(cmd, v)
	}
	cmd = append(cmd, key...)
	res, err := t.group.Propose(ctx, cmd)
	if err != nil {
		return SplitResult{}, err
	}
	c := res.([2]Descriptor)
	return SplitResult{Left: c[0], Right: c[1]}, nil
}

// servable reports ErrTabletSplit for a split tablet.
func (t *Tablet) servable() error {
	if c := t.split.Load(); c != nil {
		return fmt.Errorf("%w: tablet %d split into %d and %d", ErrTabletSplit, t.desc.ID, c[0].ID, c[1].ID)
	}
	return nil
}

// applySplit applies a split command (see the top of this file).
func (sm *stateMachine) applySplit(b *pebble.Batch, e consensus.Entry) any {
	t := (*Tablet)(sm)
	data := e.Data[1:]
	if len(data) < 20 {
		return fmt.Errorf("tablet %d: malformed split at index %d", t.desc.ID, e.Index)
	}
	left, right := binary.BigEndian.Uint64(data), binary.BigEndian.Uint64(data[8:])
	nv := int(binary.BigEndian.Uint32(data[16:]))
	data = data[20:]
	if nv == 0 || len(data) < 8*nv {
		return fmt.Errorf("tablet %d: malformed split at index %d", t.desc.ID, e.Index)
	}
	voters := make([]uint64, nv)
	for i := range voters {
		voters[i] = binary.BigEndian.Uint64(data[8*i:])
	}
	key := append([]byte(nil), data[8*nv:]...)
	if c := t.split.Load(); c != nil {
		if c[0].ID == left && c[1].ID == right {
			return *c // a retried proposal of the same split
		}
		return t.servable()
	}
	// The children start with the configuration the parent has at this
	// entry; a split proposed under another one is refused.
	cur := slices.Clone(e.Voters)
	slices.Sort(cur)
	slices.Sort(voters)
	if e.Joint || len(e.Learners) > 0 || !slices.Equal(cur, voters) {
		return ErrSplitBusy
	}
	children := t.desc.children(left, right, key)
	for _, c := range children {
		if err := b.Set(storage.DescriptorKey(c.ID), c.marshal(), nil); err != nil {
			return err
		}
		if err := consensus.BootstrapGroup(b, c.ID, voters); err != nil {
			return err
		}
	}
	// The intents stay where they are (their keys are the data keys);
	// the per-tablet transaction index moves to the child owning each key,
	// and each child gets the part of every range lock in its span. Both
	// are read from the (indexed) apply batch: an earlier entry of this
	// cycle may have written or removed some (ApplyTxn and RemoveTxn do
	// not wait for the split's latch).
	if _, err := docdb.SplitTxnIndex(b, b, t.desc.ID, key, left, right); err != nil {
		return err
	}
	if _, err := docdb.SplitRangeLocks(b, b, t.desc.ID, key, left, right); err != nil {
		return err
	}
	// A retry of a write applied here goes to the child owning its rows
	// now: both children get the applied request ids.
	if err := copyOnce(b, b, t.desc.ID, left, right); err != nil {
		return err
	}
	t.ranges.set(nil)   // the children have them now
	t.txns.clearKnown() // the children load theirs from disk
	parent := t.desc
	parent.SplitInto = [2]uint64{left, right}
	parent.SplitKey = key
	if err := b.Set(storage.DescriptorKey(parent.ID), parent.marshal(), nil); err != nil {
		return err
	}
	t.split.Store(&children)
	t.pendingSplit.Store(&children)
	return children
}

// PostApply opens the children of a split once it is committed.
func (sm *stateMachine) PostApply() {
	t := (*Tablet)(sm)
	t.txns.wake()
	c := t.pendingSplit.Swap(nil)
	if c == nil || t.onSplit == nil {
		return
	}
	go t.onSplit(t.desc, *c)
}
