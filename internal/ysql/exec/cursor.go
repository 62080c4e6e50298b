package exec

import (
	"context"
	"slices"
	"strconv"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/ysql/parse"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
)

// SQL-level cursors: DECLARE runs the query (in the block's transaction)
// and keeps its rows; FETCH / MOVE FORWARD hand them out; CLOSE, or the
// end of the block for cursors without HOLD, drops them. Cursors are
// NO SCROLL: backward and absolute fetches are refused.

type cursor struct {
	cols []plan.Column
	rows []plan.Row
	rest *resultStream // the rows after rows, read as FETCH asks (see resultStream)
	pos  int
	hold bool
}

// close drops what the cursor has not handed out.
func (c *cursor) close() {
	if c.rest != nil {
		c.rest.close()
	}
}

const cursorOptHold = 0x0020 // CURSOR_OPT_HOLD

func (s *Session) declareCursor(ctx context.Context, dc *pg.DeclareCursorStmt) (string, error) {
	name := dc.GetPortalname()
	hold := dc.GetOptions()&cursorOptHold != 0
	if !s.inBlock && !hold {
		return "", pgerror.New(pgerror.CodeNoActiveSQLTransaction, "DECLARE CURSOR can only be used in transaction blocks")
	}
	if _, dup := s.cursors[name]; dup {
		return "", pgerror.New(pgerror.CodeDuplicateCursor, "cursor %q already exists", name)
	}
	if dc.GetQuery().GetSelectStmt() == nil {
		return "", pgerror.Unsupported("DECLARE CURSOR for a statement other than SELECT")
	}
	query, err := parse.Deparse(dc.GetQuery())
	if err != nil {
		return "", err
	}
	st, err := s.prepare(ctx, query, nil)
	if err != nil {
		return "", err
	}
	// A cursor WITH HOLD outlives the transaction: its rows are read
	// whole, as PostgreSQL does at commit.
	_, cols, rows, rest, err := s.run(ctx, st, nil, !hold)
	if err != nil {
		return "", err
	}
	if s.cursors == nil {
		s.cursors = map[string]*cursor{}
	}
	s.cursors[name] = &cursor{cols: cols, rows: rows, rest: rest, hold: hold}
	return "DECLARE CURSOR", nil
}

func (s *Session) fetch(ctx context.Context, fs *pg.FetchStmt) (string, []plan.Column, []plan.Row, error) {
	c, ok := s.cursors[fs.GetPortalname()]
	if !ok {
		return "", nil, nil, pgerror.New(pgerror.CodeInvalidCursorName, "cursor %q does not exist", fs.GetPortalname())
	}
	n := fs.GetHowMany()
	switch fs.GetDirection() {
	case pg.FetchDirection_FETCH_FORWARD:
	case pg.FetchDirection_FETCH_RELATIVE:
		if n != 1 && n != 0 {
			return "", nil, nil, pgerror.Unsupported("FETCH RELATIVE other than NEXT")
		}
	default:
		return "", nil, nil, pgerror.New(pgerror.CodeObjectNotInPrerequisiteState, "cursor can only scan forward").
			WithHint("Declare it with SCROLL option to enable backward scan.")
	}
	if n < 0 {
		return "", nil, nil, pgerror.New(pgerror.CodeObjectNotInPrerequisiteState, "cursor can only scan forward").
			WithHint("Declare it with SCROLL option to enable backward scan.")
	}
	rows, err := c.take(ctx, n)
	if err != nil {
		return "", nil, nil, err
	}
	if fs.GetIsmove() {
		return "MOVE " + strconv.Itoa(len(rows)), nil, nil, nil
	}
	return "FETCH " + strconv.Itoa(len(rows)), c.cols, rows, nil
}

// take hands out up to n more rows.
func (c *cursor) take(ctx context.Context, n int64) ([]plan.Row, error) {
	end := len(c.rows)
	if n < int64(end-c.pos) {
		end = c.pos + int(n)
	}
	rows := slices.Clone(c.rows[c.pos:end])
	clear(c.rows[c.pos:end]) // handed out: let them go
	c.pos = end
	if c.rest == nil {
		return rows, nil
	}
	return c.rest.take(ctx, rows, n-int64(len(rows)))
}

func (s *Session) closeCursor(name string) (string, error) {
	if name == "" {
		for _, c := range s.cursors {
			c.close()
		}
		s.cursors = nil
		return "CLOSE CURSOR ALL", nil
	}
	c, ok := s.cursors[name]
	if !ok {
		return "", pgerror.New(pgerror.CodeInvalidCursorName, "cursor %q does not exist", name)
	}
	c.close()
	delete(s.cursors, name)
	return "CLOSE CURSOR", nil
}

// dropBlockCursors drops the cursors that end with the transaction block.
func (s *Session) dropBlockCursors() {
	for name, c := range s.cursors {
		if !c.hold {
			c.close()
			delete(s.cursors, name)
		}
	}
}

// utilityColumns are the result columns of a utility statement: those of
// the cursor FETCH reads or of the prepared statement EXECUTE runs, else
// the statement's own (SHOW, EXPLAIN).
func (s *Session) utilityColumns(n *pg.Node) []plan.Column {
	switch {
	case n.GetFetchStmt() != nil && !n.GetFetchStmt().GetIsmove():
		if c, ok := s.cursors[n.GetFetchStmt().GetPortalname()]; ok {
			return c.cols
		}
	case n.GetExecuteStmt() != nil:
		if st, ok := s.prepared[n.GetExecuteStmt().GetName()]; ok {
			return st.cols
		}
	}
	return utilityColumns(n)
}
