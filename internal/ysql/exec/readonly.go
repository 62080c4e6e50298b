package exec

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
)

// Read-only transactions (BEGIN READ ONLY, SET TRANSACTION READ ONLY,
// default_transaction_read_only): statements that write fail with 25006,
// as in PostgreSQL. Frameworks use them for reads (pgjdbc sends BEGIN READ
// ONLY for a read-only connection, Spring's @Transactional(readOnly=true)).

// readOnly reports whether the statement about to run is in a read-only
// transaction.
func (s *Session) readOnly() bool {
	if s.inBlock {
		return s.blockReadOnly
	}
	return s.settingsNow().readOnly
}

// readOnlyErr is 25006 for a statement that writes (what names it, "INSERT")
// in a read-only transaction, nil otherwise.
func (s *Session) readOnlyErr(what string) error {
	if what == "" || !s.readOnly() {
		return nil
	}
	return pgerror.New(pgerror.CodeReadOnlySQLTransaction, "cannot execute %s in a read-only transaction", what)
}

// writeOf names what a planned statement writes ("" for a query).
func writeOf(n plan.Node) string {
	switch x := n.(type) {
	case *plan.Insert:
		return "INSERT"
	case *plan.Update:
		return "UPDATE"
	case *plan.Delete:
		return "DELETE"
	case *plan.WithDML:
		// PostgreSQL names the statement, a SELECT whose WITH writes.
		if w := writeOf(x.Main); w != "" {
			return w
		}
		return "SELECT"
	}
	return ""
}

// utilityWriteOf names what a utility statement writes ("" if nothing):
// DDL and COPY FROM.
func utilityWriteOf(n *pg.Node) string {
	switch {
	case n.GetCopyStmt() != nil && n.GetCopyStmt().GetIsFrom():
		return "COPY FROM"
	case isDDL(n), n.GetCommentStmt() != nil, n.GetAlterSeqStmt() != nil:
		return ddlName(n)
	}
	return ""
}
