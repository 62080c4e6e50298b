package cli

import (
	"os"
	"runtime/debug"
)

// nodeGCPercent is the node's garbage-collection target when GOGC is not
// set. The node's long-lived memory (block cache, memtables) lives outside
// the Go heap, so the heap is mostly short-lived request garbage: at Go's
// default of 100 a node under load spent about a sixth of its CPU on
// allocation and marking; a larger target trades some heap for that CPU.
const nodeGCPercent = 400

// nodeMemoryLimitShare is the share of the machine's memory at which the
// heap target is capped when GOMEMLIMIT is not set, so that a large live
// heap (a big transaction's write set) does not grow the heap to 5x its
// size: near the limit the collector runs as often as it must.
const nodeMemoryLimitShare = 4

// tuneGC sets the collector targets of a node (or of the workload
// generator, which shares the machine with the nodes it loads) unless the
// environment sets them. It returns the memory limit in force.
func tuneGC() int64 {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(nodeGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		if total := totalMemory(); total > 0 {
			debug.SetMemoryLimit(int64(total / nodeMemoryLimitShare))
		}
	}
	return debug.SetMemoryLimit(-1)
}
