package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/shaledb/shaledb/internal/server"
)

// clusterOptions are the flags shared by the `shale cluster` subcommands.
type clusterOptions struct {
	BaseDir string
	Wait    time.Duration
}

// stopGrace is how long a node gets to stop after SIGTERM before SIGKILL.
const stopGrace = 30 * time.Second

func newClusterCmd() *cobra.Command {
	o := &clusterOptions{}
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Run a local cluster: node K on 127.0.0.K, data in BASE/nodeK",
		Long: `Run a local cluster of node processes in the background, as yb-ctl does: node K
listens on 127.0.0.K with the standard ports and keeps its data, logs and pid in
BASE/nodeK; BASE/cluster.json records the cluster.`,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.BaseDir, "base-dir", "shale-data", "the cluster's directory")
	pf.DurationVar(&o.Wait, "wait", 90*time.Second, "how long to wait for nodes to become ready")

	var create struct {
		nodes, rf, rpcPort, httpPort, ysqlPort int
		followerUnavailable                    time.Duration
	}
	createCmd := &cobra.Command{
		Use:   "create --nodes N --rf R [--base-dir D]",
		Short: "Start a new local cluster of N nodes and wait until it is ready",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := validateCreate(create.nodes, create.rf, create.rpcPort, create.httpPort); err != nil {
				return err
			}
			c, err := o.open(cmd, false)
			if err != nil {
				return err
			}
			if create.ysqlPort != 0 {
				if err := validatePort("--ysql-port", create.ysqlPort); err != nil {
					return err
				}
			}
			return c.create(cmd.Context(), create.nodes, create.rf, create.rpcPort, create.httpPort, create.ysqlPort, create.followerUnavailable)
		},
	}
	f := createCmd.Flags()
	f.IntVar(&create.nodes, "nodes", 3, "number of nodes")
	f.IntVar(&create.rf, "rf", 3, "replication factor (1, 3, 5 or 7; at most --nodes)")
	f.IntVar(&create.rpcPort, "rpc-port", server.DefaultRPCPort, "RPC port of every node")
	f.IntVar(&create.httpPort, "http-port", server.DefaultHTTPPort, "HTTP port of every node")
	f.IntVar(&create.ysqlPort, "ysql-port", server.DefaultYSQLPort, "YSQL (PostgreSQL) port of every node; 0 turns YSQL off")
	f.DurationVar(&create.followerUnavailable, "follower-unavailable-timeout", 0, "passed to every node's start (0: the default, 5m)")

	withNode := func(use, short string, run func(c *localCluster, ctx context.Context, k int) error) *cobra.Command {
		return &cobra.Command{
			Use:   use + " K",
			Short: short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				k, err := strconv.Atoi(args[0])
				if err != nil || k < 1 {
					return fmt.Errorf("node %q: want a node number (1, 2, ...)", args[0])
				}
				c, err := o.open(cmd, true)
				if err != nil {
					return err
				}
				return run(c, cmd.Context(), k)
			},
		}
	}
	cmd.AddCommand(createCmd,
		&cobra.Command{
			Use:   "status",
			Short: "Show the nodes, their processes and what the masters report",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				c, err := o.open(cmd, true)
				if err != nil {
					return err
				}
				return c.status(cmd.Context())
			},
		},
		&cobra.Command{
			Use:   "add-node",
			Short: "Start one more node (the next number) joining the cluster",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				c, err := o.open(cmd, true)
				if err != nil {
					return err
				}
				return c.addNode(cmd.Context())
			},
		},
		withNode("remove-node", "Drain node K of its replicas (blacklist), stop it and delete its data", (*localCluster).removeNode),
		withNode("stop-node", "Stop node K (SIGTERM); its data stays", (*localCluster).stopNode),
		withNode("start-node", "Start node K again on its data dir", (*localCluster).startNode),
		&cobra.Command{
			Use:   "destroy",
			Short: "Stop every node and delete the base dir",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				c, err := o.open(cmd, false)
				if err != nil {
					return err
				}
				return c.destroy()
			},
		},
	)
	return cmd
}

func validateCreate(nodes, rf, rpcPort, httpPort int) error {
	if nodes < 1 || nodes > 254 {
		return fmt.Errorf("--nodes %d: want 1 to 254", nodes)
	}
	if err := validateRF(rf); err != nil {
		return err
	}
	if rf > nodes {
		return fmt.Errorf("--rf %d needs at least %d nodes (--nodes %d)", rf, rf, nodes)
	}
	if err := validatePort("--rpc-port", rpcPort); err != nil {
		return err
	}
	if err := validatePort("--http-port", httpPort); err != nil {
		return err
	}
	if rpcPort == httpPort {
		return fmt.Errorf("--rpc-port and --http-port are both %d", rpcPort)
	}
	return nil
}

// localCluster runs the commands on one base dir.
type localCluster struct {
	base string // absolute
	exe  string
	wait time.Duration
	out  io.Writer
	st   *clusterState // nil before create
}

func (o *clusterOptions) open(cmd *cobra.Command, mustExist bool) (*localCluster, error) {
	base, err := filepath.Abs(o.BaseDir)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	c := &localCluster{base: base, exe: exe, wait: o.Wait, out: cmd.OutOrStdout()}
	if mustExist {
		if c.st, err = loadClusterState(base); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// self is how to invoke this binary in the hints printed for people.
func self() string {
	if strings.ContainsRune(os.Args[0], '/') {
		return os.Args[0]
	}
	return "shale"
}

func (c *localCluster) admin() *adminConn { return newAdminConn(c.st.addrs(0)) }

// launched is a node process just started; exited receives its end.
type launched struct {
	pid    int
	since  time.Time
	exited chan error
}

// launch starts node n's process detached from this one (its own session,
// output to BASE/nodeK/logs/stdout.log).
func (c *localCluster) launch(n *clusterNode, join []string) (*launched, error) {
	dir := nodeDir(c.base, n.Index)
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	out, err := os.OpenFile(filepath.Join(dir, "logs", "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	args := []string{"start", "--data-dir", dir, "--listen", n.IP,
		"--rpc-port", strconv.Itoa(c.st.RPCPort), "--http-port", strconv.Itoa(c.st.HTTPPort),
		"--ysql-port", strconv.Itoa(c.st.YSQLPort), "--rf", strconv.Itoa(c.st.RF), "--log-to-stderr=false"}
	if len(join) > 0 {
		args = append(args, "--join", strings.Join(join, ","))
	}
	if t := c.st.FollowerUnavailableTimeout; t != "" {
		args = append(args, "--follower-unavailable-timeout", t)
	}
	if m := c.st.MaxSQLMemory; m != "" {
		args = append(args, "--max-sql-memory", m)
	}
	cmd := exec.Command(c.exe, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	l := &launched{since: time.Now(), exited: make(chan error, 1)}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("node %d: %w", n.Index, err)
	}
	l.pid = cmd.Process.Pid
	n.PID = l.pid
	go func() { l.exited <- cmd.Wait() }()
	return l, nil
}

// waitReady waits until node k has joined and heartbeated since it was
// launched, and returns its node id.
func (c *localCluster) waitReady(ctx context.Context, a *adminConn, k int, l *launched) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, c.wait)
	defer cancel()
	dir := nodeDir(c.base, k)
	var last error
	for {
		if id, _, err := nodeIdentity(dir); err == nil && id != 0 {
			cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
			ts, err := a.listTServers(cctx)
			ccancel()
			last = err
			for _, t := range ts {
				if t.NodeID == id && t.State == "LIVE" && t.LastHeartbeatMs >= l.since.UnixMilli() {
					return id, nil
				}
			}
		}
		select {
		case err := <-l.exited:
			return 0, fmt.Errorf("node %d exited (%v):\n%s", k, err, tail(filepath.Join(dir, "logs", "stdout.log"), 5))
		case <-ctx.Done():
			if last == nil {
				last = ctx.Err()
			}
			return 0, fmt.Errorf("node %d not ready after %v (see %s): %w", k, c.wait, filepath.Join(dir, "logs"), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// tail returns the last n lines of a file, indented.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "  (" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

func (c *localCluster) create(ctx context.Context, nodes, rf, rpcPort, httpPort, ysqlPort int, followerUnavailable time.Duration) error {
	if _, err := os.Stat(filepath.Join(c.base, clusterStateFile)); err == nil {
		return fmt.Errorf("a cluster exists in %s already (`%s cluster status --base-dir %s`; `%s cluster destroy --base-dir %s` removes it)",
			c.base, self(), c.base, self(), c.base)
	}
	if err := os.MkdirAll(c.base, 0o755); err != nil {
		return err
	}
	c.st = &clusterState{RF: rf, RPCPort: rpcPort, HTTPPort: httpPort, YSQLPort: ysqlPort, FollowerUnavailableTimeout: followerUnavailable.String(),
		MaxSQLMemory: fmt.Sprintf("%.3g%%", 25/float64(max(nodes, 1)))}
	if followerUnavailable == 0 {
		c.st.FollowerUnavailableTimeout = ""
	}
	if err := saveNodes(c.base, c.st); err != nil {
		return err
	}
	a := c.admin()
	defer a.close()
	cleanup := fmt.Sprintf("see %s/nodeK/logs; `%s cluster destroy --base-dir %s` cleans up", c.base, self(), c.base)
	for k := 1; k <= nodes; k++ {
		c.st.Nodes = append(c.st.Nodes, clusterNode{Index: k, IP: fmt.Sprintf("127.0.0.%d", k)})
		n := &c.st.Nodes[len(c.st.Nodes)-1]
		var join []string
		if k > 1 {
			join = []string{c.st.rpcAddr(c.st.Nodes[0])}
		}
		l, err := c.launch(n, join)
		if err != nil {
			return err
		}
		if err := saveNodes(c.base, c.st, k); err != nil {
			return err
		}
		a = c.refreshAdmin(a)
		id, err := c.waitReady(ctx, a, k, l)
		if err != nil {
			return fmt.Errorf("%w\n%s", err, cleanup)
		}
		fmt.Fprintf(c.out, "node %d: %s, pid %d, node id %d\n", k, c.st.rpcAddr(*n), l.pid, id)
	}
	masters, err := c.waitMasters(ctx, a, min(rf, nodes))
	if err != nil {
		return fmt.Errorf("%w\n%s", err, cleanup)
	}
	c.printConnect(masters)
	return nil
}

// refreshAdmin returns an admin connection to every node of the state.
func (c *localCluster) refreshAdmin(a *adminConn) *adminConn {
	if len(a.addrs) == len(c.st.Nodes) {
		return a
	}
	a.close()
	return c.admin()
}

// waitMasters waits until the cluster has want masters, all voters of the
// catalog and one of them the leader, and every node of the state is LIVE.
// Until the new masters are promoted, losing the first node loses the
// catalog's only voter: a cluster is not ready before.
func (c *localCluster) waitMasters(ctx context.Context, a *adminConn, want int) ([]masterRow, error) {
	ctx, cancel := context.WithTimeout(ctx, c.wait)
	defer cancel()
	var last string
	for {
		cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
		ms, err := a.listMasters(cctx)
		var ts []tserverRow
		if err == nil {
			ts, err = a.listTServers(cctx)
		}
		ccancel()
		if err != nil {
			last = err.Error()
		} else {
			leaders, live, learners := 0, 0, 0
			for _, m := range ms {
				if m.IsLeader {
					leaders++
				}
				if m.IsLearner {
					learners++
				}
			}
			for _, t := range ts {
				if t.State == "LIVE" {
					live++
				}
			}
			if len(ms) == want && leaders == 1 && learners == 0 && live >= len(c.st.Nodes) {
				return ms, nil
			}
			last = fmt.Sprintf("%d masters (%d leaders, %d learners), %d live tservers; want %d voting masters and %d live tservers", len(ms), leaders, learners, live, want, len(c.st.Nodes))
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("cluster not ready after %v: %s", c.wait, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *localCluster) printConnect(masters []masterRow) {
	isMaster := map[string]bool{}
	var maddrs []string
	for _, m := range masters {
		isMaster[m.RPCAddr] = true
		maddrs = append(maddrs, m.RPCAddr)
	}
	fmt.Fprintf(c.out, "\nShaleDB cluster of %d nodes (RF %d) is ready in %s\n\n", len(c.st.Nodes), c.st.RF, c.base)
	t := table{header: []string{"NODE", "RPC", "PID", "MASTER", "WEB UI"}}
	for _, n := range c.st.Nodes {
		t.rows = append(t.rows, []string{strconv.Itoa(n.Index), c.st.rpcAddr(n), strconv.Itoa(n.PID),
			yesNo(isMaster[c.st.rpcAddr(n)]), "http://" + c.st.httpAddr(n) + "/"})
	}
	_ = t.write(c.out)
	ma := strings.Join(maddrs, ",")
	fmt.Fprintf(c.out, "\nmasters:  %s\n", ma)
	if c.st.YSQLPort != 0 {
		n := c.st.Nodes[0]
		fmt.Fprintf(c.out, "ysql:     psql -h %s -p %d -U yugabyte   (every node serves YSQL on port %d)\n", n.IP, c.st.YSQLPort, c.st.YSQLPort)
	}
	fmt.Fprintf(c.out, "inspect:  %s admin --master-addrs %s list-tservers\n", self(), ma)
	fmt.Fprintf(c.out, "status:   %s cluster status --base-dir %s\n", self(), c.base)
	fmt.Fprintf(c.out, "stop:     %s cluster destroy --base-dir %s   (stops the nodes and deletes their data)\n", self(), c.base)
}

func (c *localCluster) status(ctx context.Context) error {
	fmt.Fprintf(c.out, "cluster in %s: %d nodes, RF %d, ports rpc %d http %d\n\n", c.base, len(c.st.Nodes), c.st.RF, c.st.RPCPort, c.st.HTTPPort)
	t := table{header: []string{"NODE", "RPC", "PID", "PROCESS", "NODE ID", "DATA DIR"}}
	for _, n := range c.st.Nodes {
		dir := nodeDir(c.base, n.Index)
		state, pid := "stopped", "-"
		if n.PID > 0 {
			pid = strconv.Itoa(n.PID)
			if processAlive(n.PID, dir) {
				state = "running"
			}
		}
		id := "-"
		if nid, _, err := nodeIdentity(dir); err == nil {
			id = u64(nid)
		}
		t.rows = append(t.rows, []string{strconv.Itoa(n.Index), c.st.rpcAddr(n), pid, state, id, dir})
	}
	if err := t.write(c.out); err != nil {
		return err
	}
	a := c.admin()
	defer a.close()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ms, err := a.listMasters(cctx)
	if err != nil {
		fmt.Fprintf(c.out, "\nmasters: %v\n", err)
		return nil
	}
	fmt.Fprintln(c.out, "\nmasters:")
	_ = mastersTable(ms).write(c.out)
	ts, err := a.listTServers(cctx)
	if err != nil {
		fmt.Fprintf(c.out, "\ntservers: %v\n", err)
		return nil
	}
	fmt.Fprintln(c.out, "\ntservers:")
	return tserversTable(ts, time.Now()).write(c.out)
}

func (c *localCluster) addNode(ctx context.Context) error {
	k, err := reserveNode(c.base)
	if err != nil {
		return err
	}
	join := c.st.addrs(k)
	c.st.Nodes = append(c.st.Nodes, clusterNode{Index: k, IP: fmt.Sprintf("127.0.0.%d", k)})
	n := &c.st.Nodes[len(c.st.Nodes)-1]
	l, err := c.launch(n, join)
	if err != nil {
		c.st.Nodes = c.st.Nodes[:len(c.st.Nodes)-1]
		_ = saveNodes(c.base, c.st, k) // give the index back
		return err
	}
	if err := saveNodes(c.base, c.st, k); err != nil {
		return err
	}
	a := c.admin()
	defer a.close()
	id, err := c.waitReady(ctx, a, k, l)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.out, "node %d added: %s, pid %d, node id %d, web UI http://%s/\n", k, c.st.rpcAddr(*n), l.pid, id, c.st.httpAddr(*n))
	return nil
}

func (c *localCluster) removeNode(ctx context.Context, k int) error {
	n, err := c.st.node(k)
	if err != nil {
		return err
	}
	dir := nodeDir(c.base, k)
	id, _, err := nodeIdentity(dir)
	if err != nil {
		return fmt.Errorf("node %d has no identity yet: %w", k, err)
	}
	a := c.admin()
	defer a.close()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	ms, err := a.listMasters(cctx)
	var ts []tserverRow
	if err == nil {
		ts, err = a.listTServers(cctx)
	}
	cancel()
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.NodeID == id {
			return fmt.Errorf("node %d (node id %d) is a master; masters cannot be removed (stop-node stops it)", k, id)
		}
	}
	others := 0
	for _, t := range ts {
		if t.NodeID != id && t.State == "LIVE" && !t.Blacklisted {
			others++
		}
	}
	if others < c.st.RF {
		return fmt.Errorf("removing node %d would leave %d live tservers, fewer than RF %d", k, others, c.st.RF)
	}
	cctx, cancel = context.WithTimeout(ctx, 10*time.Second)
	err = a.blacklist(cctx, id, false)
	cancel()
	if err != nil {
		return err
	}
	fmt.Fprintf(c.out, "node %d (node id %d) blacklisted; waiting until it holds no replicas\n", k, id)
	if err := c.waitDrained(ctx, a, id); err != nil {
		return err
	}
	killed, err := stopProcess(n.PID, dir, stopGrace)
	if err != nil {
		return err
	}
	var nodes []clusterNode
	for _, x := range c.st.Nodes {
		if x.Index != k {
			nodes = append(nodes, x)
		}
	}
	c.st.Nodes = nodes
	if err := saveNodes(c.base, c.st, k); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	how := "stopped"
	if killed {
		how = "killed after " + stopGrace.String()
	}
	fmt.Fprintf(c.out, "node %d drained, %s and removed (its data dir is deleted)\n", k, how)
	return nil
}

// waitDrained waits until the master counts no replica on node id. A drain
// can take long (it moves data); there is no deadline but ctx's.
func (c *localCluster) waitDrained(ctx context.Context, a *adminConn, id uint64) error {
	lastPrint := time.Now()
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ts, err := a.listTServers(cctx)
		cancel()
		if err != nil && ctx.Err() != nil {
			return err
		}
		for _, t := range ts {
			if t.NodeID != id {
				continue
			}
			if t.Tablets == 0 {
				return nil
			}
			if time.Since(lastPrint) > 5*time.Second {
				fmt.Fprintf(c.out, "  node id %d still holds %d replicas (%d leaders)\n", id, t.Tablets, t.Leaders)
				lastPrint = time.Now()
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *localCluster) stopNode(_ context.Context, k int) error {
	n, err := c.st.node(k)
	if err != nil {
		return err
	}
	dir := nodeDir(c.base, k)
	if !processAlive(n.PID, dir) {
		fmt.Fprintf(c.out, "node %d is not running\n", k)
	} else {
		killed, err := stopProcess(n.PID, dir, stopGrace)
		if err != nil {
			return err
		}
		if killed {
			fmt.Fprintf(c.out, "node %d killed (did not stop within %v of SIGTERM)\n", k, stopGrace)
		} else {
			fmt.Fprintf(c.out, "node %d stopped\n", k)
		}
	}
	n.PID = 0
	return saveNodes(c.base, c.st, k)
}

func (c *localCluster) startNode(ctx context.Context, k int) error {
	n, err := c.st.node(k)
	if err != nil {
		return err
	}
	if processAlive(n.PID, nodeDir(c.base, k)) {
		return fmt.Errorf("node %d is running already (pid %d)", k, n.PID)
	}
	l, err := c.launch(n, c.st.addrs(k))
	if err != nil {
		return err
	}
	if err := saveNodes(c.base, c.st, k); err != nil {
		return err
	}
	if running, need := c.mastersRunning(); running < need {
		// Nothing can be ready before a majority of the masters runs:
		// the first node of a stopped cluster waited out --wait, then
		// failed, though it was fine.
		fmt.Fprintf(c.out, "node %d started: %s, pid %d; the cluster serves once %d of its %d master nodes run (%d do): start the others\n",
			k, c.st.rpcAddr(*n), l.pid, need, c.st.RF, running)
		return nil
	}
	a := c.admin()
	defer a.close()
	id, err := c.waitReady(ctx, a, k, l)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.out, "node %d started: %s, pid %d, node id %d\n", k, c.st.rpcAddr(*n), l.pid, id)
	return nil
}

// mastersRunning counts the running nodes among those that host the
// masters (the first RF nodes: the first node and, with RF 3 or more, the
// next joiners) and the majority they need.
func (c *localCluster) mastersRunning() (running, need int) {
	nodes := slices.Clone(c.st.Nodes)
	slices.SortFunc(nodes, func(a, b clusterNode) int { return a.Index - b.Index })
	for _, n := range nodes[:min(c.st.RF, len(nodes))] {
		if processAlive(n.PID, nodeDir(c.base, n.Index)) {
			running++
		}
	}
	return running, c.st.RF/2 + 1
}

func (c *localCluster) destroy() error {
	if _, err := os.Stat(c.base); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(c.out, "no cluster in %s: nothing to destroy\n", c.base)
		return nil
	}
	st, err := loadClusterState(c.base)
	if err != nil {
		return fmt.Errorf("%s holds no %s: not a cluster base dir, left alone", c.base, clusterStateFile)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, n := range st.Nodes {
		dir := nodeDir(c.base, n.Index)
		pids := []int{n.PID}
		if pid, ok := runningPID(dir); ok && pid != n.PID {
			pids = append(pids, pid) // started by hand on this dir
		}
		for _, pid := range pids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := stopProcess(pid, dir, stopGrace); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("node %d: %w", n.Index, err))
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := os.RemoveAll(c.base); err != nil {
		return err
	}
	fmt.Fprintf(c.out, "stopped %d nodes and removed %s\n", len(st.Nodes), c.base)
	return nil
}
