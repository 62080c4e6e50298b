package cli

import (
	"errors"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/shaledb/shaledb/internal/server"
	"github.com/shaledb/shaledb/internal/workload"
)

func newWorkloadCmd() *cobra.Command {
	var cfg workload.Config
	var nodes []string
	var jsonSummary bool
	cmd := &cobra.Command{
		Use:   "workload",
		Short: "Run a load generator against a cluster (like YugabyteDB's sample apps)",
		Long: `Run a load generator against a cluster through the native client.

KeyValue: writers write keys key:0 … key:K-1 (each key owned by one writer, a new version
each round), readers read random written keys and check every value is one that was written
for that key, intact, and not older than what was acknowledged before the read. Every 5 s a
line "Read: x ops/sec (y ms/op), n total ops | Write: … | Uptime: t ms"; with
--json-summary one JSON line at the end (ops, errors, ops/s, p50/p99/max latency per op type).
The exit status is non-zero if any read did not check out or, with --verify, an acknowledged
write is missing.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			addrs, err := normalizeJoin("--nodes", nodes, server.DefaultRPCPort)
			if err != nil {
				return err
			}
			cfg.Nodes = addrs
			cfg.Out = cmd.OutOrStdout()
			if jsonSummary {
				cfg.JSON = cmd.OutOrStdout()
			}
			if cfg.Duration <= 0 {
				return errors.New("--duration must be positive")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			sum, err := workload.Run(ctx, cfg)
			if err != nil {
				return err
			}
			if !jsonSummary {
				fmt.Fprintf(cmd.OutOrStdout(), "done: %d writes (%.0f/s, p99 %.2f ms, %d errors), %d reads (%.0f/s, p99 %.2f ms, %d errors)\n",
					sum.Write.Ops, sum.Write.OpsPerS, sum.Write.P99Ms, sum.Write.Errors,
					sum.Read.Ops, sum.Read.OpsPerS, sum.Read.P99Ms, sum.Read.Errors)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Workload, "workload", "KeyValue", "workload to run (KeyValue)")
	f.StringSliceVar(&nodes, "nodes", []string{fmt.Sprintf("127.0.0.1:%d", server.DefaultRPCPort)}, "nodes (IP or IP:port) to reach the masters through")
	f.IntVar(&cfg.WriteThreads, "num-threads-write", 2, "writer threads")
	f.IntVar(&cfg.ReadThreads, "num-threads-read", 8, "reader threads")
	f.IntVar(&cfg.UniqueKeys, "num-unique-keys", 1_000_000, "number of distinct keys")
	f.IntVar(&cfg.ValueSize, "value-size", 64, "value size in bytes (at least 16)")
	f.DurationVar(&cfg.Duration, "duration", 30*time.Second, "how long to run")
	f.BoolVar(&jsonSummary, "json-summary", false, "print one JSON summary line at the end")
	f.StringVar(&cfg.Namespace, "namespace", "workload", "namespace of the table")
	f.StringVar(&cfg.Table, "table", "kv", "table (created if missing)")
	f.IntVar(&cfg.NumTablets, "num-tablets", 0, "tablets of a new table (0: the master's default)")
	f.IntVar(&cfg.RF, "rf", 0, "replication factor of a new table (0: the cluster's)")
	f.BoolVar(&cfg.FollowerReads, "follower-reads", false, "read from followers at bounded staleness")
	f.BoolVar(&cfg.Verify, "verify", false, "read every written key back at the end")
	f.DurationVar(&cfg.ReportEvery, "report-every", 5*time.Second, "period of the progress lines")
	return cmd
}
