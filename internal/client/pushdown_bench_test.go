package client_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/server/servertest"
	"github.com/shaledb/shaledb/internal/storage"
)

// BenchmarkCountStar: SELECT count(*) over 1,000,000 small rows (an int64
// hash key and an int64 column) in 8 tablets on a 3-node RF3 in-process
// cluster: the pushed-down aggregate, in parallel over the tablets and one
// tablet after another, against ScanAll counting the rows in the client
// (existence-only projection), in parallel and sequentially (the scan as
// it was before pushdown). The nodes run engines of the default size. Loading the rows takes a while, so it is run by
// hand (docs/benchmarks.md):
//
//	go test -run '^$' -bench BenchmarkCountStar -benchtime 3x -timeout 30m ./internal/client/
//
// SHALE_BENCH_ROWS overrides the number of rows.
func BenchmarkCountStar(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("SHALE_BENCH_ROWS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	// Engines of the default size (a 128 MiB block cache), not the small
	// ones of the tests: the rows should fit, as they would on a server.
	c := servertest.NewClusterWith(b, 3, servertest.Options{Engine: &storage.Options{}})
	cl := patientClient(b, c)
	tb := create(b, cl, &masterpb.CreateTableRequest{
		Namespace: "bench", Name: "count",
		Schema: &masterpb.Schema{Columns: []*masterpb.ColumnSchema{
			{Id: 1, Name: "id", Type: "int64", IsHashKey: true},
			{Id: 2, Name: "v", Type: "int64", Nullable: true},
		}},
		Partitioning: &masterpb.Partitioning{Kind: masterpb.Partitioning_HASH, NumTablets: 8},
	})
	start := time.Now()
	loadRows(b, tb, n, 2000, func(i int) client.Row {
		return client.Row{"id": docdb.Int64(int64(i)), "v": docdb.Int64(int64(i % 1000))}
	})
	b.Logf("loaded %d rows in %v (%.0f rows/s)", n, time.Since(start).Round(time.Millisecond), float64(n)/time.Since(start).Seconds())
	check := func(b *testing.B, got int) {
		if got != n {
			b.Fatalf("counted %d rows, want %d", got, n)
		}
	}
	for _, p := range []struct {
		name        string
		parallelism int
	}{{"parallel", 0}, {"serial", 1}} {
		b.Run("pushdown/"+p.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				res, err := tb.Aggregate(longCtx(b), client.ScanOptions{Aggregates: []client.Aggregate{client.CountStar()}, Parallelism: p.parallelism})
				if err != nil {
					b.Fatal(err)
				}
				check(b, int(res[0].Int))
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
		b.Run("scanall/"+p.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				rows, err := tb.ScanAll(longCtx(b), client.ScanOptions{ReadOptions: client.ReadOptions{Columns: []string{"id"}}, Parallelism: p.parallelism})
				if err != nil {
					b.Fatal(err)
				}
				check(b, len(rows))
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
