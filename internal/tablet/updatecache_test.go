package tablet_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/consensus/consensustest"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/tablet"
)

// TestUpdateRowCache: UpdateRow gives its function the row as it is on
// disk, cached or not, whatever the calls before it wrote: puts of the
// whole row (which the cache keeps), puts of some columns, puts with a
// short TTL, deletes and calls that write nothing, from several goroutines
// on a few rows, and after the lease moves away and back.
func TestUpdateRowCache(t *testing.T) {
	h, _ := newTxnHarness(t)
	id := desc.ID
	rows := [][]byte{rowKey(900), rowKey(901), rowKey(902)}
	var mu sync.Mutex
	var mismatches []string
	var calls int
	step := func(ctx context.Context, tb *tablet.Tablet, rng *rand.Rand) error {
		key := rows[rng.Intn(len(rows))]
		return tb.UpdateRow(ctx, key, func(row docdb.Row, found bool) ([]docdb.WriteOp, error) {
			disk, dfound, err := tb.DiskRow(key)
			if err != nil {
				return nil, err
			}
			mu.Lock()
			calls++
			if dfound != found || fmt.Sprint(disk.Columns) != fmt.Sprint(row.Columns) {
				mismatches = append(mismatches, fmt.Sprintf("given %v %v, on disk %v %v", found, row.Columns, dfound, disk.Columns))
			}
			mu.Unlock()
			v := docdb.Int64(rng.Int63n(1000))
			switch rng.Intn(6) {
			case 0, 1:
				return []docdb.WriteOp{{Kind: docdb.OpPutRow, RowKey: key, Columns: []docdb.ColumnValue{{ID: 1, Value: v}, {ID: 2, Value: v}, {ID: 3, Value: v}}}}, nil
			case 2:
				return []docdb.WriteOp{{Kind: docdb.OpPutColumns, RowKey: key, Columns: []docdb.ColumnValue{{ID: 4, Value: v}}}}, nil
			case 3:
				return []docdb.WriteOp{{Kind: docdb.OpPutRow, RowKey: key, TTL: time.Second, Columns: []docdb.ColumnValue{{ID: 1, Value: v}}}}, nil
			case 4:
				return []docdb.WriteOp{{Kind: docdb.OpDeleteRow, RowKey: key}}, nil
			}
			return nil, nil
		})
	}
	run := func(seed int64) {
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				rng := rand.New(rand.NewSource(seed + int64(g)))
				for i := 0; i < 50; i++ {
					if err := h.onLeader(t, id, func(ctx context.Context, tb *tablet.Tablet) error { return step(ctx, tb, rng) }); err != nil {
						t.Error(err)
						return
					}
				}
			}(g)
		}
		wg.Wait()
	}
	// The lease moves away and back: rows cached in the first term must
	// not be given out after writes in the second.
	nodeOf := func(tb *tablet.Tablet) uint64 {
		h.mu.Lock()
		defer h.mu.Unlock()
		for k, o := range h.opened {
			if o == tb {
				return k[0]
			}
		}
		t.Fatal("replica not found")
		return 0
	}
	moveTo := func(to *tablet.Tablet) {
		consensustest.Retry(t, 20*time.Second, "the lease moves", func(ctx context.Context) error {
			cur := h.leaderOf(id)
			if cur == to {
				return nil
			}
			if cur != nil {
				_ = cur.Group().TransferLeadership(ctx, nodeOf(to))
			}
			return errors.New("the lease has not moved")
		})
	}
	run(1)
	first := h.leaderOf(id)
	var other *tablet.Tablet
	for _, r := range h.replicasOf(id) {
		if r != first {
			other = r
		}
	}
	moveTo(other)
	run(100)
	moveTo(first)
	run(200)
	mu.Lock()
	defer mu.Unlock()
	if len(mismatches) > 0 {
		t.Fatalf("%d of %d calls were given another row than the disk's, first: %s", len(mismatches), calls, mismatches[0])
	}
}
