package cli

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/shaledb/shaledb/internal/client"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/rpc"
	"github.com/shaledb/shaledb/internal/server"
	tspb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// adminOptions are the flags shared by the `shale admin` subcommands.
type adminOptions struct {
	MasterAddrs []string
	JSON        bool
	Timeout     time.Duration
}

func newAdminCmd() *cobra.Command {
	o := &adminOptions{}
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Inspect and operate a cluster through its masters",
		Long: `Inspect and operate a cluster through its masters. Every subcommand prints an aligned
table, or with --json one JSON document on stdout for scripts.

A TABLE is namespace.name, or a bare name when only one namespace holds a table of
that name; a YSQL table also by its SQL name (orders, or sales.orders outside the
public schema). A TABLET is a tablet id (see list-tablets). A NODE is a node id (see
list-tservers) or a node's RPC address.`,
	}
	pf := cmd.PersistentFlags()
	pf.StringSliceVar(&o.MasterAddrs, "master-addrs", []string{fmt.Sprintf("127.0.0.1:%d", server.DefaultRPCPort)},
		"master addresses, IP or IP:port, comma-separated (any master will do: calls follow the leader)")
	pf.BoolVar(&o.JSON, "json", false, "print one JSON document instead of a table")
	pf.DurationVar(&o.Timeout, "timeout", 10*time.Second, "give up when no master leader answers within this time")

	var toNode uint64
	stepdown := &cobra.Command{
		Use:   "leader-stepdown TABLET",
		Short: "Move a tablet's leadership away from its current leader",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseTabletID(args[0])
			if err != nil {
				return err
			}
			return o.run(cmd, func(ctx context.Context, a *adminConn) (any, table, error) {
				_, err := masterCall(ctx, a, "LeaderStepdown", func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.LeaderStepdownResponse, error) {
					return mc.LeaderStepdown(ctx, &masterpb.LeaderStepdownRequest{TabletId: id, ToNode: toNode})
				})
				if err != nil {
					return nil, table{}, err
				}
				msg := fmt.Sprintf("tablet %d: leader stepped down", id)
				return map[string]any{"tablet_id": id, "to_node": toNode, "ok": true}, messageTable(msg), nil
			})
		},
	}
	stepdown.Flags().Uint64Var(&toNode, "to", 0, "node id to move the leadership to (0: let the tablet choose)")

	cmd.AddCommand(
		&cobra.Command{
			Use:   "list-masters",
			Short: "List the masters and which one leads",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return o.run(cmd, func(ctx context.Context, a *adminConn) (any, table, error) {
					rows, err := a.listMasters(ctx)
					return map[string]any{"masters": rows}, mastersTable(rows), err
				})
			},
		},
		&cobra.Command{
			Use:   "list-tservers",
			Short: "List the tablet servers with their state and replica counts",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return o.run(cmd, func(ctx context.Context, a *adminConn) (any, table, error) {
					rows, err := a.listTServers(ctx)
					return map[string]any{"tservers": rows}, tserversTable(rows, time.Now()), err
				})
			},
		},
		&cobra.Command{
			Use:   "list-tables",
			Short: "List the tables",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return o.run(cmd, func(ctx context.Context, a *adminConn) (any, table, error) {
					rows, err := a.listTables(ctx)
					return map[string]any{"tables": rows}, tablesTable(rows), err
				})
			},
		},
		&cobra.Command{
			Use:   "list-tablets TABLE",
			Short: "List a table's tablets with their replicas, leader and size",
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return o.run(cmd, func(ctx context.Context, a *adminConn) (any, table, error) {
					t, rows, err := a.listTablets(ctx, args[0])
					return map[string]any{"table": t, "tablets": rows}, tabletsTable(rows), err
				})
			},
		},
		stepdown,
		&cobra.Command{
			Use:   "split-tablet TABLET",
			Short: "Split a tablet at its middle key",
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				id, err := parseTabletID(args[0])
				if err != nil {
					return err
				}
				return o.run(cmd, func(ctx context.Context, a *adminConn) (any, table, error) {
					r, err := masterCall(ctx, a, "SplitTablet", func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.SplitTabletResponse, error) {
						return mc.SplitTablet(ctx, &masterpb.SplitTabletRequest{TabletId: id})
					})
					if err != nil {
						return nil, table{}, err
					}
					left, right := r.GetLeft(), r.GetRight()
					doc := map[string]any{"tablet_id": id, "left": left.GetTabletId(), "right": right.GetTabletId()}
					msg := fmt.Sprintf("tablet %d split into %d (%s) and %d (%s)", id,
						left.GetTabletId(), tabletRange(left), right.GetTabletId(), tabletRange(right))
					return doc, messageTable(msg), nil
				})
			},
		},
		newMoveReplicaCmd(o),
		newBlacklistCmd(o),
	)
	return cmd
}

func newMoveReplicaCmd(o *adminOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "move-replica TABLET FROM_NODE TO_NODE",
		Short: "Move a tablet's replica from one tserver to another",
		Long: `Move tablet TABLET's replica on tserver FROM_NODE to tserver TO_NODE, which must be
live, not blacklisted, and not hold a replica of the tablet yet. The master does it the
way its balancer moves replicas: TO_NODE joins as a learner and receives a snapshot, is
promoted to voter once caught up, leadership leaves FROM_NODE if it has it, and
FROM_NODE's replica is removed. The balancer leaves the tablet alone meanwhile (it may
rebalance later, as with any move).

The command waits for the move up to --timeout. A big tablet's snapshot takes longer
than the default: if the time runs out, the master carries on with the move, and
running the same command again waits for it.`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseTabletID(args[0])
			if err != nil {
				return err
			}
			return o.run(cmd, func(ctx context.Context, a *adminConn) (any, table, error) {
				from, err := a.resolveNode(ctx, args[1])
				if err != nil {
					return nil, table{}, err
				}
				to, err := a.resolveNode(ctx, args[2])
				if err != nil {
					return nil, table{}, err
				}
				r, err := a.moveReplica(ctx, id, from, to)
				if err != nil {
					return nil, table{}, err
				}
				return moveReplicaResult(id, from, to, r)
			})
		},
	}
}

// moveReplica asks the master to move a replica and waits for the move
// until ctx is nearly done. A master answers before its call's deadline
// (at most 10 s, see client.Masters) with how far the move got; asking
// again with the same arguments waits for the same move.
func (a *adminConn) moveReplica(ctx context.Context, tablet, from, to uint64) (*masterpb.MoveReplicaResponse, error) {
	for {
		r, err := masterCall(ctx, a, "MoveReplica", func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MoveReplicaResponse, error) {
			return mc.MoveReplica(ctx, &masterpb.MoveReplicaRequest{TabletId: tablet, FromNode: from, ToNode: to})
		})
		if err != nil || r.GetDone() {
			return r, err
		}
		if d, ok := ctx.Deadline(); ok && time.Until(d) < time.Second {
			return r, nil
		}
	}
}

// moveReplicaResult is what move-replica prints: a finished move, or an
// error saying where an unfinished one is.
func moveReplicaResult(tablet, from, to uint64, r *masterpb.MoveReplicaResponse) (any, table, error) {
	took := (time.Duration(r.GetElapsedMs()) * time.Millisecond).Round(100 * time.Millisecond)
	if !r.GetDone() {
		return nil, table{}, fmt.Errorf("tablet %d: the replica is still moving from node %d to node %d (step %s, %v so far); "+
			"the master carries on with it: see list-tablets, or run this again (with a longer --timeout) to wait for it",
			tablet, from, to, r.GetStep(), took)
	}
	replicas := []replicaRow{}
	for _, rep := range r.GetTablet().GetReplicas() {
		replicas = append(replicas, replicaRow{NodeID: rep.GetNodeId(), Addr: rep.GetAddr(), Role: rep.GetRole().String()})
	}
	doc := map[string]any{"tablet_id": tablet, "from_node": from, "to_node": to, "done": true,
		"leader_moved": r.GetLeaderMoved(), "elapsed_ms": r.GetElapsedMs(),
		"leader_node": r.GetTablet().GetLeaderNode(), "replicas": replicas}
	msg := fmt.Sprintf("tablet %d: replica moved from node %d to node %d in %v", tablet, from, to, took)
	if r.GetLeaderMoved() {
		msg = fmt.Sprintf("tablet %d: replica moved from node %d to node %d in %v (leadership moved off node %d first)", tablet, from, to, took, from)
	}
	return doc, messageTable(msg), nil
}

func newBlacklistCmd(o *adminOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "blacklist add|remove NODE",
		Short: "Drain a tserver of its replicas (add), or let it hold replicas again (remove)",
	}
	for _, op := range []string{"add", "remove"} {
		remove := op == "remove"
		cmd.AddCommand(&cobra.Command{
			Use:   op + " NODE",
			Short: map[bool]string{false: "Blacklist a node: the balancer moves its replicas away", true: "Take a node off the blacklist"}[remove],
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return o.run(cmd, func(ctx context.Context, a *adminConn) (any, table, error) {
					id, err := a.resolveNode(ctx, args[0])
					if err != nil {
						return nil, table{}, err
					}
					if err := a.blacklist(ctx, id, remove); err != nil {
						return nil, table{}, err
					}
					msg := fmt.Sprintf("node %d blacklisted: the balancer drains it", id)
					if remove {
						msg = fmt.Sprintf("node %d removed from the blacklist", id)
					}
					return map[string]any{"node_id": id, "blacklisted": !remove}, messageTable(msg), nil
				})
			},
		})
	}
	return cmd
}

// run dials the masters, runs f and prints its result as JSON or a table.
func (o *adminOptions) run(cmd *cobra.Command, f func(ctx context.Context, a *adminConn) (any, table, error)) error {
	addrs, err := normalizeJoin("--master-addrs", o.MasterAddrs, server.DefaultRPCPort)
	if err != nil {
		return err
	}
	if len(addrs) == 0 {
		return errors.New("--master-addrs: no address")
	}
	a := newAdminConn(addrs)
	defer a.close()
	ctx, cancel := context.WithTimeout(cmd.Context(), o.Timeout)
	defer cancel()
	doc, t, err := f(ctx, a)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if o.JSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	return t.write(out)
}

func parseTabletID(s string) (uint64, error) {
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil || id == 0 {
		return 0, fmt.Errorf("tablet %q: want a tablet id (a positive number; see list-tablets)", s)
	}
	return id, nil
}

// adminConn calls the master leader of one cluster.
type adminConn struct {
	pool  *rpc.Pool
	ms    *client.Masters
	addrs []string
}

func newAdminConn(addrs []string) *adminConn {
	pool := rpc.NewPool()
	return &adminConn{pool: pool, ms: client.NewMasters(pool, addrs), addrs: addrs}
}

func (a *adminConn) close() { a.pool.Close() }

// errUnimplemented stops client.Masters from retrying a call the master
// does not implement.
var errUnimplemented = &masterpb.MasterError{Code: masterpb.MasterError_INTERNAL, Message: "unimplemented"}

// masterCall runs one RPC at the master leader and turns failures into
// messages for people: an unreachable cluster, an RPC the master does not
// implement, or the master's own error.
func masterCall[R interface{ GetError() *masterpb.MasterError }](ctx context.Context, a *adminConn, name string,
	f func(ctx context.Context, mc masterpb.MasterClient) (R, error)) (R, error) {
	var out R
	var unimplemented error
	err := a.ms.Call(ctx, func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.MasterError, error) {
		r, err := f(ctx, mc)
		if status.Code(err) == codes.Unimplemented {
			unimplemented = err
			return errUnimplemented, nil
		}
		out = r
		return r.GetError(), err
	})
	switch {
	case unimplemented != nil:
		return out, fmt.Errorf("%s: the master does not implement it yet (%v)", name, status.Convert(unimplemented).Message())
	case err == nil:
		return out, nil
	}
	var me *client.MasterError
	if errors.As(err, &me) {
		if me.Message == "" {
			return out, fmt.Errorf("%s: %s", name, me.Code)
		}
		return out, fmt.Errorf("%s: %s", name, me.Message)
	}
	if ctx.Err() != nil {
		return out, fmt.Errorf("no master leader at %s answered %s in time (is the cluster running? --master-addrs): %w",
			strings.Join(a.addrs, ","), name, err)
	}
	return out, fmt.Errorf("%s: %w", name, err)
}

// The rows printed by the admin commands; their JSON form is the --json
// output.

type masterRow struct {
	NodeID   uint64 `json:"node_id"`
	RPCAddr  string `json:"rpc_addr"`
	HTTPAddr string `json:"http_addr"`
	IsLeader bool   `json:"is_leader"`
	// IsLearner: a new master not yet promoted to a voter of the catalog.
	IsLearner bool `json:"is_learner"`
}

type tserverRow struct {
	NodeID          uint64 `json:"node_id"`
	RPCAddr         string `json:"rpc_addr"`
	HTTPAddr        string `json:"http_addr"`
	Placement       string `json:"placement"`
	State           string `json:"state"`
	Blacklisted     bool   `json:"blacklisted"`
	Tablets         uint32 `json:"tablets"`
	Leaders         uint32 `json:"leaders"`
	DataBytes       uint64 `json:"data_bytes"`
	LastHeartbeatMs int64  `json:"last_heartbeat_unix_ms"`
}

type tableRow struct {
	TableID           uint32 `json:"table_id"`
	Namespace         string `json:"namespace"`
	Name              string `json:"name"`
	State             string `json:"state"`
	Partitioning      string `json:"partitioning"`
	NumTablets        uint32 `json:"num_tablets,omitempty"`
	ReplicationFactor int32  `json:"replication_factor"`
}

type replicaRow struct {
	NodeID uint64 `json:"node_id"`
	Addr   string `json:"addr"`
	Role   string `json:"role"`
}

type tabletRow struct {
	TabletID   uint64       `json:"tablet_id"`
	Range      string       `json:"range"`
	LeaderNode uint64       `json:"leader_node"`
	Replicas   []replicaRow `json:"replicas"`
	SizeBytes  uint64       `json:"size_bytes"`
}

func (a *adminConn) listMasters(ctx context.Context) ([]masterRow, error) {
	r, err := masterCall(ctx, a, "ListMasters", func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.ListMastersResponse, error) {
		return mc.ListMasters(ctx, &masterpb.ListMastersRequest{})
	})
	if err != nil {
		return nil, err
	}
	rows := []masterRow{}
	for _, m := range r.GetMasters() {
		rows = append(rows, masterRow{NodeID: m.GetNodeId(), RPCAddr: m.GetRpcAddr(), HTTPAddr: m.GetHttpAddr(), IsLeader: m.GetIsLeader(), IsLearner: m.GetIsLearner()})
	}
	return rows, nil
}

func (a *adminConn) listTServers(ctx context.Context) ([]tserverRow, error) {
	r, err := masterCall(ctx, a, "ListTServers", func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.ListTServersResponse, error) {
		return mc.ListTServers(ctx, &masterpb.ListTServersRequest{})
	})
	if err != nil {
		return nil, err
	}
	rows := []tserverRow{}
	for _, t := range r.GetTservers() {
		rows = append(rows, tserverRow{
			NodeID: t.GetNodeId(), RPCAddr: t.GetRpcAddr(), HTTPAddr: t.GetHttpAddr(), Placement: placementString(t.GetPlacement()),
			State: t.GetState().String(), Blacklisted: t.GetBlacklisted(), Tablets: t.GetTablets(), Leaders: t.GetLeaders(),
			DataBytes: t.GetDataBytes(), LastHeartbeatMs: t.GetLastHeartbeatUnixMs(),
		})
	}
	return rows, nil
}

func placementString(p *masterpb.Placement) string {
	if p == nil || (p.GetCloud() == "" && p.GetRegion() == "" && p.GetZone() == "") {
		return ""
	}
	return p.GetCloud() + "." + p.GetRegion() + "." + p.GetZone()
}

func tableRowOf(t *masterpb.TableInfo) tableRow {
	r := tableRow{TableID: t.GetTableId(), Namespace: t.GetNamespace(), Name: t.GetName(), State: t.GetState().String(),
		Partitioning: strings.ToLower(t.GetPartitioning().GetKind().String()), ReplicationFactor: t.GetReplicationFactor()}
	if t.GetPartitioning().GetKind() == masterpb.Partitioning_HASH {
		r.NumTablets = t.GetPartitioning().GetNumTablets()
	} else {
		r.NumTablets = uint32(len(t.GetPartitioning().GetSplitPoints())) + 1
	}
	return r
}

func (a *adminConn) listTables(ctx context.Context) ([]tableRow, error) {
	r, err := masterCall(ctx, a, "ListTables", func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.ListTablesResponse, error) {
		return mc.ListTables(ctx, &masterpb.ListTablesRequest{})
	})
	if err != nil {
		return nil, err
	}
	rows := []tableRow{}
	for _, t := range r.GetTables() {
		rows = append(rows, tableRowOf(t))
	}
	return rows, nil
}

// resolveTable turns a table argument into a namespace and a name (see
// matchTable).
func (a *adminConn) resolveTable(ctx context.Context, arg string) (ns, name string, err error) {
	tables, err := a.listTables(ctx)
	if err != nil {
		return "", "", err
	}
	return matchTable(tables, arg)
}

// matchTable finds arg among tables: namespace.name exactly, else a name
// unique across namespaces. A YSQL table is stored as "schema:name" in
// namespace "ysql:database", so for those schema.name and the bare SQL
// name match too (`list-tablets bench_select`, as a psql user names it).
func matchTable(tables []tableRow, arg string) (ns, name string, err error) {
	if arg == "" {
		return "", "", errors.New("no table named: want namespace.name or name")
	}
	var found []tableRow
	for _, t := range tables {
		if t.Namespace+"."+t.Name == arg {
			return t.Namespace, t.Name, nil
		}
		sqlName, _ := strings.CutPrefix(t.Name, "public:")
		if t.Name == arg || sqlName == arg || strings.Replace(t.Name, ":", ".", 1) == arg {
			found = append(found, t)
		}
	}
	switch len(found) {
	case 0:
		return "", "", fmt.Errorf("table %q not found (see list-tables)", arg)
	case 1:
		return found[0].Namespace, found[0].Name, nil
	}
	names := make([]string, len(found))
	for i, t := range found {
		names[i] = t.Namespace + "." + t.Name
	}
	return "", "", fmt.Errorf("table %q is ambiguous: %s; name it as namespace.name", arg, strings.Join(names, ", "))
}

func (a *adminConn) listTablets(ctx context.Context, arg string) (tableRow, []tabletRow, error) {
	ns, name, err := a.resolveTable(ctx, arg)
	if err != nil {
		return tableRow{}, nil, err
	}
	r, err := masterCall(ctx, a, "GetTable", func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.GetTableResponse, error) {
		return mc.GetTable(ctx, &masterpb.GetTableRequest{Namespace: ns, Name: name})
	})
	if err != nil {
		return tableRow{}, nil, err
	}
	rows := []tabletRow{}
	for _, t := range r.GetTablets() {
		row := tabletRow{TabletID: t.GetTablet().GetTabletId(), Range: tabletRange(t.GetTablet()), LeaderNode: t.GetLeaderNode(),
			SizeBytes: t.GetSizeBytes(), Replicas: []replicaRow{}}
		for _, rep := range t.GetReplicas() {
			row.Replicas = append(row.Replicas, replicaRow{NodeID: rep.GetNodeId(), Addr: rep.GetAddr(), Role: rep.GetRole().String()})
		}
		rows = append(rows, row)
	}
	return tableRowOf(r.GetTable()), rows, nil
}

// tabletRange shows a hash tablet's hash range, or a range tablet's key
// span in hex.
func tabletRange(d *tspb.TabletDescriptor) string {
	if d == nil {
		return ""
	}
	if d.GetHashEnd() != 0 {
		return fmt.Sprintf("hash [0x%04x, 0x%04x)", d.GetHashStart(), d.GetHashEnd())
	}
	end := "end"
	if e := d.GetSpan().GetEnd(); len(e) > 0 {
		end = hex.EncodeToString(e)
	}
	return fmt.Sprintf("[%s, %s)", hex.EncodeToString(d.GetSpan().GetStart()), end)
}

// resolveNode accepts a node id or a node's RPC address (IP or IP:port).
func (a *adminConn) resolveNode(ctx context.Context, arg string) (uint64, error) {
	if id, err := strconv.ParseUint(arg, 10, 64); err == nil && id > 0 {
		return id, nil
	}
	if net.ParseIP(arg) == nil {
		if h, _, err := net.SplitHostPort(arg); err != nil || net.ParseIP(h) == nil {
			return 0, fmt.Errorf("node %q: want a node id or an RPC address", arg)
		}
	}
	ts, err := a.listTServers(ctx)
	if err != nil {
		return 0, err
	}
	var match []uint64
	for _, t := range ts {
		host, _, _ := net.SplitHostPort(t.RPCAddr)
		if t.RPCAddr == arg || host == arg {
			match = append(match, t.NodeID)
		}
	}
	switch len(match) {
	case 0:
		return 0, fmt.Errorf("no tserver at %s (see list-tservers)", arg)
	case 1:
		return match[0], nil
	}
	return 0, fmt.Errorf("several tservers at %s: %v; name the node by id", arg, match)
}

func (a *adminConn) blacklist(ctx context.Context, node uint64, remove bool) error {
	_, err := masterCall(ctx, a, "Blacklist", func(ctx context.Context, mc masterpb.MasterClient) (*masterpb.BlacklistResponse, error) {
		return mc.Blacklist(ctx, &masterpb.BlacklistRequest{NodeId: node, Remove: remove})
	})
	return err
}

// table is what a command prints without --json: a header and rows,
// aligned with tabwriter.
type table struct {
	header []string
	rows   [][]string
}

func messageTable(msg string) table { return table{rows: [][]string{{msg}}} }

func (t table) write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(t.header) > 0 {
		fmt.Fprintln(tw, strings.Join(t.header, "\t"))
	}
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

func mastersTable(rows []masterRow) table {
	t := table{header: []string{"NODE", "RPC", "HTTP", "ROLE"}}
	for _, r := range rows {
		role := "FOLLOWER"
		switch {
		case r.IsLeader:
			role = "LEADER"
		case r.IsLearner:
			role = "LEARNER"
		}
		t.rows = append(t.rows, []string{u64(r.NodeID), r.RPCAddr, r.HTTPAddr, role})
	}
	return t
}

func tserversTable(rows []tserverRow, now time.Time) table {
	t := table{header: []string{"NODE", "RPC", "HTTP", "PLACEMENT", "STATE", "BLACKLISTED", "TABLETS", "LEADERS", "DATA", "HEARTBEAT"}}
	for _, r := range rows {
		hb := "never"
		if r.LastHeartbeatMs > 0 {
			hb = now.Sub(time.UnixMilli(r.LastHeartbeatMs)).Round(100*time.Millisecond).String() + " ago"
		}
		t.rows = append(t.rows, []string{u64(r.NodeID), r.RPCAddr, r.HTTPAddr, dash(r.Placement), r.State, yesNo(r.Blacklisted),
			u64(uint64(r.Tablets)), u64(uint64(r.Leaders)), humanBytes(r.DataBytes), hb})
	}
	return t
}

func tablesTable(rows []tableRow) table {
	t := table{header: []string{"ID", "NAMESPACE", "NAME", "STATE", "PARTITIONING", "TABLETS", "RF"}}
	for _, r := range rows {
		t.rows = append(t.rows, []string{u64(uint64(r.TableID)), r.Namespace, r.Name, r.State, r.Partitioning,
			u64(uint64(r.NumTablets)), strconv.Itoa(int(r.ReplicationFactor))})
	}
	return t
}

func tabletsTable(rows []tabletRow) table {
	t := table{header: []string{"TABLET", "RANGE", "LEADER", "REPLICAS", "SIZE"}}
	for _, r := range rows {
		var reps []string
		for _, rep := range r.Replicas {
			s := u64(rep.NodeID)
			if rep.Role != masterpb.Replica_VOTER.String() {
				s += "(" + strings.ToLower(rep.Role) + ")"
			}
			reps = append(reps, s)
		}
		leader := "-"
		if r.LeaderNode != 0 {
			leader = u64(r.LeaderNode)
		}
		t.rows = append(t.rows, []string{u64(r.TabletID), r.Range, leader, dash(strings.Join(reps, ",")), humanBytes(r.SizeBytes)})
	}
	return t
}

func u64(v uint64) string { return strconv.FormatUint(v, 10) }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// humanBytes prints a size with a binary unit (1.5 KiB).
func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
