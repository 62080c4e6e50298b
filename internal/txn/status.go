package txn

import (
	"time"

	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/master/masterpb"
	"github.com/shaledb/shaledb/internal/tablet"
)

// The status table: one row per transaction, hash-sharded on the id and
// replicated like any table.
const (
	Namespace = "system"
	TableName = "transactions"
)

// Column ids of the status table.
const (
	ColTxnID     uint32 = 1
	ColState     uint32 = 2
	ColCommitHT  uint32 = 3
	ColHeartbeat uint32 = 4
)

// FinishedTTL is how long the record of a finished transaction is kept.
// Participants resolve a finished transaction's intents within seconds
// (the coordinator, readers and the tservers' cleanup loop all do); a
// record that expires before that would turn a committed transaction into
// an aborted one, hence the wide margin.
const FinishedTTL = 7 * 24 * time.Hour

// DefaultExpiry is how long a PENDING record lives without a heartbeat.
const DefaultExpiry = 5 * time.Second

// Schema is the status table's schema.
func Schema() *masterpb.Schema {
	return &masterpb.Schema{Columns: []*masterpb.ColumnSchema{
		{Id: ColTxnID, Name: "txn_id", Type: "bytes", IsHashKey: true},
		{Id: ColState, Name: "state", Type: "int64", Nullable: true},
		{Id: ColCommitHT, Name: "commit_ht", Type: "int64", Nullable: true},
		{Id: ColHeartbeat, Name: "heartbeat", Type: "int64", Nullable: true},
	}}
}

// Record is the content of a status record.
type Record struct {
	State     tablet.TxnState
	CommitHT  hlc.Timestamp
	Heartbeat hlc.Timestamp // the status tablet's time of the last heartbeat
}

// RecordOf decodes a status row (found false: no record).
func RecordOf(row docdb.Row, found bool) (Record, bool) {
	if !found {
		return Record{}, false
	}
	var r Record
	for _, c := range row.Columns {
		switch c.ID {
		case ColState:
			r.State = tablet.TxnState(c.Value.Int)
		case ColCommitHT:
			r.CommitHT = hlc.Timestamp(c.Value.Int)
		case ColHeartbeat:
			r.Heartbeat = hlc.Timestamp(c.Value.Int)
		}
	}
	if r.State == 0 {
		return Record{}, false
	}
	return r, true
}

// Op is an operation on a status record.
type Op int

// Status record operations.
const (
	OpGet Op = iota
	OpCreate
	OpHeartbeat
	OpCommit
	OpAbort
)

// Transition is the state machine of a status record. It runs on the
// status tablet's leader with the record's row latched: cur is the record
// (found false: none), now the leader's clock. It returns the record to
// write (write false: nothing to write) and the state to answer.
//
// The rules: a record is created PENDING and only a PENDING record changes,
// once, to COMMITTED (at commitHT, which the caller takes from its clock
// under the latch) or ABORTED; a PENDING record whose last heartbeat is
// older than expiry is ABORTED by whoever looks at it; a missing record
// reads as ABORTED (intents are written only after their record exists).
func Transition(op Op, cur Record, found bool, now, commitHT hlc.Timestamp, expiry time.Duration) (next Record, write bool, answer Record) {
	expired := found && cur.State == tablet.TxnPending && now.Time().Sub(cur.Heartbeat.Time()) > expiry
	aborted := Record{State: tablet.TxnAborted, Heartbeat: cur.Heartbeat}
	switch op {
	case OpCreate:
		if !found {
			r := Record{State: tablet.TxnPending, Heartbeat: now}
			return r, true, r
		}
	case OpGet, OpHeartbeat, OpCommit, OpAbort:
		if !found {
			if op == OpAbort {
				return aborted, true, aborted
			}
			return Record{}, false, aborted
		}
	}
	if cur.State != tablet.TxnPending {
		return Record{}, false, cur // finished: nothing changes
	}
	if expired {
		return aborted, true, aborted
	}
	switch op {
	case OpHeartbeat, OpCreate:
		r := cur
		r.Heartbeat = now
		return r, true, r
	case OpCommit:
		r := Record{State: tablet.TxnCommitted, CommitHT: commitHT, Heartbeat: cur.Heartbeat}
		return r, true, r
	case OpAbort:
		return aborted, true, aborted
	}
	return Record{}, false, cur
}

// WriteOps returns the write that stores r as the record of rowKey.
func WriteOps(rowKey []byte, r Record) []docdb.WriteOp {
	var ttl time.Duration
	if r.State != tablet.TxnPending {
		ttl = FinishedTTL
	}
	return []docdb.WriteOp{{
		Kind: docdb.OpPutRow, RowKey: rowKey, TTL: ttl,
		Columns: []docdb.ColumnValue{
			{ID: ColState, Value: docdb.Int64(int64(r.State))},
			{ID: ColCommitHT, Value: docdb.Int64(int64(r.CommitHT))},
			{ID: ColHeartbeat, Value: docdb.Int64(int64(r.Heartbeat))},
		},
	}}
}

// NewID returns a new transaction id: the start time in nanoseconds (8
// bytes, big endian) then 8 random bytes, so ids order by age (deadlock
// victims are the youngest).
func NewID(now time.Time, random [8]byte) docdb.TxnID {
	var id docdb.TxnID
	ns := uint64(now.UnixNano())
	for i := 0; i < 8; i++ {
		id[i] = byte(ns >> (56 - 8*i))
	}
	copy(id[8:], random[:])
	return id
}
