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
	if err := checkDepth(sql); err != nil {
		return nil, err
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

// grammarCodes are the SQLSTATEs of the errors PostgreSQL's grammar
// raises with a code other than syntax_error (pg_query reports only the
// message), by message prefix.
var grammarCodes = []struct{ prefix, code string }{
	{"frame start cannot be", pgerror.CodeWindowingError},
	{"frame end cannot be", pgerror.CodeWindowingError},
	{"frame starting from current row cannot have preceding rows", pgerror.CodeWindowingError},
	{"frame starting from following row cannot have preceding rows", pgerror.CodeWindowingError},
}

func syntaxError(err error) error {
	var pe *pgparser.Error
	if errors.As(err, &pe) {
		code := pgerror.CodeSyntaxError
		for _, g := range grammarCodes {
			if strings.HasPrefix(pe.Message, g.prefix) {
				code = g.code
			}
		}
		e := pgerror.New(code, "%s", pe.Message)
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

// maxDepth bounds how deep a statement's tree may go, counted from its
// tokens (depthOf). pg_query hands the tree over by walking it
// recursively in C, on the thread's stack: a chain of 25,000 additions or
// UNIONs overflowed it and took the node down with SIGSEGV. Trees past
// about 4,500 levels fail to decode anyway (protobuf's recursion limit),
// and nesting (parentheses, CASE, subqueries) stops at the grammar's own
// stack of 10,000 entries before it could go that deep.
const maxDepth = 5000

// checkDepth refuses, as PostgreSQL does a statement too deep for its
// stack (54001), SQL whose operator chains would make its tree deeper
// than maxDepth. A short text cannot: only long ones are scanned.
func checkDepth(sql string) error {
	if len(sql) < 2*maxDepth {
		return nil
	}
	scan, err := pg.Scan(sql)
	if err != nil {
		return nil // the parser reports it
	}
	if d := depthOf(scan.GetTokens()); d > maxDepth {
		return pgerror.New(pgerror.CodeStatementTooComplex, "stack depth limit exceeded").
			WithDetail("The statement nests or chains operators about %d levels deep; at most %d are supported.", d, maxDepth).
			WithHint("Split long chains of operators or UNIONs, or pass the values as an array or a table.")
	}
	return nil
}

// depthOf bounds the depth of the tree of a statement from its tokens:
// the brackets open, plus, at each of them, the binary operators and set
// operations chained since the last comma (each a level of a left-deep
// tree). AND and OR end a chain: the grammar flattens their lists.
func depthOf(tokens []*pg.ScanToken) int {
	chains := []int{0} // per open bracket
	depth, most := 0, 0
	for _, t := range tokens {
		switch t.GetToken() {
		case pg.Token_ASCII_40, pg.Token_ASCII_91: // ( [
			chains = append(chains, 0)
			depth++
		case pg.Token_ASCII_41, pg.Token_ASCII_93: // ) ]
			if len(chains) > 1 {
				depth -= 1 + chains[len(chains)-1]
				chains = chains[:len(chains)-1]
			}
		case pg.Token_ASCII_44, pg.Token_ASCII_59, pg.Token_AND, pg.Token_OR: // , ;
			depth -= chains[len(chains)-1]
			chains[len(chains)-1] = 0
		case pg.Token_ASCII_37, pg.Token_ASCII_42, pg.Token_ASCII_43, pg.Token_ASCII_45, pg.Token_ASCII_47, // % * + - /
			pg.Token_ASCII_60, pg.Token_ASCII_61, pg.Token_ASCII_62, pg.Token_ASCII_94, // < = > ^
			pg.Token_Op, pg.Token_TYPECAST, pg.Token_LESS_EQUALS, pg.Token_GREATER_EQUALS, pg.Token_NOT_EQUALS,
			pg.Token_UNION, pg.Token_INTERSECT, pg.Token_EXCEPT, pg.Token_IS:
			chains[len(chains)-1]++
			depth++
		}
		most = max(most, depth)
	}
	return most
}
