package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/server/servertest"
)

// TestSQLCatalogThroughMaster: SQL catalog objects and table metadata are
// stored by the master, every change bumps the catalog version, stale
// conditional changes fail with CONFLICT, and all of it survives a restart
// of the master.
func TestSQLCatalogThroughMaster(t *testing.T) {
	c := servertest.NewCluster(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := client.Open(ctx, client.Config{Masters: c.Addrs})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	objs, v0, _, err := cl.CatalogObjects(ctx, 0)
	if err != nil || len(objs) != 0 {
		t.Fatalf("fresh catalog: %v %v", objs, err)
	}
	v1, err := cl.UpdateCatalogObjects(ctx, &masterpb.UpdateCatalogObjectsRequest{ExpectedVersion: v0,
		Put: map[string][]byte{"db/a": []byte("1"), "db/b": []byte("2")}, CreateOnly: true})
	if err != nil || v1 != v0+1 {
		t.Fatalf("put: version %d -> %d, %v", v0, v1, err)
	}
	// A change made against an older version loses (0 means
	// unconditional, so compare with a version past the first).
	v1, err = cl.UpdateCatalogObjects(ctx, &masterpb.UpdateCatalogObjectsRequest{ExpectedVersion: v1,
		Delete: []string{"db/none"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.UpdateCatalogObjects(ctx, &masterpb.UpdateCatalogObjectsRequest{ExpectedVersion: v1 - 1,
		Put: map[string][]byte{"db/c": []byte("3")}}); !client.IsCode(err, masterpb.MasterError_CONFLICT) {
		t.Fatalf("stale update: %v", err)
	}
	if _, err := cl.UpdateCatalogObjects(ctx, &masterpb.UpdateCatalogObjectsRequest{
		Put: map[string][]byte{"db/a": []byte("x")}, CreateOnly: true}); !client.IsCode(err, masterpb.MasterError_ALREADY_EXISTS) {
		t.Fatalf("create of an existing object: %v", err)
	}
	if _, _, unchanged, err := cl.CatalogObjects(ctx, v1); err != nil || !unchanged {
		t.Fatalf("known version: unchanged=%v %v", unchanged, err)
	}

	req := servertest.KVTable("sqlt", 2)
	req.SqlMetadata = []byte(`{"meta":1}`)
	req.ReplicationFactor = 1
	info, err := cl.CreateTable(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	tables, v2, err := cl.TablesAndVersion(ctx)
	if err != nil || v2 != v1+1 || len(tables) != 1 || string(tables[0].GetSqlMetadata()) != `{"meta":1}` {
		t.Fatalf("after create: version %d, %v, %v", v2, tables, err)
	}
	schema := info.GetSchema()
	added := append(append([]*masterpb.ColumnSchema(nil), schema.GetColumns()...),
		&masterpb.ColumnSchema{Id: 99, Name: "extra", Type: "int64", Nullable: true})
	altered, v3, err := cl.AlterTable(ctx, &masterpb.AlterTableRequest{TableId: info.GetTableId(),
		ExpectedSchemaVersion: schema.GetVersion(), Schema: &masterpb.Schema{Columns: added},
		SqlMetadata: []byte(`{"meta":2}`), SetSqlMetadata: true, NewName: "sqlt2"})
	if err != nil || v3 != v2+1 || altered.GetSchema().GetVersion() != schema.GetVersion()+1 || altered.GetName() != "sqlt2" {
		t.Fatalf("alter: %v v%d %v", altered, v3, err)
	}
	if _, _, err := cl.AlterTable(ctx, &masterpb.AlterTableRequest{TableId: info.GetTableId(),
		ExpectedSchemaVersion: schema.GetVersion(), NewName: "sqlt3"}); !client.IsCode(err, masterpb.MasterError_CONFLICT) {
		t.Fatalf("alter at a stale schema version: %v", err)
	}
	keyless := []*masterpb.ColumnSchema{added[1], added[2]}
	if _, _, err := cl.AlterTable(ctx, &masterpb.AlterTableRequest{TableId: info.GetTableId(),
		Schema: &masterpb.Schema{Columns: keyless}}); !client.IsCode(err, masterpb.MasterError_INVALID_ARGUMENT) {
		t.Fatalf("dropping the key column: %v", err)
	}
	tbl, err := cl.OpenTable(ctx, "test", "sqlt2")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tbl.Schema().Column("extra"); !ok {
		t.Fatal("the added column is not in the opened table's schema")
	}

	// A table takes another's name as that one goes, in one change (a
	// rewrite's new table): never neither, never both.
	req2 := servertest.KVTable("sqlt_new", 2)
	req2.SqlMetadata = []byte(`{"meta":3}`)
	req2.ReplicationFactor = 1
	fresh, err := cl.CreateTable(ctx, req2)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := cl.AlterTable(ctx, &masterpb.AlterTableRequest{TableId: fresh.GetTableId(), NewName: "sqlt2"}); !client.IsCode(err, masterpb.MasterError_ALREADY_EXISTS) {
		t.Fatalf("rename onto an existing table: %v", err)
	}
	if _, _, err := cl.AlterTable(ctx, &masterpb.AlterTableRequest{TableId: fresh.GetTableId(), NewName: "sqlt2", ReplaceTableId: fresh.GetTableId() + 100}); !client.IsCode(err, masterpb.MasterError_ALREADY_EXISTS) {
		t.Fatalf("replacing a table that does not have the name: %v", err)
	}
	if _, v, err := cl.AlterTable(ctx, &masterpb.AlterTableRequest{TableId: fresh.GetTableId(), NewName: "sqlt2", ReplaceTableId: info.GetTableId()}); err != nil || v != v3+2 {
		t.Fatalf("replace: v%d %v", v, err)
	}
	tables, v3, err = cl.TablesAndVersion(ctx)
	if err != nil || len(tables) != 1 || tables[0].GetTableId() != fresh.GetTableId() || tables[0].GetName() != "sqlt2" {
		t.Fatalf("after replace: %v %v", tables, err)
	}

	// Restart: everything was written to the sys catalog.
	c.Stop(0)
	c.Start(0, nil)
	cl2, err := client.Open(ctx, client.Config{Masters: c.Addrs})
	if err != nil {
		t.Fatal(err)
	}
	defer cl2.Close()
	objs2, v4, _, err := cl2.CatalogObjects(ctx, 0)
	if err != nil || v4 != v3 || string(objs2["db/b"]) != "2" {
		t.Fatalf("after restart: %v v%d %v", objs2, v4, err)
	}
	tables, _, err = cl2.TablesAndVersion(ctx)
	if err != nil || len(tables) != 1 || string(tables[0].GetSqlMetadata()) != `{"meta":3}` || tables[0].GetName() != "sqlt2" {
		t.Fatalf("tables after restart: %v %v", tables, err)
	}
}
