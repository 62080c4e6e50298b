package exec

import (
	"context"
	"slices"
	"strconv"
	"strings"

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
	// seq orders the cursors by DECLARE, so that ROLLBACK TO SAVEPOINT
	// closes those declared after the savepoint.
	seq int
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
	if st.foldErr != nil {
		return "", st.foldErr // PostgreSQL's planner meets it (SELECT 1/0)
	}
	s.declaring = !hold
	_, cols, rows, rest, err := s.run(ctx, st, nil, !hold)
	s.declaring = false
	if err != nil {
		return "", err
	}
	if s.cursors == nil {
		s.cursors = map[string]*cursor{}
	}
	s.cursorSeq++
	s.cursors[name] = &cursor{cols: cols, rows: rows, rest: rest, hold: hold, seq: s.cursorSeq}
	return "DECLARE CURSOR", nil
}

// fetchError reports whether an error met computing a cursor's rows waits
// for the FETCH that reaches the row: one of evaluating a row (22012
// division by zero, 21000 a subquery of two rows), which leaves the
// transaction usable, not one of storage.
func fetchError(err error) bool {
	code := pgerror.Code(err)
	return strings.HasPrefix(code, "22") || strings.HasPrefix(code, "21")
}

// errSource yields an error: that of the row after the ones read.
type errSource struct{ err error }

func (e *errSource) next() (plan.Row, error) { return nil, e.err }

// savepointCursors notes a savepoint; rollbackCursors closes the cursors
// declared after it, as PostgreSQL drops a rolled-back subtransaction's
// portals (they stayed open).
func (s *Session) savepointCursors(name string) {
	if s.cursorMarks == nil {
		s.cursorMarks = map[string]int{}
	}
	s.cursorMarks[name] = s.cursorSeq
}

func (s *Session) rollbackCursors(name string) {
	mark, ok := s.cursorMarks[name]
	if !ok {
		return
	}
	for n, c := range s.cursors {
		if c.seq > mark {
			c.close()
			delete(s.cursors, n)
		}
	}
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
	s.cursorMarks = nil
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
