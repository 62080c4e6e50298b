package exec

import (
	"bytes"
	"context"
	"io"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/pgwire"
)

// copyOutPortal runs COPY table [(cols)] TO STDOUT and COPY (query) TO
// STDOUT (psql's \copy ... to, pg_dump's data): the rows of a SELECT,
// streamed as its portal reads them, each as one line of text or CSV.
type copyOutPortal struct {
	inner *Portal
	opts  copyOptions
	names []string
}

func (s *Session) copyOutPortalFor(ctx context.Context, cs *pg.CopyStmt) (pgwire.Portal, error) {
	if cs.GetFilename() != "" || cs.GetIsProgram() {
		return nil, pgerror.New(pgerror.CodeInsufficientPrivilege, "COPY to a file or program is not allowed").
			WithHint("Use COPY TO STDOUT (psql's \\copy).")
	}
	opts, err := copyOptionsOf(cs)
	if err != nil {
		return nil, err
	}
	if opts.binary {
		return nil, pgerror.Unsupported("COPY TO in binary format")
	}
	query := cs.GetQuery()
	if query == nil {
		// COPY t (a, b): SELECT a, b FROM t (every visible column without
		// a list).
		sel := &pg.SelectStmt{Op: pg.SetOperation_SETOP_NONE, LimitOption: pg.LimitOption_LIMIT_OPTION_DEFAULT,
			FromClause: []*pg.Node{{Node: &pg.Node_RangeVar{RangeVar: cs.GetRelation()}}}}
		var fields [][]*pg.Node
		for _, a := range cs.GetAttlist() {
			fields = append(fields, []*pg.Node{a})
		}
		if len(fields) == 0 {
			fields = [][]*pg.Node{{{Node: &pg.Node_AStar{AStar: &pg.A_Star{}}}}}
		}
		for _, f := range fields {
			sel.TargetList = append(sel.TargetList, &pg.Node{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{
				Val: &pg.Node{Node: &pg.Node_ColumnRef{ColumnRef: &pg.ColumnRef{Fields: f}}}}}})
		}
		query = &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: sel}}
	} else if query.GetSelectStmt() == nil {
		return nil, pgerror.Unsupported("COPY of a statement other than SELECT")
	}
	st := &Statement{s: s, raw: &pg.RawStmt{Stmt: query}}
	if err := st.plan(ctx); err != nil {
		return nil, err
	}
	p := &copyOutPortal{inner: &Portal{st: st}, opts: opts}
	for _, c := range st.cols {
		p.names = append(p.names, c.Name)
	}
	return p, nil
}

func (p *copyOutPortal) Execute(context.Context, int, pgwire.RowWriter) (string, bool, error) {
	return "", false, pgerror.New(pgerror.CodeProtocolViolation, "COPY TO STDOUT must be run with the COPY sub-protocol")
}

func (p *copyOutPortal) Close() { p.inner.Close() }

// CopyOutFormat is text (0) with one column per output column.
func (p *copyOutPortal) CopyOutFormat() (int16, int) { return 0, len(p.names) }

// CopyOut writes the header (HEADER), then a line per row.
func (p *copyOutPortal) CopyOut(ctx context.Context, w io.Writer) (string, error) {
	lw := &copyLineWriter{w: w, opts: p.opts}
	if p.opts.header {
		names := make([][]byte, len(p.names))
		for i, n := range p.names {
			names[i] = []byte(n)
		}
		if err := lw.WriteRow(names); err != nil {
			return "", err
		}
	}
	tag, _, err := p.inner.Execute(ctx, 0, lw)
	if err != nil {
		return "", err
	}
	return "COPY " + strings.TrimPrefix(tag, "SELECT "), nil
}

// copyLineWriter turns rows of text values (nil: NULL) into COPY lines.
type copyLineWriter struct {
	w    io.Writer
	opts copyOptions
	line bytes.Buffer
}

func (lw *copyLineWriter) WriteRow(values [][]byte) error {
	o := &lw.opts
	b := &lw.line
	b.Reset()
	for i, v := range values {
		if i > 0 {
			b.WriteByte(o.delim)
		}
		switch {
		case v == nil:
			b.WriteString(o.null)
		case o.csv:
			lw.csvField(v)
		default:
			lw.textField(v)
		}
	}
	b.WriteByte('\n')
	_, err := lw.w.Write(b.Bytes())
	return err
}

// textField escapes a value as PostgreSQL's text format does.
func (lw *copyLineWriter) textField(v []byte) {
	b := &lw.line
	for _, c := range v {
		if l := copyEscapes[c]; l != 0 {
			b.WriteByte('\\')
			b.WriteByte(l)
			continue
		}
		if c == '\\' || c == lw.opts.delim {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
}

// csvField quotes a value when it holds the delimiter, the quote, a line
// break, or would read back as NULL (an empty value with the default
// empty NULL string), as PostgreSQL does; quotes and escapes inside are
// escaped.
func (lw *copyLineWriter) csvField(v []byte) {
	o, b := &lw.opts, &lw.line
	needs := string(v) == o.null || bytes.IndexByte(v, o.delim) >= 0 || bytes.IndexByte(v, o.quote) >= 0 ||
		bytes.IndexByte(v, '\n') >= 0 || bytes.IndexByte(v, '\r') >= 0 || (o.escape != o.quote && bytes.IndexByte(v, o.escape) >= 0)
	if !needs {
		b.Write(v)
		return
	}
	b.WriteByte(o.quote)
	for _, c := range v {
		if c == o.quote || c == o.escape {
			b.WriteByte(o.escape)
		}
		b.WriteByte(c)
	}
	b.WriteByte(o.quote)
}
