package exec

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/pgwire"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// copyRowsPerTxn: outside a transaction block COPY commits every this many
// rows (YugabyteDB's ROWS_PER_TRANSACTION does the same), so a large load
// is not one huge transaction.
const copyRowsPerTxn = 5000

// copyPortal runs COPY table FROM STDIN.
type copyPortal struct {
	s      *Session
	cs     *pg.CopyStmt
	table  *catalog.Table
	target []int // table column of each input field
	opts   copyOptions
}

type copyOptions struct {
	binary bool
	csv    bool
	delim  byte
	null   string
	header bool
	quote  byte
	escape byte
}

// copyPortalFor builds the portal of a COPY FROM STDIN or COPY TO STDOUT
// statement.
func (s *Session) copyPortalFor(ctx context.Context, cs *pg.CopyStmt) (pgwire.Portal, error) {
	if !cs.GetIsFrom() {
		return s.copyOutPortalFor(ctx, cs)
	}
	if err := s.readOnlyErr("COPY FROM"); err != nil {
		return nil, err
	}
	if cs.GetFilename() != "" || cs.GetIsProgram() {
		return nil, pgerror.New(pgerror.CodeInsufficientPrivilege, "COPY from a file or program is not allowed").
			WithHint("Use COPY FROM STDIN (psql's \\copy).")
	}
	if cs.GetRelation() == nil {
		return nil, pgerror.Unsupported("COPY of a query")
	}
	if cs.GetWhereClause() != nil {
		return nil, pgerror.Unsupported("COPY FROM ... WHERE")
	}
	b, err := s.binder(ctx)
	if err != nil {
		return nil, err
	}
	t, err := b.LookupTable(cs.GetRelation())
	if err != nil {
		return nil, err
	}
	opts, err := copyOptionsOf(cs)
	if err != nil {
		return nil, err
	}
	p := &copyPortal{s: s, cs: cs, table: t, opts: opts}
	if len(cs.GetAttlist()) == 0 {
		for i, c := range t.Columns {
			if !c.Hidden {
				p.target = append(p.target, i)
			}
		}
	} else {
		for _, a := range cs.GetAttlist() {
			name := a.GetString_().GetSval()
			i := t.ColumnIndex(name)
			if i < 0 {
				return nil, pgerror.New(pgerror.CodeUndefinedColumn, "column %q of relation %q does not exist", name, t.Name)
			}
			p.target = append(p.target, i)
		}
	}
	return p, nil
}

// copyOptionsOf reads a COPY statement's options.
func copyOptionsOf(cs *pg.CopyStmt) (copyOptions, error) {
	opts := copyOptions{delim: '\t', null: `\N`, quote: '"', escape: '"'}
	for _, o := range cs.GetOptions() {
		de := o.GetDefElem()
		v, _ := setValue([]*pg.Node{de.GetArg()})
		if de.GetDefname() == "format" {
			switch strings.ToLower(v) {
			case "csv":
				opts.csv, opts.delim, opts.null = true, ',', ""
			case "text":
			case "binary":
				opts.binary = true
			default:
				return opts, pgerror.New(pgerror.CodeInvalidParameterValue, "COPY format %q not recognized", v)
			}
		}
	}
	for _, o := range cs.GetOptions() {
		de := o.GetDefElem()
		v, _ := setValue([]*pg.Node{de.GetArg()})
		switch de.GetDefname() {
		case "format":
		case "delimiter":
			if len(v) != 1 {
				return opts, pgerror.New(pgerror.CodeFeatureNotSupported, "COPY delimiter must be a single one-byte character")
			}
			opts.delim = v[0]
		case "null":
			opts.null = v
		case "header":
			opts.header = de.GetArg() == nil || isOn(v) || v == "true"
		case "quote":
			if len(v) != 1 {
				return opts, pgerror.New(pgerror.CodeFeatureNotSupported, "COPY quote must be a single one-byte character")
			}
			opts.quote = v[0]
		case "escape":
			if len(v) != 1 {
				return opts, pgerror.New(pgerror.CodeFeatureNotSupported, "COPY escape must be a single one-byte character")
			}
			opts.escape = v[0]
		case "freeze", "encoding":
		default:
			return opts, pgerror.New(pgerror.CodeSyntaxError, "option %q not recognized", de.GetDefname())
		}
	}
	return opts, nil
}

func (p *copyPortal) Execute(context.Context, int, pgwire.RowWriter) (string, bool, error) {
	return "", false, pgerror.New(pgerror.CodeProtocolViolation, "COPY FROM STDIN must be run with the COPY sub-protocol")
}

func (p *copyPortal) Close() {}

// CopyInFormat is text (0) or binary (1) with one column per target.
func (p *copyPortal) CopyInFormat() (int16, int) {
	if p.opts.binary {
		return 1, len(p.target)
	}
	return 0, len(p.target)
}

// CopyIn reads the rows and inserts them.
func (p *copyPortal) CopyIn(ctx context.Context, data io.Reader) (string, error) {
	s := p.s
	if s.failed {
		return "", errInFailed
	}
	s.pin()
	defer s.unpinStatement()
	b, err := s.binder(ctx)
	if err != nil {
		return "", err
	}
	// The table as of now: its indexes may have changed since the COPY
	// was prepared.
	t := p.table
	if cur, ok := b.Cat.ByOID[t.OID()]; ok {
		t = cur
	}
	defaults := make([]plan.Expr, len(t.Columns))
	for i := range t.Columns {
		if defaults[i], err = b.DefaultExpr(t, &t.Columns[i]); err != nil {
			return "", err
		}
	}
	checks, err := b.Checks(t)
	if err != nil {
		return "", err
	}
	ec := s.evalContext(nil)
	loc := s.location()
	rd := bufio.NewReaderSize(data, 64<<10)
	var batch []plan.Row
	var total int64
	line := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		rows := batch
		batch = nil
		return s.inTxn(ctx, func(tx *client.Txn) error {
			r := &runner{s: s, ctx: ctx, txn: tx, ec: ec}
			ins := plan.InsertRows(t, rows)
			ins.Checks = checks
			_, _, err := r.insert(ins)
			return err
		})
	}
	if p.opts.binary {
		if err := readBinaryHeader(rd); err != nil {
			return "", err
		}
	}
	for {
		var fields []*string
		var bin [][]byte
		var err error
		if p.opts.binary {
			bin, err = readBinaryTuple(rd, len(p.target))
			if err == nil && bin == nil {
				break
			}
			fields = make([]*string, len(bin))
		} else {
			fields, err = p.readRecord(rd)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		line++
		if fields == nil { // end-of-data marker
			break
		}
		if line == 1 && p.opts.header {
			continue
		}
		if len(fields) != len(p.target) {
			what := "missing data for column"
			if len(fields) > len(p.target) {
				return "", pgerror.New(pgerror.CodeBadCopyFileFormat, "extra data after last expected column").
					WithDetail("COPY %s, line %d", t.Name, line)
			}
			return "", pgerror.New(pgerror.CodeBadCopyFileFormat, "%s %q", what, t.Columns[p.target[len(fields)]].Name).
				WithDetail("COPY %s, line %d", t.Name, line)
		}
		row := make(plan.Row, len(t.Columns))
		for i, d := range defaults {
			if row[i], err = d.Eval(ec, nil); err != nil {
				return "", err
			}
		}
		for j, f := range fields {
			c := &t.Columns[p.target[j]]
			if bin != nil {
				if bin[j] == nil {
					row[p.target[j]] = types.NullDatum
					continue
				}
				d, err := types.DecodeBinary(bin[j], c.Type)
				if err != nil {
					return "", pgerror.New(pgerror.CodeInvalidBinaryRepresentation, "incorrect binary data format").
						WithDetail("COPY %s, line %d, column %s: %v", t.Name, line, c.Name, err)
				}
				row[p.target[j]] = d
				continue
			}
			if f == nil {
				row[p.target[j]] = types.NullDatum
				continue
			}
			d, err := types.ParseText(*f, c.Type, loc)
			if err != nil {
				pe := pgerror.From(err)
				return "", &pgerror.Error{Code: pe.Code, Message: pe.Message,
					Detail: fmt.Sprintf("COPY %s, line %d, column %s: %q", t.Name, line, c.Name, *f)}
			}
			row[p.target[j]] = d
		}
		batch = append(batch, row)
		total++
		if !s.inBlock && len(batch) >= copyRowsPerTxn {
			if err := flush(); err != nil {
				return "", err
			}
		}
	}
	if err := flush(); err != nil {
		return "", err
	}
	return fmt.Sprintf("COPY %d", total), nil
}

// readRecord reads one line of input; a nil slice is the "\." end marker.
// A nil field is NULL.
func (p *copyPortal) readRecord(rd *bufio.Reader) ([]*string, error) {
	line, err := rd.ReadString('\n')
	if err == io.EOF && line == "" {
		return nil, io.EOF
	}
	if err != nil && err != io.EOF {
		return nil, err
	}
	if p.opts.csv {
		// A quoted field may span lines.
		for strings.Count(line, string(p.opts.quote))%2 == 1 {
			more, err := rd.ReadString('\n')
			line += more
			if err != nil {
				break
			}
		}
	}
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if line == `\.` {
		return nil, nil
	}
	if p.opts.csv {
		return p.csvFields(line)
	}
	return p.textFields(line)
}

func (p *copyPortal) textFields(line string) ([]*string, error) {
	var out []*string
	for _, raw := range strings.Split(line, string(p.opts.delim)) {
		if raw == p.opts.null {
			out = append(out, nil)
			continue
		}
		v := unescapeCopy(raw)
		out = append(out, &v)
	}
	return out, nil
}

// copyEscapes are the letters of COPY text format's escapes of control
// characters (\n, \t ...; 0: none), copyUnescapes the reverse.
var copyEscapes, copyUnescapes [256]byte

func init() {
	for _, e := range []string{"\nn", "\tt", "\rr", "\bb", "\ff", "\vv"} {
		copyEscapes[e[0]], copyUnescapes[e[1]] = e[1], e[0]
	}
}

// unescapeCopy decodes COPY text format's backslash escapes.
func unescapeCopy(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		if c := copyUnescapes[s[i]]; c != 0 {
			b.WriteByte(c)
			continue
		}
		switch s[i] {
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v, n := 0, 0
			for n < 3 && i < len(s) && s[i] >= '0' && s[i] <= '7' {
				v = v*8 + int(s[i]-'0')
				i++
				n++
			}
			i--
			b.WriteByte(byte(v))
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func (p *copyPortal) csvFields(line string) ([]*string, error) {
	var out []*string
	q, esc, delim := p.opts.quote, p.opts.escape, p.opts.delim
	i := 0
	for {
		var field strings.Builder
		quoted := false
		for i < len(line) && line[i] != delim {
			if line[i] == q {
				quoted = true
				i++
				for i < len(line) {
					if line[i] == esc && i+1 < len(line) && line[i+1] == q {
						field.WriteByte(q)
						i += 2
						continue
					}
					if line[i] == q {
						i++
						break
					}
					field.WriteByte(line[i])
					i++
				}
				continue
			}
			field.WriteByte(line[i])
			i++
		}
		v := field.String()
		if !quoted && v == p.opts.null {
			out = append(out, nil)
		} else {
			out = append(out, &v)
		}
		if i >= len(line) {
			return out, nil
		}
		i++ // the delimiter
	}
}

// binarySignature starts a binary COPY stream.
const binarySignature = "PGCOPY\n\377\r\n\x00"

func readBinaryHeader(rd *bufio.Reader) error {
	var hdr [19]byte
	if _, err := io.ReadFull(rd, hdr[:]); err != nil || string(hdr[:11]) != binarySignature {
		return pgerror.New(pgerror.CodeBadCopyFileFormat, "COPY file signature not recognized")
	}
	ext := binary.BigEndian.Uint32(hdr[15:19])
	if _, err := io.CopyN(io.Discard, rd, int64(ext)); err != nil {
		return pgerror.New(pgerror.CodeBadCopyFileFormat, "invalid COPY file header (missing extension)")
	}
	return nil
}

// readBinaryTuple reads one tuple; nil at the trailer (-1) or the end.
func readBinaryTuple(rd *bufio.Reader, ncols int) ([][]byte, error) {
	var n [2]byte
	if _, err := io.ReadFull(rd, n[:]); err != nil {
		if err == io.EOF {
			return nil, nil
		}
		return nil, pgerror.New(pgerror.CodeBadCopyFileFormat, "unexpected end of binary COPY data")
	}
	count := int16(binary.BigEndian.Uint16(n[:]))
	if count == -1 {
		return nil, nil
	}
	if int(count) != ncols {
		return nil, pgerror.New(pgerror.CodeBadCopyFileFormat, "row field count is %d, expected %d", count, ncols)
	}
	out := make([][]byte, ncols)
	for i := range out {
		var l [4]byte
		if _, err := io.ReadFull(rd, l[:]); err != nil {
			return nil, pgerror.New(pgerror.CodeBadCopyFileFormat, "unexpected end of binary COPY data")
		}
		size := int32(binary.BigEndian.Uint32(l[:]))
		if size == -1 {
			continue
		}
		if size < 0 || size > 1<<30 {
			return nil, pgerror.New(pgerror.CodeBadCopyFileFormat, "invalid field size %d", size)
		}
		buf := make([]byte, size)
		if _, err := io.ReadFull(rd, buf); err != nil {
			return nil, pgerror.New(pgerror.CodeBadCopyFileFormat, "unexpected end of binary COPY data")
		}
		out[i] = buf
	}
	return out, nil
}
