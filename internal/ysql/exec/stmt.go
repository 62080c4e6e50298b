package exec

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/parse"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/pgwire"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

func splitQuery(q string) ([]string, error) { return parse.Split(q) }

// Statement is a prepared statement: its parse tree, and for queries and
// DML its plan, re-made when the catalog version moves.
type Statement struct {
	s      *Session
	sql    string
	raw    *pg.RawStmt
	params []types.T // final parameter types
	given  []uint32

	node    plan.Node // SELECT / VALUES, or Insert/Update/Delete
	cols    []plan.Column
	version uint64
	// utility statements run through utility(); cols are set for those
	// that return rows (SHOW, EXPLAIN).
	utility bool
	yb      *ybOptions
	// foldErr: see plan.Binder.FoldErr.
	foldErr error
}

// Prepare parses and plans a statement.
func (s *Session) Prepare(ctx context.Context, query string, paramTypes []uint32) (pgwire.Statement, error) {
	st, err := s.prepare(ctx, query, paramTypes)
	if err != nil {
		if s.inBlock {
			s.failed = true // as PostgreSQL: any error inside a block fails it
		}
		return nil, err
	}
	return st, nil
}

func (s *Session) prepare(ctx context.Context, query string, paramTypes []uint32) (*Statement, error) {
	text, yb, err := ybExtensions(query)
	if err != nil {
		return nil, err
	}
	raw, err := parse.One(text)
	if err != nil {
		return nil, err
	}
	st := &Statement{s: s, sql: query, raw: raw, given: paramTypes, yb: yb}
	if raw == nil {
		return st, nil
	}
	if s.failed && !allowedInFailed(raw.GetStmt()) {
		// Before planning, as PostgreSQL: a statement that would not
		// plan is 25P02 too, not its own error.
		return nil, errInFailed
	}
	if err := st.plan(ctx); err != nil {
		return nil, err
	}
	return st, nil
}

func (s *Session) binder(ctx context.Context) (*plan.Binder, error) {
	snap, err := s.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return &plan.Binder{Cat: snap, Database: s.db, SearchPath: s.searchPath(), Virtual: s.virtualTable,
		Session: s.sessionFunc, Reg: s, SessionSRF: s.sessionSRF, Location: s.location()}, nil
}

// searchPath is the schemas unqualified names are looked up in.
func (s *Session) searchPath() []string {
	var out []string
	for _, p := range strings.Split(s.settings["search_path"], ",") {
		p = strings.Trim(strings.TrimSpace(p), `"`)
		if p == "$user" {
			p = s.user
		}
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// plan binds the statement against the current catalog. A name this node
// does not know may have been created through another node a moment ago
// (a table, a column: INSERT naming a new column's value is "more
// expressions than target columns", a column whose type changed a type
// mismatch): it looks at the master's catalog once more before failing.
func (st *Statement) plan(ctx context.Context) error {
	err := st.planOnce(ctx)
	switch pgerror.Code(err) {
	case pgerror.CodeUndefinedTable, pgerror.CodeUndefinedColumn, pgerror.CodeInvalidSchemaName, pgerror.CodeUndefinedObject,
		pgerror.CodeSyntaxError, pgerror.CodeDatatypeMismatch, pgerror.CodeUndefinedFunction:
		before, serr := st.s.snapshot(ctx)
		if serr != nil {
			return err
		}
		fresh, ferr := st.s.e.cfg.Cache.Fresh(ctx)
		if ferr != nil || fresh.Version == before.Version && fresh == before {
			return err
		}
		return st.planOnce(ctx)
	}
	return err
}

func (st *Statement) planOnce(ctx context.Context) error {
	s := st.s
	b, err := s.binder(ctx)
	if err != nil {
		return err
	}
	for _, oid := range st.given {
		if oid == 0 {
			b.Params = append(b.Params, types.T{})
		} else {
			b.Params = append(b.Params, types.T{OID: oid, Mod: -1})
		}
	}
	st.version = b.Cat.Version
	n := st.raw.GetStmt()
	switch {
	case n.GetSelectStmt() != nil && n.GetSelectStmt().GetIntoClause() == nil:
		st.node, err = b.Select(n.GetSelectStmt())
	case n.GetInsertStmt() != nil:
		st.node, err = b.Insert(n.GetInsertStmt())
	case n.GetUpdateStmt() != nil:
		st.node, err = b.Update(n.GetUpdateStmt())
	case n.GetDeleteStmt() != nil:
		st.node, err = b.Delete(n.GetDeleteStmt())
	default:
		st.utility = true
		st.cols = s.utilityColumns(n)
		return nil
	}
	if err != nil {
		return err
	}
	st.foldErr = b.FoldErr
	if len(b.DMLs) > 0 {
		st.node = &plan.WithDML{DMLs: b.DMLs, Main: st.node}
	}
	st.params = make([]types.T, len(b.Params))
	for i, t := range b.Params {
		if t.OID == 0 || t.OID == types.OIDUnknown {
			t = types.T{OID: types.OIDText, Mod: -1}
		}
		st.params[i] = t
	}
	st.cols = nil
	for _, c := range st.node.Columns() {
		if !c.Hidden {
			st.cols = append(st.cols, c)
		}
	}
	if _, isQuery := st.node.(*plan.Insert); !isQuery {
		if _, isUpd := st.node.(*plan.Update); !isUpd {
			if _, isDel := st.node.(*plan.Delete); !isDel {
				return nil
			}
		}
	}
	return nil
}

// ParamTypes are the parameter OIDs.
func (st *Statement) ParamTypes() []uint32 {
	out := make([]uint32, len(st.params))
	for i, t := range st.params {
		out[i] = t.OID
	}
	return out
}

// Columns describes the result.
func (st *Statement) Columns() []pgwire.Column {
	if st.cols == nil {
		return nil
	}
	out := make([]pgwire.Column, len(st.cols))
	for i, c := range st.cols {
		info := types.Info(c.T.OID)
		size := int16(-1)
		if info != nil {
			size = info.Len
		}
		out[i] = pgwire.Column{Name: c.Name, TableOID: c.TableOID, AttrNum: c.AttNum, TypeOID: c.T.OID, TypeSize: size, TypeModifier: c.T.Mod}
	}
	return out
}

// Close releases the statement.
func (st *Statement) Close() {}

// Bind decodes the parameters and makes a portal.
func (st *Statement) Bind(ctx context.Context, params [][]byte, paramFormats []int16, resultFormats []int16) (pgwire.Portal, error) {
	if st.raw != nil && st.raw.GetStmt().GetCopyStmt() != nil {
		if st.s.failed {
			return nil, errInFailed
		}
		return st.s.copyPortalFor(ctx, st.raw.GetStmt().GetCopyStmt())
	}
	if len(params) != len(st.params) {
		return nil, pgerror.New(pgerror.CodeProtocolViolation, "bind message supplies %d parameters, but prepared statement %q requires %d", len(params), "", len(st.params))
	}
	vals := make([]types.Datum, len(params))
	for i, p := range params {
		if p == nil {
			vals[i] = types.NullDatum
			continue
		}
		f := formatOf(paramFormats, i)
		d, err := decodeParam(p, f, st.params[i], st.s.location())
		if err != nil {
			if st.s.inBlock {
				st.s.failed = true
			}
			return nil, err
		}
		vals[i] = d
	}
	return &Portal{st: st, params: vals, formats: resultFormats}, nil
}

func formatOf(formats []int16, i int) int16 {
	switch len(formats) {
	case 0:
		return 0
	case 1:
		return formats[0]
	}
	if i < len(formats) {
		return formats[i]
	}
	return 0
}

// Portal is a bound statement; its rows are computed at the first Execute
// and handed out in pieces when the client asks for a row limit.
type Portal struct {
	st      *Statement
	params  []types.Datum
	formats []int16

	ran  bool
	tag  string
	rows []plan.Row // the first rows; the rest come from rest
	rest *resultStream
	cols []plan.Column
	pos  int
}

// Close releases the portal.
func (p *Portal) Close() {
	if p.rest != nil {
		p.rest.close()
	}
}

// Execute runs the portal (the first time) and sends up to maxRows rows.
func (p *Portal) Execute(ctx context.Context, maxRows int, out pgwire.RowWriter) (string, bool, error) {
	s := p.st.s
	if !p.ran {
		p.ran = true
		tag, cols, rows, rest, err := s.run(ctx, p.st, p.params, true)
		if err != nil {
			return "", false, err
		}
		p.tag, p.cols, p.rows, p.rest = tag, cols, rows, rest
	} else if p.rest != nil {
		var cancel context.CancelFunc
		ctx, cancel = s.statementContext(ctx)
		defer cancel()
	}
	loc := s.location()
	buf := make([][]byte, len(p.cols))
	for sent := 0; ; sent++ {
		row, err := p.next(ctx)
		if err != nil {
			return "", false, err
		}
		if row == nil {
			return p.tag, false, nil
		}
		if maxRows > 0 && sent == maxRows {
			p.pos-- // the next Execute sends it
			p.rows[p.pos] = row
			return "", true, nil
		}
		if err := p.writeRow(row, buf, loc, out); err != nil {
			return "", false, err
		}
	}
}

// next returns the portal's next row, nil at the end, when p.tag is the
// statement's.
func (p *Portal) next(ctx context.Context) (plan.Row, error) {
	if p.pos < len(p.rows) {
		row := p.rows[p.pos]
		p.rows[p.pos] = nil // sent: let it go
		p.pos++
		return row, nil
	}
	if p.rest == nil {
		return nil, nil
	}
	row, err := p.rest.next(ctx)
	if err != nil || row != nil {
		if row != nil {
			// Keep it where a suspension can put it back.
			p.rows, p.pos = append(p.rows[:0], row), 1
		}
		return row, err
	}
	p.tag, p.rest = p.rest.tag(), nil
	return nil, nil
}

// writeRow encodes row in the portal's result formats and sends it.
func (p *Portal) writeRow(row plan.Row, buf [][]byte, loc *time.Location, out pgwire.RowWriter) error {
	for i, c := range p.cols {
		if row[i].Null {
			buf[i] = nil
			continue
		}
		b, err := encodeResult(row[i], c.T, formatOf(p.formats, i), loc, p.st.s)
		if err != nil {
			return err
		}
		if b == nil {
			b = []byte{} // an empty value, not NULL
		}
		buf[i] = b
	}
	return out.WriteRow(buf)
}

// execute runs a statement with its transaction handling and returns its
// tag and rows, all of them.
func (s *Session) execute(ctx context.Context, st *Statement, params []types.Datum) (string, []plan.Column, []plan.Row, error) {
	tag, cols, rows, rest, err := s.run(ctx, st, params, false)
	if err != nil || rest == nil {
		return tag, cols, rows, err
	}
	if rows, err = rest.take(ctx, rows, -1); err != nil {
		return "", nil, nil, err
	}
	return rest.tag(), cols, rows, nil
}

// run runs a statement with its transaction handling and returns its tag
// and rows. When stream is set, a query with many rows may return only
// its first ones, and rest hands out the others as they are read (see
// resultStream): the tag is then rest's, once at its end.
func (s *Session) run(ctx context.Context, st *Statement, params []types.Datum, stream bool) (tag string, cols []plan.Column, rows []plan.Row, rest *resultStream, err error) {
	if st.raw == nil {
		return "", nil, nil, nil, nil
	}
	s.activityStart(st.sql)
	defer s.activityEnd()
	ctx, cancel := s.statementContext(ctx)
	defer cancel()
	if st.utility {
		if s.failed && !allowedInFailed(st.raw.GetStmt()) {
			return "", nil, nil, nil, errInFailed
		}
		tag, cols, rows, err := s.utility(ctx, st, params)
		if err != nil && s.inBlock {
			s.failed = true
		}
		return tag, cols, rows, nil, err
	}
	if s.failed {
		return "", nil, nil, nil, errInFailed
	}
	if err := s.readOnlyErr(writeOf(st.node)); err != nil {
		if s.inBlock {
			s.failed = true
		}
		return "", nil, nil, nil, err
	}
	s.pin()
	defer s.unpinStatement()
	for again := true; ; again = false {
		tag, rows, rest, err = s.runPlanned(ctx, st, params, stream)
		if err == nil || !client.IsTableNotFound(err) {
			break
		}
		// A table the statement's catalog snapshot names is gone at the
		// master: dropped (and maybe created again) through another node,
		// whose new catalog version this node's heartbeat has not brought
		// yet. Its own statement wrote nothing (the table's tablets are
		// gone): it runs once more on the current catalog. In a block the
		// transaction may have used the old table: the client retries it.
		s.e.cfg.Cache.Refresh()
		if !again || s.inBlock || !s.aloneInBatch(ctx) {
			err = pgerror.New(pgerror.CodeSerializationFailure, "the catalog snapshot used for this transaction has been invalidated: a table it reads or writes was dropped").
				WithDetail("%v", err).WithHint("Run the transaction again.")
			if s.inBlock {
				s.failed = true
			}
			break
		}
	}
	if err != nil {
		return "", nil, nil, nil, internalTimeout(ctx, err)
	}
	return tag, st.cols, rows, rest, nil
}

// runPlanned runs a planned statement (planned again if the catalog
// changed): on the single-row fast path when it can take it, else in a
// transaction.
func (s *Session) runPlanned(ctx context.Context, st *Statement, params []types.Datum, stream bool) (tag string, rows []plan.Row, rest *resultStream, err error) {
	if snap, err := s.snapshot(ctx); err != nil {
		return "", nil, nil, err
	} else if snap.Version != st.version {
		if err := st.replan(ctx); err != nil {
			if s.inBlock {
				s.failed = true
			}
			return "", nil, nil, err
		}
	}
	fast := s.aloneInBatch(ctx) && (singleRowInsert(st.node) || s.singleRowChange(st.node)) && !s.writesFKTable(ctx, st.node)
	if fast {
		tag, rows, err = s.runFastPath(ctx, st, params)
	}
	if !fast || errors.Is(err, errNeedsTxn) {
		// The batch's implicit transaction ends at Sync, which a stream
		// could outlast.
		s.streamOK = stream && (s.inBlock || s.aloneInBatch(ctx))
		err = s.inTxn(ctx, func(tx *client.Txn) error {
			var err error
			tag, rows, err = s.runPlan(ctx, st, params, tx)
			return err
		})
		s.streamOK, rest, s.stream = false, s.stream, nil
	}
	return tag, rows, rest, err
}

// statementContext bounds ctx by statement_timeout.
func (s *Session) statementContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if t := s.settingsNow().timeout; t > 0 {
		return context.WithTimeout(ctx, t)
	}
	return ctx, func() {}
}

// internalTimeout tells a statement that ran out of the cluster client's
// own time budget (no replica answered in time) from one canceled by
// statement_timeout, which the generic translation reports.
func internalTimeout(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return pgerror.New(pgerror.CodeQueryCanceled, "canceling statement: the cluster did not answer in time").WithDetail("%v", err)
}

// replan plans again after DDL, keeping the parameter types the client
// knows.
func (st *Statement) replan(ctx context.Context) error {
	given := st.given
	st.given = st.ParamTypes()
	err := st.plan(ctx)
	st.given = given
	return err
}

var errInFailed = pgerror.New(pgerror.CodeInFailedSQLTransaction, "current transaction is aborted, commands ignored until end of transaction block")

func allowedInFailed(n *pg.Node) bool {
	ts := n.GetTransactionStmt()
	if ts == nil {
		return false
	}
	switch ts.GetKind() {
	case pg.TransactionStmtKind_TRANS_STMT_COMMIT, pg.TransactionStmtKind_TRANS_STMT_ROLLBACK,
		pg.TransactionStmtKind_TRANS_STMT_ROLLBACK_TO:
		return true
	}
	return false
}

// inTxn runs fn in the block's transaction; outside a block, in a
// transaction of its own that commits (and is retried on a retryable
// conflict) when the statement is alone in its batch (a simple Query's only
// statement, or an Execute followed by the client's Sync with nothing run
// before it), else in the batch's implicit transaction.
func (s *Session) inTxn(ctx context.Context, fn func(tx *client.Txn) error) error {
	if s.inBlock {
		first := s.txn == nil
		if first {
			tx, err := s.e.begin(ctx, client.TxnOptions{Isolation: s.blockIso, Pipelined: true})
			if err != nil {
				s.failed = true
				return err
			}
			s.txn, s.txnTime = tx, time.Now()
		}
		if err := runStatement(ctx, s.txn, first, fn); err != nil {
			s.failed = true
			return err
		}
		return nil
	}
	if !s.aloneInBatch(ctx) {
		return s.inImplicitTxn(ctx, fn)
	}
	s.txnTime = time.Now()
	return s.ownTxn(ctx, fn)
}

// stmtSavepoint names the savepoint a READ COMMITTED block takes before
// each statement; a client cannot name one so (no NUL in identifiers).
const stmtSavepoint = "\x00statement"

// maxStatementRestarts bounds the times a statement is run again after a
// read restart. Each restart narrows the uncertainty window
// (client.Txn.Restart), so the bound only guards against a bug.
const maxStatementRestarts = 1000

// runStatement runs one statement in tx, a block's or a batch's
// transaction. Under READ COMMITTED every statement reads a snapshot of its
// own (client.Txn.StartStatement), so one whose read met a value in the
// clock uncertainty window (a read restart) runs again at a later
// snapshot, its writes so far undone through a savepoint, instead of
// failing the transaction with 40001: PostgreSQL's READ COMMITTED never
// reports a serialization failure. Rows are sent only once the statement
// is done, so the client sees one run. The first statement of a
// REPEATABLE READ transaction, which fixes the snapshot, likewise runs
// again at a later snapshot if it wrote nothing.
func runStatement(ctx context.Context, tx *client.Txn, first bool, fn func(tx *client.Txn) error) error {
	rc := tx.Isolation() == client.ReadCommitted
	if !rc && !(first && tx.Isolation() == client.Snapshot) {
		return fn(tx)
	}
	if rc {
		if err := tx.Savepoint(stmtSavepoint); err != nil {
			return err
		}
		// It is there to release: fn runs no savepoint statement (those
		// are utility statements, not run through inTxn).
		defer func() { _ = tx.ReleaseSavepoint(stmtSavepoint) }()
	}
	tx.StartStatement()
	for restarts := 0; ; restarts++ {
		err := fn(tx)
		if code, _ := client.CodeOf(err); code != client.CodeReadRestart || restarts == maxStatementRestarts {
			return err
		}
		if rc && tx.RollbackToSavepoint(ctx, stmtSavepoint) != nil || !tx.Restart(err) {
			return err
		}
	}
}

// ownTxn runs fn in a snapshot transaction of its own and commits it,
// retried as a statement is; a stream fn opened commits it at its end. A
// read restart of a statement that wrote nothing runs it again in the same
// transaction at a later snapshot (client.Txn.Restart), without a backoff.
func (s *Session) ownTxn(ctx context.Context, fn func(tx *client.Txn) error) error {
	var err error
	var tx *client.Txn
	for attempt, restarts := 0, 0; attempt < maxStatementAttempts; {
		if tx == nil {
			if tx, err = s.e.begin(ctx, client.TxnOptions{Isolation: client.Snapshot}); err != nil {
				return err
			}
		}
		s.ownStatement = true
		err = fn(tx)
		s.ownStatement = false
		if err == nil {
			if s.stream != nil {
				s.stream.own = tx // committed at the stream's end
				return nil
			}
			if err = tx.Commit(ctx); err == nil {
				return nil
			}
		} else if restarts < maxStatementRestarts && tx.Restart(err) {
			restarts++
			continue
		} else {
			rollback(ctx, tx)
		}
		tx = nil
		if !retryStatement(ctx, err, attempt) {
			return err
		}
		attempt++
	}
	return err
}

// aloneInBatch reports whether the statement outside a block is alone in
// its batch: a simple Query's only statement, or an Execute followed by
// the client's Sync with no implicit transaction open before it.
func (s *Session) aloneInBatch(ctx context.Context) bool {
	return !s.inBlock && (s.singleStmt || s.implicitTxn == nil && pgwire.EndsBatch(ctx))
}

// singleRowInsert reports whether n is an INSERT of one VALUES row with no
// ON CONFLICT into a table without secondary indexes: it writes one row on one tablet, which the tablet does
// atomically (and refuses if the key exists), so alone in its batch it
// needs no distributed transaction (the single-row fast path). Reads its
// expressions make (subqueries) see the latest data, as PostgreSQL's READ
// COMMITTED statement snapshot would.
func singleRowInsert(n plan.Node) bool {
	ins, ok := n.(*plan.Insert)
	if !ok || ins.OnConflict != nil || len(ins.Table.Indexes) > 0 {
		return false // index rows go with the row, on other tablets
	}
	v, ok := ins.Source.(*plan.Values)
	return ok && len(v.Rows) == 1
}

// singleRowChange reports whether n is an UPDATE or DELETE of one row by
// its primary key that the tablet does alone: an UPDATE adding to integer
// columns (plan.TabletAdds) or setting columns to values that do not
// depend on the row (plan.TabletSets), a DELETE with nothing else to do
// (plan.PointDelete), an INSERT ... ON CONFLICT of one row that needs no
// existing row (plan.TabletUpsert). The tablet applies it under the row's
// lock if the row exists, at most once (client.Table.ApplyExisting), so
// alone in its batch it needs no distributed transaction either. Its
// values decide at run time (errNeedsTxn).
func (s *Session) singleRowChange(n plan.Node) bool {
	switch x := n.(type) {
	case *plan.Update:
		if _, ok := plan.TabletAdds(x); ok && s.pushdownEnabled() {
			return true
		}
		return plan.TabletSets(x)
	case *plan.Delete:
		return plan.PointDelete(x)
	case *plan.Insert:
		return plan.TabletUpsert(x)
	}
	return false
}

// writesFKTable reports whether n writes a table with foreign keys or
// referenced by one: its checks and actions read other rows and need a
// transaction, which the single-row fast path does without.
func (s *Session) writesFKTable(ctx context.Context, n plan.Node) bool {
	var t *catalog.Table
	switch x := n.(type) {
	case *plan.Insert:
		t = x.Table
	case *plan.Update:
		t = x.Table
	case *plan.Delete:
		t = x.Table
	default:
		return false
	}
	snap, err := s.snapshot(ctx)
	return err != nil || tableHasFKs(snap, t)
}

// errNeedsTxn: a statement the fast path took needs a transaction after
// all: an add of NULL (the column becomes NULL the row's way), or a NULL
// for a NOT NULL column (whose error shows the row).
var errNeedsTxn = errors.New("the statement needs a transaction")

// runFastPath runs a single-row write without a transaction, retrying it
// after a retryable conflict (with a transaction's intents, say).
func (s *Session) runFastPath(ctx context.Context, st *Statement, params []types.Datum) (string, []plan.Row, error) {
	s.txnTime = time.Now()
	for attempt := 0; ; attempt++ {
		tag, rows, err := s.runPlan(ctx, st, params, nil)
		if err == nil {
			s.e.metrics.singleRow.Inc()
		}
		if err == nil || !retryStatement(ctx, err, attempt) {
			return tag, rows, err
		}
	}
}

// maxStatementAttempts bounds the retries of a statement that met a
// retryable conflict before it returned anything.
const maxStatementAttempts = 20

// retryStatement reports whether a statement that failed with err should
// run again, after a short backoff.
func retryStatement(ctx context.Context, err error, attempt int) bool {
	if !client.IsRetryable(err) || ctx.Err() != nil || attempt+1 >= maxStatementAttempts {
		return false
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Duration(attempt+1) * 2 * time.Millisecond):
		return true
	}
}

// inImplicitTxn runs fn in the batch's implicit transaction, started by
// its first statement at the session's default isolation. Only that first
// statement is retried on a conflict (nothing else ran in the transaction
// yet); a failure otherwise leaves the transaction to Sync, which rolls it
// back.
func (s *Session) inImplicitTxn(ctx context.Context, fn func(tx *client.Txn) error) error {
	for attempt := 0; ; attempt++ {
		if s.implicitTxn == nil {
			iso, err := isolation(s.settings["default_transaction_isolation"])
			if err != nil {
				return err
			}
			tx, err := s.e.begin(ctx, client.TxnOptions{Isolation: iso, Pipelined: true})
			if err != nil {
				return err
			}
			s.implicitTxn, s.txnTime = tx, time.Now()
		}
		// A failed first statement runs again in a new transaction (below);
		// later ones as a block's statement would.
		err := runStatement(ctx, s.implicitTxn, false, fn)
		if err == nil {
			s.implicitRan++
			return nil
		}
		if s.implicitRan > 0 || !retryStatement(ctx, err, attempt) {
			return err
		}
		rollback(ctx, s.implicitTxn)
		s.implicitTxn = nil
	}
}

func (s *Session) evalContext(params []types.Datum) *plan.EvalContext {
	ec := s.newEvalContext(params)
	return &ec
}

// newEvalContext is a statement's evaluation context: its parameters and
// times, in the session's time zone.
func (s *Session) newEvalContext(params []types.Datum) plan.EvalContext {
	return plan.EvalContext{Params: params, TxnTime: s.txnTime, StmtTime: time.Now(), Location: s.location()}
}

// statementRun is what a statement's runner needs, allocated together:
// a point SELECT made a dozen small objects before it read anything.
type statementRun struct {
	r    runner
	ec   plan.EvalContext
	cl   closers
	fs   [2]func()
	acct memAccount
	adv  advisoryIn
}

// newStatementRunner is the runner of one statement of s in tx, with its
// memory account, closed when the statement ends.
func newStatementRunner(s *Session, ctx context.Context, tx *client.Txn, params []types.Datum) *runner {
	st := &statementRun{
		ec:   s.newEvalContext(params),
		acct: memAccount{mon: s.e.mem},
		adv:  advisoryIn{s: s, tx: tx},
	}
	st.cl.fs = st.fs[:0]
	st.cl.acct = &st.acct
	st.ec.Advisory = &st.adv
	st.r = runner{s: s, ctx: ctx, txn: tx, ec: &st.ec, closers: &st.cl, acct: &st.acct}
	return &st.r
}

// runPlan executes a planned query or DML statement in tx.
func (s *Session) runPlan(ctx context.Context, st *Statement, params []types.Datum, tx *client.Txn) (string, []plan.Row, error) {
	r := newStatementRunner(s, ctx, tx, params)
	defer func() {
		if s.stream == nil || s.stream.r != r {
			r.closers.run() // else the stream's end does
		}
	}()
	r.ec.Ctx = func() context.Context { return r.ctx }
	r.ec.Backends = s
	r.ec.Subquery = func(ec *plan.EvalContext, sq *plan.Subquery, outer plan.Row) ([]plan.Row, error) {
		// r.ctx: a streamed statement evaluates over several calls.
		return r.subquery(ec.WithOuter(outer), sq)
	}
	node := st.node
	if w, ok := node.(*plan.WithDML); ok {
		if err := r.runDMLs(w.DMLs); err != nil {
			return "", nil, err
		}
		node = w.Main
	}
	switch n := node.(type) {
	case *plan.Insert:
		count, rows, err := r.insert(n)
		return fmt.Sprintf("INSERT 0 %d", count), rows, err
	case *plan.Update:
		count, rows, err := r.update(n)
		return fmt.Sprintf("UPDATE %d", count), rows, err
	case *plan.Delete:
		count, rows, err := r.delete(n)
		return fmt.Sprintf("DELETE %d", count), rows, err
	}
	if s.streamOK {
		rows, rest, err := r.firstRows(node)
		if err != nil {
			return "", nil, err
		}
		if rest != nil {
			s.stream = &resultStream{s: s, r: r, src: rest, tx: tx, rows: len(rows)}
		}
		return fmt.Sprintf("SELECT %d", len(rows)), rows, nil
	}
	rows, err := r.rows(node)
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("SELECT %d", len(rows)), rows, nil
}

// runDMLs runs the data-modifying WITH queries of a statement, each once,
// keeping the rows their RETURNING gave for the references to read.
func (r *runner) runDMLs(dmls []*plan.DMLResult) error {
	for _, d := range dmls {
		var rows []plan.Row
		var err error
		switch n := d.Stmt.(type) {
		case *plan.Insert:
			_, rows, err = r.insert(n)
		case *plan.Update:
			_, rows, err = r.update(n)
		case *plan.Delete:
			_, rows, err = r.delete(n)
		}
		if err != nil {
			return err
		}
		if err := r.hold(rows, "WITH query ", d.Name); err != nil {
			return err
		}
		d.Rows = rows
	}
	return nil
}
