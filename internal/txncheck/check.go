package txncheck

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Anomaly kinds.
const (
	// Input: the history itself is malformed (no final read, a transfer
	// from an account to itself, ...).
	KindInput = "input"
	// SnapshotTotal: a snapshot read whose balances do not add up.
	KindSnapshotTotal = "snapshot-total"
	// GarbageRead: a version whose balance is not the one its writer
	// wrote, or written by no recorded transfer.
	KindGarbageRead = "garbage-read"
	// AbortedRead (G1a): a version written by an aborted transfer.
	KindAbortedRead = "aborted-read"
	// LostUpdate: two committed transfers wrote an account over the same
	// version of it.
	KindLostUpdate = "lost-update"
	// TornTransfer: a committed transfer whose write of one account is in
	// the final history and whose write of the other is not.
	KindTornTransfer = "torn-transfer"
	// LostWrite: a committed transfer absent from an account's history.
	KindLostWrite = "lost-write"
	// Balance: the final balances are not the initial ones plus the
	// amounts of the committed transfers, for any all-or-nothing
	// resolution of the unknown ones.
	KindBalance = "balance"
	// Cycle: the dependency graph has a cycle (G0, G1c, G-single or G2).
	KindCycle = "cycle"
	// Linearizability: an account's history is not linearizable.
	KindLinearizability = "linearizability"
)

// Anomaly is one thing the checker found wrong.
type Anomaly struct {
	Kind   string
	Detail string
}

func (a Anomaly) String() string { return a.Kind + ": " + a.Detail }

// Result is what Check found.
type Result struct {
	Transfers, Committed, Aborted int
	// Unknown transfers, and how the final state resolved them.
	Unknown, UnknownCommitted, UnknownAborted int
	// UnknownCommittedTxns are the unknown transfers found committed.
	UnknownCommittedTxns []string
	Reads                int
	// BalanceSolutions counts the all-or-nothing resolutions of the
	// unknown transfers that explain the final balances (capped at 2; -1:
	// the search gave up).
	BalanceSolutions int
	// GraphNodes and GraphEdges: the size of the dependency graph.
	GraphNodes, GraphEdges int
	// Linearizable is porcupine's verdict over all accounts.
	Linearizable porcupine.CheckResult
	Anomalies    []Anomaly
}

// OK reports whether the history passed every check.
func (r *Result) OK() bool { return len(r.Anomalies) == 0 && r.Linearizable == porcupine.Ok }

func (r *Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d transfers (%d committed, %d aborted, %d unknown: %d found committed, %d aborted), %d snapshot reads, graph %d nodes %d edges, balance solutions %d, linearizable %s",
		r.Transfers, r.Committed, r.Aborted, r.Unknown, r.UnknownCommitted, r.UnknownAborted, r.Reads, r.GraphNodes, r.GraphEdges, r.BalanceSolutions, r.Linearizable)
	for i, a := range r.Anomalies {
		if i == 20 {
			fmt.Fprintf(&b, "\n  ... %d more", len(r.Anomalies)-i)
			break
		}
		fmt.Fprintf(&b, "\n  %s", a)
	}
	return b.String()
}

// Options tune Check.
type Options struct {
	// LinearizabilityTimeout bounds porcupine per account (default 20 s;
	// a timeout leaves Linearizable Unknown).
	LinearizabilityTimeout time.Duration
}

type checker struct {
	h   *History
	res *Result
	// byTxn: the transfers by transaction id.
	byTxn map[string]*Transfer
	// committed: known committed plus the unknown ones found committed.
	committed map[string]bool
	final     *Read
	// chain[a]: account a's committed writers in version order (the
	// initial version, "", first).
	chain [][]string
	// pos[a][writer]: the writer's index in chain[a].
	pos []map[string]int
}

// Check checks a history.
func Check(h *History, opts Options) *Result {
	if opts.LinearizabilityTimeout <= 0 {
		opts.LinearizabilityTimeout = 20 * time.Second
	}
	c := &checker{h: h, res: &Result{Transfers: len(h.Transfers), Reads: len(h.Reads), Linearizable: porcupine.Unknown},
		byTxn: map[string]*Transfer{}, committed: map[string]bool{}}
	if !c.validate() {
		return c.res
	}
	c.snapshotTotals()
	c.resolve()
	c.chains()
	c.balances()
	c.graph()
	c.linearizability(opts.LinearizabilityTimeout)
	return c.res
}

func (c *checker) anomaly(kind, format string, args ...any) {
	c.res.Anomalies = append(c.res.Anomalies, Anomaly{Kind: kind, Detail: fmt.Sprintf(format, args...)})
}

// wrote is the version t writes of account a.
func wrote(t *Transfer, a int) Version {
	if a == t.From {
		return Version{Balance: t.ReadFrom.Balance - t.Amount, Writer: t.Txn}
	}
	return Version{Balance: t.ReadTo.Balance + t.Amount, Writer: t.Txn}
}

// readOf is the version t read of account a.
func readOf(t *Transfer, a int) Version {
	if a == t.From {
		return t.ReadFrom
	}
	return t.ReadTo
}

func (c *checker) validate() bool {
	h := c.h
	ok := true
	if h.Accounts <= 0 {
		c.anomaly(KindInput, "%d accounts", h.Accounts)
		return false
	}
	for i := range h.Transfers {
		t := &h.Transfers[i]
		if t.From == t.To || t.From < 0 || t.To < 0 || t.From >= h.Accounts || t.To >= h.Accounts || t.Amount <= 0 {
			c.anomaly(KindInput, "transfer %s: %d from %d to %d", t.Txn, t.Amount, t.From, t.To)
			ok = false
		}
		if _, dup := c.byTxn[t.Txn]; dup || t.Txn == "" {
			c.anomaly(KindInput, "transaction id %q used twice or empty", t.Txn)
			ok = false
		}
		c.byTxn[t.Txn] = t
		switch t.Outcome {
		case Committed:
			c.res.Committed++
			c.committed[t.Txn] = true
		case Aborted:
			c.res.Aborted++
		case Unknown:
			c.res.Unknown++
		default:
			c.anomaly(KindInput, "transfer %s: outcome %q", t.Txn, t.Outcome)
			ok = false
		}
	}
	for i := range h.Reads {
		r := &h.Reads[i]
		if len(r.Balances) != h.Accounts {
			c.anomaly(KindSnapshotTotal, "read at %d saw %d accounts, want %d", r.Invoke, len(r.Balances), h.Accounts)
			if r.Final {
				ok = false
			}
		}
		if r.Final && (c.final == nil || r.Invoke > c.final.Invoke) {
			c.final = r
		}
	}
	if c.final == nil {
		c.anomaly(KindInput, "no final read")
		return false
	}
	for i := range h.Transfers {
		if t := &h.Transfers[i]; t.Invoke > c.final.Invoke {
			c.anomaly(KindInput, "transfer %s began after the final read", t.Txn)
			ok = false
		}
	}
	return ok
}

func (c *checker) snapshotTotals() {
	want := int64(c.h.Accounts) * c.h.Initial
	for i := range c.h.Reads {
		r := &c.h.Reads[i]
		var sum int64
		for _, v := range r.Balances {
			sum += v.Balance
		}
		if sum != want {
			c.anomaly(KindSnapshotTotal, "read [%d, %d] of %s: total %d, want %d", r.Invoke, r.Complete, r.Proc, sum, want)
		}
	}
}

// observe checks one version read of account a and marks its writer seen.
func (c *checker) observe(a int, v Version, by string, seen map[string]bool) {
	if v.Writer == "" {
		if v.Balance != c.h.Initial {
			c.anomaly(KindGarbageRead, "%s read the initial version of account %d as %d, want %d", by, a, v.Balance, c.h.Initial)
		}
		return
	}
	w, ok := c.byTxn[v.Writer]
	if !ok {
		c.anomaly(KindGarbageRead, "%s read account %d written by %s, a transaction that wrote no transfer", by, a, v.Writer)
		return
	}
	if a != w.From && a != w.To {
		c.anomaly(KindGarbageRead, "%s read account %d written by %s, which did not write it", by, a, v.Writer)
		return
	}
	if want := wrote(w, a).Balance; v.Balance != want {
		c.anomaly(KindGarbageRead, "%s read account %d as %d written by %s, which wrote %d", by, a, v.Balance, v.Writer, want)
	}
	if w.Outcome == Aborted {
		c.anomaly(KindAbortedRead, "%s read account %d written by %s, which aborted", by, a, v.Writer)
	}
	seen[v.Writer] = true
}

// resolve checks every version read and decides the unknown transfers: a
// transfer committed if and only if some read saw one of its writes (a
// committed write stays until a later transfer reads it to overwrite it,
// and the final read sees the last one).
func (c *checker) resolve() {
	seen := map[string]bool{}
	for i := range c.h.Transfers {
		t := &c.h.Transfers[i]
		by := "transfer " + t.Txn
		c.observe(t.From, t.ReadFrom, by, seen)
		c.observe(t.To, t.ReadTo, by, seen)
	}
	for i := range c.h.Reads {
		r := &c.h.Reads[i]
		by := fmt.Sprintf("read [%d, %d] of %s", r.Invoke, r.Complete, r.Proc)
		for a, v := range r.Balances {
			if a < c.h.Accounts {
				c.observe(a, v, by, seen)
			}
		}
	}
	for i := range c.h.Transfers {
		t := &c.h.Transfers[i]
		if t.Outcome != Unknown {
			continue
		}
		if seen[t.Txn] {
			c.committed[t.Txn] = true
			c.res.UnknownCommitted++
			c.res.UnknownCommittedTxns = append(c.res.UnknownCommittedTxns, t.Txn)
		} else {
			c.res.UnknownAborted++
		}
	}
}

// chains rebuilds every account's version order backwards from the final
// read, each writer's predecessor being the version it read, and checks
// every committed transfer is on the chains of both its accounts.
func (c *checker) chains() {
	n := c.h.Accounts
	c.chain = make([][]string, n)
	c.pos = make([]map[string]int, n)
	// succ[a][version writer]: committed writers that read that version.
	succ := make([]map[string][]string, n)
	for a := range succ {
		succ[a] = map[string][]string{}
	}
	for i := range c.h.Transfers {
		t := &c.h.Transfers[i]
		if !c.committed[t.Txn] {
			continue
		}
		for _, a := range []int{t.From, t.To} {
			p := readOf(t, a).Writer
			succ[a][p] = append(succ[a][p], t.Txn)
		}
	}
	for a := 0; a < n; a++ {
		for p, ws := range succ[a] {
			if len(ws) > 1 {
				sort.Strings(ws)
				c.anomaly(KindLostUpdate, "account %d: committed transfers %s all overwrote the version written by %q", a, strings.Join(ws, ", "), p)
			}
		}
		var back []string
		onChain := map[string]bool{}
		for w := c.final.Balances[a].Writer; w != ""; {
			if onChain[w] {
				c.anomaly(KindLostUpdate, "account %d: the versions read form a cycle through %s", a, w)
				break
			}
			onChain[w] = true
			back = append(back, w)
			t, ok := c.byTxn[w]
			if !ok || (a != t.From && a != t.To) {
				break // reported by resolve
			}
			w = readOf(t, a).Writer
		}
		chain := []string{""}
		for i := len(back) - 1; i >= 0; i-- {
			chain = append(chain, back[i])
		}
		c.chain[a] = chain
		c.pos[a] = map[string]int{}
		for i, w := range chain {
			c.pos[a][w] = i
		}
	}
	for i := range c.h.Transfers {
		t := &c.h.Transfers[i]
		if !c.committed[t.Txn] {
			continue
		}
		inFrom, inTo := c.onChain(t.From, t.Txn), c.onChain(t.To, t.Txn)
		for _, x := range []struct {
			a, other int
			in, inO  bool
		}{{t.From, t.To, inFrom, inTo}, {t.To, t.From, inTo, inFrom}} {
			switch {
			case x.in:
			case x.inO:
				// Never applied, or applied and overwritten by a
				// transfer that did not see it (a lost update, reported
				// above): the versions cannot tell.
				c.anomaly(KindTornTransfer, "transfer %s (%s, %d from %d to %d): its write of account %d is in the final state's history, its write of account %d is not",
					t.Txn, t.Outcome, t.Amount, t.From, t.To, x.other, x.a)
			default:
				c.anomaly(KindLostWrite, "transfer %s (%s, %d from %d to %d) is missing from account %d's history",
					t.Txn, t.Outcome, t.Amount, t.From, t.To, x.a)
			}
		}
	}
}

func (c *checker) onChain(a int, w string) bool {
	_, ok := c.pos[a][w]
	return ok
}

// balances checks the final balances against the amounts of the committed
// transfers, resolving the unknown ones by search over the balances alone
// (each unknown transfer applied entirely or not at all), independently of
// the versions.
func (c *checker) balances() {
	n := c.h.Accounts
	need := make([]int64, n) // final - initial - known committed
	for a := 0; a < n; a++ {
		need[a] = c.final.Balances[a].Balance - c.h.Initial
	}
	var unknown []*Transfer
	for i := range c.h.Transfers {
		t := &c.h.Transfers[i]
		switch t.Outcome {
		case Committed:
			need[t.From] += t.Amount
			need[t.To] -= t.Amount
		case Unknown:
			unknown = append(unknown, t)
		}
	}
	// The resolution found from the versions must explain the balances.
	chk := append([]int64(nil), need...)
	for _, t := range unknown {
		if c.committed[t.Txn] {
			chk[t.From] += t.Amount
			chk[t.To] -= t.Amount
		}
	}
	for a, d := range chk {
		if d != 0 {
			c.anomaly(KindBalance, "account %d: final balance %d is %d off the initial %d plus the committed transfers", a, c.final.Balances[a].Balance, d, c.h.Initial)
		}
	}
	// The search: assign the unknown transfers in order; an account is
	// checked once its last unknown transfer is assigned.
	last := make([]int, n)
	for a := range last {
		last[a] = -1
	}
	for i, t := range unknown {
		last[t.From], last[t.To] = i, i
	}
	solutions, steps := 0, 0
	const maxSteps = 1 << 22
	stop := false
	for a, d := range need {
		if last[a] < 0 && d != 0 {
			stop = true // no unknown transfer can fix this account
		}
	}
	move := func(t *Transfer, sign int64) {
		need[t.From] += sign * t.Amount
		need[t.To] -= sign * t.Amount
	}
	var search func(i int)
	search = func(i int) {
		if steps++; steps > maxSteps {
			stop = true
		}
		if stop {
			return
		}
		if i == len(unknown) {
			for _, d := range need {
				if d != 0 {
					return
				}
			}
			if solutions++; solutions == 2 {
				stop = true
			}
			return
		}
		t := unknown[i]
		for _, apply := range []bool{false, true} {
			if apply {
				move(t, 1)
			}
			if (last[t.From] != i || need[t.From] == 0) && (last[t.To] != i || need[t.To] == 0) {
				search(i + 1)
			}
			if apply {
				move(t, -1)
			}
		}
	}
	search(0)
	if steps > maxSteps {
		c.res.BalanceSolutions = -1
		return
	}
	c.res.BalanceSolutions = solutions
	if solutions == 0 {
		c.anomaly(KindBalance, "no resolution of the %d unknown transfers, each applied entirely or not at all, explains the final balances", len(unknown))
	}
}

// graph builds the dependency graph of the committed transfers and the
// snapshot reads and looks for a cycle.
func (c *checker) graph() {
	g := &depGraph{}
	node := map[string]int{}
	tnode := func(txn string) int {
		if id, ok := node[txn]; ok {
			return id
		}
		id := g.add("transfer " + txn)
		node[txn] = id
		return id
	}
	// Per account: ww along the chain; every reader of a version gets wr
	// from its writer and rw to the version's successor.
	for a := 0; a < c.h.Accounts; a++ {
		ch := c.chain[a]
		for i := 1; i+1 < len(ch); i++ {
			g.edge(tnode(ch[i]), tnode(ch[i+1]), "ww", a)
		}
	}
	reader := func(id int, a int, v Version) {
		i, ok := c.pos[a][v.Writer]
		if !ok {
			return // a version off the chain: reported already
		}
		if i > 0 {
			g.edge(tnode(v.Writer), id, "wr", a)
		}
		if i+1 < len(c.chain[a]) {
			if next := tnode(c.chain[a][i+1]); next != id {
				g.edge(id, next, "rw", a)
			}
		}
	}
	for i := range c.h.Transfers {
		t := &c.h.Transfers[i]
		if !c.committed[t.Txn] {
			continue
		}
		id := tnode(t.Txn)
		reader(id, t.From, t.ReadFrom)
		reader(id, t.To, t.ReadTo)
	}
	for i := range c.h.Reads {
		r := &c.h.Reads[i]
		id := g.add(fmt.Sprintf("read [%d, %d] of %s", r.Invoke, r.Complete, r.Proc))
		for a, v := range r.Balances {
			if a < c.h.Accounts {
				reader(id, a, v)
			}
		}
	}
	c.res.GraphNodes, c.res.GraphEdges = len(g.names), g.edges
	if cyc := g.cycle(); cyc != "" {
		c.anomaly(KindCycle, "%s", cyc)
	}
}

// regInput is a porcupine operation on one account: a transfer's
// read-modify-write (read version Read, write version Write) or a read.
type regInput struct {
	account int
	rmw     bool
	read    string
	write   string
}

var registerModel = porcupine.Model{
	Init: func() any { return "" },
	Step: func(state, input, _ any) (bool, any) {
		in := input.(regInput)
		if state.(string) != in.read {
			return false, state
		}
		if in.rmw {
			return true, in.write
		}
		return true, state
	},
	DescribeOperation: func(input, _ any) string {
		in := input.(regInput)
		if in.rmw {
			return fmt.Sprintf("acct %d: %q -> %q", in.account, in.read, in.write)
		}
		return fmt.Sprintf("acct %d: read %q", in.account, in.read)
	},
}

// linearizability checks each account as a register holding the id of its
// last writer, in real time: committed transfers (unknown ones found
// committed never returned) and snapshot reads.
func (c *checker) linearizability(timeout time.Duration) {
	ops := make([][]porcupine.Operation, c.h.Accounts)
	var end int64 = math.MaxInt64
	for i := range c.h.Transfers {
		t := &c.h.Transfers[i]
		if !c.committed[t.Txn] {
			continue
		}
		ret := t.Complete
		if t.Outcome == Unknown {
			ret = end
		}
		for _, a := range []int{t.From, t.To} {
			ops[a] = append(ops[a], porcupine.Operation{ClientId: 0, Input: regInput{account: a, rmw: true, read: readOf(t, a).Writer, write: t.Txn},
				Call: t.Invoke, Return: ret})
		}
	}
	for i := range c.h.Reads {
		r := &c.h.Reads[i]
		for a, v := range r.Balances {
			if a < c.h.Accounts {
				ops[a] = append(ops[a], porcupine.Operation{Input: regInput{account: a, read: v.Writer}, Call: r.Invoke, Return: r.Complete})
			}
		}
	}
	verdict := porcupine.Ok
	for a, o := range ops {
		switch porcupine.CheckOperationsTimeout(registerModel, o, timeout) {
		case porcupine.Illegal:
			verdict = porcupine.Illegal
			c.anomaly(KindLinearizability, "account %d: its %d operations are not linearizable", a, len(o))
		case porcupine.Unknown:
			if verdict == porcupine.Ok {
				verdict = porcupine.Unknown
			}
		}
	}
	c.res.Linearizable = verdict
}
