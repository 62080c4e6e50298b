package exec

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"github.com/cockroachdb/apd/v3"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// External sorts. A sort keeps its rows in memory up to work_mem (the
// session setting, PostgreSQL's); past it, it sorts what it holds, writes
// that run to a temporary file and starts the next, then merges the runs
// as the rows are pulled (PostgreSQL's external merge sort), so a sort of
// a table larger than memory streams its result in the memory of one run
// and a buffer per run. Every maxMergeWidth runs of a level are merged
// into one of the next level first. The files live in the engine's TempDir (the node's data dir), are
// unlinked as soon as they are created (nothing is left behind by a
// crash) and closed when the merge ends, the statement fails or its
// stream is dropped.

// defaultWorkMem is work_mem when the setting cannot be read. The setting
// defaults to 64MB, not PostgreSQL's 4MB: a row held here costs several
// times a PostgreSQL tuple (a Datum per column).
const defaultWorkMem = 64 << 20

// maxMergeWidth is how many runs of one level are merged into one (a
// file and a read buffer each).
const maxMergeWidth = 64

// runBufferSize is the read and write buffer of each run file.
const runBufferSize = 64 << 10

// parseMemory parses a memory setting as PostgreSQL does: a number of
// kilobytes, or a number with a unit (B, kB, MB, GB, TB).
func parseMemory(v string) (int64, error) {
	v = strings.TrimSpace(v)
	i := len(v)
	for i > 0 && (v[i-1] < '0' || v[i-1] > '9') {
		i--
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v[:i]), 10, 64)
	unit := strings.TrimSpace(v[i:])
	var mult int64
	switch unit {
	case "B":
		mult = 1
	case "", "kB":
		mult = 1 << 10
	case "MB":
		mult = 1 << 20
	case "GB":
		mult = 1 << 30
	case "TB":
		mult = 1 << 40
	}
	if err != nil || mult == 0 || n <= 0 || n > math.MaxInt64/mult || n*mult < 64<<10 {
		return 0, pgerror.New(pgerror.CodeInvalidParameterValue, "invalid value for parameter \"work_mem\": %q", v).
			WithHint(`Valid units for this parameter are "B", "kB", "MB", "GB", and "TB"; the least is 64kB.`)
	}
	return n * mult, nil
}

// workMem is the memory a sort may hold before it spills.
func (s *Session) workMem() int64 {
	if n, err := parseMemory(s.settings["work_mem"]); err == nil {
		return n
	}
	return defaultWorkMem
}

// datumSize estimates the memory a datum holds.
func datumSize(d types.Datum) int64 {
	n := int64(unsafe.Sizeof(d)) + int64(len(d.S)) + int64(cap(d.B))
	if d.D != nil {
		n += 64
	}
	for _, e := range d.A {
		n += datumSize(e)
	}
	return n
}

func rowSize(row []types.Datum) int64 {
	n := int64(24)
	for _, d := range row {
		n += datumSize(d)
	}
	return n
}

// openSort sorts the rows of s's input, spilling past work_mem, and
// returns them in order.
func (r *runner) openSort(s *plan.Sort) (rowSource, error) {
	in, err := r.open(s.Input)
	if err != nil {
		return nil, err
	}
	ex := &externalSort{r: r, keys: s.Keys, budget: r.s.workMem(), mem: r.newHeld("a sort")}
	r.s.noteSpill(s, ex.explain)
	src, err := ex.sort(in)
	if err != nil {
		ex.close()
		return nil, err
	}
	r.onClose(ex.close)
	return src, nil
}

// externalSort is one sort's runs.
type externalSort struct {
	r      *runner
	keys   []plan.SortKey
	budget int64
	runs   []*sortRun // spilled, in the order written
	spills int        // runs written, merged ones included (EXPLAIN ANALYZE, tests)
	disk   int64      // bytes written to runs
	peak   int64      // most memory held (estimated)
	mem    *heldRows  // what it holds, counted (nil: not)
}

// explain is the sort's line of EXPLAIN ANALYZE, as PostgreSQL's.
func (ex *externalSort) explain() string {
	if ex.spills == 0 {
		return fmt.Sprintf("Sort Method: quicksort  Memory: %dkB", kB(ex.peak))
	}
	return fmt.Sprintf("Sort Method: external merge  Disk: %dkB  Runs: %d", kB(ex.disk), ex.spills)
}

func kB(n int64) int64 { return (n + 1023) / 1024 }

func (ex *externalSort) sort(in rowSource) (rowSource, error) {
	var rows []keyedRow
	var held int64
	for seq := 0; ; seq++ {
		row, err := in.next()
		if err != nil {
			return nil, err
		}
		if row == nil {
			break
		}
		kr := keyedRow{row: row, vals: make([]types.Datum, len(ex.keys)), seq: seq}
		if err := ex.r.sortKeys(row, ex.keys, kr.vals); err != nil {
			return nil, err
		}
		rows = append(rows, kr)
		size := rowSize(row) + rowSize(kr.vals) + int64(unsafe.Sizeof(kr))
		held += size
		ex.peak = max(ex.peak, held)
		if err := ex.mem.addBytes(size); err != nil {
			return nil, err
		}
		if held > ex.budget && len(rows) > 1 {
			if err := ex.spill(rows); err != nil {
				return nil, err
			}
			rows, held = nil, 0
			ex.mem.release()
		}
	}
	ex.sortRows(rows)
	if len(ex.runs) == 0 {
		out := make([]plan.Row, len(rows))
		for i := range rows {
			out[i] = rows[i].row
		}
		return &sliceSource{rows: out}, nil
	}
	m := &runMerge{keys: ex.keys}
	for _, run := range ex.runs {
		m.add(run)
	}
	if len(rows) > 0 {
		m.add(&memRun{rows: rows})
	}
	return m, m.start()
}

func (ex *externalSort) sortRows(rows []keyedRow) {
	slices.SortFunc(rows, func(a, b keyedRow) int { return compareKeyed(ex.keys, &a, &b) })
}

// spill sorts rows and writes them as a run. Runs have levels: when
// maxMergeWidth runs of one level are on file they are merged into one run
// of the next, so every row is rewritten once per level (log base 64 of
// the runs), not at every merge.
func (ex *externalSort) spill(rows []keyedRow) error {
	ex.sortRows(rows)
	run, err := ex.writeRun(&memRun{rows: rows})
	if err != nil {
		return err
	}
	ex.runs = append(ex.runs, run)
	for level := 0; ; level++ {
		var same, rest []*sortRun
		for _, r := range ex.runs {
			if r.level == level {
				same = append(same, r)
			} else {
				rest = append(rest, r)
			}
		}
		if len(same) < maxMergeWidth {
			return nil
		}
		m := &runMerge{keys: ex.keys}
		for _, r := range same {
			m.add(r)
		}
		if err := m.start(); err != nil {
			return err
		}
		merged, err := ex.writeRun(m)
		m.close()
		if err != nil {
			return err
		}
		merged.level = level + 1
		ex.runs = append(rest, merged)
	}
}

// runSource yields a run's rows with their sort values, in order.
type runSource interface {
	nextKeyed() (*keyedRow, error)
	close()
}

// writeRun writes the rows of src to a new run file.
func (ex *externalSort) writeRun(src runSource) (*sortRun, error) {
	f, err := newSpillFile(ex.r.s.e.tempDir(), "sort")
	if err != nil {
		return nil, err
	}
	ex.spills++
	var buf []byte
	for {
		kr, err := src.nextKeyed()
		if err == nil && kr != nil {
			buf = appendKeyedRow(buf[:0], kr)
			err = f.write(buf)
		}
		if err == nil && kr == nil {
			err = f.finish()
		}
		if err != nil {
			f.close()
			return nil, err
		}
		if kr == nil {
			ex.disk += f.bytes
			return &sortRun{f: f}, nil
		}
	}
}

func (ex *externalSort) close() {
	ex.mem.release()
	for _, run := range ex.runs {
		run.close()
	}
	ex.runs = nil
}

// sortRun is a run on file.
type sortRun struct {
	f     *spillFile
	kr    keyedRow
	level int // merges its rows went through
}

func (s *sortRun) nextKeyed() (*keyedRow, error) {
	rec, err := s.f.read()
	if rec == nil || err != nil {
		return nil, err
	}
	if err := decodeKeyedRow(rec, &s.kr); err != nil {
		return nil, fmt.Errorf("sort: read run: %w", err)
	}
	kr := s.kr
	return &kr, nil
}

func (s *sortRun) close() { s.f.close() }

// spillFile is a temporary file of records, written once, then read once
// from the start. It is unlinked at once: the space goes when it is
// closed, or with the process.
type spillFile struct {
	f     *os.File
	bytes int64 // written
	w     *bufio.Writer
	r     *bufio.Reader
	n     int // records written, then left to read
	total int // records written, once finished
	buf   []byte
	what  string
}

func newSpillFile(dir, what string) (*spillFile, error) {
	f, err := os.CreateTemp(dir, what+"-*")
	if err != nil {
		return nil, fmt.Errorf("%s: temporary file: %w", what, err)
	}
	_ = os.Remove(f.Name()) // the open file stays until closed
	return &spillFile{f: f, w: bufio.NewWriterSize(f, runBufferSize), what: what}, nil
}

func (s *spillFile) write(rec []byte) error {
	var n [binary.MaxVarintLen64]byte
	if _, err := s.w.Write(n[:binary.PutUvarint(n[:], uint64(len(rec)))]); err != nil {
		return spillWriteError(s.what, err)
	}
	if _, err := s.w.Write(rec); err != nil {
		return spillWriteError(s.what, err)
	}
	s.n++
	s.bytes += int64(binary.PutUvarint(n[:], uint64(len(rec))) + len(rec))
	return nil
}

// spillWriteError is a failed write of a spill file: PostgreSQL's 53100
// when the disk is full, which the client can act on.
func spillWriteError(what string, err error) error {
	if errors.Is(err, syscall.ENOSPC) {
		return pgerror.New(pgerror.CodeDiskFull, "could not write to temporary file: %v", err).
			WithDetail("A %s larger than work_mem spills to the node's data directory (tmp/).", what)
	}
	return fmt.Errorf("%s: write: %w", what, err)
}

// finish ends the writing; reads start from the first record.
func (s *spillFile) finish() error {
	err := s.w.Flush()
	if err == nil {
		_, err = s.f.Seek(0, io.SeekStart)
	}
	if err != nil {
		return spillWriteError(s.what, err)
	}
	s.w, s.total = nil, s.n
	return nil
}

// rewind reads the finished file again from its first record (a nested
// loop reads its right side once per block of left rows).
func (s *spillFile) rewind() error {
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("%s: rewind: %w", s.what, err)
	}
	if s.r != nil {
		s.r.Reset(s.f)
	}
	s.n = s.total
	return nil
}

// read returns the next record (valid until the next read), nil after the
// last.
func (s *spillFile) read() ([]byte, error) {
	if s.f == nil || s.n == 0 {
		return nil, nil
	}
	if s.r == nil {
		s.r = bufio.NewReaderSize(s.f, runBufferSize)
	}
	n, err := binary.ReadUvarint(s.r)
	if err == nil {
		s.buf = slices.Grow(s.buf[:0], int(n))[:n]
		_, err = io.ReadFull(s.r, s.buf)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: read: %w", s.what, err)
	}
	s.n--
	return s.buf, nil
}

func (s *spillFile) close() {
	if s.f != nil {
		_ = s.f.Close()
		s.f = nil
	}
}

// memRun is the run still in memory.
type memRun struct {
	rows []keyedRow
	i    int
}

func (m *memRun) nextKeyed() (*keyedRow, error) {
	if m.i == len(m.rows) {
		return nil, nil
	}
	m.i++
	return &m.rows[m.i-1], nil
}

func (m *memRun) close() { m.rows = nil }

// runMerge merges sorted runs: a heap of each run's next row.
type runMerge struct {
	keys  []plan.SortKey
	runs  []runSource
	heads []*keyedRow // the heap: heads[i] from runs[order[i]]
	order []int
}

func (m *runMerge) add(s runSource) { m.runs = append(m.runs, s) }

func (m *runMerge) start() error {
	for i, s := range m.runs {
		kr, err := s.nextKeyed()
		if err != nil {
			return err
		}
		if kr != nil {
			m.heads, m.order = append(m.heads, kr), append(m.order, i)
		}
	}
	heap.Init(m)
	return nil
}

func (m *runMerge) Len() int { return len(m.heads) }
func (m *runMerge) Less(i, j int) bool {
	return compareKeyed(m.keys, m.heads[i], m.heads[j]) < 0
}
func (m *runMerge) Swap(i, j int) {
	m.heads[i], m.heads[j] = m.heads[j], m.heads[i]
	m.order[i], m.order[j] = m.order[j], m.order[i]
}
func (m *runMerge) Push(any) {}
func (m *runMerge) Pop() any {
	n := len(m.heads) - 1
	m.heads, m.order = m.heads[:n], m.order[:n]
	return nil
}

func (m *runMerge) nextKeyed() (*keyedRow, error) {
	if len(m.heads) == 0 {
		m.close() // the files go as soon as the rows are out
		return nil, nil
	}
	top := m.heads[0]
	next, err := m.runs[m.order[0]].nextKeyed()
	if err != nil {
		return nil, err
	}
	if next == nil {
		heap.Pop(m)
	} else {
		m.heads[0] = next
		heap.Fix(m, 0)
	}
	return top, nil
}

func (m *runMerge) next() (plan.Row, error) {
	kr, err := m.nextKeyed()
	if kr == nil || err != nil {
		return nil, err
	}
	return kr.row, nil
}

func (m *runMerge) close() {
	for _, s := range m.runs {
		s.close()
	}
}

// Run records: the row, the sort values and the input position, each
// datum in a self-describing form (which fields are set, then those).

func appendKeyedRow(b []byte, kr *keyedRow) []byte {
	b = binary.AppendUvarint(b, uint64(kr.seq))
	b = appendDatums(b, kr.row)
	return appendDatums(b, kr.vals)
}

func decodeKeyedRow(b []byte, kr *keyedRow) error {
	seq, n := binary.Uvarint(b)
	if n <= 0 {
		return errBadRecord
	}
	kr.seq = int(seq)
	var err error
	if kr.row, b, err = decodeDatums(b[n:]); err != nil {
		return err
	}
	kr.vals, b, err = decodeDatums(b)
	if err == nil && len(b) > 0 {
		err = errBadRecord
	}
	return err
}

var errBadRecord = errors.New("malformed run record")

// Which fields of a datum a record holds.
const (
	fNull = 1 << iota
	fI
	fF
	fS
	fB
	fD
	fIv
	fU
	fA
)

func appendDatums(b []byte, ds []types.Datum) []byte {
	b = binary.AppendUvarint(b, uint64(len(ds)))
	for _, d := range ds {
		b = appendDatum(b, d)
	}
	return b
}

func appendDatum(b []byte, d types.Datum) []byte {
	var f uint64
	set := func(ok bool, bit uint64) {
		if ok {
			f |= bit
		}
	}
	set(d.Null, fNull)
	set(d.I != 0, fI)
	set(d.F != 0 || math.Signbit(d.F), fF)
	set(d.S != "", fS)
	set(d.B != nil, fB)
	set(d.D != nil, fD)
	set(d.Iv != types.Interval{}, fIv)
	set(d.U != [16]byte{}, fU)
	set(d.A != nil, fA)
	b = binary.AppendUvarint(b, f)
	if f&fI != 0 {
		b = binary.AppendVarint(b, d.I)
	}
	if f&fF != 0 {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(d.F))
	}
	if f&fS != 0 {
		b = binary.AppendUvarint(b, uint64(len(d.S)))
		b = append(b, d.S...)
	}
	if f&fB != 0 {
		b = binary.AppendUvarint(b, uint64(len(d.B)))
		b = append(b, d.B...)
	}
	if f&fD != 0 {
		s := d.D.String()
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	if f&fIv != 0 {
		b = binary.AppendVarint(b, int64(d.Iv.Months))
		b = binary.AppendVarint(b, int64(d.Iv.Days))
		b = binary.AppendVarint(b, d.Iv.Micros)
	}
	if f&fU != 0 {
		b = append(b, d.U[:]...)
	}
	if f&fA != 0 {
		b = appendDatums(b, d.A)
	}
	return b
}

// decodeRow decodes a spilled row (appendDatums).
func decodeRow(rec []byte) (plan.Row, error) {
	row, rest, err := decodeDatums(rec)
	if err == nil && len(rest) > 0 {
		err = errBadRecord
	}
	return row, err
}

func decodeDatums(b []byte) ([]types.Datum, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, nil, errBadRecord
	}
	b = b[k:]
	ds := make([]types.Datum, n)
	var err error
	for i := range ds {
		if ds[i], b, err = decodeDatum(b); err != nil {
			return nil, nil, err
		}
	}
	return ds, b, nil
}

func decodeDatum(b []byte) (types.Datum, []byte, error) {
	var d types.Datum
	f, k := binary.Uvarint(b)
	if k <= 0 {
		return d, nil, errBadRecord
	}
	b = b[k:]
	bad := false
	varint := func() int64 {
		v, k := binary.Varint(b)
		if k <= 0 {
			bad = true
			return 0
		}
		b = b[k:]
		return v
	}
	bytes := func() []byte {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			bad = true
			return nil
		}
		v := b[k : k+int(n) : k+int(n)]
		b = b[k+int(n):]
		return v
	}
	d.Null = f&fNull != 0
	if f&fI != 0 {
		d.I = varint()
	}
	if f&fF != 0 {
		if len(b) < 8 {
			return d, nil, errBadRecord
		}
		d.F = math.Float64frombits(binary.LittleEndian.Uint64(b))
		b = b[8:]
	}
	if f&fS != 0 {
		d.S = string(bytes())
	}
	if f&fB != 0 {
		d.B = slices.Clone(bytes())
		if d.B == nil {
			d.B = []byte{}
		}
	}
	if f&fD != 0 {
		dec, _, err := apd.NewFromString(string(bytes()))
		if err != nil {
			return d, nil, errBadRecord
		}
		d.D = dec
	}
	if f&fIv != 0 {
		d.Iv = types.Interval{Months: int32(varint()), Days: int32(varint()), Micros: varint()}
	}
	if f&fU != 0 {
		if len(b) < 16 {
			return d, nil, errBadRecord
		}
		copy(d.U[:], b)
		b = b[16:]
	}
	if f&fA != 0 {
		var err error
		if d.A, b, err = decodeDatums(b); err != nil {
			return d, nil, err
		}
	}
	if bad {
		return d, nil, errBadRecord
	}
	return d, b, nil
}
