package docdb

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"github.com/shaledb/shaledb/internal/hlc"
)

// TestUncertaintyNoting checks the promise the tablets' reads rely on to
// skip their second read (at the uncertainty limit): a read that noted no
// version in its window (ReadTime, Limit] returns what a read at Limit
// returns, and a noted version lies in the window. Random histories of
// puts, column deletes and row deletes over a few rows and columns, read
// by GetRow and Scan, with and without projections and limits; the reads
// themselves must not change with the option.
func TestUncertaintyNoting(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	ts := func(sec int) hlc.Timestamp { return hlc.FromMicros(int64(sec)*1e6, 0) }
	noted := 0
	for history := 0; history < 60; history++ {
		eng := openTestEngine(t)
		for i := 0; i < 40; i++ {
			op := WriteOp{RowKey: testRowKey(fmt.Sprintf("r%d", rng.Intn(6)))}
			switch rng.Intn(8) {
			case 0:
				op.Kind = OpDeleteRow
			case 1:
				op.Kind = OpDeleteColumns
				op.Columns = []ColumnValue{{ID: uint32(1 + rng.Intn(4))}}
			case 2, 3:
				op.Kind = OpPutRow
				op.Columns = []ColumnValue{{ID: 1, Value: Int64(rng.Int63n(100))}}
			default:
				op.Kind = OpPutColumns
				op.Columns = []ColumnValue{{ID: uint32(1 + rng.Intn(4)), Value: Int64(rng.Int63n(100))}}
			}
			if err := ApplyWriteBatch(eng, ts(1+rng.Intn(30)), &WriteBatch{Ops: []WriteOp{op}}); err != nil {
				t.Fatal(err)
			}
		}
		for read := 0; read < 40; read++ {
			rt := ts(1 + rng.Intn(30))
			limit := rt + hlc.Timestamp(rng.Int63n(int64(ts(8))))
			var cols []uint32
			if rng.Intn(2) == 0 {
				cols = []uint32{uint32(1 + rng.Intn(4))}
				if rng.Intn(2) == 0 {
					cols = append(cols, uint32(1+rng.Intn(4)))
				}
			}
			// GetRow of each row.
			for r := 0; r < 6; r++ {
				key := testRowKey(fmt.Sprintf("r%d", r))
				plain, ok, err := GetRow(eng, key, ReadOptions{ReadTime: rt, Columns: cols})
				if err != nil {
					t.Fatal(err)
				}
				u := &Uncertainty{Limit: limit}
				got, gotOK, err := GetRow(eng, key, ReadOptions{ReadTime: rt, Columns: cols, Uncertainty: u})
				if err != nil {
					t.Fatal(err)
				}
				if ok != gotOK || !reflect.DeepEqual(plain, got) {
					t.Fatalf("history %d: GetRow %d at %v changed with the window: %v %v, %v %v", history, r, rt, plain, ok, got, gotOK)
				}
				atLimit, limitOK, err := GetRow(eng, key, ReadOptions{ReadTime: limit, Columns: cols})
				if err != nil {
					t.Fatal(err)
				}
				checkNoted(t, fmt.Sprintf("history %d: GetRow %d cols %v, read %v limit %v", history, r, cols, rt, limit),
					u, rt, []Row{plain}, ok, []Row{atLimit}, limitOK)
				if u.Newest != 0 {
					noted++
				}
			}
			// A scan, maybe cut by a limit.
			n := rng.Intn(4)
			opts := ScanOptions{ReadOptions: ReadOptions{ReadTime: rt, Columns: cols}, Span: TableSpan(1), Limit: n}
			plain, plainResume, err := Scan(eng, opts)
			if err != nil {
				t.Fatal(err)
			}
			u := &Uncertainty{Limit: limit}
			opts.Uncertainty = u
			got, gotResume, err := Scan(eng, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(plain, got) || !reflect.DeepEqual(plainResume, gotResume) {
				t.Fatalf("history %d: scan at %v changed with the window", history, rt)
			}
			opts.Uncertainty, opts.ReadTime = nil, limit
			atLimit, _, err := Scan(eng, opts)
			if err != nil {
				t.Fatal(err)
			}
			checkNoted(t, fmt.Sprintf("history %d: scan limit %d cols %v, read %v limit %v", history, n, cols, rt, limit),
				u, rt, plain, true, atLimit, true)
		}
	}
	if noted == 0 {
		t.Fatal("no read met a version in its window: the histories test nothing")
	}
}

func checkNoted(t *testing.T, what string, u *Uncertainty, rt hlc.Timestamp, atRT []Row, okRT bool, atLimit []Row, okLimit bool) {
	t.Helper()
	if u.Newest != 0 {
		if u.Newest <= rt || u.Newest > u.Limit {
			t.Fatalf("%s: noted %v outside the window", what, u.Newest)
		}
		return
	}
	if okRT != okLimit || !reflect.DeepEqual(atRT, atLimit) {
		t.Fatalf("%s: nothing noted, but the read at the limit differs:\n at read time %v %v\n at limit     %v %v", what, atRT, okRT, atLimit, okLimit)
	}
}
