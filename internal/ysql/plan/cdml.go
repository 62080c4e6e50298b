package plan

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// Data-modifying statements in WITH (WITH d AS (DELETE ... RETURNING *)
// INSERT INTO archive SELECT * FROM d). Each runs once, whether the rest
// of the statement reads it or not, before the main statement, in the
// same transaction; references read the rows its RETURNING gave.
// PostgreSQL runs them with the main statement on one snapshot, so the
// main statement does not see their changes to the tables; here it does
// (it runs after them).

// WithDML is a statement whose WITH list holds data-modifying statements.
type WithDML struct {
	DMLs []*DMLResult
	Main Node
}

// Columns are the main statement's.
func (w *WithDML) Columns() []Column { return w.Main.Columns() }

// DMLResult is a data-modifying WITH query: its statement (*Insert,
// *Update or *Delete) and, once it ran, the rows its RETURNING gave.
type DMLResult struct {
	Name string
	Stmt Node
	Rows []Row
}

// Columns are the statement's RETURNING columns.
func (d *DMLResult) Columns() []Column { return d.Stmt.Columns() }

// dmlQuery binds the data-modifying statement of a WITH query, which only
// the top level of a statement may have.
func (b *Binder) dmlQuery(c *pg.CommonTableExpr, visible []cteFrame, topLevel bool) (*DMLResult, error) {
	q := c.GetCtequery()
	if !topLevel {
		return nil, posErr(pgerror.New(pgerror.CodeFeatureNotSupported, "WITH clause containing a data-modifying statement must be at the top level"), c.GetLocation())
	}
	saved := b.ctes
	b.ctes = visible
	defer func() { b.ctes = saved }()
	var n Node
	var err error
	switch {
	case q.GetInsertStmt() != nil:
		n, err = b.Insert(q.GetInsertStmt())
	case q.GetUpdateStmt() != nil:
		n, err = b.Update(q.GetUpdateStmt())
	case q.GetDeleteStmt() != nil:
		n, err = b.Delete(q.GetDeleteStmt())
	default:
		return nil, posErr(pgerror.Unsupported("this statement in WITH"), c.GetLocation())
	}
	if err != nil {
		return nil, err
	}
	d := &DMLResult{Name: c.GetCtename(), Stmt: n}
	b.DMLs = append(b.DMLs, d)
	return d, nil
}
