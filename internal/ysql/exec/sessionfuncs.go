package exec

import (
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// sessionFunc resolves the functions whose value is the session's.
func (s *Session) sessionFunc(name string, args []plan.Expr) (plan.Expr, bool, error) {
	text := func(v string) (plan.Expr, bool, error) {
		return &plan.Const{T: types.T{OID: types.OIDName, Mod: -1}, D: types.DString(v)}, true, nil
	}
	if e, ok, err := s.seqFunc(name, args); ok || err != nil {
		return e, ok, err
	}
	if len(args) > 0 {
		return nil, false, nil
	}
	switch name {
	case "current_database", "current_catalog":
		return text(s.db)
	case "current_user", "session_user", "user", "current_role":
		return text(s.user)
	case "current_schema":
		for _, sc := range s.searchPath() {
			return text(sc)
		}
		return &plan.Const{T: types.T{OID: types.OIDName, Mod: -1}, D: types.NullDatum}, true, nil
	case "version":
		return &plan.Const{T: types.T{OID: types.OIDText, Mod: -1},
			D: types.DString("PostgreSQL 15.0-ShaleDB-0.1 on x86_64-pc-linux-gnu, compiled by go, 64-bit")}, true, nil
	case "pg_backend_pid":
		return &plan.Const{T: types.T{OID: types.OIDInt4, Mod: -1}, D: types.DInt(int64(s.pid))}, true, nil
	}
	return nil, false, nil
}
