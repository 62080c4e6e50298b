package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// clusterState is a local cluster as `shale cluster` keeps it in
// base/cluster.json. Node K runs on 127.0.0.K with its data in base/nodeK.
type clusterState struct {
	RF       int `json:"rf"`
	RPCPort  int `json:"rpc_port"`
	HTTPPort int `json:"http_port"`
	// YSQLPort is every node's PostgreSQL port (0: YSQL off).
	YSQLPort int `json:"ysql_port,omitempty"`
	// FollowerUnavailableTimeout is passed to every node ("" for the
	// default).
	FollowerUnavailableTimeout string `json:"follower_unavailable_timeout,omitempty"`
	// MaxSQLMemory is passed to every node: the nodes share one machine,
	// so each gets its part of the 25% one node alone would take.
	MaxSQLMemory string        `json:"max_sql_memory,omitempty"`
	Nodes        []clusterNode `json:"nodes"`
}

type clusterNode struct {
	Index int    `json:"index"`
	IP    string `json:"ip"`
	// PID of the node's process as last started (0: stopped by us).
	PID int `json:"pid"`
}

const clusterStateFile = "cluster.json"

func nodeDir(base string, k int) string { return filepath.Join(base, fmt.Sprintf("node%d", k)) }

func (st *clusterState) rpcAddr(n clusterNode) string {
	return net.JoinHostPort(n.IP, strconv.Itoa(st.RPCPort))
}

func (st *clusterState) ysqlAddr(n clusterNode) string {
	return net.JoinHostPort(n.IP, strconv.Itoa(st.YSQLPort))
}

func (st *clusterState) httpAddr(n clusterNode) string {
	return net.JoinHostPort(n.IP, strconv.Itoa(st.HTTPPort))
}

// addrs are the RPC addresses of every node but skip.
func (st *clusterState) addrs(skip int) []string {
	var out []string
	for _, n := range st.Nodes {
		if n.Index != skip {
			out = append(out, st.rpcAddr(n))
		}
	}
	return out
}

func (st *clusterState) node(k int) (*clusterNode, error) {
	for i := range st.Nodes {
		if st.Nodes[i].Index == k {
			return &st.Nodes[i], nil
		}
	}
	var have []string
	for _, n := range st.Nodes {
		have = append(have, strconv.Itoa(n.Index))
	}
	return nil, fmt.Errorf("no node %d in this cluster (nodes: %s)", k, strings.Join(have, " "))
}

func (st *clusterState) nextIndex() int {
	k := 0
	for _, n := range st.Nodes {
		k = max(k, n.Index)
	}
	return k + 1
}

func loadClusterState(base string) (*clusterState, error) {
	b, err := os.ReadFile(filepath.Join(base, clusterStateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no cluster in %s (create one with `shale cluster create --base-dir %s`)", base, base)
	}
	if err != nil {
		return nil, err
	}
	var st clusterState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(base, clusterStateFile), err)
	}
	return &st, nil
}

// save writes the state atomically, through a temporary file of its own.
func (st *clusterState) save(base string) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(base, clusterStateFile+".*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(base, clusterStateFile))
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

// saveNodes writes mine with the nodes touched as mine has them (added,
// changed, or removed when mine has no such node) over what the state
// file holds now, which other commands may have changed meanwhile (two
// `start-node` run at once): under a lock, so that their
// read-modify-writes do not interleave.
func saveNodes(base string, mine *clusterState, touched ...int) error {
	return updateState(base, func(disk *clusterState, fresh bool) error {
		if fresh {
			*disk = *mine // the first save of a new cluster
		} else {
			mergeNodes(disk, mine, touched)
		}
		return nil
	})
}

// updateState applies fn to the state file's contents under the lock and
// writes the result. fresh: there is no file yet, and disk is a zero
// state to fill. An error from fn writes nothing.
func updateState(base string, fn func(disk *clusterState, fresh bool) error) error {
	lock, err := os.OpenFile(filepath.Join(base, "cluster.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	disk, err := loadClusterState(base)
	if err != nil {
		if _, statErr := os.Stat(filepath.Join(base, clusterStateFile)); !errors.Is(statErr, os.ErrNotExist) {
			return err
		}
		disk = nil
	}
	fresh := disk == nil
	if fresh {
		disk = &clusterState{}
	}
	if err := fn(disk, fresh); err != nil {
		return err
	}
	return disk.save(base)
}

// reserveNode adds the next node (index and address, no process yet) to
// the state file under its lock, so that two add-node run at once take two
// indexes, and returns its index.
func reserveNode(base string) (int, error) {
	var k int
	err := updateState(base, func(disk *clusterState, _ bool) error {
		k = disk.nextIndex()
		if k > 254 {
			return errors.New("no address left for another node (127.0.0.254 is the last)")
		}
		if _, err := os.Stat(nodeDir(base, k)); err == nil {
			return fmt.Errorf("%s exists already; remove it first", nodeDir(base, k))
		}
		disk.Nodes = append(disk.Nodes, clusterNode{Index: k, IP: fmt.Sprintf("127.0.0.%d", k)})
		return nil
	})
	return k, err
}

// mergeNodes makes disk's nodes touched what mine has (added, changed, or
// removed when mine has no such node).
func mergeNodes(disk, mine *clusterState, touched []int) {
	for _, k := range touched {
		var nodes []clusterNode
		for _, n := range disk.Nodes {
			if n.Index != k {
				nodes = append(nodes, n)
			}
		}
		if n, err := mine.node(k); err == nil {
			nodes = append(nodes, *n)
		}
		slices.SortFunc(nodes, func(a, b clusterNode) int { return a.Index - b.Index })
		disk.Nodes = nodes
	}
}

// nodeIdentity reads the node id and cluster id a node keeps in its data
// dir (written by internal/server once the node has joined).
func nodeIdentity(dir string) (nodeID uint64, clusterID string, err error) {
	b, err := os.ReadFile(filepath.Join(dir, "identity.json"))
	if err != nil {
		return 0, "", err
	}
	var id struct {
		ClusterID string `json:"cluster_id"`
		NodeID    uint64 `json:"node_id"`
	}
	if err := json.Unmarshal(b, &id); err != nil {
		return 0, "", err
	}
	return id.NodeID, id.ClusterID, nil
}
