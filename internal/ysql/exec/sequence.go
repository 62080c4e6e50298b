package exec

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Sequence values live in one system table, a row per sequence OID holding
// the last value handed out. Each node takes values in blocks of the
// sequence's CACHE size with one transaction and hands them out from memory,
// as YugabyteDB does; sequences are not transactional (as in PostgreSQL).

const (
	seqNamespace = "system"
	seqTable     = "ysql_sequences"
)

type seqBlock struct{ next, last int64 }

// sequences is the node's share of sequence values.
type sequences struct {
	mu     sync.Mutex
	blocks map[uint32]*seqBlock
	table  *client.Table
}

func (e *Engine) seqTable(ctx context.Context) (*client.Table, error) {
	e.seqs.mu.Lock()
	defer e.seqs.mu.Unlock()
	return e.systemTable(ctx, &e.seqs.table, seqTable, []*masterpb.ColumnSchema{
		{Id: 1, Name: "oid", Type: "int64", IsHashKey: true},
		{Id: 2, Name: "last", Type: "int64", Nullable: true},
	})
}

// systemTable opens the YSQL system table name (namespace "system", one
// tablet), creating it with columns on first use; *cached keeps it. The
// caller serializes the calls for cached.
func (e *Engine) systemTable(ctx context.Context, cached **client.Table, name string, columns []*masterpb.ColumnSchema) (*client.Table, error) {
	if *cached != nil {
		return *cached, nil
	}
	cl := e.cfg.Client
	t, err := cl.OpenTable(ctx, seqNamespace, name)
	if err != nil {
		_, err = cl.CreateTable(ctx, &masterpb.CreateTableRequest{Namespace: seqNamespace, Name: name, IfNotExists: true,
			Schema:       &masterpb.Schema{Columns: columns},
			Partitioning: &masterpb.Partitioning{Kind: masterpb.Partitioning_HASH, NumTablets: 1}})
		if err != nil {
			return nil, err
		}
		if t, err = cl.OpenTable(ctx, seqNamespace, name); err != nil {
			return nil, err
		}
	}
	*cached = t
	return t, nil
}

// nextval hands out the sequence's next value.
func (s *Session) nextval(ctx context.Context, q *catalog.Sequence) (int64, error) {
	e := s.e
	e.seqs.mu.Lock()
	if b := e.seqs.blocks[q.OID]; b != nil && (q.Increment > 0 && b.next <= b.last || q.Increment < 0 && b.next >= b.last) {
		v := b.next
		b.next += q.Increment
		e.seqs.mu.Unlock()
		return v, nil
	}
	e.seqs.mu.Unlock()
	t, err := e.seqTable(ctx)
	if err != nil {
		return 0, err
	}
	var first, last int64
	err = e.cfg.Client.RunTxn(ctx, client.TxnOptions{Isolation: client.Snapshot}, func(ctx context.Context, tx *client.Txn) error {
		row, found, err := tx.GetForUpdate(ctx, t, client.Row{"oid": docdb.Int64(int64(q.OID))}, client.ForUpdate, client.WaitOnConflict)
		if err != nil {
			return err
		}
		cache := max(q.Cache, 1)
		if !found || row["last"].IsNull() {
			first = q.Start
		} else {
			prev := row["last"].Int
			if (q.Increment > 0 && prev > math.MaxInt64-q.Increment) || (q.Increment < 0 && prev < math.MinInt64-q.Increment) {
				first = q.Max + 1
			} else {
				first = prev + q.Increment
			}
		}
		if q.Increment > 0 && first > q.Max || q.Increment < 0 && first < q.Min {
			if !q.Cycle {
				bound := q.Max
				if q.Increment < 0 {
					bound = q.Min
				}
				return pgerror.New(pgerror.CodeSequenceGeneratorLimitExceeded, "nextval: reached %s value of sequence %q (%d)",
					map[bool]string{true: "maximum", false: "minimum"}[q.Increment > 0], q.Name, bound)
			}
			first = q.Min
			if q.Increment < 0 {
				first = q.Max
			}
		}
		last = first + q.Increment*(cache-1)
		if q.Increment > 0 && (last > q.Max || last < first) {
			last = q.Max
		}
		if q.Increment < 0 && (last < q.Min || last > first) {
			last = q.Min
		}
		return tx.Put(ctx, t, client.Row{"oid": docdb.Int64(int64(q.OID)), "last": docdb.Int64(last)})
	})
	if err != nil {
		return 0, err
	}
	e.seqs.mu.Lock()
	if e.seqs.blocks == nil {
		e.seqs.blocks = map[uint32]*seqBlock{}
	}
	e.seqs.blocks[q.OID] = &seqBlock{next: first + q.Increment, last: last}
	e.seqs.mu.Unlock()
	return first, nil
}

// setval sets the sequence's last value; the next nextval on any node
// continues after it (this node's block is dropped; other nodes keep
// theirs until used up, as with YugabyteDB's per-node cache).
func (s *Session) setval(ctx context.Context, q *catalog.Sequence, v int64, called bool) error {
	if v < q.Min || v > q.Max {
		return pgerror.New(pgerror.CodeNumericValueOutOfRange, "setval: value %d is out of bounds for sequence %q (%d..%d)", v, q.Name, q.Min, q.Max)
	}
	t, err := s.e.seqTable(ctx)
	if err != nil {
		return err
	}
	last := v
	if !called {
		last = v - q.Increment
	}
	err = s.e.cfg.Client.RunTxn(ctx, client.TxnOptions{Isolation: client.Snapshot}, func(ctx context.Context, tx *client.Txn) error {
		return tx.Put(ctx, t, client.Row{"oid": docdb.Int64(int64(q.OID)), "last": docdb.Int64(last)})
	})
	if err == nil {
		s.e.seqs.mu.Lock()
		delete(s.e.seqs.blocks, q.OID)
		s.e.seqs.mu.Unlock()
	}
	return err
}

// lookupSequence resolves a sequence name as nextval('name') gives it.
func (s *Session) lookupSequence(ctx context.Context, name string) (*catalog.Sequence, error) {
	snap, err := s.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	// As regclassin: nextval('serialTest_f2_seq') is serialtest_f2_seq
	// (it was not found), nextval('"Seq"') keeps the case.
	schema, rel, err := sequenceName(name)
	if err != nil {
		return nil, err
	}
	if schema != "" {
		name = schema + "." + rel // errors name it parsed, as PostgreSQL
	} else {
		name = rel
	}
	find := func(snap *catalog.Snapshot) (*catalog.Sequence, bool) {
		return lookup(s, schema, func(sc string) (*catalog.Sequence, bool) { return snap.Sequence(s.db, sc, rel) })
	}
	if q, ok := find(snap); ok {
		return q, nil
	}
	if snap, err = s.e.cfg.Cache.Fresh(ctx); err == nil {
		if q, ok := find(snap); ok {
			return q, nil
		}
	}
	return nil, pgerror.New(pgerror.CodeUndefinedTable, "relation %q does not exist", name)
}

// sequenceName reads a sequence function's name argument: [schema.]name.
func sequenceName(arg string) (schema, name string, err error) {
	parts, err := splitQualified(arg)
	if err != nil {
		return "", "", err
	}
	switch len(parts) {
	case 1:
		return "", parts[0], nil
	case 2:
		return parts[0], parts[1], nil
	}
	return "", "", pgerror.New(pgerror.CodeUndefinedTable, "relation %q does not exist", arg)
}

// seqFunc builds nextval / currval / setval calls.
func (s *Session) seqFunc(name string, args []plan.Expr) (plan.Expr, bool, error) {
	tInt8 := types.T{OID: types.OIDInt8, Mod: -1}
	switch {
	case name == "nextval" && len(args) == 1, name == "currval" && len(args) == 1,
		name == "setval" && (len(args) == 2 || len(args) == 3):
	case name == "lastval" && len(args) == 0:
		return &plan.FuncExpr{Name: name, T: tInt8, Volatile: true, Fn: func(*plan.EvalContext, []types.Datum) (types.Datum, error) {
			// The value of the sequence nextval used last, as setval
			// left it; none when it is dropped since (it was the value).
			if s.lastSeq == 0 {
				return types.NullDatum, pgerror.New(pgerror.CodeObjectNotInPrerequisiteState, "lastval is not yet defined in this session")
			}
			if _, err := s.sequenceByOID(context.Background(), s.lastSeq); err != nil {
				return types.NullDatum, pgerror.New(pgerror.CodeObjectNotInPrerequisiteState, "lastval is not yet defined in this session")
			}
			return types.DInt(s.currvals[s.lastSeq]), nil
		}}, true, nil
	default:
		return nil, false, nil
	}
	return &plan.FuncExpr{Name: name, Args: args, T: tInt8, Strict: true, Volatile: true, Fn: func(ec *plan.EvalContext, vals []types.Datum) (types.Datum, error) {
		ctx := context.Background()
		var q *catalog.Sequence
		var err error
		if at := args[0].Type().OID; at == types.OIDOID || types.IsReg(at) {
			q, err = s.sequenceByOID(ctx, uint32(vals[0].I))
		} else {
			q, err = s.lookupSequence(ctx, vals[0].S)
		}
		if err != nil {
			return types.NullDatum, err
		}
		if name != "currval" {
			// A sequence change is a write (it was allowed).
			if err := s.readOnlyErr(name + "()"); err != nil {
				return types.NullDatum, err
			}
		}
		switch name {
		case "nextval":
			v, err := s.nextval(ctx, q)
			if err != nil {
				return types.NullDatum, err
			}
			if s.currvals == nil {
				s.currvals = map[uint32]int64{}
			}
			s.currvals[q.OID], s.lastSeq = v, q.OID
			return types.DInt(v), nil
		case "currval":
			v, ok := s.currvals[q.OID]
			if !ok {
				return types.NullDatum, pgerror.New(pgerror.CodeObjectNotInPrerequisiteState, "currval of sequence %q is not yet defined in this session", q.Name)
			}
			return types.DInt(v), nil
		}
		called := len(vals) < 3 || vals[2].Bool()
		if err := s.setval(ctx, q, vals[1].I, called); err != nil {
			return types.NullDatum, err
		}
		if called { // currval and lastval say it, as after a nextval
			if s.currvals == nil {
				s.currvals = map[uint32]int64{}
			}
			s.currvals[q.OID] = vals[1].I
		}
		return vals[1], nil
	}}, true, nil
}

// seqOptions applies CREATE SEQUENCE options (PostgreSQL's defaults for
// bigint sequences).
func seqOptions(q *catalog.Sequence, opts []*pg.Node, typ types.T) error {
	q.Increment, q.Cache = 1, 1
	var set seqSet
	for _, o := range opts {
		if err := set.apply(q, o.GetDefElem(), false); err != nil {
			return err
		}
	}
	set.bounds(q, typ, true)
	q.Start = q.Min
	if q.Increment < 0 {
		q.Start = q.Max
	}
	if set.startSet {
		q.Start = set.start
	}
	return checkSeqBounds(q)
}

// seqSet is what the options of a CREATE or ALTER SEQUENCE said.
type seqSet struct {
	min, max, restart                      *int64
	start                                  int64
	minSet, maxSet, startSet, restartGiven bool
	noMin, noMax                           bool
}

// apply reads one option into q (increment, cache, cycle) or s (bounds,
// start, restart: ALTER's only).
func (s *seqSet) apply(q *catalog.Sequence, de *pg.DefElem, alter bool) error {
	v, _ := setValue([]*pg.Node{de.GetArg()})
	var n int64
	if de.GetArg() != nil {
		if _, err := fmt.Sscan(v, &n); err != nil && de.GetDefname() != "cycle" && de.GetDefname() != "as" && de.GetDefname() != "owned_by" {
			return pgerror.New(pgerror.CodeSyntaxError, "invalid value for %s: %q", de.GetDefname(), v)
		}
	}
	switch de.GetDefname() {
	case "increment":
		if n == 0 {
			return pgerror.New(pgerror.CodeInvalidParameterValue, "INCREMENT must not be zero")
		}
		q.Increment = n
	case "minvalue":
		s.minSet, s.noMin = true, de.GetArg() == nil
		s.min = &n
	case "maxvalue":
		s.maxSet, s.noMax = true, de.GetArg() == nil
		s.max = &n
	case "start":
		s.start, s.startSet = n, true
	case "restart":
		if !alter {
			return pgerror.Unsupported("sequence option restart in CREATE SEQUENCE")
		}
		s.restartGiven = true
		if de.GetArg() != nil {
			s.restart = &n
		}
	case "cache":
		if n < 1 {
			return pgerror.New(pgerror.CodeInvalidParameterValue, "CACHE (%d) must be greater than zero", n)
		}
		q.Cache = n
	case "cycle":
		q.Cycle = de.GetArg() == nil || isOn(v) || v == "true"
	case "as", "owned_by", "sequence_name":
	default:
		return pgerror.Unsupported("sequence option " + de.GetDefname())
	}
	return nil
}

// bounds sets q's MINVALUE and MAXVALUE: as given, else (at CREATE, or for
// NO MINVALUE / NO MAXVALUE) the type's and the increment's defaults.
func (s *seqSet) bounds(q *catalog.Sequence, typ types.T, create bool) {
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	switch typ.OID {
	case types.OIDInt4:
		lo, hi = math.MinInt32, math.MaxInt32
	case types.OIDInt2:
		lo, hi = math.MinInt16, math.MaxInt16
	}
	defMin, defMax := int64(1), hi
	if q.Increment < 0 {
		defMin, defMax = lo, -1
	}
	switch {
	case s.minSet && !s.noMin:
		q.Min = *s.min
	case create || s.noMin:
		q.Min = defMin
	}
	switch {
	case s.maxSet && !s.noMax:
		q.Max = *s.max
	case create || s.noMax:
		q.Max = defMax
	}
}

// checkSeqBounds fails a sequence whose bounds or start do not fit, with
// PostgreSQL's messages.
func checkSeqBounds(q *catalog.Sequence) error {
	if q.Min >= q.Max {
		return pgerror.New(pgerror.CodeInvalidParameterValue, "MINVALUE (%d) must be less than MAXVALUE (%d)", q.Min, q.Max)
	}
	if q.Start < q.Min {
		return pgerror.New(pgerror.CodeInvalidParameterValue, "START value (%d) cannot be less than MINVALUE (%d)", q.Start, q.Min)
	}
	if q.Start > q.Max {
		return pgerror.New(pgerror.CodeInvalidParameterValue, "START value (%d) cannot be greater than MAXVALUE (%d)", q.Start, q.Max)
	}
	return nil
}

// alterSequence runs ALTER SEQUENCE: the options given change the
// definition, the others stay; RESTART [WITH n] makes the next nextval
// give n (the start value without WITH), as setval(n, false) does.
func (s *Session) alterSequence(ctx context.Context, as *pg.AlterSeqStmt) error {
	snap, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	rv := as.GetSequence()
	q, ok := lookup(s, rv.GetSchemaname(), func(sc string) (*catalog.Sequence, bool) { return snap.Sequence(s.db, sc, rv.GetRelname()) })
	if !ok {
		if as.GetMissingOk() {
			s.notice("NOTICE", "00000", "relation %q does not exist, skipping", rv.GetRelname())
			return nil
		}
		return pgerror.New(pgerror.CodeUndefinedTable, "relation %q does not exist", rv.GetRelname())
	}
	next := *q
	var set seqSet
	for _, o := range as.GetOptions() {
		if err := set.apply(&next, o.GetDefElem(), true); err != nil {
			return err
		}
	}
	set.bounds(&next, types.T{OID: types.OIDInt8, Mod: -1}, false)
	if set.startSet {
		next.Start = set.start
	}
	if err := checkSeqBounds(&next); err != nil {
		return err
	}
	restart := next.Start
	if set.restart != nil {
		restart = *set.restart
	}
	if set.restartGiven && (restart < next.Min || restart > next.Max) {
		what, bound := "less than MINVALUE", next.Min
		if restart > next.Max {
			what, bound = "greater than MAXVALUE", next.Max
		}
		return pgerror.New(pgerror.CodeInvalidParameterValue, "RESTART value (%d) cannot be %s (%d)", restart, what, bound)
	}
	if err := s.e.cfg.Cache.PutSequence(ctx, &next, false); err != nil {
		return err
	}
	s.e.seqs.mu.Lock()
	delete(s.e.seqs.blocks, q.OID) // handed out under the old definition
	s.e.seqs.mu.Unlock()
	if set.restartGiven {
		return s.setval(ctx, &next, restart, false)
	}
	return nil
}

func (s *Session) createSequence(ctx context.Context, cs *pg.CreateSeqStmt) error {
	snap, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	schema, err := s.schemaFor(snap, cs.GetSequence())
	if err != nil {
		return err
	}
	name := cs.GetSequence().GetRelname()
	if _, exists := snap.Sequence(s.db, schema, name); exists {
		if cs.GetIfNotExists() {
			s.notice("NOTICE", "42P07", "relation %q already exists, skipping", name)
			return nil
		}
		return pgerror.New(pgerror.CodeDuplicateTable, "relation %q already exists", name)
	}
	q := &catalog.Sequence{Database: s.db, Schema: schema, Name: name}
	if err := seqOptions(q, cs.GetOptions(), types.T{OID: types.OIDInt8, Mod: -1}); err != nil {
		return err
	}
	err = s.e.cfg.Cache.PutSequence(ctx, q, true)
	if client.IsCode(err, masterpb.MasterError_ALREADY_EXISTS) {
		return pgerror.New(pgerror.CodeDuplicateTable, "relation %q already exists", name)
	}
	return err
}

// serialSequence creates the sequence behind a SERIAL column and returns
// the column's default.
func (s *Session) serialSequence(ctx context.Context, t *catalog.Table, col string, typ types.T) (string, error) {
	q, err := s.ownedSequence(ctx, t, col)
	if err != nil {
		return "", err
	}
	if err := seqOptions(q, nil, typ); err != nil {
		return "", err
	}
	s.pendingSeqs = append(s.pendingSeqs, q)
	return fmt.Sprintf("nextval('%s')", q.Name), nil
}

// ownedSequence is the definition of a new SERIAL or identity column's
// sequence: named t_col_seq, or with a number after seq when a relation
// has that name (PostgreSQL's choice: a sequence made first by hand made
// the table's creation fail with XX000).
func (s *Session) ownedSequence(ctx context.Context, t *catalog.Table, col string) (*catalog.Sequence, error) {
	snap, err := s.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	name := s.chooseRelationName(snap, t.Schema, t.Name, col, "seq")
	return &catalog.Sequence{Database: t.Database, Schema: t.Schema, Name: name, OwnedBy: t.Name + "." + col}, nil
}

// renameOwnedSequences keeps the owner of t's SERIAL and identity
// sequences ("table.column") in step with a rename of the table or of the
// column: pg_get_serial_sequence and DROP TABLE find them by it (after a
// rename, DROP TABLE left the sequence behind).
func (s *Session) renameOwnedSequences(ctx context.Context, snap *catalog.Snapshot, t *catalog.Table, rs *pg.RenameStmt) error {
	for _, q := range snap.Sequences[t.Database] {
		tbl, col, ok := strings.Cut(q.OwnedBy, ".")
		if q.Schema != t.Schema || !ok || tbl != t.Name {
			continue
		}
		next := *q
		switch rs.GetRenameType() {
		case pg.ObjectType_OBJECT_TABLE:
			next.OwnedBy = rs.GetNewname() + "." + col
		case pg.ObjectType_OBJECT_COLUMN:
			if col != rs.GetSubname() {
				continue
			}
			next.OwnedBy = t.Name + "." + rs.GetNewname()
		default:
			return nil
		}
		if err := s.e.cfg.Cache.PutSequence(ctx, &next, false); err != nil {
			return err
		}
	}
	return nil
}

// seqUser is a column whose default calls a sequence's functions.
type seqUser struct {
	t   *catalog.Table
	col int
}

// sequenceUsers are the columns whose defaults call nextval, currval or
// setval of q (by its name, as the default keeps it).
func (s *Session) sequenceUsers(snap *catalog.Snapshot, q *catalog.Sequence) []seqUser {
	var out []seqUser
	for _, t := range snap.Tables[s.db] {
		for i, c := range t.Columns {
			if c.Default == "" {
				continue
			}
			n, err := storedExpr(c.Default)
			if err != nil {
				continue
			}
			uses := false
			forSequenceArgs(n, func(arg string) {
				schema, name, err := sequenceName(arg)
				if err != nil {
					return
				}
				got, ok := lookup(s, schema, func(sc string) (*catalog.Sequence, bool) { return snap.Sequence(s.db, sc, name) })
				uses = uses || ok && got.OID == q.OID
			})
			if uses {
				out = append(out, seqUser{t: t, col: i})
			}
		}
	}
	return out
}

// forSequenceArgs calls f with the name of every nextval, currval or
// setval call in n whose argument is a regclass literal (nextval('s'),
// nextval('s'::regclass)): PostgreSQL resolves those when the expression
// is defined; a text one ('s'::text) is looked up at each call.
func forSequenceArgs(n *pg.Node, f func(name string)) {
	visit := func(x *pg.Node) (*pg.Node, bool) {
		fc := x.GetFuncCall()
		if fc == nil || len(fc.GetArgs()) == 0 {
			return nil, true
		}
		switch strings.ToLower(fc.GetFuncname()[len(fc.GetFuncname())-1].GetString_().GetSval()) {
		case "nextval", "currval", "setval":
		default:
			return nil, true
		}
		arg := fc.GetArgs()[0]
		if tc := arg.GetTypeCast(); tc != nil {
			tn := tc.GetTypeName().GetNames()
			if !strings.EqualFold(tn[len(tn)-1].GetString_().GetSval(), "regclass") {
				return nil, true
			}
			arg = tc.GetArg()
		}
		if lit := arg.GetAConst().GetSval(); lit != nil {
			f(lit.GetSval())
		}
		return nil, true
	}
	visit(n)
	plan.RewriteNodes(n.ProtoReflect(), visit)
}

// dropSequenceUsers is what DROP SEQUENCE does to the columns whose
// defaults call the sequence: 2BP01 (an identity column's always), or,
// with CASCADE, their defaults dropped, as PostgreSQL's dependencies do.
// The sequence was dropped and the defaults failed at every insert after.
func (s *Session) dropSequenceUsers(ctx context.Context, q *catalog.Sequence, cascade bool) error {
	// Fresh: an earlier sequence of the statement may have changed a table.
	snap, err := s.e.cfg.Cache.Fresh(ctx)
	if err != nil {
		return err
	}
	users := s.sequenceUsers(snap, q)
	var details []string
	for _, u := range users {
		c := u.t.Columns[u.col]
		if c.Identity != "" {
			return pgerror.New(pgerror.CodeDependentObjectsStillExist, "cannot drop sequence %s because column %s of table %s requires it", q.Name, c.Name, u.t.Name).
				WithHint("You can drop column %s of table %s instead.", c.Name, u.t.Name)
		}
		details = append(details, fmt.Sprintf("default value for column %s of table %s depends on sequence %s", c.Name, u.t.Name, q.Name))
	}
	if len(users) == 0 {
		return nil
	}
	if !cascade {
		return pgerror.New(pgerror.CodeDependentObjectsStillExist, "cannot drop sequence %s because other objects depend on it", q.Name).
			WithDetail("%s", strings.Join(details, "\n")).WithHint("Use DROP ... CASCADE to drop the dependent objects too.")
	}
	byTable := map[*catalog.Table]*catalog.Table{}
	var order []*catalog.Table
	for _, u := range users {
		next, ok := byTable[u.t]
		if !ok {
			next = cloneTable(u.t)
			byTable[u.t] = next
			order = append(order, u.t)
		}
		next.Columns[u.col].Default = ""
		s.notice("NOTICE", "00000", "drop cascades to default value for column %s of table %s", u.t.Columns[u.col].Name, u.t.Name)
	}
	for _, t := range order {
		if err := s.e.cfg.Cache.AlterTable(ctx, t, byTable[t]); err != nil {
			return err
		}
	}
	return nil
}

// dropOwnedSequences drops the sequences of a table's SERIAL columns.
func (s *Session) dropOwnedSequences(ctx context.Context, snap *catalog.Snapshot, t *catalog.Table) error {
	for _, q := range snap.Sequences[t.Database] {
		if q.Schema == t.Schema && strings.HasPrefix(q.OwnedBy, t.Name+".") {
			if err := s.e.cfg.Cache.DropSequence(ctx, q); err != nil {
				return err
			}
		}
	}
	return nil
}

// sequenceByOID finds a sequence named by its OID (nextval('s'::regclass)).
func (s *Session) sequenceByOID(ctx context.Context, oid uint32) (*catalog.Sequence, error) {
	snap, err := s.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	for _, q := range snap.Sequences[s.db] {
		if q.OID == oid {
			return q, nil
		}
	}
	return nil, pgerror.New(pgerror.CodeUndefinedTable, "could not open relation with OID %d", oid)
}
