// Package catalog is YSQL's view of the cluster catalog: databases,
// schemas, tables with their SQL columns, keys and constraints, and
// sequences. The master stores it (tables as master tables carrying
// sql_metadata, the rest as SQL catalog objects); this package defines the
// stored form, builds the master's column schema from it, and caches it per
// node, reloading when the cluster's catalog version moves.
package catalog

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/shaledb/shaledb/internal/ysql/types"
)

// FirstUserOID is where PostgreSQL starts the OIDs of user objects; table
// OIDs are this plus the master's table id so they are stable and unique.
const FirstUserOID = 16384

// DefaultDatabase is the database that always exists (YugabyteDB's).
const DefaultDatabase = "yugabyte"

// Database is a YSQL database.
type Database struct {
	Name string `json:"name"`
	OID  uint32 `json:"oid"`
}

// Schema is a namespace inside a database.
type Schema struct {
	Database string `json:"database"`
	Name     string `json:"name"`
	OID      uint32 `json:"oid"`
}

// Column is a column of a table.
type Column struct {
	Name string  `json:"name"`
	ID   uint32  `json:"id"` // the storage column id; never reused
	Type types.T `json:"type"`
	// NotNull: the column refuses NULL (23502).
	NotNull bool `json:"not_null,omitempty"`
	// Default is the SQL text of the default expression ("" = NULL).
	Default string `json:"default,omitempty"`
	// Hidden columns (the row id of a table without a primary key) are
	// not visible to SELECT *.
	Hidden bool `json:"hidden,omitempty"`
	// Identity: "a" GENERATED ALWAYS, "d" BY DEFAULT, "" none.
	Identity string `json:"identity,omitempty"`
}

// KeyColumn is a primary-key column: an index into Columns and how it is
// laid out.
type KeyColumn struct {
	Column int  `json:"column"`
	Hash   bool `json:"hash,omitempty"`
	Desc   bool `json:"desc,omitempty"`
}

// Check is a CHECK constraint.
type Check struct {
	Name string `json:"name"`
	Expr string `json:"expr"` // SQL text
	// NotValid: added with NOT VALID, the rows before it unchecked (until
	// ALTER TABLE VALIDATE CONSTRAINT).
	NotValid bool `json:"not_valid,omitempty"`
}

// Table is a YSQL table.
type Table struct {
	// MasterID is the master's table id (the storage table).
	MasterID uint32 `json:"-"`
	// Version is the master's schema version.
	Version  uint32      `json:"-"`
	Database string      `json:"database"`
	Schema   string      `json:"schema"`
	Name     string      `json:"name"`
	Columns  []Column    `json:"columns"`
	Key      []KeyColumn `json:"key"`
	// RowID: the table has no primary key; the hidden first column holds
	// a generated row id.
	RowID     bool    `json:"row_id,omitempty"`
	Checks    []Check `json:"checks,omitempty"`
	NextColID uint32  `json:"next_col_id"`
	// PKName is the primary-key constraint's name (t_pkey).
	PKName string `json:"pk_name,omitempty"`
	// Indexes are the table's secondary indexes (index.go).
	Indexes []Index `json:"indexes,omitempty"`
	// ForeignKeys are the table's FOREIGN KEY constraints (foreignkey.go).
	ForeignKeys []ForeignKey `json:"foreign_keys,omitempty"`
	// Rewriting: ALTER TABLE ... ADD PRIMARY KEY is copying the rows into
	// a new table that replaces this one; writers refuse it meanwhile.
	Rewriting bool `json:"rewriting,omitempty"`
	// IndexOf, in the metadata of an index's own storage table, names
	// (schema.table) the table it was created for; such tables are not
	// tables of the snapshot.
	IndexOf string `json:"index_of,omitempty"`
}

// OID is the table's pg_class oid.
func (t *Table) OID() uint32 { return FirstUserOID + t.MasterID }

// QualifiedName is schema.name.
func (t *Table) QualifiedName() string { return t.Schema + "." + t.Name }

// ColumnIndex returns the index of the named visible column, or -1.
func (t *Table) ColumnIndex(name string) int {
	for i, c := range t.Columns {
		if c.Name == name && !c.Hidden {
			return i
		}
	}
	return -1
}

// IsKey reports whether column i is part of the primary key.
func (t *Table) IsKey(i int) bool {
	for _, k := range t.Key {
		if k.Column == i {
			return true
		}
	}
	return false
}

// HashKeyCount is the number of leading hash columns of the key.
func (t *Table) HashKeyCount() int {
	n := 0
	for _, k := range t.Key {
		if k.Hash {
			n++
		}
	}
	return n
}

// Sequence is a sequence's definition (its value lives in a table row).
type Sequence struct {
	Database  string `json:"database"`
	Schema    string `json:"schema"`
	Name      string `json:"name"`
	OID       uint32 `json:"oid"`
	Start     int64  `json:"start"`
	Increment int64  `json:"increment"`
	Min       int64  `json:"min"`
	Max       int64  `json:"max"`
	Cache     int64  `json:"cache"`
	Cycle     bool   `json:"cycle,omitempty"`
	// OwnedBy is "table.column" for SERIAL columns.
	OwnedBy string `json:"owned_by,omitempty"`
}

// View is a view's definition. Its query is kept as SQL text in which
// every relation name is qualified with the schema it resolved to and
// every * is expanded to the columns it stood for at creation, so that the
// view reads the same relations and gives the same columns whatever the
// search path of the session using it, and after columns are added to a
// table it reads (as PostgreSQL, which keeps the analysed query).
type View struct {
	Database string       `json:"database"`
	Schema   string       `json:"schema"`
	Name     string       `json:"name"`
	OID      uint32       `json:"oid"`
	Query    string       `json:"query"`
	Columns  []ViewColumn `json:"columns"`
	// DependsOn: the tables and views the query reads ("schema.name"),
	// which cannot be dropped, renamed or have columns dropped or retyped
	// under it. By name, not OID: TRUNCATE and ADD PRIMARY KEY rebuild a
	// table under the same name and a new OID.
	DependsOn []string `json:"depends_on,omitempty"`
}

// ViewColumn is a column of a view.
type ViewColumn struct {
	Name string  `json:"name"`
	Type types.T `json:"type"`
}

// QualifiedName is schema.name.
func (v *View) QualifiedName() string { return v.Schema + "." + v.Name }

// Storage names: a YSQL table lives in master namespace "ysql:<database>"
// under the name "<schema>:<table>", so it cannot collide with YCQL
// keyspaces or system tables.
const namespacePrefix = "ysql:"

// MasterNamespace is the master namespace of a database.
func MasterNamespace(database string) string { return namespacePrefix + database }

// MasterName is the master table name of schema.table.
func MasterName(schema, table string) string { return schema + ":" + table }

// SplitMasterName parses a master namespace and name back into database,
// schema and table; ok is false for tables that are not YSQL's.
func SplitMasterName(namespace, name string) (db, schema, table string, ok bool) {
	db, ok = strings.CutPrefix(namespace, namespacePrefix)
	if !ok {
		return "", "", "", false
	}
	schema, table, ok = strings.Cut(name, ":")
	return db, schema, table, ok
}

// Object keys of the SQL catalog objects.
func dbKey(name string) string          { return "db/" + name }
func schemaKey(db, name string) string  { return "schema/" + db + "/" + name }
func seqKey(db, s, name string) string  { return "seq/" + db + "/" + s + "/" + name }
func viewKey(db, s, name string) string { return "view/" + db + "/" + s + "/" + name }
func encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("catalog: marshal %T: %v", v, err)) // only on programming errors
	}
	return b
}

// DecodeTable decodes a table's sql_metadata.
func DecodeTable(data []byte) (*Table, error) {
	t := &Table{}
	if err := json.Unmarshal(data, t); err != nil {
		return nil, fmt.Errorf("catalog: bad table metadata: %w", err)
	}
	return t, nil
}

// EncodeTable encodes a table's sql_metadata.
func EncodeTable(t *Table) []byte { return encode(t) }
