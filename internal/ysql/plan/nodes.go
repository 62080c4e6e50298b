package plan

import (
	"sort"

	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Column describes one output column of a node.
type Column struct {
	Name     string
	T        types.T
	Table    string // the FROM item's name or alias, for qualified references
	TableOID uint32
	AttNum   int16
	Hidden   bool
}

// Node is a plan node: it produces rows of Columns().
type Node interface {
	Columns() []Column
}

// AccessKind is how a Scan reaches a table's rows.
type AccessKind int

// Access kinds, cheapest first.
const (
	// PointGet reads one row by its full primary key.
	PointGet AccessKind = iota + 1
	// KeyRange reads the rows whose leading key columns equal Eq and
	// whose next range column lies within Lo/Hi.
	KeyRange
	// FullScan reads every tablet.
	FullScan
)

func (k AccessKind) String() string {
	return [...]string{"", "Point Get", "Key Range Scan", "Seq Scan"}[k]
}

// Access is a Scan's access path.
type Access struct {
	Kind AccessKind
	// Eq are the values of the leading key columns in key order: all of
	// them for PointGet, all hash columns and some range columns for
	// KeyRange.
	Eq []Expr
	// Lo and Hi bound the next range key column (nil: unbounded).
	Lo, Hi         Expr
	LoIncl, HiIncl bool
	// Index, when set, is the secondary index read (KeyRange only): Eq,
	// Lo and Hi address its key columns, and the base rows are then read
	// by their primary keys in batches, unless IndexOnly (the index row
	// holds every column the query needs).
	Index     *catalog.Index
	IndexOnly bool
	// Rest, for PointGet, is what of the scan's filter the key does not
	// imply (nil: nothing): the key equalities hold for the row a point
	// get finds, as they do for the single-row writes (onePointRow), so its
	// row is checked against the rest only.
	Rest Expr
}

// LockStrength is the row lock a SELECT ... FOR ... takes.
type LockStrength int

// Lock strengths, weakest first: PostgreSQL's four row locks.
const (
	NoLock LockStrength = iota
	LockKeyShare
	LockShare
	LockNoKeyUpdate
	LockUpdate
)

// String is the locking clause, as EXPLAIN shows it.
func (l LockStrength) String() string {
	return [...]string{"", "FOR KEY SHARE", "FOR SHARE", "FOR NO KEY UPDATE", "FOR UPDATE"}[l]
}

// WaitPolicy is NOWAIT / SKIP LOCKED.
type WaitPolicy int

// Wait policies.
const (
	Wait WaitPolicy = iota
	NoWait
	SkipLocked
)

// Scan reads a table: its rows have every column of the table in catalog
// order (hidden ones included).
type Scan struct {
	Table  *catalog.Table
	Alias  string
	Access Access
	// Filter is the rest of the WHERE clause, over the table row.
	Filter Expr
	Lock   LockStrength
	Wait   WaitPolicy
	// ForWrite: the locked rows are the source of an UPDATE or DELETE,
	// whose writes follow.
	ForWrite bool
	// Reverse asks the rows in descending key order (ORDER BY key DESC).
	Reverse bool
	// LimitHint, when set, bounds the rows the consumer needs: a LIMIT
	// (plus its OFFSET, OffsetHint) with nothing in between that filters;
	// constants or parameters, evaluated when the scan runs.
	LimitHint, OffsetHint Expr
	// Projected: the query reads only the columns in Needed (table column
	// indexes) of the scan's rows; the others may be left NULL.
	Projected bool
	Needed    []int
	cols      []Column
}

// Columns of a scan: the table's columns.
func (s *Scan) Columns() []Column { return s.cols }

// VirtualTable is a catalog relation generated in memory (pg_catalog,
// information_schema).
type VirtualTable struct {
	Schema, Name string
	OID          uint32
	Cols         []Column
	Rows         func() ([]Row, error)
}

// VirtualScan reads a virtual table.
type VirtualScan struct {
	Table  *VirtualTable
	Alias  string
	Filter Expr
	cols   []Column
}

// Columns of the virtual table.
func (v *VirtualScan) Columns() []Column { return v.cols }

// Values is a VALUES list (or the single empty row of a SELECT without
// FROM).
type Values struct {
	Rows [][]Expr
	cols []Column
}

// Columns of the VALUES list.
func (v *Values) Columns() []Column { return v.cols }

// Filter keeps the rows for which Cond is true.
type Filter struct {
	Input Node
	Cond  Expr
}

// Columns are the input's.
func (f *Filter) Columns() []Column { return f.Input.Columns() }

// Project computes Exprs over each input row.
type Project struct {
	Input Node
	Exprs []Expr
	cols  []Column
	// fromOrder: the projection puts a reordered FROM list's columns
	// back in the written order (orderFromList).
	fromOrder bool
}

// Columns of the projection.
func (p *Project) Columns() []Column { return p.cols }

// JoinKind is the kind of a join.
type JoinKind int

// Join kinds.
const (
	InnerJoin JoinKind = iota
	LeftJoin
	RightJoin
	FullJoin
)

// Join joins Left and Right; its rows are the left columns then the right
// ones. EqLeft/EqRight, when set, are equi-join keys (hash join); Cond is
// the whole ON condition. Lookup, when set, reads the right side (a Scan)
// by key for each batch of left rows (lookup.go).
type Join struct {
	Kind            JoinKind
	Left, Right     Node
	Cond            Expr
	EqLeft, EqRight []Expr
	Lookup          *Lookup
	// Swapped, when set, runs this inner join as a lookup from its right
	// side into its left (plan/lookup.go): the same join with the sides
	// exchanged and no condition; its rows are put back in this join's
	// column order and Cond is applied to them.
	Swapped *Join
	cols    []Column
}

// Columns of the join.
func (j *Join) Columns() []Column { return j.cols }

// AggCall is one aggregate of an Agg node.
type AggCall struct {
	Name     string
	Arg      Expr // nil for count(*)
	Arg2     Expr // string_agg's delimiter
	Distinct bool
	Filter   Expr
	// Order is ORDER BY inside the call (string_agg(v, ',' ORDER BY k)):
	// the executor appends these keys' values to the arguments it adds,
	// and New's aggregator sorts the rows by them before aggregating.
	Order []SortKey
	T     types.T
	New   func() Aggregator
}

// orderedAggregator holds a group's rows (arguments, then order keys) and
// aggregates them sorted at Result.
type orderedAggregator struct {
	inner Aggregator
	order []SortKey
	nargs int
	rows  [][]types.Datum
}

func (o *orderedAggregator) Add(args []types.Datum) error {
	o.rows = append(o.rows, append([]types.Datum(nil), args...))
	return nil
}

func (o *orderedAggregator) Result() (types.Datum, error) {
	sort.SliceStable(o.rows, func(i, j int) bool {
		a, b := o.rows[i][o.nargs:], o.rows[j][o.nargs:]
		for k, key := range o.order {
			if c := key.compare(a[k], b[k]); c != 0 {
				return c < 0
			}
		}
		return false
	})
	for _, r := range o.rows {
		if err := o.inner.Add(r[:o.nargs]); err != nil {
			return types.NullDatum, err
		}
	}
	o.rows = nil
	return o.inner.Result()
}

// Aggregator accumulates one group's values.
type Aggregator interface {
	Add(args []types.Datum) error
	Result() (types.Datum, error)
}

// Agg groups its input: its rows are the group values then the aggregate
// results.
type Agg struct {
	Input  Node
	Groups []Expr
	Aggs   []AggCall
	cols   []Column
}

// Columns of the aggregation.
func (a *Agg) Columns() []Column { return a.cols }

// SortKey is one ORDER BY key.
type SortKey struct {
	E          Expr
	Desc       bool
	NullsFirst bool
}

// compare orders two values of the key as it says (direction, NULLs).
func (k SortKey) compare(x, y types.Datum) int {
	switch {
	case x.Null && y.Null:
		return 0
	case x.Null || y.Null:
		if x.Null == k.NullsFirst {
			return -1
		}
		return 1
	}
	c := types.Compare(x, y, k.E.Type())
	if k.Desc {
		return -c
	}
	return c
}

// Sort orders its input.
type Sort struct {
	Input Node
	Keys  []SortKey
}

// Columns are the input's.
func (s *Sort) Columns() []Column { return s.Input.Columns() }

// Limit is LIMIT/OFFSET.
type Limit struct {
	Input         Node
	Count, Offset Expr // nil: none
}

// Columns are the input's.
func (l *Limit) Columns() []Column { return l.Input.Columns() }

// DistinctNode removes duplicate rows (over the first N columns when N > 0:
// ORDER BY columns appended for sorting are not compared).
type DistinctNode struct {
	Input Node
	N     int
}

// Columns are the input's.
func (d *DistinctNode) Columns() []Column { return d.Input.Columns() }

// DistinctOn is SELECT DISTINCT ON (keys): of each run of input rows
// with equal Keys (column indexes; NULLs equal), the first. The input
// comes sorted with the keys leading.
type DistinctOn struct {
	Input Node
	Keys  []int
}

// Columns are the input's.
func (d *DistinctOn) Columns() []Column { return d.Input.Columns() }

// SetOp is UNION / INTERSECT / EXCEPT [ALL].
type SetOp struct {
	Op          string // "union", "intersect", "except"
	All         bool
	Left, Right Node
}

// Columns are the left side's.
func (s *SetOp) Columns() []Column { return s.Left.Columns() }

// RecursiveUnion is a recursive WITH query, PostgreSQL's: NonRec's rows,
// then Recursive's, run again over the rows its previous run gave (read
// through Work) until a run gives none; without All, a row given before
// is dropped (and does not feed the next run).
type RecursiveUnion struct {
	Name              string
	NonRec, Recursive Node
	All               bool
	Work              *WorkTable
}

// Columns are the non-recursive term's.
func (r *RecursiveUnion) Columns() []Column { return r.Work.Cols }

// WorkTable is a recursive WITH query's reference to itself in its
// recursive term: the rows of the previous run.
type WorkTable struct {
	Name string
	Cols []Column
}

// Columns are the WITH query's.
func (w *WorkTable) Columns() []Column { return w.Cols }

// Truncate hides columns past N (sort keys appended to a projection).
type Truncate struct {
	Input Node
	N     int
}

// Columns are the first N of the input's.
func (t *Truncate) Columns() []Column { return t.Input.Columns()[:t.N] }

// OnConflict is INSERT's ON CONFLICT clause.
type OnConflict struct {
	DoNothing bool
	// Index is the arbiter unique index's name ("": the primary key);
	// Any (DO NOTHING without a target): every unique constraint.
	Index string
	Any   bool
	// Set, for DO UPDATE, maps a column index to its new value over the
	// existing row followed by the EXCLUDED row; Where filters.
	Set   map[int]Expr
	Where Expr
}

// Insert inserts the rows of Source; Source's rows have one value per
// table column (defaults already filled in).
type Insert struct {
	Table      *catalog.Table
	Source     Node
	OnConflict *OnConflict
	Checks     []Expr
	Returning  []Expr
	cols       []Column
}

// Columns are the RETURNING columns.
func (i *Insert) Columns() []Column { return i.cols }

// Update changes the rows Source finds; Set maps a column index to its new
// value over the old row.
type Update struct {
	Table  *catalog.Table
	Source Node // a Scan, possibly under a Filter/Join
	// TargetAt is where the table's columns start in Source's rows: 0, or
	// after the FROM tables' columns (UPDATE ... FROM).
	TargetAt  int
	Set       map[int]Expr
	Checks    []Expr
	Returning []Expr
	cols      []Column
}

// Columns are the RETURNING columns.
func (u *Update) Columns() []Column { return u.cols }

// Delete deletes the rows Source finds.
type Delete struct {
	Table     *catalog.Table
	Source    Node
	TargetAt  int // as Update's (DELETE ... USING)
	Returning []Expr
	cols      []Column
}

// Columns are the RETURNING columns.
func (d *Delete) Columns() []Column { return d.cols }

// Rows is a node over rows computed elsewhere (a table rewrite copies
// rows through an Insert with it).
type Rows struct {
	Data []Row
	cols []Column
}

// Columns of the rows.
func (r *Rows) Columns() []Column { return r.cols }

// NewScan returns a full scan of t.
func NewScan(t *catalog.Table) *Scan { return newScan(t, t.Name) }

// InsertRows plans an INSERT of ready table rows into t (no defaults, no
// RETURNING).
func InsertRows(t *catalog.Table, rows []Row) *Insert {
	return &Insert{Table: t, Source: &Rows{Data: rows, cols: tableColumns(t)}}
}

// Lateral marks a LATERAL subquery while its FROM list is planned.
type Lateral struct{ Sub Node }

// Columns are the subquery's.
func (l *Lateral) Columns() []Column { return l.Sub.Columns() }

// LateralJoin runs Sub once per row of Left, with that row as the
// enclosing query's row, and joins each row with Sub's rows.
type LateralJoin struct {
	Left Node
	Sub  Node
	cols []Column
}

// Columns are the left's then the subquery's.
func (l *LateralJoin) Columns() []Column { return l.cols }

// ProjectSet runs the set-returning calls of a select list on each row of
// Input, as PostgreSQL's ProjectSet does above the grouping and the window
// functions: the calls advance in lockstep, each output row is the input
// row and every call's next row (NULLs for a call that has ended), until
// all have ended. A call nested in another's arguments is run by a
// ProjectSet below the other's.
type ProjectSet struct {
	Input Node
	// Calls read the input row in their Args.
	Calls []*FuncScan
	cols  []Column
	// refs are the references to the calls' columns, in order: they
	// follow the input's columns, whose number is known only once the
	// query is bound (srfScope.place).
	refs []*ColRef
}

// Columns are the input's, then each call's.
func (p *ProjectSet) Columns() []Column { return p.cols }
