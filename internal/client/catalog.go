package client

import (
	"context"

	"github.com/shaledb/shaledb/internal/master/masterpb"
)

// AlterTable changes a table's schema, SQL metadata or name at the master
// and forgets the cached copy, returning the new table info and catalog
// version.
func (c *Client) AlterTable(ctx context.Context, req *masterpb.AlterTableRequest) (*masterpb.TableInfo, uint64, error) {
	var resp *masterpb.AlterTableResponse
	err := c.masterCall(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
		r, err := mc.AlterTable(ctx, req)
		resp = r
		return r.GetError(), err
	})
	c.cache.forget(req.GetTableId())
	if err != nil {
		return nil, 0, err
	}
	return resp.GetTable(), resp.GetCatalogVersion(), nil
}

// TablesAndVersion lists every table with the catalog version they belong
// to.
func (c *Client) TablesAndVersion(ctx context.Context) ([]*masterpb.TableInfo, uint64, error) {
	var resp *masterpb.ListTablesResponse
	err := c.masterCall(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
		r, err := mc.ListTables(ctx, &masterpb.ListTablesRequest{})
		resp = r
		return r.GetError(), err
	})
	if err != nil {
		return nil, 0, err
	}
	return resp.GetTables(), resp.GetCatalogVersion(), nil
}

// CatalogObjects returns the SQL catalog objects and the catalog version;
// unchanged is true (and objects nil) when the version still equals known.
func (c *Client) CatalogObjects(ctx context.Context, known uint64) (objects map[string][]byte, version uint64, unchanged bool, err error) {
	var resp *masterpb.GetCatalogObjectsResponse
	err = c.masterCall(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
		r, err := mc.GetCatalogObjects(ctx, &masterpb.GetCatalogObjectsRequest{KnownVersion: known})
		resp = r
		return r.GetError(), err
	})
	if err != nil {
		return nil, 0, false, err
	}
	return resp.GetObjects(), resp.GetCatalogVersion(), resp.GetUnchanged(), nil
}

// UpdateCatalogObjects puts and deletes SQL catalog objects in one catalog
// write and returns the new catalog version.
func (c *Client) UpdateCatalogObjects(ctx context.Context, req *masterpb.UpdateCatalogObjectsRequest) (uint64, error) {
	var v uint64
	err := c.masterCall(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
		r, err := mc.UpdateCatalogObjects(ctx, req)
		v = r.GetCatalogVersion()
		return r.GetError(), err
	})
	return v, err
}
