package parse

import (
	"errors"
	"strings"
	"testing"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// TestDepthLimit: statements whose trees would be too deep for pg_query's
// recursive C code (it crashed the node with SIGSEGV past ~25,000 levels)
// fail with 54001; long statements that are not deep parse.
func TestDepthLimit(t *testing.T) {
	for _, sql := range []string{
		"SELECT " + strings.Repeat("1+", 30000) + "1",
		"SELECT " + strings.Repeat("'a' || ", 6000) + "'a'",
		"SELECT 1" + strings.Repeat(" UNION SELECT 1", 100000),
		"SELECT 1" + strings.Repeat("::int", 20000),
		"SELECT (" + strings.Repeat("1+", 3000) + "(" + strings.Repeat("1+", 3000) + "1))",
	} {
		_, err := One(sql)
		var pe *pgerror.Error
		if !errors.As(err, &pe) || pe.Code != pgerror.CodeStatementTooComplex {
			t.Errorf("%.40s... (%d bytes): %v, want 54001", sql, len(sql), err)
		}
	}
	for _, sql := range []string{
		"SELECT " + strings.Repeat("1+", 3000) + "1",
		"INSERT INTO t VALUES " + strings.Repeat("(1 + 1, 'x' || 'y'), ", 20000) + "(1, 'z')",
		"SELECT 1 WHERE 1 IN (" + strings.Repeat("1, ", 50000) + "2)",
		"SELECT 1 WHERE " + strings.Repeat("a = 1 OR ", 20000) + "a = 2",
	} {
		if _, err := One(sql); err != nil {
			t.Errorf("%.40s... (%d bytes): %v", sql, len(sql), err)
		}
	}
}
