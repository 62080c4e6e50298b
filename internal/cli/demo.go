package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/shaledb/shaledb/internal/consensus"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/tablet"
	"github.com/shaledb/shaledb/internal/tserver"
)

// demoOptions configure runDemo.
type demoOptions struct {
	DataDir string // empty: a temporary directory, removed afterwards
	Rows    int
	Verbose bool // raft logs to stderr
}

// demoResult is what runDemo measured.
type demoResult struct {
	Leader        uint64
	NewLeader     uint64
	RowsWritten   int
	RowsVerified  int
	WriteDuration time.Duration
	Failover      time.Duration
}

const (
	demoTable  = 1
	demoTablet = 1
)

func newDemoCmd() *cobra.Command {
	var opts demoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a 3-node cluster in this process, write rows, kill the leader and watch it fail over",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
			defer cancel()
			_, err := runDemo(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), opts)
			return err
		},
	}
	cmd.Flags().StringVar(&opts.DataDir, "data-dir", "", "directory for the nodes' data (default: a temporary directory, removed afterwards)")
	cmd.Flags().IntVar(&opts.Rows, "rows", 1000, "rows to write")
	cmd.Flags().BoolVar(&opts.Verbose, "verbose", false, "show the nodes' raft logs")
	return cmd
}

// demoIP returns 127.0.0.<i>, or 127.0.0.1 where only that loopback address
// exists (macOS without aliases).
func demoIP(i int) string {
	ip := fmt.Sprintf("127.0.0.%d", i)
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		return "127.0.0.1"
	}
	_ = l.Close()
	return ip
}

func demoKey(i int) []byte {
	return docdb.DocKey{TableID: demoTable, RangeParts: []docdb.KeyPart{{Value: docdb.Int64(int64(i))}}}.Encode()
}

func demoValue(i int) string { return fmt.Sprintf("row-%d", i) }

func demoPut(i int) *docdb.WriteBatch {
	return &docdb.WriteBatch{Ops: []docdb.WriteOp{{Kind: docdb.OpPutRow, RowKey: demoKey(i),
		Columns: []docdb.ColumnValue{{ID: 1, Value: docdb.Text(demoValue(i))}}}}}
}

// demoCluster is the in-process cluster of the demo.
type demoCluster struct {
	nodes []*tserver.Node
}

// leaseholder returns the running node holding the tablet's lease.
func (c *demoCluster) leaseholder() (*tserver.Node, *tablet.Tablet) {
	for _, n := range c.nodes {
		if n == nil {
			continue
		}
		if tb, ok := n.Tablet(demoTablet); ok && tb.Group().HasLease() {
			return n, tb
		}
	}
	return nil, nil
}

// retry runs op at the leaseholder until it succeeds or ctx ends.
func (c *demoCluster) retry(ctx context.Context, op func(ctx context.Context, tb *tablet.Tablet) error) error {
	err := errors.New("no leader yet")
	for {
		if _, tb := c.leaseholder(); tb != nil {
			octx, cancel := context.WithTimeout(ctx, 3*time.Second)
			err = op(octx, tb)
			cancel()
			if err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (c *demoCluster) stop() {
	for _, n := range c.nodes {
		if n != nil {
			_ = n.Stop()
		}
	}
}

// runDemo starts three tablet servers in this process, creates one tablet
// replicated on all three, writes rows, stops the leader, measures the
// failover to the next successful write and reads every row back.
func runDemo(ctx context.Context, out, errOut io.Writer, opts demoOptions) (demoResult, error) {
	var res demoResult
	if opts.Rows <= 0 {
		return res, errors.New("--rows must be positive")
	}
	dir := opts.DataDir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "shale-demo-")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if opts.Verbose {
		logger = slog.New(slog.NewTextHandler(errOut, nil))
	}

	c := &demoCluster{}
	defer c.stop()
	for i := 1; i <= 3; i++ {
		n, err := tserver.Start(tserver.Config{
			NodeID:     uint64(i),
			ListenAddr: demoIP(i) + ":0",
			DataDir:    filepath.Join(dir, fmt.Sprintf("node%d", i)),
			Raft:       consensus.Config{Logger: logger},
		})
		if err != nil {
			return res, err
		}
		c.nodes = append(c.nodes, n)
		fmt.Fprintf(out, "node %d listening on %s (data %s)\n", i, n.Addr(), filepath.Join(dir, fmt.Sprintf("node%d", i)))
	}
	for _, a := range c.nodes {
		for _, b := range c.nodes {
			if a != b {
				a.AddPeer(b.ID(), b.Addr())
			}
		}
	}
	desc := tablet.Descriptor{ID: demoTablet, TableID: demoTable, Span: docdb.TableSpan(demoTable)}
	for _, n := range c.nodes {
		if _, ok := n.Tablet(desc.ID); ok {
			continue // --data-dir of an earlier run
		}
		if _, err := n.CreateTablet(desc, []uint64{1, 2, 3}); err != nil {
			return res, err
		}
	}
	fmt.Fprintln(out, "created tablet 1 with 3 replicas (RF 3)")

	// Write the rows from a few concurrent writers.
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < opts.Rows; i = int(next.Add(1)) - 1 {
				if err := c.retry(ctx, func(ctx context.Context, tb *tablet.Tablet) error {
					_, err := tb.Write(ctx, demoPut(i))
					return err
				}); err != nil {
					errs <- fmt.Errorf("write row %d: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return res, err
	}
	res.RowsWritten, res.WriteDuration = opts.Rows, time.Since(start)
	fmt.Fprintf(out, "wrote %d rows in %v (%.0f rows/s, each one a raft write synced on a majority)\n",
		opts.Rows, res.WriteDuration.Round(time.Millisecond), float64(opts.Rows)/res.WriteDuration.Seconds())

	leader, _ := c.leaseholder()
	for leader == nil { // the lease can lapse for a moment; the writes just succeeded
		if err := ctx.Err(); err != nil {
			return res, err
		}
		time.Sleep(10 * time.Millisecond)
		leader, _ = c.leaseholder()
	}
	res.Leader = leader.ID()
	fmt.Fprintf(out, "leader: node %d (%s)\n", leader.ID(), leader.Addr())

	// Kill the leader; the next successful write marks the failover.
	killed := time.Now()
	if err := leader.Stop(); err != nil {
		return res, err
	}
	c.nodes[leader.ID()-1] = nil
	fmt.Fprintf(out, "stopped node %d\n", leader.ID())
	if err := c.retry(ctx, func(ctx context.Context, tb *tablet.Tablet) error {
		_, err := tb.Write(ctx, demoPut(opts.Rows))
		return err
	}); err != nil {
		return res, fmt.Errorf("write after failover: %w", err)
	}
	res.Failover = time.Since(killed)
	newLeader, _ := c.leaseholder()
	if newLeader != nil {
		res.NewLeader = newLeader.ID()
	}
	fmt.Fprintf(out, "failover: node %d took over; next write succeeded %v after the leader stopped\n",
		res.NewLeader, res.Failover.Round(time.Millisecond))

	// Read every row back at the new leader.
	var rows []docdb.Row
	if err := c.retry(ctx, func(ctx context.Context, tb *tablet.Tablet) (err error) {
		rows, _, err = tb.Scan(ctx, tablet.ScanOptions{Span: desc.Span})
		return err
	}); err != nil {
		return res, fmt.Errorf("read back: %w", err)
	}
	got := make(map[string]string, len(rows))
	for _, r := range rows {
		if len(r.Columns) > 0 {
			got[string(r.Key)] = string(r.Columns[0].Value.Bytes)
		}
	}
	for i := 0; i <= opts.Rows; i++ {
		if v, ok := got[string(demoKey(i))]; !ok || v != demoValue(i) {
			return res, fmt.Errorf("row %d: read %q (present %v), want %q", i, v, ok, demoValue(i))
		}
		res.RowsVerified++
	}
	fmt.Fprintf(out, "read back and verified all %d rows (%d + 1 written after the failover) on the new leader\n", res.RowsVerified, opts.Rows)

	fmt.Fprintf(out, "\nsummary: 3 nodes, 1 tablet (RF 3), %d rows verified, leader node %d stopped, failover %v\n",
		res.RowsVerified, res.Leader, res.Failover.Round(time.Millisecond))
	fmt.Fprintln(out, "what arrives next: `shale start`, `shale cluster` (issue: cluster control plane)")
	return res, nil
}
