package exec

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/shaledb/shaledb/internal/ysql/plan"
	"github.com/shaledb/shaledb/internal/ysql/types"
)

// The top-N heap keeps exactly the rows the whole stable sort puts first,
// in the same order: keys with many ties, NULLs first and last, DESC, and
// n below, at and above the row count.
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
			for _, n := range []int{0, 1, 7, 50, len(rows) - 1, len(rows), len(rows) + 5} {
				top, err := r.sortTop(slices.Clone(rows), keys, n)
				if err != nil {
					t.Fatal(err)
				}
				want := full[:min(n, len(full))]
				if got, exp := seqs(top), seqs(want); got != exp {
					t.Fatalf("round %d keys %d n %d:\n got %s\nwant %s", round, ki, n, got, exp)
				}
			}
		}
	}
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
				if _, err := r.sortTop(rows, keys, n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
