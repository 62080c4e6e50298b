package exec

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	pg "github.com/pganalyze/pg_query_go/v6"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/ysql/catalog"
	"github.com/shaledb/shaledb/internal/ysql/pgerror"
	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// Secondary index DDL: CREATE [UNIQUE] INDEX, DROP INDEX, and the UNIQUE
// constraints of CREATE TABLE and ALTER TABLE, which are unique indexes.
//
// CREATE INDEX on an existing table is online, as in YugabyteDB: the index
// table is created, then the index enters the table's metadata in
// IndexDeleteOnly, then IndexWriteOnly, each step a catalog version that
// every node acts on before the next (waitNodes); only then is the table
// read, chunk by chunk in snapshot transactions, and the index rows of the
// rows found written (backfillIndex), and the index becomes readable.
// Writers keep the index in step all along, and a backfill write that meets
// a newer committed change of its index row is a conflict that reads the
// chunk again, so no write is lost or duplicated. DROP INDEX goes the other
// way: not readable, then gone from the metadata, then its table dropped.

// idxCol is an index key column as the statement names it.
type idxCol struct {
	name       string
	hash, desc bool
	set        bool // HASH/ASC/DESC given
	opclass    string
	opclassOpt bool // operator class options given
}

// indexRequest is what a CREATE INDEX or UNIQUE constraint asks for.
type indexRequest struct {
	name       string
	cols       []idxCol
	include    []string
	where      *pg.Node
	unique     bool
	constraint bool
	splitInto  int
}

// newIndex builds the definition of a new index of t (MasterID unset).
func (s *Session) newIndex(ctx context.Context, snap *catalog.Snapshot, t *catalog.Table, req *indexRequest) (*catalog.Index, error) {
	ix := &catalog.Index{Name: req.name, Unique: req.unique, Constraint: req.constraint}
	seen := map[int]bool{}
	anySet := false
	for _, c := range req.cols {
		anySet = anySet || c.hash
	}
	for i, c := range req.cols {
		ci := t.ColumnIndex(c.name)
		if ci < 0 {
			return nil, pgerror.New(pgerror.CodeUndefinedColumn, "column %q does not exist", c.name)
		}
		if seen[ci] {
			return nil, pgerror.Unsupported("an index naming a column twice")
		}
		seen[ci] = true
		if c.opclass != "" {
			if err := checkOpclass(c.opclass, c.opclassOpt, t.Columns[ci].Type); err != nil {
				return nil, err
			}
		}
		if err := types.CheckKeyType(t.Columns[ci].Type); err != nil {
			return nil, err
		}
		// YugabyteDB's default: the first column HASH unless it says ASC
		// or DESC (or HASH columns are named), the others ASC.
		hash := c.hash || i == 0 && !c.set && !anySet
		ix.Columns = append(ix.Columns, catalog.IndexColumn{ID: t.Columns[ci].ID, Hash: hash, Desc: c.desc})
	}
	for i := 1; i < len(ix.Columns); i++ {
		if ix.Columns[i].Hash && !ix.Columns[i-1].Hash {
			return nil, pgerror.New(pgerror.CodeInvalidTableDefinition, "hash column not allowed after an ASC/DESC column")
		}
	}
	for _, name := range req.include {
		ci := t.ColumnIndex(name)
		if ci < 0 {
			return nil, pgerror.New(pgerror.CodeUndefinedColumn, "column %q does not exist", name)
		}
		if !seen[ci] {
			seen[ci] = true
			ix.Include = append(ix.Include, t.Columns[ci].ID)
		}
	}
	if req.where != nil {
		pred, err := deparseExpr(req.where)
		if err != nil {
			return nil, err
		}
		b, err := s.binder(ctx)
		if err != nil {
			return nil, err
		}
		if err := b.CheckIndexPredicate(t, pred); err != nil {
			return nil, err
		}
		ix.Predicate = pred
	}
	if ix.Name == "" {
		suffix := "idx"
		if req.constraint {
			suffix = "key"
		}
		var names []string
		for _, c := range req.cols {
			names = append(names, c.name)
		}
		ix.Name = s.chooseRelationName(snap, t.Schema, t.Name, strings.Join(names, "_"), suffix)
	}
	return ix, nil
}

// chooseRelationName picks "<name1>_<name2>_<suffix>" (objectName), or
// with a number appended to the suffix, that no relation of the schema has
// (PostgreSQL's ChooseRelationName).
func (s *Session) chooseRelationName(snap *catalog.Snapshot, schema, name1, name2, suffix string) string {
	for n := 0; ; n++ {
		label := suffix
		if n > 0 {
			label += fmt.Sprint(n)
		}
		name := objectName(name1, name2, label)
		if !s.relationExists(snap, schema, name) {
			return name
		}
	}
}

func (s *Session) relationExists(snap *catalog.Snapshot, schema, name string) bool {
	if _, ok := snap.Table(s.db, schema, name); ok {
		return true
	}
	if _, ok := snap.Index(s.db, schema, name); ok {
		return true
	}
	_, ok := snap.Sequence(s.db, schema, name)
	return ok
}

// indexPartitioning is the partitioning of a new index's table.
func indexPartitioning(ix *catalog.Index, splitInto int) (*masterpb.Partitioning, error) {
	if ix.Range() {
		if splitInto > 0 {
			return nil, pgerror.New(pgerror.CodeInvalidTableDefinition, "SPLIT INTO is only for hash-partitioned indexes")
		}
		return &masterpb.Partitioning{Kind: masterpb.Partitioning_RANGE}, nil
	}
	return &masterpb.Partitioning{Kind: masterpb.Partitioning_HASH, NumTablets: uint32(splitInto)}, nil
}

// createIndex runs CREATE INDEX.
func (s *Session) createIndex(ctx context.Context, is *pg.IndexStmt, yb *ybOptions) error {
	switch am := strings.ToLower(is.GetAccessMethod()); am {
	case "", "lsm", "btree":
	case "hash", "gist", "gin", "spgist", "brin":
		return pgerror.Unsupported("index access method " + am)
	default:
		return pgerror.New(pgerror.CodeUndefinedObject, "access method %q does not exist", am)
	}
	if is.GetNullsNotDistinct() {
		return pgerror.Unsupported("NULLS NOT DISTINCT")
	}
	if err := indexOptions(is.GetOptions()); err != nil {
		return err
	}
	if err := checkTablespace(is.GetTableSpace()); err != nil {
		return err
	}
	snap, err := s.snapshot(ctx)
	if err != nil {
		return err
	}
	rv := is.GetRelation()
	t, ok := s.findTable(snap, rv.GetSchemaname(), rv.GetRelname())
	if !ok {
		// PostgreSQL 15's words (errdetail_relkind_not_supported).
		switch kind := s.relKind(snap, rv.GetSchemaname(), rv.GetRelname()); kind {
		case "index":
			return pgerror.New(pgerror.CodeWrongObjectType, "%q is an index", rv.GetRelname())
		case "view", "sequence":
			return pgerror.New(pgerror.CodeWrongObjectType, "cannot create index on relation %q", rv.GetRelname()).
				WithDetail("This operation is not supported for %ss.", kind)
		}
		return pgerror.New(pgerror.CodeUndefinedTable, "relation %q does not exist", rv.GetRelname())
	}
	req := &indexRequest{name: is.GetIdxname(), where: is.GetWhereClause(), unique: is.GetUnique()}
	for i, p := range is.GetIndexParams() {
		el := p.GetIndexElem()
		if el.GetExpr() != nil {
			return pgerror.Unsupported("indexes on expressions")
		}
		if e := plan.CheckCollation(el.GetCollation()); e != nil {
			return e
		}
		c := idxCol{name: el.GetName(), opclassOpt: len(el.GetOpclassopts()) > 0}
		if oc := el.GetOpclass(); len(oc) > 0 {
			c.opclass = oc[len(oc)-1].GetString_().GetSval()
		}
		switch el.GetOrdering() {
		case pg.SortByDir_SORTBY_ASC:
			c.set = true
		case pg.SortByDir_SORTBY_DESC:
			c.set, c.desc = true, true
		}
		if yb != nil && i < len(yb.indexCols) && yb.indexCols[i].name == c.name {
			c.hash, c.desc, c.set = yb.indexCols[i].hash, yb.indexCols[i].desc, yb.indexCols[i].set
		}
		req.cols = append(req.cols, c)
	}
	for _, p := range is.GetIndexIncludingParams() {
		req.include = append(req.include, p.GetIndexElem().GetName())
	}
	if yb != nil {
		req.splitInto = yb.splitInto
	}
	if req.name != "" && s.relationExists(snap, t.Schema, req.name) {
		if is.GetIfNotExists() {
			s.notice("NOTICE", "42P07", "relation %q already exists, skipping", req.name)
			return nil
		}
		return pgerror.New(pgerror.CodeDuplicateTable, "relation %q already exists", req.name)
	}
	ix, err := s.newIndex(ctx, snap, t, req)
	if err != nil {
		return err
	}
	return s.addIndex(ctx, t, ix, req.splitInto)
}

// addIndex creates index ix of t online (see the notes at the top).
func (s *Session) addIndex(ctx context.Context, t *catalog.Table, ix *catalog.Index, splitInto int) error {
	if err := s.canWaitForSessions(); err != nil {
		return err
	}
	part, err := indexPartitioning(ix, splitInto)
	if err != nil {
		return err
	}
	cache := s.e.cfg.Cache
	err = cache.CreateIndexTable(ctx, t, ix, part)
	if client.IsCode(err, masterpb.MasterError_ALREADY_EXISTS) {
		return pgerror.New(pgerror.CodeDuplicateTable, "relation %q already exists", ix.Name)
	}
	if err != nil {
		return err
	}
	db, schema, table := t.Database, t.Schema, t.Name
	ix.State = catalog.IndexDeleteOnly
	v, err := s.changeTable(ctx, schema, table, func(next *catalog.Table) error {
		if _, dup := next.Index(ix.Name); dup {
			return pgerror.New(pgerror.CodeDuplicateTable, "relation %q already exists", ix.Name)
		}
		next.Indexes = append(next.Indexes, *ix)
		return nil
	})
	if err != nil {
		_ = cache.DropIndexTable(context.WithoutCancel(ctx), t, ix)
		return err
	}
	fail := func(err error) error {
		// Take the index away again; if that cannot finish (a node keeps
		// an old catalog in use), it stays unreadable until DROP INDEX.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if cerr := s.removeIndex(cctx, t, ix.Name); cerr != nil {
			return errors.Join(err, cerr)
		}
		return err
	}
	if err := s.waitNodes(ctx, v); err != nil {
		return fail(err)
	}
	if v, err = s.setIndexState(ctx, schema, table, ix.Name, catalog.IndexWriteOnly); err != nil {
		return fail(err)
	}
	if err := s.waitNodes(ctx, v); err != nil {
		return fail(err)
	}
	if err := s.backfillIndex(ctx, db, schema, table, ix.Name); err != nil {
		return fail(err)
	}
	_, err = s.setIndexState(ctx, schema, table, ix.Name, catalog.IndexReady)
	if err != nil {
		return fail(err)
	}
	return nil
}

// removeIndex takes an index out of its table's metadata, waits until
// every node knows, and drops its table.
func (s *Session) removeIndex(ctx context.Context, t *catalog.Table, name string) error {
	if err := s.canWaitForSessions(); err != nil {
		return err
	}
	var removed *catalog.Index
	v, err := s.changeTable(ctx, t.Schema, t.Name, func(next *catalog.Table) error {
		for i := range next.Indexes {
			if next.Indexes[i].Name == name {
				ix := next.Indexes[i]
				removed = &ix
				next.Indexes = append(next.Indexes[:i], next.Indexes[i+1:]...)
				return nil
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if removed == nil {
		return nil
	}
	if err := s.waitNodes(ctx, v); err != nil {
		return err
	}
	delete(s.tables, removed.MasterID)
	return s.e.cfg.Cache.DropIndexTable(ctx, t, removed)
}

// dropIndex runs DROP INDEX of one index: it stops being read (every node
// knows before it goes on), then leaves the metadata, then its table goes.
func (s *Session) dropIndex(ctx context.Context, ref catalog.IndexRef) error {
	if err := s.canWaitForSessions(); err != nil {
		return err
	}
	t, ix := ref.Table, ref.Index
	if ix.Readable() {
		v, err := s.setIndexState(ctx, t.Schema, t.Name, ix.Name, catalog.IndexWriteOnly)
		if err != nil {
			return err
		}
		if err := s.waitNodes(ctx, v); err != nil {
			return err
		}
	}
	return s.removeIndex(ctx, t, ix.Name)
}

// changeTable applies change to the current metadata of schema.table and
// stores it, again when other DDL changed the table in between; it
// returns the catalog version the change made.
func (s *Session) changeTable(ctx context.Context, schema, table string, change func(next *catalog.Table) error) (uint64, error) {
	cache := s.e.cfg.Cache
	for attempt := 0; ; attempt++ {
		snap, err := cache.Get(ctx)
		if err != nil {
			return 0, err
		}
		t, ok := snap.Table(s.db, schema, table)
		if !ok {
			return 0, pgerror.New(pgerror.CodeUndefinedTable, "relation %q does not exist", table)
		}
		next := cloneTable(t)
		if err := change(next); err != nil {
			return 0, err
		}
		err = cache.AlterTable(ctx, t, next)
		if client.IsCode(err, masterpb.MasterError_CONFLICT) && attempt < 20 {
			continue
		}
		if err != nil {
			return 0, alterErr(err, t)
		}
		return cache.Latest(), nil
	}
}

// setIndexState moves an index of schema.table to state.
func (s *Session) setIndexState(ctx context.Context, schema, table, name string, state catalog.IndexState) (uint64, error) {
	return s.changeTable(ctx, schema, table, func(next *catalog.Table) error {
		ix, ok := next.Index(name)
		if !ok {
			return pgerror.New(pgerror.CodeUndefinedObject, "index %q does not exist", name)
		}
		ix.State = state
		return nil
	})
}

// waitNodes waits until every node acts on catalog version v or newer.
func (s *Session) waitNodes(ctx context.Context, v uint64) error {
	return s.e.cfg.Cache.WaitForNodes(ctx, s.db, v, func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
			return nil
		}
	})
}

// backfillChunk is how many base rows one backfill transaction reads.
const backfillChunk = 1000

// errBackfillRetry makes a backfill chunk read again: a writer inserted a
// unique index row after the chunk looked.
var errBackfillRetry = &client.Error{Code: client.CodeTxnConflict, Message: "index backfill: a concurrent write inserted a row the chunk checked"}

// backfillIndex writes the index rows of the rows a table has, chunk by
// chunk, each chunk a snapshot transaction that reads the rows and writes
// their index rows (retried on a conflict with a concurrent writer).
func (s *Session) backfillIndex(ctx context.Context, db, schema, table, name string) error {
	snap, err := s.e.cfg.Cache.Get(ctx)
	if err != nil {
		return err
	}
	t, ok := snap.Table(db, schema, table)
	if !ok {
		return pgerror.New(pgerror.CodeUndefinedTable, "relation %q does not exist", table)
	}
	ix, ok := t.Index(name)
	if !ok {
		return pgerror.New(pgerror.CodeUndefinedObject, "index %q does not exist", name)
	}
	tbl, err := s.openTable(ctx, t)
	if err != nil {
		return err
	}
	itbl, err := s.openIndex(ctx, t, ix)
	if err != nil {
		return err
	}
	w := &indexWriter{ix: ix, layout: t.Layout(ix), base: tbl, b: writeBatch{tbl: itbl}}
	if ix.Predicate != "" {
		if w.pred, err = s.indexPredicate(ctx, t, ix); err != nil {
			return err
		}
	}
	span := docdb.TableSpan(tbl.ID())
	start := span.Start
	size := backfillChunk
	for {
		var last []byte
		var n int
		err := s.inTxn(ctx, func(tx *client.Txn) error {
			r := &runner{s: s, ctx: ctx, txn: tx, ec: s.evalContext(nil)}
			raw, err := tx.Scan(ctx, tbl, client.ScanOptions{StartKey: start, EndKey: span.End, Limit: size})
			if err != nil {
				return err
			}
			n = len(raw)
			if n == 0 {
				return nil
			}
			if last, err = tbl.RowKey(raw[n-1]); err != nil {
				return err
			}
			return r.backfillRows(t, w, raw)
		})
		if client.IsRetryable(err) && size > 1 {
			// Writers keep changing rows of the chunk: smaller chunks
			// finish between their writes.
			size = max(size/4, 1)
			continue
		}
		if err != nil {
			return err
		}
		if n < size {
			return nil
		}
		start = append(last, 0) // the first key after the last row read
		size = min(size*2, backfillChunk)
	}
}

// backfillRows writes the index rows of base rows read in the runner's
// transaction. A unique index's row is checked first: one of the same row
// is already there (a writer put it), one of another row is a duplicate.
func (r *runner) backfillRows(t *catalog.Table, w *indexWriter, raw []client.Row) error {
	var ops []client.Op
	var checkKeys []client.Row
	var checkRows []plan.Row
	var checkOps []client.Op
	seen := map[string]plan.Row{}
	for _, sr := range raw {
		row, err := tableRow(t, sr)
		if err != nil {
			return err
		}
		if ok, err := r.matches(w, row); err != nil || !ok {
			if err != nil {
				return err
			}
			continue
		}
		key, full, err := indexEntry(t, w, row)
		if err != nil {
			return err
		}
		if !uniqueKeyed(w, full) {
			ops = append(ops, client.Op{Kind: client.OpPut, Row: full})
			continue
		}
		ik, err := w.b.tbl.RowKey(key)
		if err != nil {
			return err
		}
		if _, dup := seen[string(ik)]; dup {
			return r.s.duplicateForIndex(t, w.ix, row)
		}
		seen[string(ik)] = row
		checkKeys, checkRows = append(checkKeys, key), append(checkRows, row)
		checkOps = append(checkOps, client.Op{Kind: client.OpInsert, Row: full})
	}
	if len(checkKeys) > 0 {
		ents, found, err := r.txn.GetMany(r.ctx, w.b.tbl, checkKeys)
		if err != nil {
			return err
		}
		for i, ent := range ents {
			if !found[i] {
				ops = append(ops, checkOps[i])
				continue
			}
			pk, err := storageRow(t, checkRows[i], true)
			if err != nil {
				return err
			}
			if !sameStorageRow(baseKeyOf(t, w, ent), pk) {
				return r.s.duplicateForIndex(t, w.ix, checkRows[i])
			}
		}
	}
	for start := 0; start < len(ops); start += maxBatch {
		end := min(start+maxBatch, len(ops))
		err := r.txn.Apply(r.ctx, w.b.tbl, ops[start:end])
		if _, dup := client.DuplicateIndex(err); dup {
			return errBackfillRetry
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// duplicateForIndex is CREATE UNIQUE INDEX's error on duplicate data.
func (s *Session) duplicateForIndex(t *catalog.Table, ix *catalog.Index, row plan.Row) error {
	e := s.indexViolation(t, ix, row)
	e.Message = fmt.Sprintf("could not create unique index %q", ix.Name)
	e.Detail = strings.Replace(e.Detail, "already exists.", "is duplicated.", 1)
	return e
}
