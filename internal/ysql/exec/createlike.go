package exec

import (
	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// PostgreSQL's CREATE TABLE ... (LIKE src INCLUDING ...) option bits.
const (
	likeConstraints = 1 << 2
	likeDefaults    = 1 << 3
	likeIdentity    = 1 << 5
	likeIndexes     = 1 << 6
)

// likeTable adds to t, a table being created, what LIKE src asks: src's
// columns with their types and NOT NULL, and as the options say their
// defaults, CHECK constraints, primary key and indexes (the indexes under
// new names, as PostgreSQL names them). It returns src's key, when the
// indexes are copied and src has one.
func (s *Session) likeTable(snap *catalog.Snapshot, t *catalog.Table, lc *pg.TableLikeClause) ([]keySpec, error) {
	rv := lc.GetRelation()
	src, ok := s.findTable(snap, rv.GetSchemaname(), rv.GetRelname())
	if !ok {
		e := pgerror.New(pgerror.CodeUndefinedTable, "relation %q does not exist", rv.GetRelname())
		e.Position = rv.GetLocation() + 1
		return nil, e
	}
	has := func(bit uint32) bool { return lc.GetOptions()&bit != 0 }
	for _, c := range src.Columns {
		if c.Hidden {
			continue
		}
		if t.ColumnIndex(c.Name) >= 0 {
			return nil, pgerror.New(pgerror.CodeDuplicateColumn, "column %q specified more than once", c.Name)
		}
		if c.Identity != "" && has(likeIdentity) {
			return nil, pgerror.Unsupported("LIKE ... INCLUDING IDENTITY of an identity column")
		}
		nc := c
		nc.ID, nc.Identity = t.NextColID, ""
		t.NextColID++
		if !has(likeDefaults) || c.Identity != "" {
			nc.Default = ""
		}
		t.Columns = append(t.Columns, nc)
	}
	if has(likeConstraints) {
		t.Checks = append(t.Checks, src.Checks...)
	}
	if !has(likeIndexes) {
		return nil, nil
	}
	for _, ix := range src.Indexes {
		req := &indexRequest{unique: ix.Unique, constraint: ix.Constraint}
		for _, c := range ix.Columns {
			req.cols = append(req.cols, idxCol{name: src.Columns[src.ColumnByID(c.ID)].Name, hash: c.Hash, desc: c.Desc, set: true})
		}
		for _, id := range ix.Include {
			req.include = append(req.include, src.Columns[src.ColumnByID(id)].Name)
		}
		if ix.Predicate != "" {
			where, err := storedExpr(ix.Predicate)
			if err != nil {
				return nil, err
			}
			req.where = where
		}
		s.pendingUniques = append(s.pendingUniques, req)
	}
	if src.RowID {
		return nil, nil
	}
	var pk []keySpec
	for _, k := range src.Key {
		pk = append(pk, keySpec{name: src.Columns[k.Column].Name, hash: k.Hash, desc: k.Desc, set: true})
	}
	return pk, nil
}
