package parse

import (
	"testing"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

func TestSyntaxErrorPosition(t *testing.T) {
	_, err := One("SELECT * FORM t")
	pe := pgerror.From(err)
	if pe.Code != pgerror.CodeSyntaxError || pe.Position != 10 || pe.Message != `syntax error at or near "FORM"` {
		t.Fatalf("got %+v", pe)
	}
}

func TestSplit(t *testing.T) {
	got, err := Split("select 1; ; -- c\n insert into t values (';'); ")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "select 1" || got[1] != "-- c\n insert into t values (';')" {
		t.Fatalf("got %q", got)
	}
	if _, err := One("select 1; select 2"); pgerror.Code(err) != pgerror.CodeSyntaxError {
		t.Fatalf("multi-statement prepare: %v", err)
	}
}

func TestCacheReturnsSameTree(t *testing.T) {
	a, err := One("select 1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := One("select 1")
	if a != b || a.GetStmt().GetSelectStmt() == nil {
		t.Fatal("not cached or not a select")
	}
}
