// Package parse turns SQL text into PostgreSQL's own parse trees through
// pg_query (the real PostgreSQL grammar), caches them by text, and reports
// syntax errors as 42601 with the cursor position.
package parse

import (
	"errors"
	"strings"
	"sync"

	pg "github.com/pganalyze/pg_query_go/v6"
	pgparser "github.com/pganalyze/pg_query_go/v6/parser"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// maxCached bounds the parse cache; statements past it are parsed each
// time (prepared statements keep their own tree).
const maxCached = 4096

var cache struct {
	sync.RWMutex
	m map[string]*pg.RawStmt
}

// One parses a single statement. The tree is shared: callers must not
// modify it.
func One(sql string) (*pg.RawStmt, error) {
	cache.RLock()
	st, ok := cache.m[sql]
	cache.RUnlock()
	if ok {
		return st, nil
	}
	res, err := pg.Parse(sql)
	if err != nil {
		return nil, syntaxError(err)
	}
	switch len(res.GetStmts()) {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, pgerror.New(pgerror.CodeSyntaxError, "cannot insert multiple commands into a prepared statement")
	}
	st = res.GetStmts()[0]
	cache.Lock()
	if cache.m == nil || len(cache.m) >= maxCached {
		cache.m = make(map[string]*pg.RawStmt)
	}
	cache.m[sql] = st
	cache.Unlock()
	return st, nil
}

// Split splits a simple-query string into its statements' texts. Empty
// statements (";;", comments) are dropped. When the grammar rejects the
// string, it is split with the scanner instead, so that YSQL's extensions
// to CREATE TABLE (SPLIT INTO, HASH keys) reach Prepare, which rewrites
// them, and a real syntax error is reported by Prepare for its statement.
func Split(sql string) ([]string, error) {
	parts, err := pg.SplitWithParser(sql, true)
	if err != nil {
		parts, err = pg.SplitWithScanner(sql, true)
		if err != nil {
			return nil, syntaxError(err)
		}
		if len(parts) == 0 {
			parts = []string{strings.TrimSpace(sql)}
		}
	}
	out := parts[:0]
	for _, p := range parts {
		if strings.TrimSpace(p) != "" {
			out = append(out, p)
		}
	}
	return out, nil
}

func syntaxError(err error) error {
	var pe *pgparser.Error
	if errors.As(err, &pe) {
		e := pgerror.New(pgerror.CodeSyntaxError, "%s", pe.Message)
		if pe.Cursorpos > 0 {
			e.Position = int32(pe.Cursorpos)
		}
		return e
	}
	return pgerror.New(pgerror.CodeSyntaxError, "%s", err.Error())
}

var treeVersion = sync.OnceValue(func() int32 {
	res, err := pg.Parse("SELECT 1")
	if err != nil {
		panic("parse: pg_query cannot parse SELECT 1: " + err.Error())
	}
	return res.GetVersion()
})

// Deparse turns a statement tree back into SQL text.
func Deparse(stmt *pg.Node) (string, error) {
	out, err := pg.Deparse(&pg.ParseResult{Version: treeVersion(), Stmts: []*pg.RawStmt{{Stmt: stmt}}})
	if err != nil {
		return "", pgerror.New(pgerror.CodeInternalError, "deparse: %v", err)
	}
	return out, nil
}
