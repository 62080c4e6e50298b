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

// LazyRecordWindow: a transaction whose first write comes this soon after
// it began writes intents before its record exists; its coordinator
// creates the record (with its commit, or with its first heartbeat when
// the transaction is this old). A missing record therefore reads as
// PENDING until the transaction is LazyRecordWindow + expiry old: as a
// record, it may go expiry without hearing from its coordinator.
const LazyRecordWindow = 500 * time.Millisecond

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
// of transaction id (found false: none), now the leader's clock. It returns
// the record to write (write false: nothing to write) and the state to
// answer.
//
// The rules: a record is created PENDING and only a PENDING record changes,
// once, to COMMITTED (at commitHT, which the caller takes from its clock
// under the latch) or ABORTED; a PENDING record whose last heartbeat is
// older than expiry is ABORTED by whoever looks at it.
//
// A missing record: a short transaction writes its intents without a
// record and creates it with its COMMIT (or ABORT); a longer one creates it
// PENDING with its first heartbeat, at the latest half a second after it
// began (see docs/transactions.md). So a participant may meet intents whose
// record does not exist yet. GET answers PENDING while the transaction is
// young (its id, which starts with its start time, is at most
// LazyRecordWindow + expiry old);
// after that it writes the record ABORTED, so that a CREATE or COMMIT
// arriving later fails rather than reviving a transaction whose intents
// may be gone. Every ABORTED decision about a missing record is written
// before anyone acts on it, so COMMIT may create the record COMMITTED:
// no participant can have removed the transaction's intents. HEARTBEAT
// comes only after a CREATE succeeded: for it a missing record reads as
// ABORTED.
func Transition(op Op, id docdb.TxnID, cur Record, found bool, now, commitHT hlc.Timestamp, expiry time.Duration) (next Record, write bool, answer Record) {
	expired := found && cur.State == tablet.TxnPending && now.Time().Sub(cur.Heartbeat.Time()) > expiry
	aborted := Record{State: tablet.TxnAborted, Heartbeat: cur.Heartbeat}
	if !found {
		switch op {
		case OpCreate:
			r := Record{State: tablet.TxnPending, Heartbeat: now}
			return r, true, r
		case OpCommit:
			r := Record{State: tablet.TxnCommitted, CommitHT: commitHT, Heartbeat: now}
			return r, true, r
		case OpGet:
			if now.Time().Sub(IDTime(id)) <= LazyRecordWindow+expiry {
				return Record{}, false, Record{State: tablet.TxnPending}
			}
			return aborted, true, aborted
		case OpAbort:
			return aborted, true, aborted
		}
		return Record{}, false, aborted
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

// IDTime is the start time NewID put in id.
func IDTime(id docdb.TxnID) time.Time {
	var ns uint64
	for i := 0; i < 8; i++ {
		ns = ns<<8 | uint64(id[i])
	}
	return time.Unix(0, int64(ns))
}
