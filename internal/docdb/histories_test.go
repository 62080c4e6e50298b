package docdb

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/shaledb/shaledb/internal/hlc"
	"github.com/shaledb/shaledb/internal/storage"
)

// TestMVCCHistories runs the scripts in testdata/mvcc_histories, in the
// style of CockroachDB's mvcc_histories. Each file gets a fresh engine.
// Regenerate expectations with: go test ./internal/docdb -run TestMVCCHistories -rewrite
//
// Conventions: k=<text> is the row key of table 1 with one text range
// component; ts=<sec>[.<logical>] is a hybrid time in whole seconds (plus a
// logical part); cols=<id>:<type>:<literal>,... gives column values, or
// cols=<id>,... column ids; ttl=<Go duration>.
//
//	put_row|put_cols|delete_row|delete_cols k= ts= [cols=] [ttl=]
//	batch ts=            (one op per input line, without ts)
//	get k= ts= [cols=]
//	scan ts= [start=] [end=] [limit=] [reverse] [cols=]   (paginates when limit is set)
//	gc horizon=
//	dump
func TestMVCCHistories(t *testing.T) {
	datadriven.Walk(t, "testdata/mvcc_histories", func(t *testing.T, path string) {
		eng := openTestEngine(t)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := runHistoryCmd(eng, d.Cmd, d.CmdArgs, d.Input)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

func openTestEngine(t testing.TB) *storage.Engine {
	t.Helper()
	eng, err := OpenEngine(t.TempDir(), storage.Options{InMemory: true, CacheSize: 1 << 20, MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	return eng
}

type cmdArgs map[string]string

func argsOf(args []datadriven.CmdArg) cmdArgs {
	m := cmdArgs{}
	for _, a := range args {
		m[a.Key] = strings.Join(a.Vals, ",")
	}
	return m
}

func (a cmdArgs) has(k string) bool { _, ok := a[k]; return ok }

func testRowKey(k string) []byte {
	return DocKey{TableID: 1, RangeParts: []KeyPart{{Value: Text(k)}}}.Encode()
}

func parseTS(s string) (hlc.Timestamp, error) {
	sec, logical, _ := strings.Cut(s, ".")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad ts %q", s)
	}
	var l uint64
	if logical != "" {
		if l, err = strconv.ParseUint(logical, 10, 32); err != nil {
			return 0, fmt.Errorf("bad ts %q", s)
		}
	}
	return hlc.FromMicros(n*1e6, uint32(l)), nil
}

func fmtTS(ts hlc.Timestamp) string {
	s := strconv.FormatInt(ts.Physical()/1e6, 10)
	if us := ts.Physical() % 1e6; us != 0 {
		s += fmt.Sprintf("s+%dus", us)
	}
	if ts.Logical() != 0 {
		s += "." + strconv.Itoa(int(ts.Logical()))
	}
	return s
}

func parseLiteral(ty ValueType, lit string) (Value, error) {
	var err error
	var i int64
	var f float64
	switch ty {
	case TypeNull:
		return Null(), nil
	case TypeBool:
		var b bool
		b, err = strconv.ParseBool(lit)
		return Bool(b), err
	case TypeInt16, TypeInt32, TypeInt64, TypeTimestamp:
		i, err = strconv.ParseInt(lit, 10, 64)
		return Value{Type: ty, Int: i}, err
	case TypeFloat32, TypeFloat64:
		f, err = strconv.ParseFloat(lit, 64)
		return Value{Type: ty, Float: f}, err
	case TypeText, TypeBytes, TypeDecimal:
		return Value{Type: ty, Bytes: []byte(lit)}, nil
	}
	return Value{}, fmt.Errorf("no literal syntax for %s", ty)
}

// parseCols parses "1:int64:5,2:text:abc" or, with ids=true, "1,2".
func parseCols(s string, ids bool) ([]ColumnValue, error) {
	var cols []ColumnValue
	for _, c := range strings.Split(s, ",") {
		parts := strings.SplitN(c, ":", 3)
		id, err := strconv.ParseUint(parts[0], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("bad column %q", c)
		}
		cv := ColumnValue{ID: uint32(id)}
		if !ids {
			if len(parts) < 2 {
				return nil, fmt.Errorf("column %q needs a type", c)
			}
			ty, ok := ParseValueType(parts[1])
			if !ok {
				return nil, fmt.Errorf("bad type in %q", c)
			}
			lit := ""
			if len(parts) == 3 {
				lit = parts[2]
			}
			if cv.Value, err = parseLiteral(ty, lit); err != nil {
				return nil, err
			}
		}
		cols = append(cols, cv)
	}
	return cols, nil
}

func parseOp(cmd string, a cmdArgs) (WriteOp, error) {
	op := WriteOp{RowKey: testRowKey(a["k"])}
	switch cmd {
	case "put_row":
		op.Kind = OpPutRow
	case "put_cols":
		op.Kind = OpPutColumns
	case "delete_row":
		op.Kind = OpDeleteRow
	case "delete_cols":
		op.Kind = OpDeleteColumns
	default:
		return op, fmt.Errorf("unknown op %q", cmd)
	}
	if a.has("cols") {
		var err error
		if op.Columns, err = parseCols(a["cols"], op.Kind == OpDeleteColumns); err != nil {
			return op, err
		}
	}
	if a.has("ttl") {
		d, err := time.ParseDuration(a["ttl"])
		if err != nil {
			return op, err
		}
		op.TTL = d
	}
	return op, nil
}

func parseProjection(a cmdArgs) ([]uint32, error) {
	if !a.has("cols") {
		return nil, nil
	}
	ids := []uint32{}
	if a["cols"] == "" {
		return ids, nil
	}
	cols, err := parseCols(a["cols"], true)
	for _, c := range cols {
		ids = append(ids, c.ID)
	}
	return ids, err
}

func runHistoryCmd(eng *storage.Engine, cmd string, args []datadriven.CmdArg, input string) (string, error) {
	a := argsOf(args)
	var ts hlc.Timestamp
	if a.has("ts") {
		var err error
		if ts, err = parseTS(a["ts"]); err != nil {
			return "", err
		}
	}
	switch cmd {
	case "put_row", "put_cols", "delete_row", "delete_cols":
		op, err := parseOp(cmd, a)
		if err != nil {
			return "", err
		}
		return "", ApplyWriteBatch(eng, ts, &WriteBatch{Ops: []WriteOp{op}})
	case "batch":
		var b WriteBatch
		for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
			fields := strings.Fields(line)
			la := cmdArgs{}
			for _, f := range fields[1:] {
				k, v, _ := strings.Cut(f, "=")
				la[k] = v
			}
			op, err := parseOp(fields[0], la)
			if err != nil {
				return "", err
			}
			b.Ops = append(b.Ops, op)
		}
		// Replicate it as the tablet layer would.
		var decoded WriteBatch
		if err := decoded.Unmarshal(b.Marshal()); err != nil {
			return "", err
		}
		return "", ApplyWriteBatch(eng, ts, &decoded)
	case "get":
		proj, err := parseProjection(a)
		if err != nil {
			return "", err
		}
		row, ok, err := GetRow(eng, testRowKey(a["k"]), ReadOptions{ReadTime: ts, Columns: proj})
		if err != nil {
			return "", err
		}
		if !ok {
			return fmt.Sprintf("get: %s -> <no row>\n", a["k"]), nil
		}
		return "get: " + fmtRow(row) + "\n", nil
	case "scan":
		return runScan(eng, ts, a)
	case "gc":
		h, err := parseTS(a["horizon"])
		if err != nil {
			return "", err
		}
		n, err := GC(eng.DB, TableSpan(1), h)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("gc: deleted %d\n", n), nil
	case "dump":
		return dumpEngine(eng)
	}
	return "", fmt.Errorf("unknown command %q", cmd)
}

func runScan(eng *storage.Engine, ts hlc.Timestamp, a cmdArgs) (string, error) {
	proj, err := parseProjection(a)
	if err != nil {
		return "", err
	}
	span := TableSpan(1)
	if a.has("start") {
		span.Start = testRowKey(a["start"])
	}
	if a.has("end") {
		span.End = testRowKey(a["end"])
	}
	opts := ScanOptions{ReadOptions: ReadOptions{ReadTime: ts, Columns: proj}, Span: span, Reverse: a.has("reverse")}
	if a.has("limit") {
		if opts.Limit, err = strconv.Atoi(a["limit"]); err != nil {
			return "", err
		}
	}
	var sb strings.Builder
	for page := 1; ; page++ {
		rows, resume, err := Scan(eng, opts)
		if err != nil {
			return "", err
		}
		for _, r := range rows {
			fmt.Fprintf(&sb, "scan: %s\n", fmtRow(r))
		}
		if resume == nil {
			if sb.Len() == 0 {
				sb.WriteString("scan: <no rows>\n")
			}
			return sb.String(), nil
		}
		fmt.Fprintf(&sb, "resume: %s (page %d)\n", fmtRowKey(resume), page)
		opts.Span = ResumeSpan(opts.Span, resume, opts.Reverse)
	}
}

func fmtRowKey(rowKey []byte) string {
	k, err := DecodeDocKey(rowKey)
	if err != nil {
		return fmt.Sprintf("<bad key %x: %v>", rowKey, err)
	}
	var parts []string
	for _, p := range append(k.HashParts, k.RangeParts...) {
		if p.Value.Type == TypeText {
			parts = append(parts, string(p.Value.Bytes))
		} else {
			parts = append(parts, p.Value.String())
		}
	}
	return strings.Join(parts, "/")
}

func fmtRow(r Row) string {
	var cols []string
	for _, c := range r.Columns {
		cols = append(cols, fmt.Sprintf("%d=%s", c.ID, c.Value))
	}
	return fmt.Sprintf("%s -> {%s} @%s", fmtRowKey(r.Key), strings.Join(cols, ", "), fmtTS(r.WriteTime))
}

// dumpEngine prints every data key, decoded.
func dumpEngine(eng *storage.Engine) (string, error) {
	span := storage.DataSpan()
	it, err := eng.NewIter(nil)
	if err != nil {
		return "", err
	}
	defer it.Close()
	var sb strings.Builder
	for valid := it.SeekGE(span.Start); valid && span.Contains(it.Key()); valid = it.Next() {
		sb.WriteString(fmtEngineKV(it.Key(), it.Value()))
		sb.WriteByte('\n')
	}
	if sb.Len() == 0 {
		return "<empty>\n", it.Error()
	}
	return sb.String(), it.Error()
}

func fmtEngineKV(key, val []byte) string {
	n, err := rowKeyLen(key)
	if err != nil {
		return fmt.Sprintf("<bad key %x: %v>", key, err)
	}
	col, isCol, v, err := splitKey(key, n)
	if err != nil {
		return fmt.Sprintf("<bad key %x: %v>", key, err)
	}
	sub := "row"
	if isCol {
		sub = strconv.FormatUint(uint64(col), 10)
	}
	sv, err := decodeStoredValue(val)
	if err != nil {
		return fmt.Sprintf("<bad value %x: %v>", val, err)
	}
	var what string
	switch {
	case sv.tombstone:
		what = "tombstone"
	case !isCol:
		what = "marker"
	default:
		dv, err := DecodeValue(sv.payload)
		if err != nil {
			what = fmt.Sprintf("<bad value %x: %v>", sv.payload, err)
		} else {
			what = dv.String()
		}
	}
	if sv.hasExpiry {
		what += " exp=" + fmtTS(sv.expiry)
	}
	return fmt.Sprintf("%s/%s @%s#%d -> %s", fmtRowKey(key[:n]), sub, fmtTS(v.ht), v.wid, what)
}
