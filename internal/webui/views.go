package webui

import (
	"encoding/hex"
	"fmt"
	"time"

	"github.com/shaledb/shaledb/internal/master/masterpb"
	pb "github.com/shaledb/shaledb/internal/tserver/tserverpb"
)

// The data of each page, rendered as HTML or returned as JSON.

// Node identifies the node serving the page.
type Node struct {
	NodeID    uint64 `json:"node_id"`
	ClusterID string `json:"cluster_id"`
	RPCAddr   string `json:"rpc_addr"`
}

// Overview is the data of /.
type Overview struct {
	Node
	MasterLeader   *Master `json:"master_leader,omitempty"`
	Masters        int     `json:"masters"`
	TServersLive   int     `json:"tservers_live"`
	TServersDead   int     `json:"tservers_dead"`
	Tables         int     `json:"tables"`
	TabletReplicas uint64  `json:"tablet_replicas"`
	TabletLeaders  uint64  `json:"tablet_leaders"`
	DataBytes      uint64  `json:"data_bytes"`
	LocalTablets   int     `json:"local_tablet_replicas"`
}

// Master is one row of /masters.
type Master struct {
	NodeID   uint64 `json:"node_id"`
	RPCAddr  string `json:"rpc_addr"`
	HTTPAddr string `json:"http_addr,omitempty"`
	Leader   bool   `json:"is_leader"`
}

// TServer is one row of /tservers.
type TServer struct {
	NodeID        uint64    `json:"node_id"`
	RPCAddr       string    `json:"rpc_addr"`
	HTTPAddr      string    `json:"http_addr,omitempty"`
	Placement     string    `json:"placement,omitempty"`
	State         string    `json:"state"`
	Blacklisted   bool      `json:"blacklisted"`
	LastHeartbeat time.Time `json:"last_heartbeat"`
	Tablets       uint32    `json:"tablets"`
	Leaders       uint32    `json:"leaders"`
	DataBytes     uint64    `json:"data_bytes"`
}

// Table is one row of /tables.
type Table struct {
	ID                uint32 `json:"table_id"`
	Namespace         string `json:"namespace"`
	Name              string `json:"name"`
	Partitioning      string `json:"partitioning"`
	Tablets           int    `json:"tablets"`
	ReplicationFactor int32  `json:"replication_factor"`
	State             string `json:"state"`
}

// TableDetail is the data of /tables/{id}.
type TableDetail struct {
	Table
	Columns    []Column   `json:"columns"`
	TabletList []TabletAt `json:"tablet_list"`
}

// Column is one column of a table's schema.
type Column struct {
	ID   uint32 `json:"id"`
	Name string `json:"name"`
	Type string `json:"type"`
	Key  string `json:"key,omitempty"` // "hash", "range" or ""
}

// TabletAt is one tablet of a table as the master knows it.
type TabletAt struct {
	ID         uint64    `json:"tablet_id"`
	Range      string    `json:"range"`
	Replicas   []Replica `json:"replicas"`
	LeaderNode uint64    `json:"leader_node"`
	SizeBytes  uint64    `json:"size_bytes"`
}

// Replica is one replica of a tablet.
type Replica struct {
	NodeID uint64 `json:"node_id"`
	Addr   string `json:"addr"`
	Role   string `json:"role"`
	Leader bool   `json:"is_leader"`
}

// LocalTablet is one row of /tablets: a replica hosted on this node.
type LocalTablet struct {
	ID           uint64   `json:"tablet_id"`
	TableID      uint32   `json:"table_id"`
	Range        string   `json:"range"`
	Role         string   `json:"role"`
	Term         uint64   `json:"term"`
	AppliedIndex uint64   `json:"applied_index"`
	LeaderNode   uint64   `json:"leader_node"`
	Voters       []uint64 `json:"voters"`
	Learners     []uint64 `json:"learners,omitempty"`
	HasLease     bool     `json:"has_lease"`
	SizeBytes    uint64   `json:"size_bytes"`
}

// rangeOf describes a tablet's partition: its hash range for a hash
// tablet, its key span otherwise.
func rangeOf(d *pb.TabletDescriptor) string {
	if d.GetHashStart() != 0 || d.GetHashEnd() != 0 {
		return fmt.Sprintf("hash [0x%04X, 0x%04X)", d.GetHashStart(), d.GetHashEnd())
	}
	end := "∞"
	if e := d.GetSpan().GetEnd(); len(e) > 0 {
		end = hex.EncodeToString(e)
	}
	return fmt.Sprintf("key [%s, %s)", hex.EncodeToString(d.GetSpan().GetStart()), end)
}

func placement(p *masterpb.Placement) string {
	if p == nil || p.GetCloud()+p.GetRegion()+p.GetZone() == "" {
		return ""
	}
	return p.GetCloud() + "." + p.GetRegion() + "." + p.GetZone()
}

func tableOf(t *masterpb.TableInfo, tablets int) Table {
	return Table{
		ID: t.GetTableId(), Namespace: t.GetNamespace(), Name: t.GetName(),
		Partitioning: t.GetPartitioning().GetKind().String(), Tablets: tablets,
		ReplicationFactor: t.GetReplicationFactor(), State: t.GetState().String(),
	}
}

func tabletAt(loc *masterpb.TabletLocation) TabletAt {
	out := TabletAt{ID: loc.GetTablet().GetTabletId(), Range: rangeOf(loc.GetTablet()), LeaderNode: loc.GetLeaderNode(),
		SizeBytes: loc.GetSizeBytes(), Replicas: []Replica{}}
	for _, r := range loc.GetReplicas() {
		out.Replicas = append(out.Replicas, Replica{NodeID: r.GetNodeId(), Addr: r.GetAddr(), Role: r.GetRole().String(),
			Leader: r.GetNodeId() == loc.GetLeaderNode()})
	}
	return out
}

func localTablet(st *pb.TabletStatus) LocalTablet {
	return LocalTablet{
		ID: st.GetTablet().GetTabletId(), TableID: st.GetTablet().GetTableId(), Range: rangeOf(st.GetTablet()),
		Role: st.GetRole().String(), Term: st.GetTerm(), AppliedIndex: st.GetAppliedIndex(), LeaderNode: st.GetLeaderNode(),
		Voters: st.GetVoters(), Learners: st.GetLearners(), HasLease: st.GetHasLease(), SizeBytes: st.GetSizeBytes(),
	}
}
