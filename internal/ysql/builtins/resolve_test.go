package builtins

import (
	"testing"
	"time"

	pg_query "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

func TestResolutionErrors(t *testing.T) {
	cases := []struct {
		lookup    func() error
		code, msg string
		hint      string
	}{
		{func() error { _, err := LookupOperator("+", types.TInt4, types.TText); return err }, "42883",
			"operator does not exist: integer + text", "No operator matches the given name and argument types. You might need to add explicit type casts."},
		{func() error { _, err := LookupOperator("-", types.T{}, types.TText); return err }, "42883",
			"operator does not exist: - text", "No operator matches the given name and argument type. You might need to add an explicit type cast."},
		{func() error { _, err := LookupOperator("||", types.TInt4, types.TInt4); return err }, "42883",
			"operator does not exist: integer || integer", ""},
		{func() error { _, err := LookupOperator("+", types.TUnknown, types.TUnknown); return err }, "42725",
			"operator is not unique: unknown + unknown", "Could not choose a best candidate operator. You might need to add explicit type casts."},
		{func() error { _, err := LookupFunction("foo", []types.T{types.TInt4}); return err }, "42883",
			"function foo(integer) does not exist", "No function matches the given name and argument types. You might need to add explicit type casts."},
		{func() error { _, err := LookupFunction("length", []types.T{types.TInt4}); return err }, "42883",
			"function length(integer) does not exist", ""},
		{func() error { _, err := LookupFunction("sum", []types.T{types.TUnknown}); return err }, "42883",
			"function sum(unknown) does not exist", ""},
	}
	for i, c := range cases {
		err := c.lookup()
		pe, ok := err.(*pgerror.Error)
		if !ok || pe.Code != c.code || pe.Message != c.msg || (c.hint != "" && pe.Hint != c.hint) {
			t.Errorf("%d: got %v, want %s %q", i, err, c.code, c.msg)
		}
	}
}

func TestResolutionChoices(t *testing.T) {
	cases := []struct {
		op           string
		l, r         types.T
		wantL, wantR types.T
		res          types.T
	}{
		{"+", types.TInt4, types.TUnknown, types.TInt4, types.TInt4, types.TInt4},
		{"+", types.TNumeric, types.TUnknown, types.TNumeric, types.TNumeric, types.TNumeric},
		{"||", types.TUnknown, types.TUnknown, types.TText, types.TText, types.TText},
		{"||", types.TVarchar, types.TUnknown, types.TText, types.TText, types.TText},
		{"=", types.TVarchar, types.TVarchar, types.TText, types.TText, types.TBool},
		{"=", types.TInt4, types.TFloat8, types.TFloat8, types.TFloat8, types.TBool},
		{"=", types.TInt4, types.TNumeric, types.TNumeric, types.TNumeric, types.TBool},
		{"^", types.TInt4, types.TInt4, types.TFloat8, types.TFloat8, types.TFloat8},
		{"-", types.TTimestampTZ, types.TUnknown, types.TTimestampTZ, types.TTimestampTZ, types.TInterval},
		{"+", types.TDate, types.TInt4, types.TDate, types.TInt4, types.TDate},
		{"<", types.TDate, types.TTimestampTZ, types.TDate, types.TTimestampTZ, types.TBool},
		{"~~", types.TVarchar, types.TUnknown, types.TText, types.TText, types.TBool},
		{"->>", types.TJSONB, types.TUnknown, types.TJSONB, types.TText, types.TText},
		{"->", types.TJSONB, types.TInt4, types.TJSONB, types.TInt4, types.TJSONB},
	}
	for _, c := range cases {
		op, err := LookupOperator(c.op, c.l, c.r)
		if err != nil {
			t.Errorf("%s %s %s: %v", c.l, c.op, c.r, err)
			continue
		}
		if op.Left.OID != c.wantL.OID || op.Right.OID != c.wantR.OID || op.Result.OID != c.res.OID {
			t.Errorf("%s %s %s: resolved to %s %s %s -> %s", c.l, c.op, c.r, op.Left, c.op, op.Right, op.Result)
		}
	}
	// 'now() - '1 day'': the unknown takes timestamptz and fails to parse, as in PostgreSQL.
	op, _ := LookupOperator("-", types.TTimestampTZ, types.TUnknown)
	if _, err := PrepareArgs([]types.T{op.Left, op.Right}, []types.Datum{types.DMicros(0), types.DString("1 day")},
		[]types.T{types.TTimestampTZ, types.TUnknown}, time.UTC); err == nil ||
		err.Error() != `invalid input syntax for type timestamp with time zone: "1 day"` {
		t.Errorf("now() - '1 day': %v", err)
	}
}

// TestTimeZoneArithmetic checks timestamptz arithmetic in a session zone
// with daylight saving time, against PostgreSQL (TimeZone America/New_York).
func TestTimeZoneArithmetic(t *testing.T) {
	ny, _ := types.LoadZone("America/New_York")
	ctx := &EvalContext{Loc: ny, TxnTime: time.Date(2024, 3, 5, 10, 0, 0, 0, time.UTC)}
	cases := map[string]string{
		"'2024-03-09 12:00-05'::timestamptz + '1 day'::interval":                      "2024-03-10 12:00:00-04",
		"'2024-03-09 12:00-05'::timestamptz + '24 hours'::interval":                   "2024-03-10 13:00:00-04",
		"date_trunc('day', '2024-03-10 12:00-04'::timestamptz)":                       "2024-03-10 00:00:00-05",
		"date_trunc('hour', '2024-11-03 01:30-05'::timestamptz)":                      "2024-11-03 01:00:00-05",
		"date_trunc('hour', '2024-11-03 01:30-04'::timestamptz)":                      "2024-11-03 01:00:00-04",
		"extract(timezone from '2024-07-01'::timestamptz)":                            "-14400",
		"extract(hour from '2024-07-01 12:00+00'::timestamptz)":                       "8",
		"'2024-03-10'::date::timestamptz":                                             "2024-03-10 00:00:00-05",
		"age('2024-03-10 12:00-04'::timestamptz, '2024-01-01 00:00-05'::timestamptz)": "2 mons 9 days 12:00:00",
		"now()": "2024-03-05 05:00:00-05",
	}
	// current_date is the transaction's date in the session zone.
	f, err := LookupFunction("current_date", nil)
	if err != nil {
		t.Fatal(err)
	}
	early := &EvalContext{Loc: ny, TxnTime: time.Date(2024, 3, 5, 3, 0, 0, 0, time.UTC)}
	if d, err := f.Eval(early, nil); err != nil || types.FormatText(d, types.TDate, ny) != "2024-03-04" {
		t.Errorf("current_date: %v %v", types.FormatText(d, types.TDate, ny), err)
	}
	for expr, want := range cases {
		tree, err := pg_query.Parse("select " + expr)
		if err != nil {
			t.Fatal(err)
		}
		d, typ, err := evalExpr(ctx, tree.Stmts[0].Stmt.GetSelectStmt().TargetList[0].GetResTarget().Val)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		if got := types.FormatText(d, typ, ny); got != want {
			t.Errorf("%s: got %q, want %q", expr, got, want)
		}
	}
}

func TestLike(t *testing.T) {
	cases := []struct {
		s, p string
		fold bool
		want bool
	}{
		{"abc", "a%", false, true}, {"abc", "%c", false, true}, {"abc", "a_c", false, true}, {"abc", "a_", false, false},
		{"a%c", `a\%c`, false, true}, {"abc", `a\%c`, false, false}, {"", "%", false, true}, {"", "_", false, false},
		{"héllo", "h_llo", false, true}, {"ABC", "abc", true, true}, {"abc", "%%%", false, true}, {"a\\b", `a\\b`, false, true},
		{"aXbXc", "a%b%c", false, true}, {"ab", "a%b%c", false, false},
	}
	for _, c := range cases {
		if got, err := Like(c.s, c.p, c.fold); err != nil || got != c.want {
			t.Errorf("%q LIKE %q (fold %v): %v %v", c.s, c.p, c.fold, got, err)
		}
	}
	if _, err := Like("a", `a\`, false); pgerror.Code(err) != "22025" {
		t.Errorf("trailing escape: %v", err)
	}
	if p, err := LikeEscape("a!_c!!", "!"); err != nil || p != `a\_c!` {
		t.Errorf("like_escape: %q %v", p, err)
	}
	if p, err := LikeEscape(`a\b%`, ""); err != nil || p != `a\\b%` {
		t.Errorf("like_escape empty: %q %v", p, err)
	}
	if _, err := compileRegex(`(a)\1`, false); pgerror.Code(err) != "2201B" {
		t.Errorf("back-reference: %v", err)
	}
}
