package exec

import (
	"context"
	"strings"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/ysql/parse"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

var tText = types.T{OID: types.OIDText, Mod: -1}

// utilityColumns are the result columns of utility statements that return
// rows.
func utilityColumns(n *pg.Node) []plan.Column {
	switch {
	case n.GetVariableShowStmt() != nil:
		name := strings.ToLower(n.GetVariableShowStmt().GetName())
		if name == "all" {
			return []plan.Column{{Name: "name", T: tText}, {Name: "setting", T: tText}, {Name: "description", T: tText}}
		}
		if name == "time zone" || name == "timezone" {
			name = "TimeZone"
		}
		if name == "transaction isolation level" {
			name = "transaction_isolation"
		}
		return []plan.Column{{Name: settingDisplayName(name), T: tText}}
	case n.GetExplainStmt() != nil:
		return []plan.Column{{Name: "QUERY PLAN", T: tText}}
	}
	return nil
}

// utility runs a statement that is not a query or DML.
func (s *Session) utility(ctx context.Context, st *Statement, params []types.Datum) (string, []plan.Column, []plan.Row, error) {
	n := st.raw.GetStmt()
	switch {
	case n.GetTransactionStmt() != nil:
		tag, err := s.transaction(ctx, n.GetTransactionStmt())
		return tag, nil, nil, err
	case n.GetVariableSetStmt() != nil:
		tag, err := s.variableSet(n.GetVariableSetStmt())
		return tag, nil, nil, err
	case n.GetConstraintsSetStmt() != nil:
		return "SET CONSTRAINTS", nil, nil, s.setConstraints(ctx, n.GetConstraintsSetStmt())
	case n.GetVariableShowStmt() != nil:
		name := n.GetVariableShowStmt().GetName()
		if strings.EqualFold(name, "all") {
			var rows []plan.Row
			for _, kv := range s.allSettings() {
				rows = append(rows, plan.Row{types.DString(kv[0]), types.DString(kv[1]), types.DString("")})
			}
			return "SHOW", st.cols, rows, nil
		}
		v, err := s.show(name)
		if err != nil {
			return "", nil, nil, err
		}
		return "SHOW", st.cols, []plan.Row{{types.DString(v)}}, nil
	case n.GetExplainStmt() != nil:
		s.pin() // EXPLAIN ANALYZE runs the statement
		defer s.unpinStatement()
		rows, err := s.explain(ctx, n.GetExplainStmt(), params)
		return "EXPLAIN", st.cols, rows, err
	case n.GetPrepareStmt() != nil:
		return s.sqlPrepare(ctx, n.GetPrepareStmt())
	case n.GetExecuteStmt() != nil:
		return s.sqlExecute(ctx, n.GetExecuteStmt())
	case n.GetDeallocateStmt() != nil:
		name := n.GetDeallocateStmt().GetName()
		if name == "" {
			s.prepared = map[string]*Statement{}
		} else if _, ok := s.prepared[name]; !ok {
			return "", nil, nil, pgerror.New(pgerror.CodeUndefinedPreparedStatement, "prepared statement %q does not exist", name)
		}
		delete(s.prepared, name)
		return "DEALLOCATE", nil, nil, nil
	case n.GetDiscardStmt() != nil:
		switch n.GetDiscardStmt().GetTarget() {
		case pg.DiscardMode_DISCARD_PLANS:
			return "DISCARD PLANS", nil, nil, nil
		case pg.DiscardMode_DISCARD_TEMP:
			return "DISCARD TEMP", nil, nil, nil
		case pg.DiscardMode_DISCARD_SEQUENCES:
			s.currvals, s.lastSeq = nil, 0
			return "DISCARD SEQUENCES", nil, nil, nil
		}
		if s.inBlock {
			return "", nil, nil, pgerror.New(pgerror.CodeActiveSQLTransaction, "DISCARD ALL cannot run inside a transaction block")
		}
		// DISCARD ALL: as a new session (poolers send it between clients).
		s.prepared = map[string]*Statement{}
		s.resetSettings(s.user)
		s.cursors = nil
		s.currvals, s.lastSeq = nil, 0
		s.advisoryUnlockAll(ctx)
		return "DISCARD ALL", nil, nil, nil
	case n.GetDeclareCursorStmt() != nil:
		tag, err := s.declareCursor(ctx, n.GetDeclareCursorStmt())
		return tag, nil, nil, err
	case n.GetFetchStmt() != nil:
		return s.fetch(ctx, n.GetFetchStmt())
	case n.GetClosePortalStmt() != nil:
		tag, err := s.closeCursor(n.GetClosePortalStmt().GetPortalname())
		return tag, nil, nil, err
	case n.GetCreateExtensionStmt() != nil:
		// The functions of uuid-ossp are built in, and plpgsql is
		// PostgreSQL's default: CREATE EXTENSION of them (ORMs and
		// migrations run it: TypeORM's uuid columns call
		// uuid_generate_v4) has nothing to do.
		ce := n.GetCreateExtensionStmt()
		switch name := ce.GetExtname(); name {
		case "plpgsql": // installed, as in every PostgreSQL database
			if !ce.GetIfNotExists() {
				return "", nil, nil, pgerror.New(pgerror.CodeDuplicateObject, "extension %q already exists", name)
			}
			s.notice("NOTICE", "42710", "extension %q already exists, skipping", name)
			return "CREATE EXTENSION", nil, nil, nil
		case "uuid-ossp":
			return "CREATE EXTENSION", nil, nil, nil
		default:
			return "", nil, nil, pgerror.New(pgerror.CodeFeatureNotSupported, "extension %q is not available", name).
				WithHint("The extensions available are uuid-ossp (built in) and plpgsql.")
		}
	case n.GetVacuumStmt() != nil:
		if n.GetVacuumStmt().GetIsVacuumcmd() {
			return "VACUUM", nil, nil, nil
		}
		return "ANALYZE", nil, nil, nil
	case n.GetCheckPointStmt() != nil:
		return "CHECKPOINT", nil, nil, nil
	case n.GetListenStmt() != nil, n.GetUnlistenStmt() != nil, n.GetNotifyStmt() != nil:
		return "", nil, nil, pgerror.Unsupported("LISTEN/NOTIFY")
	}
	if err := s.readOnlyErr(utilityWriteOf(n)); err != nil {
		if s.inBlock {
			s.failed = true
		}
		return "", nil, nil, err
	}
	if s.inBlock && n.GetTruncateStmt() != nil {
		// Inside a block TRUNCATE deletes the rows in the block's
		// transaction, so it commits or rolls back with it.
		s.pin()
		err := s.inTxn(ctx, func(tx *client.Txn) error { return s.truncateInTxn(ctx, tx, n.GetTruncateStmt()) })
		return "TRUNCATE TABLE", nil, nil, err
	}
	if s.inBlock {
		if what := concurrentIndexDDL(n); what != "" {
			return "", nil, nil, pgerror.New(pgerror.CodeActiveSQLTransaction, "%s cannot run inside a transaction block", what)
		}
	}
	if s.inBlock && isDDL(n) {
		// DDL is not transactional here: inside a block it runs and
		// commits on its own, as if outside the block, and stays when
		// the block rolls back (YugabyteDB before transactional DDL).
		// Clients that open a block for every statement (psycopg2, JDBC
		// without autocommit, migration tools: Django, Alembic and Rails
		// run a migration's CREATE TABLE and CREATE INDEX in one) need
		// it to run.
		tag, err := s.outsideBlock(func() (string, error) { return s.ddl(ctx, n, st.yb) })
		return tag, nil, nil, err
	}
	tag, err := s.ddl(ctx, n, st.yb)
	return tag, nil, nil, err
}

// outsideBlock runs fn as a statement alone outside any block: what it
// runs through inTxn commits on its own. A block that has written or
// locked nothing yet gives up its catalog pin meanwhile (the next
// statement pins again, on the new catalog): it has no rows whose index
// entries an older catalog left out. One that has keeps it, and DDL that
// would wait for every session to move past the catalog version, this
// one included, is refused (canWaitForSessions).
func (s *Session) outsideBlock(fn func() (string, error)) (string, error) {
	inBlock, single := s.inBlock, s.singleStmt
	s.inBlock, s.singleStmt = false, true
	s.busyBlock = s.txn != nil && s.txn.HasIntents()
	if !s.busyBlock {
		s.unpin()
	}
	defer func() { s.inBlock, s.singleStmt, s.busyBlock = inBlock, single, false }()
	return fn()
}

// canWaitForSessions fails DDL that must wait for every session of the
// database to move to its catalog version when this session holds an
// older one in a block that has run statements.
func (s *Session) canWaitForSessions() error {
	if s.busyBlock {
		return pgerror.New(pgerror.CodeActiveSQLTransaction, "this index change cannot run inside a transaction block that has written rows").
			WithHint("Run it before the block's writes, or outside a block.")
	}
	return nil
}

// concurrentIndexDDL names CREATE / DROP INDEX CONCURRENTLY, which
// PostgreSQL refuses inside a transaction block (25001).
func concurrentIndexDDL(n *pg.Node) string {
	switch {
	case n.GetIndexStmt().GetConcurrent():
		return "CREATE INDEX CONCURRENTLY"
	case n.GetDropStmt().GetConcurrent():
		return "DROP INDEX CONCURRENTLY"
	}
	return ""
}

func isDDL(n *pg.Node) bool {
	return n.GetCreateStmt() != nil || n.GetDropStmt() != nil || n.GetCreatedbStmt() != nil || n.GetDropdbStmt() != nil ||
		n.GetCreateSchemaStmt() != nil || n.GetAlterTableStmt() != nil || n.GetRenameStmt() != nil ||
		n.GetTruncateStmt() != nil || n.GetIndexStmt() != nil || n.GetCreateSeqStmt() != nil || n.GetAlterSeqStmt() != nil || n.GetCommentStmt() != nil ||
		n.GetCreateTableAsStmt() != nil || n.GetSelectStmt().GetIntoClause() != nil || n.GetViewStmt() != nil
}

func ddlName(n *pg.Node) string {
	switch {
	case n.GetCreateStmt() != nil:
		return "CREATE TABLE"
	case n.GetDropStmt() != nil:
		return "DROP"
	case n.GetCreatedbStmt() != nil:
		return "CREATE DATABASE"
	case n.GetDropdbStmt() != nil:
		return "DROP DATABASE"
	case n.GetTruncateStmt() != nil:
		return "TRUNCATE"
	case n.GetAlterTableStmt() != nil, n.GetRenameStmt() != nil:
		return "ALTER TABLE"
	case n.GetIndexStmt() != nil:
		return "CREATE INDEX"
	case n.GetCreateSeqStmt() != nil:
		return "CREATE SEQUENCE"
	case n.GetAlterSeqStmt() != nil:
		return "ALTER SEQUENCE"
	case n.GetViewStmt() != nil:
		return "CREATE VIEW"
	case n.GetCreateSchemaStmt() != nil:
		return "CREATE SCHEMA"
	case n.GetCreateTableAsStmt() != nil, n.GetSelectStmt().GetIntoClause() != nil:
		return "CREATE TABLE AS"
	case n.GetCommentStmt() != nil:
		return "COMMENT"
	}
	return "this DDL statement"
}

// transaction runs BEGIN / COMMIT / ROLLBACK / SAVEPOINT ...
func (s *Session) transaction(ctx context.Context, ts *pg.TransactionStmt) (string, error) {
	switch ts.GetKind() {
	case pg.TransactionStmtKind_TRANS_STMT_BEGIN, pg.TransactionStmtKind_TRANS_STMT_START:
		if s.inBlock {
			s.notice("WARNING", "25001", "there is already a transaction in progress")
			if err := s.transactionOptions(ts.GetOptions(), false); err != nil {
				return "", err
			}
			if ts.GetKind() == pg.TransactionStmtKind_TRANS_STMT_START {
				return "START TRANSACTION", nil
			}
			return "BEGIN", nil
		}
		isoName := s.settings["default_transaction_isolation"]
		iso, err := isolation(isoName)
		if err != nil {
			return "", err
		}
		readOnly := isOn(s.settings["default_transaction_read_only"])
		deferrable := isOn(s.settings["default_transaction_deferrable"])
		for _, o := range ts.GetOptions() {
			de := o.GetDefElem()
			if de == nil {
				continue
			}
			v, err := setValue([]*pg.Node{de.GetArg()})
			if err != nil {
				return "", err
			}
			switch de.GetDefname() {
			case "transaction_isolation":
				if iso, err = isolation(v); err != nil {
					return "", err
				}
				isoName = v
			case "transaction_read_only":
				readOnly = v == "true" || isOn(v)
			case "transaction_deferrable":
				deferrable = v == "true" || isOn(v)
			}
		}
		s.inBlock, s.failed, s.blockIso, s.txn, s.blockReadOnly, s.blockDeferrable = true, false, iso, nil, readOnly, deferrable
		s.blockIsoName = levelName(isoName, iso)
		if s.implicitTxn != nil {
			// BEGIN inside a multi-statement Query turns the implicit
			// transaction into the block (as PostgreSQL): what ran before
			// commits with the block.
			s.txn, s.implicitTxn, s.implicitRan = s.implicitTxn, nil, 0
		}
		if ts.GetKind() == pg.TransactionStmtKind_TRANS_STMT_START {
			return "START TRANSACTION", nil
		}
		return "BEGIN", nil
	case pg.TransactionStmtKind_TRANS_STMT_COMMIT:
		if !s.inBlock {
			if ts.GetChain() {
				return "", pgerror.New(pgerror.CodeNoActiveSQLTransaction, "COMMIT AND CHAIN can only be used in transaction blocks")
			}
			s.notice("WARNING", "25P01", "there is no transaction in progress")
			return "COMMIT", s.endImplicit(ctx, true)
		}
		chain := s.chain(ts)
		if s.failed {
			s.endBlock(ctx, false)
			chain()
			return "ROLLBACK", nil
		}
		if err := s.endBlock(ctx, true); err != nil {
			return "", err
		}
		chain()
		return "COMMIT", nil
	case pg.TransactionStmtKind_TRANS_STMT_ROLLBACK:
		if !s.inBlock {
			if ts.GetChain() {
				return "", pgerror.New(pgerror.CodeNoActiveSQLTransaction, "ROLLBACK AND CHAIN can only be used in transaction blocks")
			}
			s.notice("WARNING", "25P01", "there is no transaction in progress")
			return "ROLLBACK", s.endImplicit(ctx, false)
		}
		chain := s.chain(ts)
		s.endBlock(ctx, false)
		chain()
		return "ROLLBACK", nil
	case pg.TransactionStmtKind_TRANS_STMT_SAVEPOINT:
		if !s.inBlock {
			return "", pgerror.New(pgerror.CodeNoActiveSQLTransaction, "SAVEPOINT can only be used in transaction blocks")
		}
		if err := s.blockTxn(ctx); err != nil {
			return "", err
		}
		s.savepointDeferred(ts.GetSavepointName())
		s.advisorySavepoint(ts.GetSavepointName())
		s.savepointCursors(ts.GetSavepointName())
		return "SAVEPOINT", s.txn.Savepoint(ts.GetSavepointName())
	case pg.TransactionStmtKind_TRANS_STMT_RELEASE:
		if !s.inBlock {
			return "", pgerror.New(pgerror.CodeNoActiveSQLTransaction, "RELEASE SAVEPOINT can only be used in transaction blocks")
		}
		if s.txn == nil {
			return "", pgerror.New(pgerror.CodeInvalidSavepointSpec, "savepoint %q does not exist", ts.GetSavepointName())
		}
		if err := s.txn.ReleaseSavepoint(ts.GetSavepointName()); err != nil {
			return "", savepointErr(err, ts.GetSavepointName())
		}
		s.advisoryReleaseSavepoint(ts.GetSavepointName())
		return "RELEASE", nil
	case pg.TransactionStmtKind_TRANS_STMT_ROLLBACK_TO:
		if !s.inBlock {
			return "", pgerror.New(pgerror.CodeNoActiveSQLTransaction, "ROLLBACK TO SAVEPOINT can only be used in transaction blocks")
		}
		if s.txn == nil {
			return "", pgerror.New(pgerror.CodeInvalidSavepointSpec, "savepoint %q does not exist", ts.GetSavepointName())
		}
		if err := s.txn.RollbackToSavepoint(ctx, ts.GetSavepointName()); err != nil {
			return "", savepointErr(err, ts.GetSavepointName())
		}
		s.rollbackDeferred(ts.GetSavepointName())
		s.advisoryRollbackTo(ctx, ts.GetSavepointName())
		s.rollbackCursors(ts.GetSavepointName())
		s.failed = false
		return "ROLLBACK", nil
	case pg.TransactionStmtKind_TRANS_STMT_PREPARE, pg.TransactionStmtKind_TRANS_STMT_COMMIT_PREPARED,
		pg.TransactionStmtKind_TRANS_STMT_ROLLBACK_PREPARED:
		return "", pgerror.Unsupported("two-phase commit")
	}
	return "", pgerror.Unsupported("this transaction statement")
}

// chain returns what COMMIT / ROLLBACK AND CHAIN does once the block has
// ended: a new block with the same characteristics (isolation, read only,
// deferrable). Without CHAIN, nothing. (The chain was ignored: the
// statements after it ran outside any block, each committing.)
func (s *Session) chain(ts *pg.TransactionStmt) func() {
	if !ts.GetChain() {
		return func() {}
	}
	iso, name, ro, def := s.blockIso, s.blockIsoName, s.blockReadOnly, s.blockDeferrable
	return func() {
		s.inBlock, s.failed, s.blockIso, s.txn, s.blockReadOnly, s.blockDeferrable = true, false, iso, nil, ro, def
		s.blockIsoName = name
	}
}

func savepointErr(err error, name string) error {
	if c, ok := client.CodeOf(err); ok && c == client.CodeInvalidArgument {
		return pgerror.New(pgerror.CodeInvalidSavepointSpec, "savepoint %q does not exist", name)
	}
	return err
}

// blockTxn starts the block's transaction if it has not started.
func (s *Session) blockTxn(ctx context.Context) error {
	if s.txn != nil {
		return nil
	}
	tx, err := s.e.begin(ctx, client.TxnOptions{Isolation: s.blockIso, Pipelined: true})
	if err != nil {
		return err
	}
	s.txn = tx
	return nil
}

// endBlock commits or rolls back the block.
func (s *Session) endBlock(ctx context.Context, commit bool) error {
	tx := s.txn
	var deferredErr error
	if commit && tx != nil {
		deferredErr = s.runDeferred(ctx, tx, nil) // a violation rolls the block back
	}
	s.inBlock, s.failed, s.txn, s.deferred = false, false, nil, nil
	s.endBlockSettings(commit && deferredErr == nil)
	s.dropBlockCursors()
	defer s.unpin()
	if tx == nil {
		return nil
	}
	if commit && deferredErr == nil {
		return tx.Commit(ctx)
	}
	rollback(ctx, tx)
	return deferredErr
}

// endImplicit ends the implicit transaction early: COMMIT or ROLLBACK
// without BEGIN in a multi-statement Query ends it (with PostgreSQL's
// warning), and later statements start another.
func (s *Session) endImplicit(ctx context.Context, commit bool) error {
	tx := s.implicitTxn
	s.implicitTxn, s.implicitRan = nil, 0
	if tx == nil {
		return nil
	}
	if commit {
		return tx.Commit(ctx)
	}
	rollback(ctx, tx)
	return nil
}

func (s *Session) sqlPrepare(ctx context.Context, ps *pg.PrepareStmt) (string, []plan.Column, []plan.Row, error) {
	name := ps.GetName()
	if _, dup := s.prepared[name]; dup {
		return "", nil, nil, pgerror.New(pgerror.CodeDuplicatePreparedStatement, "prepared statement %q already exists", name)
	}
	var given []uint32
	for _, tn := range ps.GetArgtypes() {
		t, err := types.FromTypeName(tn.GetTypeName())
		if err != nil {
			return "", nil, nil, err
		}
		given = append(given, t.OID)
	}
	deparsed, err := parse.Deparse(ps.GetQuery())
	if err != nil {
		return "", nil, nil, err
	}
	st, err := s.prepare(ctx, deparsed, given)
	if err != nil {
		return "", nil, nil, err
	}
	s.prepared[name] = st
	return "PREPARE", nil, nil, nil
}

func (s *Session) sqlExecute(ctx context.Context, es *pg.ExecuteStmt) (string, []plan.Column, []plan.Row, error) {
	st, ok := s.prepared[es.GetName()]
	if !ok {
		return "", nil, nil, pgerror.New(pgerror.CodeUndefinedPreparedStatement, "prepared statement %q does not exist", es.GetName())
	}
	if len(es.GetParams()) != len(st.params) {
		return "", nil, nil, pgerror.New(pgerror.CodeSyntaxError, "wrong number of parameters for prepared statement %q", es.GetName()).
			WithDetail("Expected %d parameters but got %d.", len(st.params), len(es.GetParams()))
	}
	b, err := s.binder(ctx)
	if err != nil {
		return "", nil, nil, err
	}
	vals := make([]types.Datum, len(es.GetParams()))
	for i, p := range es.GetParams() {
		e, err := b.Expr(p)
		if err != nil {
			return "", nil, nil, err
		}
		d, err := e.Eval(s.evalContext(nil), nil)
		if err != nil {
			return "", nil, nil, err
		}
		if !d.Null && e.Type() != st.params[i] {
			if d, err = castDatum(d, e.Type(), st.params[i], s.location()); err != nil {
				return "", nil, nil, err
			}
		}
		vals[i] = d
	}
	return s.execute(ctx, st, vals)
}
