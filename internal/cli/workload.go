package cli

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/shaledb/shaledb/internal/server"
	"github.com/shaledb/shaledb/internal/workload"
)

// killAfterCommitsEnv is a test hook: SHALE_TEST_KILL_AFTER_COMMITS=N
// makes a Bank workload SIGKILL its own process right after its N-th
// committed transfer, before it records the commit: a coordinator that
// dies in the middle of commit (the record COMMITTED, its intents not yet
// applied), whose outcome the history does not know.
const killAfterCommitsEnv = "SHALE_TEST_KILL_AFTER_COMMITS"

func killAfterCommits(s string) (func(txn string), error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return nil, fmt.Errorf("%s=%q: want a positive number", killAfterCommitsEnv, s)
	}
	var commits atomic.Int64
	return func(txn string) {
		if commits.Add(1) != int64(n) {
			return
		}
		fmt.Fprintf(os.Stdout, "test hook: SIGKILL after the commit of txn %s\n", txn)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // never returns
	}, nil
}

func newWorkloadCmd() *cobra.Command {
	var cfg workload.Config
	var nodes []string
	var jsonSummary bool
	var history string
	var cpuProfile string
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
write is missing.

SqlInserts: the same keys, values and checks through YSQL, as a PostgreSQL application: --nodes
are the nodes' YSQL addresses (default port 5433), the threads' statements spread over them; a
table (k text PRIMARY KEY, v bytea), each key's first write an INSERT, the next ones INSERT ...
ON CONFLICT DO UPDATE, reads by key.

Bank: --num-accounts accounts (created once, 1000 each; an existing bank is kept) in a hash
table; --num-threads-write transfer threads move random amounts between two random accounts in
distributed transactions at --isolation (snapshot, serializable, read_committed, or mixed:
thread w at level w mod 3), retrying serialization failures; --num-threads-read checker threads
read every balance in one snapshot and count a wrong total as a mismatch. Every 5 s a line
"Transfers: … | Checks: … | Retries: r | Unknown: u | Mismatches: m | Uptime: t ms". --verify
checks the final total (with no threads it only does that); --history FILE appends every
transfer attempt and snapshot for the history checker (package txncheck).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			port := server.DefaultRPCPort
			if cfg.Workload == "SqlInserts" {
				port = server.DefaultYSQLPort
				if !cmd.Flags().Changed("nodes") {
					nodes = []string{fmt.Sprintf("127.0.0.1:%d", port)}
				}
			}
			addrs, err := normalizeJoin("--nodes", nodes, port)
			if err != nil {
				return err
			}
			cfg.Nodes = addrs
			cfg.Out = cmd.OutOrStdout()
			tuneGC()
			if jsonSummary {
				cfg.JSON = cmd.OutOrStdout()
			}
			if cfg.Duration <= 0 {
				return errors.New("--duration must be positive")
			}
			if s := os.Getenv(killAfterCommitsEnv); s != "" {
				if cfg.AfterCommit, err = killAfterCommits(s); err != nil {
					return err
				}
			}
			if history != "" {
				// Unbuffered: each record is one write, so a killed
				// process leaves whole lines.
				f, err := os.OpenFile(history, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
				if err != nil {
					return err
				}
				defer f.Close()
				cfg.History = f
			}
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			sum, err := workload.Run(ctx, cfg)
			if err != nil {
				return err
			}
			if jsonSummary {
				return nil
			}
			if b := sum.Bank; b != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "done: %d transfers (%.0f/s, p99 %.2f ms, %d errors, %d retries, %d unknown), %d checks (%.0f/s, p99 %.2f ms, %d errors), %d mismatches; total %d\n",
					sum.Write.Ops, sum.Write.OpsPerS, sum.Write.P99Ms, sum.Write.Errors, b.Retries, b.Unknown,
					sum.Read.Ops, sum.Read.OpsPerS, sum.Read.P99Ms, sum.Read.Errors, sum.Mismatches, b.InitialTotal)
				if cfg.Verify {
					fmt.Fprintf(cmd.OutOrStdout(), "verify: final total %d\n", b.FinalTotal)
				}
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "done: %d writes (%.0f/s, p99 %.2f ms, %d errors), %d reads (%.0f/s, p99 %.2f ms, %d errors)\n",
				sum.Write.Ops, sum.Write.OpsPerS, sum.Write.P99Ms, sum.Write.Errors,
				sum.Read.Ops, sum.Read.OpsPerS, sum.Read.P99Ms, sum.Read.Errors)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Workload, "workload", "KeyValue", "workload to run (KeyValue, SqlInserts or Bank)")
	f.StringSliceVar(&nodes, "nodes", []string{fmt.Sprintf("127.0.0.1:%d", server.DefaultRPCPort)}, "nodes (IP or IP:port) to reach the masters through; SqlInserts: their YSQL addresses (default port 5433)")
	f.IntVar(&cfg.WriteThreads, "num-threads-write", 2, "writer threads (Bank: transfer threads)")
	f.IntVar(&cfg.ReadThreads, "num-threads-read", 8, "reader threads (Bank: snapshot checker threads)")
	f.IntVar(&cfg.UniqueKeys, "num-unique-keys", 1_000_000, "number of distinct keys")
	f.IntVar(&cfg.ValueSize, "value-size", 64, "value size in bytes (at least 16)")
	f.DurationVar(&cfg.Duration, "duration", 30*time.Second, "how long to run")
	f.BoolVar(&jsonSummary, "json-summary", false, "print one JSON summary line at the end")
	f.StringVar(&cfg.Namespace, "namespace", "workload", "namespace of the table")
	f.StringVar(&cfg.Table, "table", "", "table (created if missing; default kv, or bank for Bank)")
	f.IntVar(&cfg.NumTablets, "num-tablets", 0, "tablets of a new table (0: the master's default)")
	f.IntVar(&cfg.RF, "rf", 0, "replication factor of a new table (0: the cluster's)")
	f.BoolVar(&cfg.FollowerReads, "follower-reads", false, "read from followers at bounded staleness")
	f.BoolVar(&cfg.Verify, "verify", false, "read every written key back at the end (Bank: check the final total)")
	f.IntVar(&cfg.Accounts, "num-accounts", 0, "Bank: accounts of a new bank (0: 100; an existing bank keeps its own)")
	f.StringVar(&cfg.Isolation, "isolation", "mixed", "Bank: isolation of the transfers: snapshot, serializable, read_committed or mixed")
	f.StringVar(&history, "history", "", "Bank: append the history of transfers and snapshots to this file (JSON lines)")
	f.DurationVar(&cfg.ReportEvery, "report-every", 5*time.Second, "period of the progress lines")
	f.StringVar(&cpuProfile, "cpu-profile", "", "write a CPU profile of the workload client to this file")
	return cmd
}
