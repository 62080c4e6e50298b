package client

import (
	"errors"
	"fmt"
	"sort"

	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/storage"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// Row is a row by column name. Key columns are always present in rows
// read back; a column absent from the map is NULL (or not projected).
type Row map[string]docdb.Value

// Column is a column of a table's schema.
type Column struct {
	ID       uint32
	Name     string
	Type     docdb.ValueType
	Nullable bool
	HashKey  bool
	RangeKey bool
	Desc     bool
}

// IsKey reports whether the column is part of the primary key.
func (c *Column) IsKey() bool { return c.HashKey || c.RangeKey }

// Schema is a table's schema in the form the client encodes rows with.
type Schema struct {
	Columns []*Column // in catalog order
	Version uint32
	// HashKey and RangeKey are the key columns in key order.
	HashKey  []*Column
	RangeKey []*Column
	byName   map[string]*Column
	byID     map[uint32]*Column
}

// Column returns the named column.
func (s *Schema) Column(name string) (*Column, bool) {
	c, ok := s.byName[name]
	return c, ok
}

func newSchema(pb *masterpb.Schema) (*Schema, error) {
	s := &Schema{Version: pb.GetVersion(), byName: map[string]*Column{}, byID: map[uint32]*Column{}}
	for _, c := range pb.GetColumns() {
		t, ok := docdb.ParseValueType(c.GetType())
		if !ok {
			return nil, fmt.Errorf("client: column %q has unknown type %q", c.GetName(), c.GetType())
		}
		col := &Column{ID: c.GetId(), Name: c.GetName(), Type: t, Nullable: c.GetNullable(),
			HashKey: c.GetIsHashKey(), RangeKey: c.GetIsRangeKey(), Desc: c.GetDescending()}
		s.Columns = append(s.Columns, col)
		s.byName[col.Name] = col
		s.byID[col.ID] = col
		switch {
		case col.HashKey:
			s.HashKey = append(s.HashKey, col)
		case col.RangeKey:
			s.RangeKey = append(s.RangeKey, col)
		}
	}
	return s, nil
}

// checkValue validates a value against a column. A key column takes NULL
// only if declared nullable (secondary index keys): NULL sorts first
// ascending, last descending.
func checkValue(c *Column, v docdb.Value) error {
	if v.IsNull() {
		if !c.Nullable {
			return invalidf("column %q is not nullable", c.Name)
		}
		return nil
	}
	if v.Type != c.Type {
		return invalidf("column %q is %s, not %s", c.Name, c.Type, v.Type)
	}
	if c.IsKey() {
		if _, err := docdb.EncodeKey(nil, v, c.Desc); err != nil {
			return invalidf("column %q: %v", c.Name, err)
		}
	}
	return nil
}

// keyParts returns the key parts of cols from row. With prefix, the parts
// may stop at the first missing column (and no later one may be set);
// otherwise every column is required.
func keyParts(cols []*Column, row Row, prefix bool) ([]docdb.KeyPart, error) {
	var parts []docdb.KeyPart
	for i, c := range cols {
		v, ok := row[c.Name]
		if !ok {
			if !prefix {
				return nil, invalidf("key column %q is missing", c.Name)
			}
			for _, later := range cols[i+1:] {
				if _, ok := row[later.Name]; ok {
					return nil, invalidf("key column %q is set but %q before it is not", later.Name, c.Name)
				}
			}
			break
		}
		if err := checkValue(c, v); err != nil {
			return nil, err
		}
		parts = append(parts, docdb.KeyPart{Value: v, Desc: c.Desc})
	}
	return parts, nil
}

// RowKey encodes the row key of row (which must hold every key column;
// other columns are ignored).
func (t *Table) RowKey(row Row) ([]byte, error) {
	s := t.schema
	hash, err := keyParts(s.HashKey, row, false)
	if err != nil {
		return nil, err
	}
	rng, err := keyParts(s.RangeKey, row, false)
	if err != nil {
		return nil, err
	}
	k := docdb.DocKey{TableID: t.id, HashParts: hash, RangeParts: rng}
	if len(hash) > 0 {
		k.HasHash, k.Hash = true, docdb.HashKeyParts(hash)
	}
	return k.Encode(), nil
}

// keyPrefix encodes a key prefix for scan bounds: every hash key column
// or none, then leading range key columns. An empty row is the table's
// start. The prefix sorts at or below every row key that extends it.
func (t *Table) keyPrefix(row Row) ([]byte, error) {
	s := t.schema
	for name := range row {
		c, ok := s.byName[name]
		if !ok {
			return nil, invalidf("unknown column %q", name)
		}
		if !c.IsKey() {
			return nil, invalidf("scan bound column %q is not a key column", name)
		}
	}
	hash, err := keyParts(s.HashKey, row, true)
	if err != nil {
		return nil, err
	}
	if len(hash) != 0 && len(hash) != len(s.HashKey) {
		return nil, invalidf("a scan bound needs every hash key column or none")
	}
	rng, err := keyParts(s.RangeKey, row, true)
	if err != nil {
		return nil, err
	}
	if len(hash) == 0 && len(s.HashKey) > 0 && len(rng) > 0 {
		return nil, invalidf("a scan bound on range key columns needs the hash key columns too")
	}
	k := docdb.DocKey{TableID: t.id, HashParts: hash, RangeParts: rng}
	if len(hash) > 0 {
		k.HasHash, k.Hash = true, docdb.HashKeyParts(hash)
	}
	enc := k.Encode()
	enc = enc[:len(enc)-1] // without the closing GroupEnd: a prefix
	if len(hash) == 0 && len(rng) == 0 {
		return docdb.TableSpan(t.id).Start, nil
	}
	return enc, nil
}

// columnValues validates the non-key columns of row for a write.
func (t *Table) columnValues(row Row) (vals, nulls []docdb.ColumnValue, err error) {
	for name, v := range row {
		c, ok := t.schema.byName[name]
		if !ok {
			return nil, nil, invalidf("unknown column %q", name)
		}
		if err := checkValue(c, v); err != nil {
			return nil, nil, err
		}
		if c.IsKey() {
			continue
		}
		if v.IsNull() {
			nulls = append(nulls, docdb.ColumnValue{ID: c.ID})
		} else {
			vals = append(vals, docdb.ColumnValue{ID: c.ID, Value: v})
		}
	}
	sort.Slice(vals, func(i, j int) bool { return vals[i].ID < vals[j].ID })
	sort.Slice(nulls, func(i, j int) bool { return nulls[i].ID < nulls[j].ID })
	return vals, nulls, nil
}

// projection maps column names to a wire projection: nil (no names) is
// every column; key columns come from the row key and need no id.
func (t *Table) projection(columns []string) (*tspb.Projection, error) {
	if len(columns) == 0 {
		return nil, nil
	}
	p := &tspb.Projection{ColumnIds: []uint32{}}
	for _, name := range columns {
		c, ok := t.schema.byName[name]
		if !ok {
			return nil, invalidf("unknown column %q", name)
		}
		if !c.IsKey() {
			p.ColumnIds = append(p.ColumnIds, c.ID)
		}
	}
	return p, nil
}

var errBadRow = errors.New("client: malformed row from server")

// decodeRow turns a wire row into a Row: key columns from the row key,
// the others by id.
func (t *Table) decodeRow(r *tspb.Row) (Row, error) {
	k, err := docdb.DecodeDocKey(r.GetKey())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errBadRow, err)
	}
	s := t.schema
	if k.TableID != t.id || len(k.HashParts) != len(s.HashKey) || len(k.RangeParts) != len(s.RangeKey) {
		return nil, fmt.Errorf("%w: key %x does not fit table %d", errBadRow, r.GetKey(), t.id)
	}
	row := make(Row, len(s.HashKey)+len(s.RangeKey)+len(r.GetColumns()))
	for i, c := range s.HashKey {
		row[c.Name] = k.HashParts[i].Value
	}
	for i, c := range s.RangeKey {
		row[c.Name] = k.RangeParts[i].Value
	}
	for _, col := range r.GetColumns() {
		c, ok := s.byID[col.GetId()]
		if !ok {
			continue // a column added by a newer schema
		}
		v, err := docdb.DecodeValue(col.GetValue())
		if err != nil {
			return nil, fmt.Errorf("%w: column %q: %v", errBadRow, c.Name, err)
		}
		row[c.Name] = v
	}
	return row, nil
}

// RangeSplitPoint encodes a split point for CreateTable's range
// partitioning: the leading range key values, with each column's Desc.
func RangeSplitPoint(parts ...docdb.KeyPart) []byte {
	var out []byte
	for _, p := range parts {
		out = docdb.AppendKey(out, p.Value, p.Desc)
	}
	return out
}

// prefixEnd is the smallest key above every key with prefix p.
func prefixEnd(p []byte) []byte { return storage.PrefixEnd(p) }
