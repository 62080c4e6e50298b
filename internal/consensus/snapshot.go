package consensus

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/shaledb/shaledb/internal/consensus/transport"
	"github.com/shaledb/shaledb/internal/storage"
)

// A snapshot travels as a header and a body. The header names the group, the
// MsgSnap (its metadata rewritten to the applied state captured by the Pebble
// snapshot), the group's descriptor, the spans and the state machine's
// local spans. The body is a sequence of records (span index, key, value)
// in key order, span after span, then local span after local span.

const snapshotChunkSize = 1 << 20

type snapshotHeader struct {
	group      uint64
	msg        *raftpb.Message
	descriptor []byte // nil when the group has none
	spans      []storage.Span
	// locals: node-local spans of the group the state machine keeps with
	// its data (LocalSnapshotter); their records follow the spans', with
	// span indexes len(spans) on.
	locals []storage.Span
}

func (h *snapshotHeader) marshal() ([]byte, error) {
	mb, err := proto.Marshal(h.msg)
	if err != nil {
		return nil, err
	}
	b := binary.BigEndian.AppendUint64(nil, h.group)
	b = appendBytes(b, mb)
	if h.descriptor == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b = appendBytes(b, h.descriptor)
	}
	b = binary.AppendUvarint(b, uint64(len(h.spans)))
	for _, s := range h.spans {
		b = appendBytes(b, s.Start)
		b = appendBytes(b, s.End)
	}
	b = binary.AppendUvarint(b, uint64(len(h.locals)))
	for _, s := range h.locals {
		b = appendBytes(b, s.Start)
		b = appendBytes(b, s.End)
	}
	return b, nil
}

func (h *snapshotHeader) unmarshal(b []byte) error {
	r := byteReader{b: b}
	h.group = r.uint64()
	mb := r.bytes()
	if r.byte() == 1 {
		h.descriptor = r.bytes()
	}
	h.spans = r.spans()
	if len(r.b) > 0 { // absent in a header from a node that sends none
		h.locals = r.spans()
	}
	if r.err != nil {
		return fmt.Errorf("consensus: bad snapshot header: %w", r.err)
	}
	h.msg = &raftpb.Message{}
	return proto.Unmarshal(mb, h.msg)
}

// spans reads a count and that many spans.
func (r *byteReader) spans() []storage.Span {
	n := r.uvarint()
	if r.err == nil && n > 1024 {
		r.err = fmt.Errorf("too many spans: %d", n)
	}
	var spans []storage.Span
	for i := uint64(0); i < n && r.err == nil; i++ {
		spans = append(spans, storage.Span{Start: r.bytes(), End: r.bytes()})
	}
	return spans
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

type byteReader struct {
	b   []byte
	err error
}

func (r *byteReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("truncated %s", what)
	}
}

func (r *byteReader) uint64() uint64 {
	if r.err != nil || len(r.b) < 8 {
		r.fail("uint64")
		return 0
	}
	v := binary.BigEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

func (r *byteReader) byte() byte {
	if r.err != nil || len(r.b) < 1 {
		r.fail("byte")
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *byteReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("uvarint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *byteReader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil || uint64(len(r.b)) < n {
		r.fail("bytes")
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// sendSnapshot streams the group's state to m.To. It captures a Pebble
// snapshot right away (in the scheduler goroutine, so the applied state read
// from it matches the data) and streams it in the background.
func (rt *Runtime) sendSnapshot(g *Group, m *raftpb.Message) {
	snap := rt.eng.NewSnapshot()
	fail := func(err error) {
		rt.log.Warn("snapshot send failed", "group", g.id, "to", m.GetTo(), "err", err)
		rt.metrics.SnapshotsFailed.Add(1)
		g.mu.Lock()
		g.mu.snapStatus = append(g.mu.snapStatus, snapStatus{to: m.GetTo(), failed: true})
		g.mu.Unlock()
		rt.markPending(g.id)
	}
	applied, ok, err := getValue(snap, storage.AppliedStateKey(g.id))
	if err != nil || !ok {
		snap.Close()
		fail(fmt.Errorf("no applied state: %v", err))
		return
	}
	idx, term, cs, err := decodeAppliedState(applied)
	if err != nil {
		snap.Close()
		fail(err)
		return
	}
	desc, hasDesc, err := getValue(snap, storage.DescriptorKey(g.id))
	if err != nil {
		snap.Close()
		fail(err)
		return
	}
	msg := proto.Clone(m).(*raftpb.Message)
	msg.Snapshot = &raftpb.Snapshot{Metadata: &raftpb.SnapshotMetadata{
		Index: proto.Uint64(idx), Term: proto.Uint64(term), ConfState: cs,
	}}
	h := snapshotHeader{group: g.id, msg: msg, spans: g.sm.SnapshotSpans()}
	if ls, ok := g.sm.(LocalSnapshotter); ok {
		h.locals = ls.SnapshotLocalSpans()
	}
	if hasDesc {
		h.descriptor = desc
	}
	hb, err := h.marshal()
	if err != nil {
		snap.Close()
		fail(err)
		return
	}
	rt.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		defer snap.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		go func() {
			select {
			case <-rt.stopper:
				cancel()
			case <-ctx.Done():
			}
		}()
		var sent uint64
		err := rt.tr.SendSnapshot(ctx, m.GetTo(), hb, func(send func([]byte) error) error {
			chunk := make([]byte, 0, snapshotChunkSize+4096)
			for i, span := range append(slices.Clip(h.spans), h.locals...) {
				it, err := snap.NewIter(&pebble.IterOptions{LowerBound: span.Start, UpperBound: span.End})
				if err != nil {
					return err
				}
				for it.First(); it.Valid(); it.Next() {
					chunk = binary.AppendUvarint(chunk, uint64(i))
					chunk = appendBytes(chunk, it.Key())
					chunk = appendBytes(chunk, it.Value())
					if len(chunk) >= snapshotChunkSize {
						sent += uint64(len(chunk))
						if err := send(chunk); err != nil {
							it.Close()
							return err
						}
						chunk = chunk[:0]
					}
				}
				if err := it.Close(); err != nil {
					return err
				}
			}
			if len(chunk) > 0 {
				sent += uint64(len(chunk))
				return send(chunk)
			}
			return nil
		})
		if err != nil {
			fail(err)
			return
		}
		rt.metrics.SnapshotsSent.Add(1)
		rt.metrics.SnapshotBytesSent.Add(sent)
		g.mu.Lock()
		g.mu.snapStatus = append(g.mu.snapStatus, snapStatus{to: m.GetTo()})
		g.mu.Unlock()
		rt.markPending(g.id)
	}()
}

// incomingSnapshot is a received snapshot waiting for the scheduler: its
// SSTs are written, raft has yet to accept it.
type incomingSnapshot struct {
	msg   *raftpb.Message
	dir   string
	paths []string
	fs    vfs.FS
	done  chan error
}

func (s *incomingSnapshot) finish(err error) {
	_ = s.fs.RemoveAll(s.dir)
	s.done <- err
}

// HandleSnapshot implements transport.Handler: it writes the stream into
// SSTs (one per span plus one for the group's local state), then hands them
// to the scheduler, which steps the MsgSnap and ingests the files atomically
// if raft accepts it.
func (rt *Runtime) HandleSnapshot(ctx context.Context, from uint64, s *transport.SnapshotStream) error {
	var h snapshotHeader
	if err := h.unmarshal(s.Header); err != nil {
		return err
	}
	g, ok := rt.Group(h.group)
	if !ok {
		return fmt.Errorf("%w: group %d on node %d", ErrGroupNotFound, h.group, rt.cfg.NodeID)
	}
	meta := h.msg.GetSnapshot().GetMetadata()
	if meta == nil {
		return errors.New("consensus: snapshot without metadata")
	}
	fs := rt.eng.FS
	dir := filepath.Join(rt.eng.Dir(), "snapshots", fmt.Sprintf("%d-%d-%x", h.group, meta.GetIndex(), rand.Uint32()))
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := checkLocalSpans(h.group, h.locals); err != nil {
		return err
	}
	in := &incomingSnapshot{msg: h.msg, dir: dir, fs: fs, done: make(chan error, 1)}
	cleanup := true
	defer func() {
		if cleanup {
			_ = fs.RemoveAll(dir)
		}
	}()
	writers := make([]*sstWriter, len(h.spans))
	for i, span := range h.spans {
		w, err := newSSTWriter(rt.eng, filepath.Join(dir, fmt.Sprintf("span-%d.sst", i)))
		if err != nil {
			return err
		}
		writers[i] = w
		// Clear whatever this replica held in the span.
		if err := w.w.DeleteRange(span.Start, span.End); err != nil {
			return err
		}
	}
	// Records may straddle chunks (the transport re-splits large chunks):
	// decode what is complete and carry the rest over.
	var pending []byte
	var locals []localRecord
	for {
		chunk, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		pending = append(pending, chunk...)
		consumed := 0
		for consumed < len(pending) {
			r := byteReader{b: pending[consumed:]}
			i := r.uvarint()
			k, v := r.bytes(), r.bytes()
			if r.err != nil {
				break // incomplete record: wait for the next chunk
			}
			switch {
			case i < uint64(len(writers)) && h.spans[i].Contains(k):
				if err := writers[i].w.Set(k, v); err != nil {
					return err
				}
			case i-uint64(len(writers)) < uint64(len(h.locals)) && h.locals[i-uint64(len(writers))].Contains(k):
				// Local keys go into local.sst with the runtime's own,
				// in key order, once all are here.
				locals = append(locals, localRecord{key: slices.Clone(k), value: slices.Clone(v)})
			default:
				return fmt.Errorf("consensus: snapshot record outside its span: %x", k)
			}
			consumed = len(pending) - len(r.b)
		}
		pending = append(pending[:0], pending[consumed:]...)
	}
	if len(pending) > 0 {
		return fmt.Errorf("consensus: snapshot ends inside a record (%d bytes left)", len(pending))
	}
	for _, w := range writers {
		if err := w.close(); err != nil {
			return err
		}
		in.paths = append(in.paths, w.path)
	}
	// The group's local state: an empty log positioned at the snapshot.
	lw, err := newSSTWriter(rt.eng, filepath.Join(dir, "local.sst"))
	if err != nil {
		return err
	}
	logPrefix := storage.RaftLogPrefix(h.group)
	cleared := append([]storage.Span{{Start: logPrefix, End: storage.PrefixEnd(logPrefix)}}, h.locals...)
	slices.SortFunc(cleared, func(a, b storage.Span) int { return bytes.Compare(a.Start, b.Start) })
	for _, s := range cleared {
		if err := lw.w.DeleteRange(s.Start, s.End); err != nil {
			return err
		}
	}
	if h.descriptor != nil {
		locals = append(locals, localRecord{key: storage.DescriptorKey(h.group), value: h.descriptor})
	}
	locals = append(locals,
		localRecord{key: storage.AppliedStateKey(h.group), value: encodeAppliedState(meta.GetIndex(), meta.GetTerm(), meta.GetConfState())},
		localRecord{key: storage.TruncatedStateKey(h.group), value: encodeTruncatedState(meta.GetIndex(), meta.GetTerm())})
	slices.SortFunc(locals, func(a, b localRecord) int { return bytes.Compare(a.key, b.key) })
	for _, r := range locals {
		if err := lw.w.Set(r.key, r.value); err != nil {
			return err
		}
	}
	if err := lw.close(); err != nil {
		return err
	}
	in.paths = append(in.paths, lw.path)
	g.mu.Lock()
	if old := g.mu.snapIn; old != nil {
		old.finish(errors.New("consensus: superseded by a newer snapshot"))
	}
	g.mu.snapIn = in
	g.mu.Unlock()
	cleanup = false // the scheduler owns the files now
	rt.markPending(g.id)
	select {
	case err := <-in.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-rt.stopped:
		return ErrStopped
	}
}

// localRecord is a node-local key of a received snapshot.
type localRecord struct{ key, value []byte }

// checkLocalSpans refuses local spans of a snapshot outside the group's
// local span or over the keys the runtime writes itself.
func checkLocalSpans(group uint64, locals []storage.Span) error {
	own := storage.LocalGroupSpan(group)
	logPrefix := storage.RaftLogPrefix(group)
	for _, s := range locals {
		inside := bytes.Compare(s.Start, own.Start) >= 0 && bytes.Compare(s.End, own.End) <= 0 && bytes.Compare(s.Start, s.End) < 0
		overLog := bytes.Compare(s.Start, storage.PrefixEnd(logPrefix)) < 0 && bytes.Compare(logPrefix, s.End) < 0
		if !inside || overLog {
			return fmt.Errorf("consensus: snapshot of group %d: bad local span %s", group, s)
		}
		for _, k := range [][]byte{storage.HardStateKey(group), storage.TruncatedStateKey(group), storage.AppliedStateKey(group), storage.DescriptorKey(group), storage.LastLeaderKey(group)} {
			if s.Contains(k) {
				return fmt.Errorf("consensus: snapshot of group %d: local span %s holds the runtime's key %x", group, s, k)
			}
		}
	}
	return nil
}

type sstWriter struct {
	path string
	w    *sstable.Writer
}

func newSSTWriter(eng *storage.Engine, path string) (*sstWriter, error) {
	f, err := eng.FS.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, err
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), eng.SSTWriterOptions())
	return &sstWriter{path: path, w: w}, nil
}

func (w *sstWriter) close() error { return w.w.Close() }

// ingestSnapshot installs the files of the pending snapshot (one atomic
// Pebble ingest: data, intents and local state together) and resets the
// in-memory log view. Called from prepare when raft's Ready carries it.
func (g *Group) ingestSnapshot(snap *raftpb.Snapshot) error {
	in := g.pendingSnap
	if in == nil {
		return fmt.Errorf("group %d: raft produced a snapshot with no files received", g.id)
	}
	if err := g.rt.eng.Ingest(context.Background(), in.paths); err != nil {
		return fmt.Errorf("group %d: ingest snapshot: %w", g.id, err)
	}
	g.store.applySnapshot(snap.GetMetadata())
	if err := g.sm.Restored(); err != nil {
		return fmt.Errorf("group %d: restore after snapshot: %w", g.id, err)
	}
	g.rt.metrics.SnapshotsApplied.Add(1)
	return nil
}
