// Package txncheck records and checks histories of a bank workload: N
// accounts, transfers that read two balances and write them back moved by
// an amount, and snapshot reads of every balance.
//
// Every write of an account carries the id of the transaction that made it
// (the workload stores it next to the balance), so every read names the
// exact version it saw, as Elle's recoverable histories do. From that the
// checker recovers each account's version order, resolves the transfers
// whose outcome the workload never learnt (a coordinator killed in the
// middle of commit, an ambiguous commit), and checks:
//
//   - every snapshot read totals the bank's total;
//   - every version read was written by a transfer that committed (no
//     aborted or invented reads) with the balance that transfer wrote;
//   - each account's committed writes form one chain from the initial
//     balance to the final one, each reading its predecessor (no lost
//     update), and a committed transfer is on the chains of both its
//     accounts (no torn transfer);
//   - the final balances are the initial ones plus the amounts of the
//     committed transfers, with each unknown transfer applied entirely or
//     not at all (found by a search over the unknown transfers that uses
//     the balances only);
//   - the dependency graph of committed transfers and snapshot reads (ww,
//     wr and rw edges) has no cycle: the history is serializable;
//   - each account, as a register whose value is the id of its last
//     writer, is linearizable (porcupine), which adds real-time order.
package txncheck

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// Version is one version of an account as read: its balance and the
// transaction that wrote it ("" for the initial balance).
type Version struct {
	Balance int64  `json:"b"`
	Writer  string `json:"w,omitempty"`
}

// Outcome is what became of a transfer's transaction.
type Outcome string

// Outcomes.
const (
	Committed Outcome = "committed"
	Aborted   Outcome = "aborted"
	// Unknown: the commit was sent and its answer never came back (an
	// ambiguous commit, or the process died).
	Unknown Outcome = "unknown"
)

// Transfer is one transaction attempt of a transfer: it read both
// balances and (if it got that far) wrote From = ReadFrom-Amount and To =
// ReadTo+Amount under its own id.
type Transfer struct {
	Txn      string  `json:"txn"`
	Proc     string  `json:"proc,omitempty"`
	Iso      string  `json:"iso,omitempty"`
	From     int     `json:"from"`
	To       int     `json:"to"`
	Amount   int64   `json:"amount"`
	ReadFrom Version `json:"read_from"`
	ReadTo   Version `json:"read_to"`
	// Invoke and Complete are wall-clock times (unix ns) of the attempt's
	// start and of its commit's answer (0 while unknown).
	Invoke   int64   `json:"invoke"`
	Complete int64   `json:"complete,omitempty"`
	Outcome  Outcome `json:"outcome,omitempty"`
}

// Read is a read-only snapshot of every account.
type Read struct {
	Proc     string    `json:"proc,omitempty"`
	Invoke   int64     `json:"invoke"`
	Complete int64     `json:"complete"`
	Balances []Version `json:"balances"` // by account id
	// Final marks a read taken after the load stopped; the latest final
	// read is the final state of the bank.
	Final bool `json:"final,omitempty"`
}

// History is what the checker checks.
type History struct {
	Accounts int
	// Initial is every account's initial balance.
	Initial   int64
	Transfers []Transfer
	Reads     []Read
	// Torn counts history lines cut off by a process killed mid-write.
	Torn int
}

// The history file format: one JSON object a line, its kind in "k".
type line struct {
	Kind string `json:"k"`
	// open
	Accounts int   `json:"accounts,omitempty"`
	Initial  int64 `json:"initial,omitempty"`
	// transfer (Outcome empty: the commit was sent; an outcome line
	// follows unless the answer never came)
	*Transfer
	// outcome
	OutcomeTxn  string  `json:"otxn,omitempty"`
	OutcomeWhat Outcome `json:"ooutcome,omitempty"`
	OutcomeAt   int64   `json:"oat,omitempty"`
	// read
	Snapshot *Read `json:"read,omitempty"`
}

// Recorder appends a process's history to w, one line per Write call, so
// a process killed at any point leaves whole lines behind (give it an
// unbuffered *os.File). It is safe for concurrent use.
type Recorder struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

// NewRecorder returns a recorder writing to w.
func NewRecorder(w io.Writer) *Recorder { return &Recorder{w: w} }

func (r *Recorder) write(l line) {
	b, err := json.Marshal(l)
	if err != nil {
		panic(err) // plain structs: cannot fail
	}
	b = append(b, '\n')
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		_, r.err = r.w.Write(b)
	}
}

// Err is the first write error.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Open records the bank's shape.
func (r *Recorder) Open(accounts int, initial int64) {
	r.write(line{Kind: "open", Accounts: accounts, Initial: initial})
}

// Transfer records an attempt: with an Outcome, a finished one; without,
// one whose commit is about to be sent (call Outcome when it answers).
func (r *Recorder) Transfer(t Transfer) { r.write(line{Kind: "transfer", Transfer: &t}) }

// Outcome records the answer to a transfer's commit.
func (r *Recorder) Outcome(txn string, o Outcome, at int64) {
	r.write(line{Kind: "outcome", OutcomeTxn: txn, OutcomeWhat: o, OutcomeAt: at})
}

// Read records a snapshot read.
func (r *Recorder) Read(rd Read) { r.write(line{Kind: "read", Snapshot: &rd}) }

// Load merges the histories of several processes. A transfer whose commit
// was sent and never answered is Unknown. Only the last line of a source
// may be cut off (its process was killed while writing it).
func Load(sources ...io.Reader) (*History, error) {
	h := &History{}
	byTxn := map[string]int{}
	for si, src := range sources {
		data, err := io.ReadAll(src)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 1<<20), 1<<26)
		n := 0
		for sc.Scan() {
			n++
			var l line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				if !bytes.HasSuffix(data, []byte("\n")) && bytes.HasSuffix(data, sc.Bytes()) {
					h.Torn++
					break
				}
				return nil, fmt.Errorf("history %d line %d: %w", si, n, err)
			}
			switch l.Kind {
			case "open":
				if h.Accounts != 0 && (h.Accounts != l.Accounts || h.Initial != l.Initial) {
					return nil, fmt.Errorf("history %d line %d: %d accounts of %d, others have %d of %d", si, n, l.Accounts, l.Initial, h.Accounts, h.Initial)
				}
				h.Accounts, h.Initial = l.Accounts, l.Initial
			case "transfer":
				if l.Transfer == nil || l.Txn == "" {
					return nil, fmt.Errorf("history %d line %d: transfer without a transaction", si, n)
				}
				if _, dup := byTxn[l.Txn]; dup {
					return nil, fmt.Errorf("history %d line %d: transaction %s recorded twice", si, n, l.Txn)
				}
				t := *l.Transfer
				if t.Outcome == "" {
					t.Outcome, t.Complete = Unknown, 0
				}
				byTxn[t.Txn] = len(h.Transfers)
				h.Transfers = append(h.Transfers, t)
			case "outcome":
				i, ok := byTxn[l.OutcomeTxn]
				if !ok || h.Transfers[i].Outcome != Unknown {
					return nil, fmt.Errorf("history %d line %d: outcome of %s without a pending transfer", si, n, l.OutcomeTxn)
				}
				h.Transfers[i].Outcome, h.Transfers[i].Complete = l.OutcomeWhat, l.OutcomeAt
				if l.OutcomeWhat == Unknown {
					h.Transfers[i].Complete = 0
				}
			case "read":
				if l.Snapshot == nil {
					return nil, fmt.Errorf("history %d line %d: read without balances", si, n)
				}
				h.Reads = append(h.Reads, *l.Snapshot)
			default:
				return nil, fmt.Errorf("history %d line %d: unknown kind %q", si, n, l.Kind)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	if h.Accounts == 0 {
		return nil, fmt.Errorf("no history says how many accounts the bank has")
	}
	return h, nil
}
