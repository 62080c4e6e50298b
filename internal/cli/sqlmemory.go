package cli

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// sizeUnits are the units --max-sql-memory takes, decimal and binary.
var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40,
}

// parseMaxSQLMemory reads --max-sql-memory as CockroachDB's flag of that
// name: a percentage of the machine's memory (total bytes; unknown, 0:
// no limit) or a size with an optional unit.
func parseMaxSQLMemory(v string, total uint64) (int64, error) {
	s := strings.TrimSpace(v)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		pct, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || pct <= 0 || pct > 100 {
			return 0, fmt.Errorf("--max-sql-memory %q: want a percentage of the machine's memory in (0, 100]", v)
		}
		return int64(float64(total) * pct / 100), nil
	}
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(s)
	}
	n, err := strconv.ParseFloat(s[:i], 64)
	unit, ok := sizeUnits[strings.ToLower(strings.TrimSpace(s[i:]))]
	if err != nil || !ok || n <= 0 || n*unit >= math.MaxInt64 {
		return 0, fmt.Errorf(`--max-sql-memory %q: want a size ("4GiB", "512MB") or a percentage ("25%%")`, v)
	}
	if b := int64(n * unit); b >= 1<<20 {
		return b, nil
	}
	return 0, fmt.Errorf("--max-sql-memory %q: the least is 1MiB", v)
}
