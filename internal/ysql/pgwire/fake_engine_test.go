package pgwire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// fakeEngine is a tiny engine for protocol tests. Its statements (case
// insensitive, one per Prepare):
//
//	SELECT <n>                    n rows (i int4, s text): i, "row<i>"
//	SELECT $1::int4, $2::text     one row echoing the parameters
//	select "a", "b" from "t"      pgx CopyFrom's describe: no rows
//	BEGIN / COMMIT / ROLLBACK     toggle the transaction status
//	DEALLOCATE ALL, DISCARD ALL   just return their tags
//	FAIL <code>                   fails at Execute with every error field
//	BADSYNTAX ...                 fails at Prepare: 42601 at position 1
//	SLEEP                         waits for its context to be cancelled
//	STREAM                        64 rows of 1 KiB, then waits for release
//	COPY t FROM STDIN [binary]    stores the rows received
//	COPY bad FROM STDIN           fails (22P02) after reading one line
//	COPY early FROM STDIN         reads one line and completes
//	SET application_name = x      changes a reported parameter
//	NOTICE <text>                 raises a NOTICE
//	PANIC                         panics
type fakeEngine struct {
	mu     sync.Mutex
	copied [][]string // rows COPY received

	open     atomic.Int32      // sessions not yet closed
	sleeping chan struct{}     // a SLEEP started
	slept    chan error        // a SLEEP ended, with its context's cause
	release  chan struct{}     // lets STREAM finish
	syncs    atomic.Int32      // Session.Sync calls
	lastSync atomic.Value      // bool: the failed flag of the last Sync
	startup  map[string]string // the last session's startup parameters
	newErr   error             // NewSession's error, when set
	infos    chan ConnInfo     // ConnInfo of each new session
	panics   bool              // PANIC panics (else it is a syntax error)
	discard  bool              // COPY keeps nothing (fuzzing)
}

func newFakeEngine() *fakeEngine {
	return &fakeEngine{
		sleeping: make(chan struct{}, 16),
		slept:    make(chan error, 16),
		release:  make(chan struct{}),
		infos:    make(chan ConnInfo, 4096),
	}
}

func (e *fakeEngine) rows() [][]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([][]string(nil), e.copied...)
}

func (e *fakeEngine) NewSession(ctx context.Context, params map[string]string, info ConnInfo) (Session, error) {
	if e.newErr != nil {
		return nil, e.newErr
	}
	e.mu.Lock()
	e.startup = params
	e.mu.Unlock()
	select {
	case e.infos <- info:
	default:
	}
	e.open.Add(1)
	app := params["application_name"]
	return &fakeSession{e: e, txn: 'I', params: map[string]string{
		"server_version":              "15.2-shale",
		"server_encoding":             "UTF8",
		"client_encoding":             "UTF8",
		"DateStyle":                   "ISO, MDY",
		"TimeZone":                    "UTC",
		"integer_datetimes":           "on",
		"standard_conforming_strings": "on",
		"application_name":            app,
	}}, nil
}

type fakeSession struct {
	e       *fakeEngine
	txn     byte
	params  map[string]string
	version uint64
	notices []*Notice
}

func (s *fakeSession) ParameterStatus() map[string]string { return maps.Clone(s.params) }

// SettingsVersion changes every time: pgwire then compares every value.
func (s *fakeSession) SettingsVersion() uint64 { s.version++; return s.version }
func (s *fakeSession) TxnStatus() byte         { return s.txn }
func (s *fakeSession) Close()                  { s.e.open.Add(-1) }

func (s *fakeSession) Notices() []*Notice {
	n := s.notices
	s.notices = nil
	return n
}

func (s *fakeSession) Split(q string) ([]string, error) {
	if strings.Contains(q, "SPLITFAIL") {
		return nil, pgerror.New(pgerror.CodeSyntaxError, "unterminated quoted string").WithPosition(1)
	}
	var out []string
	for _, part := range strings.Split(q, ";") {
		if part = strings.TrimSpace(part); part != "" && !strings.HasPrefix(part, "--") {
			out = append(out, part)
		}
	}
	return out, nil
}

func (s *fakeSession) Sync(ctx context.Context, failed bool) error {
	s.e.syncs.Add(1)
	s.e.lastSync.Store(failed)
	return nil
}

// fail records a statement error: inside a transaction block it aborts it.
func (s *fakeSession) fail(err error) error {
	if s.txn == 'T' {
		s.txn = 'E'
	}
	return err
}

var (
	int4Col = Column{Name: "i", TypeOID: 23, TypeSize: 4, TypeModifier: -1}
	textCol = Column{Name: "s", TypeOID: 25, TypeSize: -1, TypeModifier: -1}
)

func (s *fakeSession) Prepare(ctx context.Context, q string, paramTypes []uint32) (Statement, error) {
	q = strings.TrimSuffix(strings.TrimSpace(q), ";")
	up := strings.ToUpper(q)
	st := &fakeStmt{s: s, text: q}
	if s.txn == 'E' && up != "COMMIT" && up != "ROLLBACK" {
		return nil, pgerror.New(pgerror.CodeInFailedSQLTransaction,
			"current transaction is aborted, commands ignored until end of transaction block")
	}
	switch {
	case up == "SELECT $1::INT4, $2::TEXT":
		st.kind = "echo"
		st.params = []uint32{23, 25}
		st.cols = []Column{int4Col, textCol}
	case strings.HasPrefix(up, "SELECT ") && strings.Contains(up, " FROM "):
		st.kind = "empty"
		a, b := int4Col, textCol
		a.Name, b.Name = "a", "b"
		st.cols = []Column{a, b}
	case strings.HasPrefix(up, "SELECT "):
		n, err := strconv.Atoi(strings.TrimSpace(q[len("SELECT "):]))
		if err != nil || n < 0 || n > 1_000_000 {
			return nil, pgerror.New(pgerror.CodeSyntaxError, "bad row count").WithPosition(8)
		}
		st.kind, st.n = "series", n
		st.cols = []Column{int4Col, textCol}
	case up == "DEALLOCATE ALL" || up == "DISCARD ALL":
		st.kind = "tag"
	case up == "BEGIN" || up == "COMMIT" || up == "ROLLBACK":
		st.kind = strings.ToLower(up)
	case strings.HasPrefix(up, "FAIL "):
		st.kind = "fail"
	case strings.HasPrefix(up, "BADSYNTAX"):
		return nil, s.fail(pgerror.New(pgerror.CodeSyntaxError, "syntax error at or near \"BADSYNTAX\"").WithPosition(1))
	case up == "SLEEP":
		st.kind = "sleep"
	case up == "STREAM":
		st.kind = "stream"
		st.cols = []Column{textCol}
	case strings.HasPrefix(up, "COPY "):
		st.kind = "copy"
	case strings.HasPrefix(up, "SET APPLICATION_NAME"):
		st.kind = "set"
	case strings.HasPrefix(up, "NOTICE "):
		st.kind = "notice"
	case up == "PANIC" && s.e.panics:
		panic("fake engine panics on request")
	default:
		return nil, s.fail(pgerror.New(pgerror.CodeSyntaxError, "syntax error at or near %q", q).WithPosition(1))
	}
	if len(paramTypes) > len(st.params) {
		return nil, pgerror.New(pgerror.CodeProtocolViolation, "too many parameter types")
	}
	for i, t := range paramTypes {
		if t != 0 && t != st.params[i] {
			return nil, pgerror.New(pgerror.CodeDatatypeMismatch, "parameter $%d has type %d", i+1, t)
		}
	}
	return st, nil
}

type fakeStmt struct {
	s      *fakeSession
	text   string
	kind   string
	n      int
	params []uint32
	cols   []Column
}

func (st *fakeStmt) ParamTypes() []uint32 { return st.params }
func (st *fakeStmt) Columns() []Column    { return st.cols }
func (st *fakeStmt) Close()               {}

func (st *fakeStmt) Bind(ctx context.Context, params [][]byte, paramFormats []int16, resultFormats []int16) (Portal, error) {
	p := &fakePortal{st: st, formats: resultFormats}
	if st.kind == "echo" {
		if params[0] == nil {
			return nil, pgerror.New(pgerror.CodeNullValueNotAllowed, "null")
		}
		switch formatOf(paramFormats, 0) {
		case 1:
			if len(params[0]) != 4 {
				return nil, pgerror.New(pgerror.CodeInvalidBinaryRepresentation, "insufficient data left in message")
			}
			p.i = int(int32(binary.BigEndian.Uint32(params[0])))
		default:
			i, err := strconv.Atoi(string(params[0]))
			if err != nil {
				return nil, pgerror.New(pgerror.CodeInvalidTextRepresentation, "invalid input syntax for type integer: %q", params[0])
			}
			p.i = i
		}
		p.s = params[1] // kept: pgwire hands over a copy
	}
	if st.kind == "copy" {
		return &fakeCopyPortal{fakePortal: p}, nil
	}
	return p, nil
}

type fakePortal struct {
	st      *fakeStmt
	formats []int16
	pos     int
	i       int
	s       []byte
	done    bool
}

func (p *fakePortal) Close() {}

// int4 encodes i in the format of column col.
func (p *fakePortal) int4(col, i int) []byte {
	if formatOf(p.formats, col) == 1 {
		return binary.BigEndian.AppendUint32(nil, uint32(int32(i)))
	}
	return strconv.AppendInt(nil, int64(i), 10)
}

func (p *fakePortal) Execute(ctx context.Context, maxRows int, out RowWriter) (string, bool, error) {
	s := p.st.s
	switch p.st.kind {
	case "series":
		sent := 0
		for p.pos < p.st.n {
			if maxRows > 0 && sent == maxRows {
				return "", true, nil
			}
			if err := out.WriteRow([][]byte{p.int4(0, p.pos), fmt.Appendf(nil, "row%d", p.pos)}); err != nil {
				return "", false, err
			}
			p.pos++
			sent++
		}
		return fmt.Sprintf("SELECT %d", sent), false, nil
	case "echo":
		if p.done {
			return "SELECT 0", false, nil
		}
		p.done = true
		if err := out.WriteRow([][]byte{p.int4(0, p.i), p.s}); err != nil {
			return "", false, err
		}
		return "SELECT 1", false, nil
	case "empty":
		return "SELECT 0", false, nil
	case "tag":
		return strings.ToUpper(p.st.text), false, nil
	case "begin":
		s.txn = 'T'
		return "BEGIN", false, nil
	case "commit", "rollback":
		tag := strings.ToUpper(p.st.kind)
		if s.txn == 'E' {
			tag = "ROLLBACK"
		}
		s.txn = 'I'
		return tag, false, nil
	case "fail":
		code := strings.TrimSpace(p.st.text[len("FAIL "):])
		return "", false, s.fail(&pgerror.Error{Code: code, Message: "fake failure " + code,
			Detail: "the detail", Hint: "the hint", Position: 6,
			Constraint: "t_pkey", Table: "t", Column: "c"})
	case "sleep":
		signal(s.e.sleeping, struct{}{})
		<-ctx.Done()
		signal(s.e.slept, context.Cause(ctx))
		return "", false, s.fail(ctx.Err()) // a bare context error: pgwire reports the cause
	case "stream":
		row := [][]byte{[]byte(strings.Repeat("x", 1024))}
		for range 64 {
			if err := out.WriteRow(row); err != nil {
				return "", false, err
			}
		}
		select {
		case <-s.e.release:
		case <-ctx.Done():
			return "", false, ctx.Err()
		}
		if err := out.WriteRow(row); err != nil {
			return "", false, err
		}
		return "SELECT 65", false, nil
	case "set":
		f := strings.Fields(p.st.text)
		s.params["application_name"] = strings.Trim(f[len(f)-1], "'")
		return "SET", false, nil
	case "notice":
		s.notices = append(s.notices, &Notice{Severity: "NOTICE", Code: "00000", Message: p.st.text[len("NOTICE "):]})
		return "DO", false, nil
	}
	return "", false, pgerror.New(pgerror.CodeFeatureNotSupported, "cannot execute %s", p.st.kind)
}

type fakeCopyPortal struct{ *fakePortal }

func (p *fakeCopyPortal) binary() bool {
	return strings.Contains(strings.ToLower(p.st.text), "binary")
}

func (p *fakeCopyPortal) CopyInFormat() (int16, int) {
	if p.binary() {
		return 1, 2
	}
	return 0, 2
}

func (p *fakeCopyPortal) CopyIn(ctx context.Context, data io.Reader) (string, error) {
	var rows [][]string
	var err error
	low := strings.ToLower(p.st.text)
	switch {
	case p.binary():
		rows, err = readBinaryCopy(data)
	default:
		sc := bufio.NewScanner(data)
		for sc.Scan() {
			if sc.Text() == `\.` {
				continue
			}
			rows = append(rows, strings.Split(sc.Text(), "\t"))
			if strings.Contains(low, "copy bad") {
				return "", pgerror.New(pgerror.CodeInvalidTextRepresentation, "bad copy line %q", sc.Text())
			}
			if strings.Contains(low, "copy early") {
				break
			}
		}
		err = sc.Err()
	}
	if err != nil {
		return "", err
	}
	if p.st.s.e.discard {
		return fmt.Sprintf("COPY %d", len(rows)), nil
	}
	p.st.s.e.mu.Lock()
	p.st.s.e.copied = append(p.st.s.e.copied, rows...)
	p.st.s.e.mu.Unlock()
	return fmt.Sprintf("COPY %d", len(rows)), nil
}

// readBinaryCopy decodes COPY's binary format with (int4, text) tuples.
func readBinaryCopy(r io.Reader) ([][]string, error) {
	br := bufio.NewReader(r)
	hdr := make([]byte, 19)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return nil, err
	}
	if string(hdr[:11]) != "PGCOPY\n\xff\r\n\x00" {
		return nil, pgerror.New("22P04", "bad COPY signature")
	}
	if ext := binary.BigEndian.Uint32(hdr[15:]); ext > 0 {
		if _, err := br.Discard(int(ext)); err != nil {
			return nil, err
		}
	}
	var rows [][]string
	for {
		var n int16
		if err := binary.Read(br, binary.BigEndian, &n); errors.Is(err, io.EOF) {
			return rows, nil // the trailer is optional (pgx omits it)
		} else if err != nil {
			return nil, err
		}
		if n == -1 {
			// The trailer; the reader must now report the end of data.
			if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("data after COPY trailer: %v", err)
			}
			return rows, nil
		}
		if n < 0 {
			return nil, pgerror.New("22P04", "bad field count %d", n)
		}
		row := make([]string, n)
		for i := range row {
			var l int32
			if err := binary.Read(br, binary.BigEndian, &l); err != nil {
				return nil, err
			}
			if l == -1 {
				row[i] = "NULL"
				continue
			}
			if l < 0 || l > 1<<20 {
				return nil, pgerror.New("22P04", "bad field length %d", l)
			}
			v := make([]byte, l)
			if _, err := io.ReadFull(br, v); err != nil {
				return nil, err
			}
			if i == 0 && l == 4 {
				row[i] = strconv.Itoa(int(int32(binary.BigEndian.Uint32(v))))
			} else {
				row[i] = string(v)
			}
		}
		rows = append(rows, row)
	}
}

// signal sends v unless ch is full: a test that does not wait for it
// (the fuzzer) must not block the engine.
func signal[T any](ch chan T, v T) {
	select {
	case ch <- v:
	default:
	}
}
