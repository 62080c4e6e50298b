package docdb

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/storage"
)

// ReadOptions configure a read.
type ReadOptions struct {
	ReadTime hlc.Timestamp // newest version at or below it is visible
	Columns  []uint32      // projection; nil = all columns, empty = none (existence only)
	// Uncertainty, if set, asks the read to look for versions in the
	// clock uncertainty window above the read time (see Uncertainty).
	Uncertainty *Uncertainty
}

// Uncertainty is a read's clock uncertainty window, (ReadTime, Limit]: a
// version written there may have been written before the read began, on a
// node whose clock was behind, so the read cannot tell whether it should
// see it. The read notes in Newest the newest such version among the keys
// it read (row-level versions, tombstones included, and the columns it
// read): those a read at Limit would see and a read at the read time does
// not. Only when Newest is set does the caller need to read at Limit and
// compare (or restart at Newest): a read that noted none returns what the
// read at Limit would.
type Uncertainty struct {
	Limit  hlc.Timestamp
	Newest hlc.Timestamp // 0: none seen
}

// Row is a row as seen at a read time.
type Row struct {
	Key       []byte        // row key
	Columns   []ColumnValue // live columns, ascending id (liveness column not included)
	WriteTime hlc.Timestamp // newest visible write time among the row's visible pieces
}

// Size is about the bytes the row takes in an answer.
func (r *Row) Size() int {
	n := 16 + len(r.Key)
	for _, c := range r.Columns {
		n += c.size()
	}
	return n
}

// Visibility, for a read at time T (see doc.go for the full picture):
//   - of each key (the row level, or one column) the newest version <= T
//     counts; a tombstone or an expired value there hides the key;
//   - the newest row tombstone <= T, at version D, also hides every column
//     version <= D, even when a newer liveness marker revives the row;
//   - a row exists if its marker or any column is visible.
//
// Row.WriteTime is the newest write time of the visible marker and the
// visible returned columns; when the row exists only through columns outside
// the projection, it is the newest write time of those.

// GetRow reads one row. A row exists if its liveness marker is visible (not
// hidden by a newer row tombstone and not expired) or any column is visible
// (Cassandra semantics).
func GetRow(r pebble.Reader, rowKey []byte, opts ReadOptions) (Row, bool, error) {
	if !IsRowKey(rowKey) {
		return Row{}, false, fmt.Errorf("docdb: GetRow: malformed row key %x", rowKey)
	}
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: rowKey, UpperBound: rowEnd(rowKey)})
	if err != nil {
		return Row{}, false, err
	}
	var rr rowReader
	rr.init(it, opts.ReadTime, opts.Columns)
	rr.setUncertainty(opts.Uncertainty)
	rr.prefix = true
	row, ok, err := rr.readRow(rowKey)
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Row{}, false, err
	}
	return row, ok, nil
}

// ScanOptions configure a scan.
type ScanOptions struct {
	ReadOptions
	// Span of row keys: a row is scanned if its row key lies in the span.
	// Bounds are row keys or prefixes of row keys (TableSpan, HashSpan, a
	// resume span), never keys inside a row.
	Span    storage.Span
	Limit   int // max rows, 0 = no limit
	Reverse bool

	// Pushdown (pushdown.go). Filter: only rows for which it is TRUE are
	// returned (or aggregated), and Limit counts those. Aggregator: rows
	// that qualify are added to it instead of being returned. KeyColumns
	// name the key components for both (see RowView). Columns the filter
	// or the aggregates need are read even outside the projection; returned
	// rows hold the projected ones only (their WriteTime covers all read).
	Filter     *Pred
	Aggregator *Aggregator
	KeyColumns []uint32
	// MaxRows bounds the rows (row keys, visible or not) the scan
	// examines; past it the scan stops with a resume key even if fewer
	// than Limit rows qualified. 0: no bound.
	MaxRows int
	// MaxGroups bounds the groups of a grouping Aggregator: once it holds
	// that many, the scan stops with a resume key (the next page's groups
	// merge with these). 0: no bound.
	MaxGroups int
	// MaxBytes bounds the rows returned by their size (Row.Size): once
	// they reach it the scan stops with a resume key, so that a page of
	// large rows stays within a message. At least one row is returned.
	// 0: no bound.
	MaxBytes int
}

// Scan returns the rows of the span in key order (reverse if asked) and a
// resume row key, nil when the span is exhausted. The resume key is the row
// key of the next row the scan would have looked at (it may turn out to be
// invisible); ResumeSpan turns it into the span of the next page.
//
// Each row costs a few seeks, in both directions: the scan finds a row's key
// from any of its engine keys (the row key is a prefix), reads the row with
// forward seeks to the versions at the read time, then seeks past the row
// (SeekGE of the row's end, or SeekLT of the row key when reversed). Nothing
// outside the rows returned, and the row after them, is read.
func Scan(r pebble.Reader, opts ScanOptions) (rows []Row, resume []byte, err error) {
	span := opts.Span
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: span.Start, UpperBound: span.End})
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if cerr := it.Close(); err == nil {
			err = cerr
		}
	}()
	pushdown := opts.Filter != nil || opts.Aggregator != nil
	cols, trim := opts.Columns, false
	if pushdown {
		cols, trim = pushdownColumns(&opts)
	}
	rr := newRowReader(it, opts.ReadTime, cols)
	rr.setUncertainty(opts.Uncertainty)
	view := RowView{KeyColumns: opts.KeyColumns}
	examined, size := 0, 0
	var rowKey []byte
	var valid bool
	if opts.Reverse {
		valid = it.Last()
	} else {
		valid = it.First()
	}
	for valid {
		key := it.Key()
		n, err := rowKeyLen(key)
		if err != nil {
			return nil, nil, fmt.Errorf("docdb: scan: %w", err)
		}
		rowKey = append(rowKey[:0], key[:n]...)
		if bytes.Compare(rowKey, span.Start) < 0 {
			// The span starts inside this row; it is not part of the span.
			if opts.Reverse {
				break
			}
			valid = it.SeekGE(rowEnd(rowKey))
			continue
		}
		if (opts.Limit > 0 && len(rows) >= opts.Limit) || (opts.MaxRows > 0 && examined >= opts.MaxRows) ||
			(opts.MaxBytes > 0 && size >= opts.MaxBytes) ||
			(opts.Aggregator != nil && opts.Aggregator.full(opts.MaxGroups)) {
			return rows, slices.Clone(rowKey), nil
		}
		examined++
		rr.atRowStart = !opts.Reverse
		row, ok, err := rr.readRow(rowKey)
		if err != nil {
			return nil, nil, err
		}
		if ok && pushdown {
			if ok, err = pushdownRow(&opts, &view, &row); err != nil {
				return nil, nil, err
			}
			if ok && trim {
				row.Columns = trimColumns(row.Columns, opts.Columns)
			}
		}
		if ok {
			rows = append(rows, row)
			if opts.MaxBytes > 0 {
				size += row.Size()
			}
		}
		if opts.Reverse {
			valid = it.SeekLT(rowKey)
		} else {
			valid = nextRow(it, rowKey)
		}
	}
	if err := it.Error(); err != nil {
		return nil, nil, err
	}
	return rows, nil, nil
}

// nextRow moves a forward iterator that is inside the row rowKey (or just
// past it, or exhausted) to the first key after the row, as
// SeekGE(rowEnd(rowKey)) does: the first key without the row's prefix
// that follows the row's keys is the smallest one at or above its end
// (row keys are prefix-free). A few Nexts are cheaper than a seek, which
// positions every level of the LSM; a row with many versions still costs
// one seek.
func nextRow(it *pebble.Iterator, rowKey []byte) bool {
	valid := it.Valid()
	for i := 0; valid && i < nextTries; i++ {
		if !bytes.HasPrefix(it.Key(), rowKey) {
			return true
		}
		valid = it.Next()
	}
	if !valid {
		return false
	}
	if !bytes.HasPrefix(it.Key(), rowKey) {
		return true
	}
	return it.SeekGE(rowEnd(rowKey))
}

// pushdownRow applies the filter and the aggregator of a scan to a row; it
// reports whether the scan returns the row.
func pushdownRow(opts *ScanOptions, view *RowView, row *Row) (bool, error) {
	view.Reset(row)
	if opts.Filter != nil && opts.Filter.Eval(view.Get) != TruthTrue {
		return false, view.Err()
	}
	if err := view.Err(); err != nil {
		return false, err
	}
	if opts.Aggregator == nil {
		return true, nil
	}
	if err := opts.Aggregator.Add(view.Get); err != nil {
		return false, err
	}
	return false, view.Err()
}

// ResumeSpan returns the span that continues a scan of span which returned
// the resume key resume.
func ResumeSpan(span storage.Span, resume []byte, reverse bool) storage.Span {
	if reverse {
		return storage.Span{Start: span.Start, End: rowEnd(resume)}
	}
	return storage.Span{Start: resume, End: span.End}
}

// rowEnd returns the smallest key above every engine key of the row: the
// row key ends with GroupEnd, and everything that follows it inside the row
// ('#' or 'K' sub-keys) sorts below a key ending in GroupEnd+1 instead.
func rowEnd(rowKey []byte) []byte {
	end := slices.Clone(rowKey)
	end[len(end)-1]++
	return end
}

// rowReader assembles rows from an iterator whose bounds include the rows.
type rowReader struct {
	it       *pebble.Iterator
	readTime hlc.Timestamp
	readVer  version
	cols     []uint32 // sorted, unique projection; nil = all columns
	// atRowStart: the iterator is on the first engine key of the row
	// readRow is about to read (a forward scan got there), so a seek that
	// would land on it can be skipped.
	atRowStart bool
	seekBuf    []byte
	colBuf     []byte
	buf        [96]byte // backing of seekBuf for typical keys
	// unc is the read's uncertainty window (nil: none); seekVer, the
	// newest version the reader looks at: the window's limit, else the
	// read time.
	unc     *Uncertainty
	seekVer version
	// prefix: the reader reads single rows (not a scan), so its seeks are
	// SeekPrefixGE, which the bloom filters answer for the sstables that
	// do not hold the row. The iterator then only sees the row's keys.
	prefix bool
}

// seek positions the iterator at the first key at or above target, a key
// inside the row being read.
func (rr *rowReader) seek(target []byte) bool {
	if rr.prefix {
		return rr.it.SeekPrefixGE(target)
	}
	return rr.it.SeekGE(target)
}

func newRowReader(it *pebble.Iterator, readTime hlc.Timestamp, cols []uint32) *rowReader {
	rr := &rowReader{}
	rr.init(it, readTime, cols)
	return rr
}

func (rr *rowReader) init(it *pebble.Iterator, readTime hlc.Timestamp, cols []uint32) {
	rr.it, rr.readTime, rr.readVer = it, readTime, readVersion(readTime)
	rr.seekVer = rr.readVer
	rr.seekBuf = rr.buf[:0]
	if cols != nil {
		rr.cols = make([]uint32, 0, len(cols))
		for _, c := range cols {
			if c != LivenessColumn {
				rr.cols = append(rr.cols, c)
			}
		}
		slices.Sort(rr.cols)
		rr.cols = slices.Compact(rr.cols)
	}
}

// setUncertainty makes the reader note the versions in u's window.
func (rr *rowReader) setUncertainty(u *Uncertainty) {
	if u != nil && u.Limit > rr.readTime {
		rr.unc, rr.seekVer = u, readVersion(u.Limit)
	}
}

// newer reports whether version v is above the read time, noting it when
// it is in the uncertainty window.
func (rr *rowReader) newer(v version) bool {
	if !rr.readVer.less(v) {
		return false
	}
	if rr.unc != nil && !rr.seekVer.less(v) {
		rr.unc.Newest = max(rr.unc.Newest, v.ht)
	}
	return true
}

// rowLevel is what the row-level versions of a row say at the read time.
type rowLevel struct {
	markerLive bool
	markerHT   hlc.Timestamp
	hasDel     bool
	del        version // newest visible row tombstone
	// pastRowLevel: the iterator is where a SeekGE to the row's first
	// column sub-key would put it (on the first key after the row-level
	// versions, or exhausted), so reading the columns needs no seek.
	pastRowLevel bool
}

func (rr *rowReader) readRowLevel(rowKey []byte) (rowLevel, error) {
	var rl rowLevel
	rr.seekBuf = rowVersionKey(rr.seekBuf[:0], rowKey, rr.seekVer)
	first := true
	var valid bool
	if rr.atRowStart && rr.it.Valid() && bytes.Compare(rr.it.Key(), rr.seekBuf) >= 0 {
		// The iterator is on the row's first key, and it is not newer
		// than the seek version: where the seek would land.
		valid = true
	} else {
		valid = rr.seek(rr.seekBuf)
	}
	rr.atRowStart = false
	for ; valid; valid = rr.it.Next() {
		key := rr.it.Key()
		if len(key) != len(rowKey)+versionSuffixLen || !bytes.HasPrefix(key, rowKey) {
			break // a column, or past the row
		}
		_, _, v, err := splitKey(key, len(rowKey))
		if err != nil {
			return rl, err
		}
		if rr.newer(v) {
			continue // in the uncertainty window
		}
		sv, err := rr.storedValue()
		if err != nil {
			return rl, err
		}
		if first {
			first = false
			if sv.liveAt(rr.readTime) {
				rl.markerLive, rl.markerHT = true, v.ht
			}
		}
		if sv.tombstone {
			rl.hasDel, rl.del = true, v
			return rl, rr.it.Error() // older row tombstones hide less
		}
	}
	// Every key from the seek key up to here was a row-level version, and
	// they all sort below the column sub-keys, which sort below the row's
	// end: the iterator is on the first key at or above column 0, if any.
	rl.pastRowLevel = true
	return rl, rr.it.Error()
}

func (rr *rowReader) storedValue() (storedValue, error) {
	raw, err := rr.it.ValueAndErr()
	if err != nil {
		return storedValue{}, err
	}
	return decodeStoredValue(raw)
}

// readRow reads the row with the given key. It leaves the iterator
// somewhere inside or just past the row.
func (rr *rowReader) readRow(rowKey []byte) (Row, bool, error) {
	rl, err := rr.readRowLevel(rowKey)
	if err != nil {
		return Row{}, false, err
	}
	row := Row{}
	exists := rl.markerLive
	var hiddenHT hlc.Timestamp // newest write time of live columns outside the projection
	if rl.markerLive {
		row.WriteTime = rl.markerHT
	}
	emit := func(col uint32, v version, sv storedValue) error {
		exists = true
		if rr.cols != nil {
			if _, found := slices.BinarySearch(rr.cols, col); !found {
				hiddenHT = max(hiddenHT, v.ht)
				return nil
			}
		}
		val, err := DecodeValue(sv.payload)
		if err != nil {
			return fmt.Errorf("docdb: column %d of row %x: %w", col, rowKey, err)
		}
		if val.Bytes != nil {
			val.Bytes = slices.Clone(val.Bytes) // payload is the iterator's memory
		}
		row.Columns = append(row.Columns, ColumnValue{ID: col, Value: val})
		row.WriteTime = max(row.WriteTime, v.ht)
		return nil
	}
	if rr.cols != nil && rl.markerLive {
		// The marker proves existence: only the projected columns matter.
		// Past the row-level versions the iterator is on the first key at
		// or above the row's columns.
		landed := rl.pastRowLevel
		for _, col := range rr.cols {
			if err := rr.readColumn(rowKey, col, rl, emit, &landed); err != nil {
				return Row{}, false, err
			}
		}
	} else if err := rr.readAllColumns(rowKey, rl, emit); err != nil {
		return Row{}, false, err
	}
	if !exists {
		return Row{}, false, nil
	}
	if row.WriteTime == 0 {
		row.WriteTime = hiddenHT
	}
	row.Key = slices.Clone(rowKey)
	return row, true, nil
}

type emitFunc func(col uint32, v version, sv storedValue) error

// visibleColumn evaluates the version the iterator is on, the newest of
// its column at the read time, and emits it if visible.
func (rr *rowReader) visibleColumn(col uint32, v version, rl rowLevel, emit emitFunc) error {
	if rl.hasDel && !rl.del.less(v) {
		return nil // hidden by the row tombstone
	}
	sv, err := rr.storedValue()
	if err != nil {
		return err
	}
	if !sv.liveAt(rr.readTime) {
		return nil
	}
	return emit(col, v, sv)
}

// readColumn reads the visible version of a column of the row. landed
// says that the iterator is on the first key at or above some key below
// this column's versions (the row's columns, or the previous column read:
// the projection is sorted); readColumn leaves it so for the next one.
func (rr *rowReader) readColumn(rowKey []byte, col uint32, rl rowLevel, emit emitFunc, landed *bool) error {
	rr.seekBuf = columnVersionKey(rr.seekBuf[:0], rowKey, col, rr.seekVer)
	prefixLen := len(rowKey) + columnSubKeyLen
	ok := rr.seekForward(rr.seekBuf, rowKey, *landed)
	*landed = true
	if !ok {
		return rr.it.Error()
	}
	key := rr.it.Key()
	if len(key) < prefixLen || !bytes.Equal(key[:prefixLen], rr.seekBuf[:prefixLen]) {
		return nil // no version of this column at or below the seek version
	}
	_, _, v, err := splitKey(key, len(rowKey))
	if err != nil {
		return err
	}
	if rr.newer(v) {
		// In the uncertainty window (noted): on to the visible version.
		rr.seekBuf = columnVersionKey(rr.seekBuf[:0], rowKey, col, rr.readVer)
		if !rr.seek(rr.seekBuf) {
			return rr.it.Error()
		}
		key = rr.it.Key()
		if len(key) < prefixLen || !bytes.Equal(key[:prefixLen], rr.seekBuf[:prefixLen]) {
			return nil // no version of this column at or below the read time
		}
		if _, _, v, err = splitKey(key, len(rowKey)); err != nil {
			return err
		}
	}
	return rr.visibleColumn(col, v, rl, emit)
}

// seekForward moves the iterator to the first key at or above target, as
// SeekGE does, without the seek when it can: landed says the iterator is on
// the first key at or above some key below target, so if it is at or above
// target it is where the seek would land. When it is inside the row below
// target (a projection reads the row's columns in order, so the next one
// is usually a key or two further on) it tries nextTries Nexts first: the
// first key at or above target met going forward is where the seek lands,
// and a Next is much cheaper than a seek.
func (rr *rowReader) seekForward(target, rowKey []byte, landed bool) bool {
	it := rr.it
	if landed && it.Valid() && bytes.Compare(it.Key(), target) >= 0 {
		return true
	}
	if it.Valid() && bytes.HasPrefix(it.Key(), rowKey) && bytes.Compare(it.Key(), target) < 0 {
		for i := 0; i < nextTries; i++ {
			if !it.Next() {
				return false // nothing at or above target either
			}
			if bytes.Compare(it.Key(), target) >= 0 {
				return true
			}
		}
	}
	return rr.seek(target)
}

// noteColumnWindow notes the newest version of column col in the
// uncertainty window, if any, when the versions the iterator met first
// were newer than the window.
func (rr *rowReader) noteColumnWindow(rowKey []byte, col uint32) {
	rr.seekBuf = columnVersionKey(rr.seekBuf[:0], rowKey, col, rr.seekVer)
	prefixLen := len(rowKey) + columnSubKeyLen
	if !rr.seek(rr.seekBuf) {
		return
	}
	key := rr.it.Key()
	if len(key) < prefixLen || !bytes.Equal(key[:prefixLen], rr.seekBuf[:prefixLen]) {
		return
	}
	if _, _, v, err := splitKey(key, len(rowKey)); err == nil {
		rr.newer(v)
	}
}

// nextTries is how many Next calls readAllColumns spends looking for the
// next column before it seeks: cheap when columns have few versions, and a
// bounded cost when they have many.
const nextTries = 3

func (rr *rowReader) readAllColumns(rowKey []byte, rl rowLevel, emit emitFunc) error {
	it := rr.it
	var valid bool
	if rl.pastRowLevel {
		valid = it.Valid()
	} else {
		rr.seekBuf = appendColumnSubKey(append(rr.seekBuf[:0], rowKey...), 0)
		valid = rr.seek(rr.seekBuf)
	}
	prefixLen := len(rowKey) + columnSubKeyLen
	for valid {
		key := it.Key()
		if len(key) <= prefixLen || !bytes.HasPrefix(key, rowKey) || key[len(rowKey)] != columnMarker {
			break // past the row
		}
		col, _, v, err := splitKey(key, len(rowKey))
		if err != nil {
			return err
		}
		if rr.newer(v) {
			if rr.unc != nil && rr.seekVer.less(v) {
				rr.noteColumnWindow(rowKey, col)
			}
			// Versions newer than the read time: jump to the visible one.
			rr.seekBuf = columnVersionKey(rr.seekBuf[:0], rowKey, col, rr.readVer)
			valid = rr.seek(rr.seekBuf)
			if !valid {
				break
			}
			key = it.Key()
			if len(key) <= prefixLen || !bytes.HasPrefix(key, rowKey) || key[len(rowKey)] != columnMarker ||
				binary.BigEndian.Uint32(key[len(rowKey)+1:]) != col {
				continue // nothing of col is visible; key is the next column or past the row
			}
			if _, _, v, err = splitKey(key, len(rowKey)); err != nil {
				return err
			}
		}
		if err := rr.visibleColumn(col, v, rl, emit); err != nil {
			return err
		}
		// Move to the next column: a few Nexts, then a seek.
		rr.colBuf = append(rr.colBuf[:0], key[:prefixLen]...) // key dies on Next
		moved := false
		for i := 0; i < nextTries; i++ {
			if valid = it.Next(); !valid {
				break
			}
			if !bytes.HasPrefix(it.Key(), rr.colBuf) {
				moved = true
				break
			}
		}
		if !valid || moved {
			continue
		}
		if col == ^uint32(0) {
			break
		}
		rr.seekBuf = appendColumnSubKey(append(rr.seekBuf[:0], rowKey...), col+1)
		valid = rr.seek(rr.seekBuf)
	}
	return it.Error()
}
