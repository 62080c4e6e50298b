package workload

import (
	"math"
	"sync/atomic"
	"time"
)

// histogram is a lock-free latency histogram with buckets 2% apart from
// 1 µs to about 100 s, fine enough for p50/p99 figures.
type histogram struct {
	counts [numBuckets]atomic.Uint64
	count  atomic.Uint64
	sum    atomic.Uint64 // ns
	max    atomic.Uint64 // ns
}

const (
	bucketGrowth = 1.02
	numBuckets   = 940 // 1.02^940 µs ≈ 120 s
)

var logGrowth = math.Log(bucketGrowth)

func bucketOf(d time.Duration) int {
	us := float64(d) / float64(time.Microsecond)
	if us <= 1 {
		return 0
	}
	b := int(math.Log(us)/logGrowth) + 1
	return min(b, numBuckets-1)
}

// bucketBound is the upper bound of bucket b.
func bucketBound(b int) time.Duration {
	return time.Duration(math.Pow(bucketGrowth, float64(b)) * float64(time.Microsecond))
}

func (h *histogram) observe(d time.Duration) {
	h.counts[bucketOf(d)].Add(1)
	h.count.Add(1)
	h.sum.Add(uint64(d))
	for {
		m := h.max.Load()
		if uint64(d) <= m || h.max.CompareAndSwap(m, uint64(d)) {
			return
		}
	}
}

// quantile returns the latency at or below which a fraction q of the
// observations fall (the bucket's upper bound).
func (h *histogram) quantile(q float64) time.Duration {
	n := h.count.Load()
	if n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(n)))
	var seen uint64
	for b := range h.counts {
		seen += h.counts[b].Load()
		if seen >= rank {
			return min(bucketBound(b), time.Duration(h.max.Load()))
		}
	}
	return time.Duration(h.max.Load())
}
