package tablet_test

// Helpers of TestLinearizability: the porcupine model of a set of int64
// registers with compare-and-set, the clients that drive a replicated tablet
// and record their history, and the node gates that keep clients off a node
// while the nemesis stops it.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/shaledb/shaledb/internal/consensus"
	"github.com/shaledb/shaledb/internal/docdb"
	"github.com/shaledb/shaledb/internal/tablet"
)

type linOpKind uint8

const (
	linGet linOpKind = iota
	linPut
	linCAS
)

// linInput is one operation on register key. Register values are unique
// positive integers; 0 stands for "absent".
type linInput struct {
	kind     linOpKind
	key      int
	value    int64 // put, cas: the value written
	expected int64 // cas: the value expected (0: absent)
}

// linOutput is what the operation returned. unknown marks a write whose
// outcome is ambiguous: it may or may not have taken effect.
type linOutput struct {
	value   int64 // get: the value read; failed cas: the value found
	swapped bool  // cas
	unknown bool
}

// linModel is a register per key; porcupine checks each key on its own.
var linModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[int][]porcupine.Operation{}
		for _, op := range history {
			k := op.Input.(linInput).key
			byKey[k] = append(byKey[k], op)
		}
		keys := make([]int, 0, len(byKey))
		for k := range byKey {
			keys = append(keys, k)
		}
		sort.Ints(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return int64(0) },
	Step: func(state, input, output any) (bool, any) {
		st, in, out := state.(int64), input.(linInput), output.(linOutput)
		switch in.kind {
		case linGet:
			return out.value == st, st
		case linPut:
			return true, in.value
		default: // linCAS
			if out.unknown {
				if st == in.expected {
					return true, in.value
				}
				return true, st
			}
			if out.swapped {
				return st == in.expected, in.value
			}
			return st != in.expected && st == out.value, st
		}
	},
	Hash: func(state any) uint64 { return uint64(state.(int64)) },
	DescribeOperation: func(input, output any) string {
		in, out := input.(linInput), output.(linOutput)
		res := ""
		switch {
		case out.unknown:
			res = " -> ?"
		case in.kind == linGet:
			res = fmt.Sprintf(" -> %d", out.value)
		case in.kind == linCAS && out.swapped:
			res = " -> ok"
		case in.kind == linCAS:
			res = fmt.Sprintf(" -> found %d", out.value)
		}
		switch in.kind {
		case linGet:
			return fmt.Sprintf("get(k%d)%s", in.key, res)
		case linPut:
			return fmt.Sprintf("put(k%d, %d)%s", in.key, in.value, res)
		default:
			return fmt.Sprintf("cas(k%d, %d, %d)%s", in.key, in.expected, in.value, res)
		}
	},
	DescribeState: func(state any) string { return fmt.Sprint(state.(int64)) },
}

// linKey is the row key of register k; the register is column 1.
func linKey(k int) []byte { return rowKey(1000 + k) }

// nodeGate keeps clients' reads off a node's engine while the nemesis stops
// it: a stopped node's engine is closed and must not be read. Puts only
// fetch the tablet under the gate (they do not touch the engine), so a node
// can stop in the middle of one.
type nodeGate struct {
	sync.RWMutex
	up bool
}

// linEnv is the cluster under test and the history being recorded.
type linEnv struct {
	h       *harness
	nodes   []uint64
	gates   map[uint64]*nodeGate
	start   time.Time
	keys    int
	clients int
	nextVal atomic.Int64

	mu  sync.Mutex
	ops []porcupine.Operation

	stats struct {
		ok, ambiguous, dropped atomic.Int64
		okSinceHeal            atomic.Int64
		healed                 atomic.Bool
	}
}

func newLinEnv(h *harness, keys, clients int) *linEnv {
	e := &linEnv{h: h, gates: map[uint64]*nodeGate{}, start: time.Now(), keys: keys, clients: clients}
	for _, n := range h.Nodes() {
		e.nodes = append(e.nodes, n.ID)
		e.gates[n.ID] = &nodeGate{up: true}
	}
	return e
}

// now is the history's clock: nanoseconds since the start, monotonic.
func (e *linEnv) now() int64 { return int64(time.Since(e.start)) }

var errNodeDown = errors.New("node is down")

// onNode runs fn against node's tablet. With hold (reads, compare-and-set)
// the node cannot stop until fn returns.
func (e *linEnv) onNode(node uint64, hold bool, fn func(tb *tablet.Tablet) error) error {
	g := e.gates[node]
	g.RLock()
	if !g.up {
		g.RUnlock()
		return errNodeDown
	}
	tb := e.h.tablet(node)
	if hold {
		defer g.RUnlock()
	} else {
		g.RUnlock()
	}
	return fn(tb)
}

// stopNode and startNode are the nemesis' way to kill and restart nodes.
func (e *linEnv) stopNode(node uint64) {
	g := e.gates[node]
	g.Lock()
	defer g.Unlock()
	if g.up {
		e.h.StopNode(node)
		g.up = false
	}
}

func (e *linEnv) startNode(node uint64) {
	g := e.gates[node]
	g.Lock()
	defer g.Unlock()
	if !g.up {
		e.h.StartNode(node)
		g.up = true
	}
}

func (e *linEnv) isUp(node uint64) bool {
	g := e.gates[node]
	g.RLock()
	defer g.RUnlock()
	return g.up
}

// leaseholder returns the node whose replica holds the lease, or 0.
func (e *linEnv) leaseholder() uint64 {
	for _, n := range e.nodes {
		var has bool
		_ = e.onNode(n, true, func(tb *tablet.Tablet) error {
			has = tb.Group().HasLease()
			return nil
		})
		if has {
			return n
		}
	}
	return 0
}

func (e *linEnv) record(op porcupine.Operation) {
	e.mu.Lock()
	e.ops = append(e.ops, op)
	e.mu.Unlock()
}

// history returns the recorded operations, ambiguous ones returning after
// everything else: they may take effect at any point after their call.
func (e *linEnv) history() []porcupine.Operation {
	e.mu.Lock()
	defer e.mu.Unlock()
	var end int64
	for _, op := range e.ops {
		if !op.Output.(linOutput).unknown && op.Return > end {
			end = op.Return
		}
	}
	out := make([]porcupine.Operation, len(e.ops))
	copy(out, e.ops)
	for i := range out {
		if out[i].Output.(linOutput).unknown {
			out[i].Return = end + 1
		}
	}
	return out
}

type linOutcome int

const (
	linDone      linOutcome = iota
	linAmbiguous            // a write that may or may not have taken effect
	linFailed               // definitely had no effect (or a failed read)
)

// linClient issues one operation at a time against whichever node leads.
type linClient struct {
	env      *linEnv
	proc     int // porcupine client id; a fresh one after each ambiguous op
	rng      *rand.Rand
	guess    uint64
	lastSeen []int64 // per key: the latest value this client observed
}

const linOpTimeout = time.Second

func (c *linClient) run(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		in := c.pick()
		call := c.env.now()
		out, outcome := c.exec(in)
		ret := c.env.now()
		switch outcome {
		case linDone:
			c.env.stats.ok.Add(1)
			if c.env.stats.healed.Load() {
				c.env.stats.okSinceHeal.Add(1)
			}
			c.env.record(porcupine.Operation{ClientId: c.proc, Input: in, Call: call, Output: out, Return: ret})
		case linAmbiguous:
			c.env.stats.ambiguous.Add(1)
			c.env.record(porcupine.Operation{ClientId: c.proc, Input: in, Call: call, Output: linOutput{unknown: true}, Return: ret})
			c.proc += c.env.clients
		case linFailed:
			c.env.stats.dropped.Add(1)
		}
	}
}

func (c *linClient) pick() linInput {
	in := linInput{key: c.rng.IntN(c.env.keys)}
	switch r := c.rng.IntN(10); {
	case r < 4:
		in.kind = linGet
	case r < 7:
		in.kind = linPut
		in.value = c.env.nextVal.Add(1)
	default:
		in.kind = linCAS
		in.value = c.env.nextVal.Add(1)
		in.expected = c.lastSeen[in.key]
		if c.rng.IntN(5) == 0 {
			in.expected = c.rng.Int64N(in.value + 1) // mostly a stale or wrong guess
		}
	}
	return in
}

// exec runs in until it has a definite outcome or the timeout expires,
// following leader hints. Attempts refused before anything was proposed
// (node down, not the leader) are retried; they had no effect.
func (c *linClient) exec(in linInput) (linOutput, linOutcome) {
	ctx, cancel := context.WithTimeout(context.Background(), linOpTimeout)
	defer cancel()
	misses := 0
	for ctx.Err() == nil {
		node := c.guess
		var out linOutput
		err := c.env.onNode(node, in.kind != linPut, func(tb *tablet.Tablet) error {
			var err error
			out, err = c.attempt(ctx, tb, in)
			return err
		})
		if err == nil {
			c.observe(in, out)
			return out, linDone
		}
		hint, notLeader := consensus.IsNotLeader(err)
		switch {
		case errors.Is(err, errNodeDown) || notLeader || errors.Is(err, consensus.ErrProposalDropped):
			// Definitely not applied: try the hinted leader or the next node.
			if notLeader && hint != 0 && hint != node {
				c.guess = hint
			} else {
				c.guess = c.env.nodes[(c.rng.IntN(len(c.env.nodes)-1)+int(node))%len(c.env.nodes)]
			}
			misses++
			if misses%len(c.env.nodes) == 0 {
				// Nobody leads right now: poll again shortly.
				select {
				case <-ctx.Done():
				case <-time.After(10 * time.Millisecond):
				}
			}
		case in.kind == linGet:
			return linOutput{}, linFailed
		default:
			// Timeout, ErrAmbiguous, ErrStopped, ...: the write may have
			// been proposed and may yet be applied.
			return linOutput{}, linAmbiguous
		}
	}
	// Timed out while every attempt was refused before proposing.
	return linOutput{}, linFailed
}

func (c *linClient) attempt(ctx context.Context, tb *tablet.Tablet, in linInput) (linOutput, error) {
	key := linKey(in.key)
	switch in.kind {
	case linGet:
		row, found, err := tb.Get(ctx, key, []uint32{1})
		if err != nil || !found {
			return linOutput{}, err
		}
		for _, col := range row.Columns {
			if col.ID == 1 {
				return linOutput{value: col.Value.Int}, nil
			}
		}
		return linOutput{}, nil
	case linPut:
		_, err := tb.Write(ctx, &docdb.WriteBatch{Ops: []docdb.WriteOp{{
			Kind: docdb.OpPutRow, RowKey: key, Columns: []docdb.ColumnValue{{ID: 1, Value: docdb.Int64(in.value)}},
		}}})
		return linOutput{}, err
	default:
		var expected *docdb.Value
		if in.expected != 0 {
			v := docdb.Int64(in.expected)
			expected = &v
		}
		swapped, cur, err := tb.CompareAndSet(ctx, key, 1, expected, docdb.Int64(in.value))
		if err != nil {
			return linOutput{}, err
		}
		out := linOutput{swapped: swapped}
		if !swapped && cur != nil {
			out.value = cur.Int
		}
		return out, nil
	}
}

func (c *linClient) observe(in linInput, out linOutput) {
	switch {
	case in.kind == linGet || (in.kind == linCAS && !out.swapped):
		c.lastSeen[in.key] = out.value
	default:
		c.lastSeen[in.key] = in.value
	}
}
