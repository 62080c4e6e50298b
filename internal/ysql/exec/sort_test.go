package exec

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"sort"
	"testing"

	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// The whole sort orders as a plain stable sort over the integer keys does
// (NULLs as the largest value unless NullsFirst, DESC reversing), and the
// top-N heap keeps exactly the rows it puts first, in the same order: keys
// with many ties, NULLs first and last, DESC, n from 0 to the row count
// less one, and n the row count or more (all rows kept, sorted).
func TestSortTopMatchesSort(t *testing.T) {
	int8T := types.T{OID: types.OIDInt8, Mod: -1}
	rng := rand.New(rand.NewSource(1))
	r := &runner{ec: &plan.EvalContext{}}
	keySets := [][]plan.SortKey{
		{{E: &plan.ColRef{Idx: 0, T: int8T}}},
		{{E: &plan.ColRef{Idx: 0, T: int8T}, Desc: true, NullsFirst: true}},
		{{E: &plan.ColRef{Idx: 0, T: int8T}, NullsFirst: true}, {E: &plan.ColRef{Idx: 1, T: int8T}, Desc: true}},
	}
	for round := range 20 {
		rows := make([]plan.Row, 200+rng.Intn(300))
		for i := range rows {
			a := types.Datum{I: int64(rng.Intn(10))}
			if rng.Intn(8) == 0 {
				a = types.NullDatum
			}
			// Column 2 numbers the rows: it shows whether ties kept their order.
			rows[i] = plan.Row{a, {I: int64(rng.Intn(5))}, {I: int64(i)}}
		}
		for ki, keys := range keySets {
			full, err := r.sort(slices.Clone(rows), keys)
			if err != nil {
				t.Fatal(err)
			}
			if got, exp := seqs(full), seqs(stableSorted(rows, keys)); got != exp {
				t.Fatalf("round %d keys %d: whole sort\n got %s\nwant %s", round, ki, got, exp)
			}
			for _, n := range []int{0, 1, 7, 50, len(rows) - 1, len(rows), len(rows) + 5} {
				// The rows at hand, and as a scan streams them.
				for _, in := range []rowSource{&sliceSource{rows: slices.Clone(rows)}, &limitSource{in: &sliceSource{rows: slices.Clone(rows)}, left: -1}} {
					top, err := r.sortTop(in, keys, n)
					if err != nil {
						t.Fatal(err)
					}
					want := full[:min(n, len(full))]
					if got, exp := seqs(top), seqs(want); got != exp {
						t.Fatalf("round %d keys %d n %d (%T):\n got %s\nwant %s", round, ki, n, in, got, exp)
					}
				}
			}
		}
	}
}

// stableSorted is the reference order: sort.SliceStable over the integer
// key columns, a NULL compared as below or above every value.
func stableSorted(rows []plan.Row, keys []plan.SortKey) []plan.Row {
	out := slices.Clone(rows)
	rank := func(d types.Datum, k plan.SortKey) int64 {
		switch {
		case !d.Null && k.Desc:
			return -d.I
		case !d.Null:
			return d.I
		case k.NullsFirst:
			return math.MinInt64
		}
		return math.MaxInt64
	}
	sort.SliceStable(out, func(a, b int) bool {
		for _, k := range keys {
			col := k.E.(*plan.ColRef).Idx
			x, y := rank(out[a][col], k), rank(out[b][col], k)
			if x != y {
				return x < y
			}
		}
		return false
	})
	return out
}

func seqs(rows []plan.Row) string {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r[2].I
	}
	return fmt.Sprint(out)
}

// BenchmarkSortLimit: ORDER BY one integer column over 200,000 rows, the
// whole sort against the top 10 (LIMIT 10).
func BenchmarkSortLimit(b *testing.B) {
	int8T := types.T{OID: types.OIDInt8, Mod: -1}
	rng := rand.New(rand.NewSource(1))
	rows := make([]plan.Row, 200_000)
	for i := range rows {
		rows[i] = plan.Row{{I: int64(i)}, {I: rng.Int63n(1_000_000)}, {S: "padpadpadpadpadpadpadpad"}}
	}
	keys := []plan.SortKey{{E: &plan.ColRef{Idx: 1, T: int8T}}}
	r := &runner{ec: &plan.EvalContext{}}
	for _, n := range []int{len(rows), 10} {
		b.Run(fmt.Sprintf("top=%d", n), func(b *testing.B) {
			for range b.N {
				if _, err := r.sortTop(&sliceSource{rows: slices.Clone(rows)}, keys, n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
