package client

import (
	"context"
	"sync"

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
	if r := req.GetReplaceTableId(); r != 0 {
		c.cache.forget(r)
	}
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

// TServers lists the tservers the master leader knows, with their state
// and what their last heartbeat reported.
func (c *Client) TServers(ctx context.Context) ([]*masterpb.TServerInfo, error) {
	var resp *masterpb.ListTServersResponse
	err := c.masterCall(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
		r, err := mc.ListTServers(ctx, &masterpb.ListTServersRequest{})
		resp = r
		return r.GetError(), err
	})
	if err != nil {
		return nil, err
	}
	return resp.GetTservers(), nil
}

// TableSizes returns the size in bytes of each table in ids: the sum over
// its tablets of the size the tablet's leader last reported to the master
// in its heartbeat (sstables plus what the tablet wrote to the memtable
// since the last flush; about a heartbeat interval old). It asks the
// master as the meta cache's lookups do, bypassing the cache, whose
// locations carry no sizes and may be old. A table the master no longer
// knows (dropped meanwhile) counts 0.
func (c *Client) TableSizes(ctx context.Context, ids []uint32) (map[uint32]uint64, error) {
	out := make(map[uint32]uint64, len(ids))
	var (
		mu       sync.Mutex
		firstErr error
		wg       sync.WaitGroup
	)
	var distinct []uint32
	for _, id := range ids {
		if _, dup := out[id]; !dup {
			out[id] = 0
			distinct = append(distinct, id)
		}
	}
	sem := make(chan struct{}, 8)
	for _, id := range distinct {
		wg.Add(1)
		sem <- struct{}{}
		go func(id uint32) {
			defer wg.Done()
			defer func() { <-sem }()
			resp, err := c.getTable(ctx, &masterpb.GetTableRequest{TableId: id})
			var n uint64
			for _, loc := range resp.GetTablets() {
				n += loc.GetSizeBytes()
			}
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				out[id] = n
			case IsTableNotFound(err):
			case firstErr == nil:
				firstErr = err
			}
		}(id)
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}
