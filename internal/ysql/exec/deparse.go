package exec

import (
	"strconv"
	"strings"
	"sync"
	"time"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/ysql/builtins"
	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/parse"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Column defaults and CHECK expressions are kept as the SQL text the user
// wrote. pg_get_expr and pg_get_constraintdef print them the way
// PostgreSQL's ruleutils prints the analyzed expression: string literals
// with the type they took ('x'::text, 'a'::character varying), negative
// numbers quoted ('-3'::integer), implicit casts of operator and function
// arguments shown (n > 0::numeric) but not of the whole expression, LIKE
// as ~~, BETWEEN as two comparisons, IN as = ANY (ARRAY[...]), SQL value
// functions by their key words, and the fewest parentheses (pretty) or,
// as without pretty, every operator, boolean, test and cast in its own
// ((c <> 0), (a)::text). Expressions it does not know are printed as the
// parser deparses them.

// exprCache holds normalised texts by table OID, schema version and
// source text (catalog queries print the same defaults over and over).
var exprCache sync.Map

// deparseStored normalises a stored default (target: the column's type)
// or CHECK expression (target: boolean) of table t, pretty.
func deparseStored(t *catalog.Table, src string, target types.T) string {
	return deparseStoredAs(t, src, target, false)
}

// deparseStoredAs is deparseStored, with every parenthesis when full.
func deparseStoredAs(t *catalog.Table, src string, target types.T, full bool) string {
	key := strconv.FormatUint(uint64(t.OID()), 10) + "/" + strconv.FormatUint(uint64(t.Version), 10) + "/" + target.String() + "/" + strconv.FormatBool(full) + "/" + src
	if v, ok := exprCache.Load(key); ok {
		return v.(string)
	}
	cols := map[string]types.T{}
	for _, c := range t.Columns {
		if !c.Hidden {
			cols[c.Name] = c.Type
		}
	}
	out := src
	if stmt, err := parse.One("SELECT " + src); err == nil {
		if tl := stmt.GetStmt().GetSelectStmt().GetTargetList(); len(tl) == 1 {
			d := &deparser{cols: cols, full: full}
			e := d.expr(tl[0].GetResTarget().GetVal(), target)
			out = e.text
		}
	}
	exprCache.Store(key, out)
	return out
}

type deparser struct {
	cols map[string]types.T
	full bool // not pretty: see deparseStoredAs
}

// wrap parenthesises text in full mode.
func (d *deparser) wrap(text string) string {
	if d.full {
		return "(" + text + ")"
	}
	return text
}

// dexpr is a printed expression: its text, type (OIDUnknown for a bare
// literal whose type the context decides), the kind of node it is for
// parenthesising, and for literals their value.
type dexpr struct {
	text string
	t    types.T
	kind int
	lit  *string // an unknown-typed string literal's value
	op   string  // the operator of an operator expression
	num  bool    // a bare numeric constant
}

const (
	kSimple = iota // constants, columns, function calls, casts
	kOp            // operator expressions
	kBool          // AND / OR / NOT
	kTest          // IS NULL and friends
)

var tUnknownT = types.T{OID: types.OIDUnknown, Mod: -1}

func tOfOID(oid uint32) types.T { return types.T{OID: oid, Mod: -1} }

// constText prints a constant of type t as get_const_expr does.
func constText(val string, t types.T) string {
	switch t.OID {
	case types.OIDInt4:
		if !strings.HasPrefix(val, "-") {
			return val
		}
	case types.OIDNumeric:
		if val != "" && val[0] >= '0' && val[0] <= '9' && strings.Trim(val, "0123456789+-eE.") == "" {
			if strings.ContainsAny(val, "eE.") {
				return val
			}
			return val + "::numeric"
		}
	case types.OIDBool:
		if val == "t" || val == "true" {
			return "true"
		}
		return "false"
	case types.OIDUnknown:
		return "'" + strings.ReplaceAll(val, "'", "''") + "'"
	}
	return "'" + strings.ReplaceAll(val, "'", "''") + "'::" + types.FormatType(t.OID, -1)
}

// as gives an argument the type its operator or function takes: a bare
// literal becomes a constant of that type, anything else of another type
// shows the implicit cast.
func (d *deparser) as(e dexpr, t types.T) dexpr {
	if t.OID == 0 || t.OID == types.OIDUnknown || t.OID == builtins.AnyNonArray.OID {
		if e.lit != nil {
			return dexpr{text: constText(*e.lit, tOfOID(types.OIDText)), t: tOfOID(types.OIDText)}
		}
		return e
	}
	if e.lit != nil {
		if v, err := types.ParseText(*e.lit, t, time.UTC); err == nil {
			return dexpr{text: constText(types.FormatText(v, t, time.UTC), t), t: t}
		}
		return dexpr{text: constText(*e.lit, t), t: t}
	}
	if e.t.OID == t.OID || e.t.OID == types.OIDUnknown {
		return e
	}
	text := e.text
	if e.kind != kSimple || d.full {
		text = "(" + text + ")"
	}
	return dexpr{text: text + "::" + types.FormatType(t.OID, -1), t: t}
}

// top prints the whole expression: a literal takes the target type, and
// an implicit cast to the target is not shown.
func (d *deparser) top(e dexpr, target types.T) dexpr {
	if e.lit != nil {
		return d.as(e, target)
	}
	return e
}

func (d *deparser) expr(n *pg.Node, target types.T) dexpr {
	return d.top(d.node(n), target)
}

func (d *deparser) fallback(n *pg.Node) dexpr {
	sel := &pg.Node{Node: &pg.Node_SelectStmt{SelectStmt: &pg.SelectStmt{TargetList: []*pg.Node{
		{Node: &pg.Node_ResTarget{ResTarget: &pg.ResTarget{Val: n}}}}}}}
	s, err := parse.Deparse(sel)
	if err != nil {
		return dexpr{text: "?", t: tUnknownT}
	}
	return dexpr{text: strings.TrimPrefix(s, "SELECT "), t: tUnknownT, kind: kOp}
}

func (d *deparser) node(n *pg.Node) dexpr {
	switch {
	case n.GetAConst() != nil:
		return d.constant(n.GetAConst())
	case n.GetColumnRef() != nil:
		fields := n.GetColumnRef().GetFields()
		name := fields[len(fields)-1].GetString_().GetSval()
		t, ok := d.cols[name]
		if !ok {
			t = tUnknownT
		}
		return dexpr{text: quoteIdentIfNeeded(name), t: t}
	case n.GetTypeCast() != nil:
		tc := n.GetTypeCast()
		t, err := types.FromTypeName(tc.GetTypeName())
		if err != nil {
			return d.fallback(n)
		}
		arg := d.node(tc.GetArg())
		if arg.lit != nil {
			return dexpr{text: constText(*arg.lit, types.T{OID: t.OID, Mod: -1}), t: t}
		}
		text := arg.text
		if arg.kind != kSimple || strings.HasPrefix(text, "-") || d.full {
			text = "(" + text + ")"
		}
		return dexpr{text: text + "::" + types.FormatType(t.OID, t.Mod), t: t}
	case n.GetFuncCall() != nil:
		return d.funcCall(n)
	case n.GetSqlvalueFunction() != nil:
		return d.sqlValue(n.GetSqlvalueFunction())
	case n.GetAExpr() != nil:
		return d.aExpr(n)
	case n.GetBoolExpr() != nil:
		be := n.GetBoolExpr()
		var parts []string
		for _, a := range be.GetArgs() {
			e := d.as(d.node(a), tOfOID(types.OIDBool))
			if e.kind == kBool && !boolNests(e.op, be.GetBoolop()) && !d.full {
				e.text = "(" + e.text + ")"
			}
			parts = append(parts, e.text)
		}
		switch be.GetBoolop() {
		case pg.BoolExprType_AND_EXPR:
			return dexpr{text: d.wrap(strings.Join(parts, " AND ")), t: tOfOID(types.OIDBool), kind: kBool, op: "AND"}
		case pg.BoolExprType_OR_EXPR:
			return dexpr{text: d.wrap(strings.Join(parts, " OR ")), t: tOfOID(types.OIDBool), kind: kBool, op: "OR"}
		}
		return dexpr{text: d.wrap("NOT " + parts[0]), t: tOfOID(types.OIDBool), kind: kBool, op: "NOT"}
	case n.GetNullTest() != nil:
		nt := n.GetNullTest()
		arg := d.node(nt.GetArg())
		if (arg.kind == kBool || arg.kind == kTest) && !d.full {
			arg.text = "(" + arg.text + ")"
		}
		if nt.GetNulltesttype() == pg.NullTestType_IS_NULL {
			return dexpr{text: d.wrap(arg.text + " IS NULL"), t: tOfOID(types.OIDBool), kind: kTest}
		}
		return dexpr{text: d.wrap(arg.text + " IS NOT NULL"), t: tOfOID(types.OIDBool), kind: kTest}
	}
	return d.fallback(n)
}

// boolNests: AND and NOT need no parentheses under AND or OR, OR only
// under OR.
func boolNests(child string, parent pg.BoolExprType) bool {
	if child == "OR" {
		return parent == pg.BoolExprType_OR_EXPR
	}
	return parent != pg.BoolExprType_NOT_EXPR || child == "NOT"
}

func (d *deparser) constant(c *pg.A_Const) dexpr {
	if c.GetIsnull() {
		return dexpr{text: "NULL", t: tUnknownT}
	}
	switch v := c.GetVal().(type) {
	case *pg.A_Const_Ival:
		s := strconv.FormatInt(int64(v.Ival.GetIval()), 10)
		return dexpr{text: constText(s, tOfOID(types.OIDInt4)), t: tOfOID(types.OIDInt4), num: true}
	case *pg.A_Const_Fval:
		s := v.Fval.GetFval()
		if !strings.ContainsAny(s, ".eE") {
			if _, err := strconv.ParseInt(s, 10, 64); err == nil {
				return dexpr{text: constText(s, tOfOID(types.OIDInt8)), t: tOfOID(types.OIDInt8), num: true}
			}
		}
		return dexpr{text: constText(s, tOfOID(types.OIDNumeric)), t: tOfOID(types.OIDNumeric), num: true}
	case *pg.A_Const_Boolval:
		return dexpr{text: strconv.FormatBool(v.Boolval.GetBoolval()), t: tOfOID(types.OIDBool)}
	case *pg.A_Const_Sval:
		s := v.Sval.GetSval()
		return dexpr{text: constText(s, tUnknownT), t: tUnknownT, lit: &s}
	}
	return dexpr{text: "?", t: tUnknownT}
}

// sessionFuncTypes are the result and argument types of functions the
// session resolves (not in the builtins).
var sessionFuncTypes = map[string][]uint32{
	"nextval": {types.OIDInt8, types.OIDRegclass}, "currval": {types.OIDInt8, types.OIDRegclass},
	"setval": {types.OIDInt8, types.OIDRegclass, types.OIDInt8, types.OIDBool},
	"now":    {types.OIDTimestampTZ}, "version": {types.OIDText}, "current_database": {types.OIDName},
}

func (d *deparser) funcCall(n *pg.Node) dexpr {
	fc := n.GetFuncCall()
	if fc.GetAggStar() || fc.GetAggDistinct() || fc.GetOver() != nil || len(fc.GetAggOrder()) > 0 {
		return d.fallback(n)
	}
	parts := fc.GetFuncname()
	name := strings.ToLower(parts[len(parts)-1].GetString_().GetSval())
	args := make([]dexpr, len(fc.GetArgs()))
	argTypes := make([]types.T, len(args))
	for i, a := range fc.GetArgs() {
		args[i] = d.node(a)
		argTypes[i] = args[i].t
	}
	res := tUnknownT
	var params []types.T
	if sig, ok := sessionFuncTypes[name]; ok {
		res = tOfOID(sig[0])
		for _, p := range sig[1:] {
			params = append(params, tOfOID(p))
		}
	} else if f, err := builtins.LookupFunction(name, argTypes); err == nil {
		res, params = f.Result, f.Args
	}
	texts := make([]string, len(args))
	for i, a := range args {
		p := tUnknownT
		if i < len(params) {
			p = params[i]
		}
		texts[i] = d.as(a, p).text
	}
	fname := name
	if len(parts) > 1 {
		fname = parts[len(parts)-2].GetString_().GetSval() + "." + name
		if strings.HasPrefix(fname, "pg_catalog.") {
			fname = name
		}
	}
	return dexpr{text: quoteIdentIfNeeded(fname) + "(" + strings.Join(texts, ", ") + ")", t: res}
}

func (d *deparser) sqlValue(f *pg.SQLValueFunction) dexpr {
	names := map[pg.SQLValueFunctionOp]struct {
		kw  string
		oid uint32
	}{
		pg.SQLValueFunctionOp_SVFOP_CURRENT_DATE:        {"CURRENT_DATE", types.OIDDate},
		pg.SQLValueFunctionOp_SVFOP_CURRENT_TIME:        {"CURRENT_TIME", types.OIDTime},
		pg.SQLValueFunctionOp_SVFOP_CURRENT_TIME_N:      {"CURRENT_TIME", types.OIDTime},
		pg.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP:   {"CURRENT_TIMESTAMP", types.OIDTimestampTZ},
		pg.SQLValueFunctionOp_SVFOP_CURRENT_TIMESTAMP_N: {"CURRENT_TIMESTAMP", types.OIDTimestampTZ},
		pg.SQLValueFunctionOp_SVFOP_LOCALTIME:           {"LOCALTIME", types.OIDTime},
		pg.SQLValueFunctionOp_SVFOP_LOCALTIME_N:         {"LOCALTIME", types.OIDTime},
		pg.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP:      {"LOCALTIMESTAMP", types.OIDTimestamp},
		pg.SQLValueFunctionOp_SVFOP_LOCALTIMESTAMP_N:    {"LOCALTIMESTAMP", types.OIDTimestamp},
		pg.SQLValueFunctionOp_SVFOP_CURRENT_ROLE:        {"CURRENT_ROLE", types.OIDName},
		pg.SQLValueFunctionOp_SVFOP_CURRENT_USER:        {"CURRENT_USER", types.OIDName},
		pg.SQLValueFunctionOp_SVFOP_USER:                {"USER", types.OIDName},
		pg.SQLValueFunctionOp_SVFOP_SESSION_USER:        {"SESSION_USER", types.OIDName},
		pg.SQLValueFunctionOp_SVFOP_CURRENT_CATALOG:     {"CURRENT_CATALOG", types.OIDName},
		pg.SQLValueFunctionOp_SVFOP_CURRENT_SCHEMA:      {"CURRENT_SCHEMA", types.OIDName},
	}
	v, ok := names[f.GetOp()]
	if !ok {
		return dexpr{text: "?", t: tUnknownT}
	}
	text := v.kw
	if f.GetTypmod() >= 0 && strings.HasSuffix(f.GetOp().String(), "_N") {
		text += "(" + strconv.Itoa(int(f.GetTypmod())) + ")"
	}
	return dexpr{text: text, t: tOfOID(v.oid)}
}

func (d *deparser) aExpr(n *pg.Node) dexpr {
	a := n.GetAExpr()
	name := ""
	if len(a.GetName()) > 0 {
		name = a.GetName()[len(a.GetName())-1].GetString_().GetSval()
	}
	switch a.GetKind() {
	case pg.A_Expr_Kind_AEXPR_OP:
		if a.GetLexpr() == nil {
			r := d.node(a.GetRexpr())
			if r.kind != kSimple && !d.full {
				r.text = "(" + r.text + ")"
			}
			return dexpr{text: d.wrap(name + " " + r.text), t: r.t, kind: kOp, op: name}
		}
		return d.binary(name, d.node(a.GetLexpr()), d.node(a.GetRexpr()))
	case pg.A_Expr_Kind_AEXPR_LIKE, pg.A_Expr_Kind_AEXPR_ILIKE:
		op := map[string]string{"~~": "~~", "!~~": "!~~", "~~*": "~~*", "!~~*": "!~~*"}[name]
		if op == "" {
			return d.fallback(n)
		}
		return d.binary(op, d.node(a.GetLexpr()), d.node(a.GetRexpr()))
	case pg.A_Expr_Kind_AEXPR_BETWEEN, pg.A_Expr_Kind_AEXPR_NOT_BETWEEN:
		items := a.GetRexpr().GetList().GetItems()
		if len(items) != 2 {
			return d.fallback(n)
		}
		l := d.node(a.GetLexpr())
		if a.GetKind() == pg.A_Expr_Kind_AEXPR_BETWEEN {
			ge, le := d.binary(">=", l, d.node(items[0])), d.binary("<=", l, d.node(items[1]))
			return dexpr{text: d.wrap(ge.text + " AND " + le.text), t: tOfOID(types.OIDBool), kind: kBool, op: "AND"}
		}
		lt, gt := d.binary("<", l, d.node(items[0])), d.binary(">", l, d.node(items[1]))
		return dexpr{text: d.wrap(lt.text + " OR " + gt.text), t: tOfOID(types.OIDBool), kind: kBool, op: "OR"}
	case pg.A_Expr_Kind_AEXPR_IN:
		l := d.node(a.GetLexpr())
		items := a.GetRexpr().GetList().GetItems()
		var elems []string
		et := l.t
		for _, it := range items {
			e := d.node(it)
			if et.OID == types.OIDUnknown {
				et = e.t
			}
			elems = append(elems, d.as(e, et).text)
		}
		op, quant := "=", "ANY"
		if name == "<>" {
			op, quant = "<>", "ALL"
		}
		return dexpr{text: d.wrap(l.text + " " + op + " " + quant + " (ARRAY[" + strings.Join(elems, ", ") + "])"), t: tOfOID(types.OIDBool), kind: kOp, op: op}
	}
	return d.fallback(n)
}

// binary prints l op r: the operator's argument types decide how literals
// print and which implicit casts show.
func (d *deparser) binary(op string, l, r dexpr) dexpr {
	if op == "!=" {
		op = "<>"
	}
	lt, rt := l.t, r.t
	res := tUnknownT
	if o, err := builtins.LookupOperator(op, lt, rt); err == nil {
		res = o.Result
		l, r = d.as(l, o.Left), d.as(r, o.Right)
	} else {
		l, r = d.as(l, tUnknownT), d.as(r, tUnknownT)
	}
	lt2, rt2 := l.text, r.text
	if d.full {
		return dexpr{text: "(" + lt2 + " " + op + " " + rt2 + ")", t: res, kind: kOp, op: op}
	}
	if l.kind != kSimple && !(l.kind == kOp && opNests(l.op, op, true)) {
		lt2 = "(" + lt2 + ")"
	}
	if r.kind != kSimple && !(r.kind == kOp && opNests(r.op, op, false)) {
		rt2 = "(" + rt2 + ")"
	}
	return dexpr{text: lt2 + " " + op + " " + rt2, t: res, kind: kOp, op: op}
}

// opNests reports whether an operator expression needs no parentheses as
// an argument of parent (ruleutils' rule for + - * / %).
func opNests(child, parent string, left bool) bool {
	lo := func(o string) bool { return o == "+" || o == "-" }
	hi := func(o string) bool { return o == "*" || o == "/" || o == "%" }
	if !(lo(child) || hi(child)) || !(lo(parent) || hi(parent)) {
		return false
	}
	if hi(child) && lo(parent) {
		return true
	}
	if lo(child) && hi(parent) {
		return false
	}
	return left
}

// checkName names a CHECK constraint as PostgreSQL does: table_column_check
// when the expression uses one column, else table_check, with a number
// appended when the name is taken.
func checkName(table string, expr *pg.Node, taken []catalog.Check) string {
	cols := map[string]bool{}
	var only string
	plan.WalkExpr(expr, func(n *pg.Node) bool {
		if cr := n.GetColumnRef(); cr != nil {
			f := cr.GetFields()
			if name := f[len(f)-1].GetString_().GetSval(); name != "" && !cols[name] {
				cols[name], only = true, name
			}
		}
		return true
	})
	if len(cols) != 1 {
		only = ""
	}
	used := map[string]bool{}
	for _, c := range taken {
		used[c.Name] = true
	}
	name := objectName(table, only, "check")
	for i := 1; used[name]; i++ {
		name = objectName(table, only, "check"+strconv.Itoa(i))
	}
	return name
}

// columnDefault is a column's default as pg_get_expr prints it; "" when it
// has none (DEFAULT NULL is not stored in PostgreSQL either).
func columnDefault(t *catalog.Table, c catalog.Column) string {
	if c.Default == "" {
		return ""
	}
	if d := deparseStored(t, c.Default, c.Type); d != "NULL" {
		return d
	}
	return ""
}
