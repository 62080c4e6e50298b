package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/server"
)

// startOptions are the flags of `shale start`.
type startOptions struct {
	DataDir   string
	Listen    string
	Join      []string
	RF        int
	Placement string
	RPCPort   int
	HTTPPort  int
	// YSQLPort is the PostgreSQL protocol port (0: no YSQL).
	YSQLPort int
	// FollowerUnavailableTimeout: how long a tserver may be dead before the
	// master re-creates its replicas elsewhere.
	FollowerUnavailableTimeout time.Duration
	// TServerDeadAfter: heartbeat silence after which a tserver is DEAD
	// (0: the master's default).
	TServerDeadAfter time.Duration
	// MaxSQLMemory is the query memory budget of the node's YSQL
	// statements, all together: a share of the machine's memory ("25%")
	// or a size ("4GiB", "512MB").
	MaxSQLMemory string
	// LogToStderr copies the log to stderr as well as D/logs/shale.log
	// (`shale cluster` turns it off: its nodes' stderr is a file already).
	LogToStderr bool
}

// pidFile is the file in the data dir that holds the pid of the node
// running on it.
const pidFile = "shale.pid"

func defaultStartOptions() startOptions {
	return startOptions{
		Listen: "127.0.0.1", RF: 3, RPCPort: server.DefaultRPCPort, HTTPPort: server.DefaultHTTPPort,
		YSQLPort:                   server.DefaultYSQLPort,
		FollowerUnavailableTimeout: 5 * time.Minute, LogToStderr: true, MaxSQLMemory: "25%",
	}
}

func ysqlAddr(o startOptions) string {
	if o.YSQLPort == 0 {
		return ""
	}
	return net.JoinHostPort(o.Listen, strconv.Itoa(o.YSQLPort))
}

// validate checks the flags and normalises --join to ip:port.
func (o *startOptions) validate() error {
	if o.DataDir == "" {
		return errors.New("--data-dir is required")
	}
	if net.ParseIP(o.Listen) == nil {
		return fmt.Errorf("--listen %q is not an IP address", o.Listen)
	}
	if err := validateRF(o.RF); err != nil {
		return err
	}
	if o.Placement != "" {
		if _, err := parsePlacement(o.Placement); err != nil {
			return err
		}
	}
	if err := validatePort("--rpc-port", o.RPCPort); err != nil {
		return err
	}
	if err := validatePort("--http-port", o.HTTPPort); err != nil {
		return err
	}
	if o.RPCPort == o.HTTPPort {
		return fmt.Errorf("--rpc-port and --http-port are both %d", o.RPCPort)
	}
	if o.FollowerUnavailableTimeout <= 0 {
		return fmt.Errorf("--follower-unavailable-timeout %v must be positive", o.FollowerUnavailableTimeout)
	}
	if o.TServerDeadAfter < 0 {
		return fmt.Errorf("--tserver-dead-after %v must not be negative", o.TServerDeadAfter)
	}
	if _, err := parseMaxSQLMemory(o.MaxSQLMemory, totalMemory()); err != nil {
		return err
	}
	join, err := normalizeJoin("--join", o.Join, o.RPCPort)
	if err != nil {
		return err
	}
	o.Join = join
	return nil
}

func validateRF(rf int) error {
	switch rf {
	case 1, 3, 5, 7:
		return nil
	}
	return fmt.Errorf("--rf %d: the replication factor must be 1, 3, 5 or 7", rf)
}

func validatePort(flag string, p int) error {
	if p < 1 || p > 65535 {
		return fmt.Errorf("%s %d is not a port (1-65535)", flag, p)
	}
	return nil
}

// parsePlacement parses cloud.region.zone.
func parsePlacement(s string) (*masterpb.Placement, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return nil, fmt.Errorf("--placement %q: want cloud.region.zone (three non-empty dot-separated parts)", s)
	}
	return &masterpb.Placement{Cloud: parts[0], Region: parts[1], Zone: parts[2]}, nil
}

// normalizeJoin splits comma-separated entries and gives a bare IP the RPC
// port: the nodes of one cluster share their ports.
func normalizeJoin(flag string, in []string, rpcPort int) ([]string, error) {
	var out []string
	for _, e := range in {
		for _, a := range strings.Split(e, ",") {
			a = strings.TrimSpace(a)
			if a == "" {
				continue
			}
			if ip := net.ParseIP(a); ip != nil {
				out = append(out, net.JoinHostPort(ip.String(), strconv.Itoa(rpcPort)))
				continue
			}
			host, port, err := net.SplitHostPort(a)
			if err != nil || net.ParseIP(host) == nil {
				return nil, fmt.Errorf("%s %q: want IP or IP:port", flag, a)
			}
			if p, err := strconv.Atoi(port); err != nil || validatePort(flag, p) != nil {
				return nil, fmt.Errorf("%s %q: bad port", flag, a)
			}
			out = append(out, a)
		}
	}
	return out, nil
}

func newStartCmd() *cobra.Command {
	o := defaultStartOptions()
	cmd := &cobra.Command{
		Use:   "start --data-dir D [--listen IP] [--join IP[,IP...]] [--rf N] [--placement cloud.region.zone]",
		Short: "Run one node in the foreground",
		Long: `Run one node in the foreground: always a tablet server, and a master on the first
nodes of a cluster. Without --join on an empty data dir the node bootstraps a new
cluster; with --join it joins the cluster of those masters; a data dir that already
holds a node restarts that node. The log goes to D/logs/shale.log and stderr.
SIGTERM or SIGINT stop the node cleanly.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return runStart(ctx, o, cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.DataDir, "data-dir", "", "the node's data directory (required)")
	f.StringVar(&o.Listen, "listen", o.Listen, "IP address to serve on (every port at this address)")
	f.StringSliceVar(&o.Join, "join", nil, "masters of the cluster to join, IP or IP:port, comma-separated")
	f.IntVar(&o.RF, "rf", o.RF, "replication factor of a new cluster (1, 3, 5 or 7)")
	f.StringVar(&o.Placement, "placement", "", "the node's placement, cloud.region.zone")
	f.IntVar(&o.RPCPort, "rpc-port", o.RPCPort, "RPC port")
	f.IntVar(&o.HTTPPort, "http-port", o.HTTPPort, "web UI, metrics and pprof port")
	f.IntVar(&o.YSQLPort, "ysql-port", o.YSQLPort, "YSQL (PostgreSQL protocol) port; 0 turns YSQL off")
	f.DurationVar(&o.FollowerUnavailableTimeout, "follower-unavailable-timeout", o.FollowerUnavailableTimeout,
		"how long a tserver may be dead before its replicas are re-created elsewhere")
	f.DurationVar(&o.TServerDeadAfter, "tserver-dead-after", 0, "heartbeat silence after which a tserver is DEAD (0: the master's default)")
	f.StringVar(&o.MaxSQLMemory, "max-sql-memory", o.MaxSQLMemory,
		`memory all YSQL statements of the node may hold at once, a share of the machine's ("25%") or a size ("4GiB"); a statement that would pass it fails with 53200`)
	f.BoolVar(&o.LogToStderr, "log-to-stderr", o.LogToStderr, "copy the log to stderr")
	for _, name := range []string{"rpc-port", "http-port", "follower-unavailable-timeout", "tserver-dead-after", "log-to-stderr"} {
		_ = f.MarkHidden(name)
	}
	return cmd
}

// drainTimeout bounds the leadership hand-off of a clean shutdown (a
// transfer takes a round trip or two; a peer that is down is not waited
// for: HandOff skips voters not heard from within the lease).
const drainTimeout = 5 * time.Second

// runStart runs the node until ctx ends (a signal) or the node reports a
// fatal error.
func runStart(ctx context.Context, o startOptions, stderr io.Writer) error {
	dir, err := filepath.Abs(o.DataDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return err
	}
	if pid, ok := runningPID(dir); ok {
		return fmt.Errorf("data dir %s is in use by process %d", dir, pid)
	}
	logf, err := os.OpenFile(filepath.Join(dir, "logs", "shale.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	var logw io.Writer = logf
	if o.LogToStderr {
		logw = io.MultiWriter(logf, stderr)
	}
	log := slog.New(slog.NewTextHandler(logw, nil))
	log.Info("garbage collector", "gogc", os.Getenv("GOGC"), "default_gc_percent", nodeGCPercent, "memory_limit", tuneGC())

	var placement *masterpb.Placement
	if o.Placement != "" {
		placement, _ = parsePlacement(o.Placement) // validated
	}
	httpAddr := net.JoinHostPort(o.Listen, strconv.Itoa(o.HTTPPort))
	// Bind the HTTP port first so that a port in use fails before the node
	// joins the cluster.
	hl, err := net.Listen("tcp", httpAddr)
	if err != nil {
		return fmt.Errorf("http: %w", err)
	}
	defer hl.Close()

	if err := writePIDFile(dir); err != nil {
		return err
	}
	defer os.Remove(filepath.Join(dir, pidFile))

	maxSQLMemory, _ := parseMaxSQLMemory(o.MaxSQLMemory, totalMemory()) // validated
	log.Info("starting node", "max_sql_memory", maxSQLMemory, "data_dir", dir, "listen", o.Listen, "join", o.Join, "rf", o.RF, "placement", o.Placement)
	srv, err := server.Start(server.Config{
		DataDir:                    dir,
		RPCAddr:                    net.JoinHostPort(o.Listen, strconv.Itoa(o.RPCPort)),
		HTTPAddr:                   httpAddr,
		YSQLAddr:                   ysqlAddr(o),
		Join:                       o.Join,
		ReplicationFactor:          o.RF,
		Placement:                  placement,
		FollowerUnavailableTimeout: o.FollowerUnavailableTimeout,
		TServerDeadAfter:           o.TServerDeadAfter,
		MaxSQLMemory:               maxSQLMemory,
		Logger:                     log,
	})
	if errors.Is(err, server.ErrWrongCluster) {
		log.Error("node refused", "err", err)
		return fmt.Errorf("data dir %s belongs to another cluster than the one at --join %s (use a fresh --data-dir to join it): %w",
			dir, strings.Join(o.Join, ","), err)
	}
	if err != nil {
		log.Error("node failed to start", "err", err)
		return fmt.Errorf("start node: %w", err)
	}
	hs := serveHTTP(hl, srv, log)
	log.Info("node serving", "node", srv.NodeID(), "cluster", srv.ClusterID(), "rpc", srv.RPCAddr(), "http", httpAddr)

	var fatal error
	select {
	case <-ctx.Done():
		log.Info("signal received, stopping")
	case fatal = <-srv.Fatal():
		log.Error("node stopping", "err", fatal)
	}
	if fatal == nil {
		// Hand the leaderships over first: the others then elect nobody
		// after a lease expiry, and writes pause only for the transfers.
		dctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
		srv.Drain(dctx)
		cancel()
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = hs.Shutdown(sctx)
	cancel()
	srv.Stop()
	log.Info("node stopped")
	if fatal != nil {
		if errors.Is(fatal, server.ErrWrongCluster) {
			return fmt.Errorf("data dir %s belongs to another cluster than its masters' (use a fresh --data-dir): %w", dir, fatal)
		}
		return fatal
	}
	return nil
}

func writePIDFile(dir string) error {
	return os.WriteFile(filepath.Join(dir, pidFile), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
}

// runningPID returns the pid in dir's pid file if that process still runs
// on dir.
func runningPID(dir string) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dir, pidFile))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid == os.Getpid() {
		return 0, false
	}
	return pid, processAlive(pid, dir)
}
