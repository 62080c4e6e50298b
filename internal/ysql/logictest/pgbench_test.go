package logictest

import (
	"context"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/shaledb/shaledb/internal/server/servertest"
)

// TestPgbench runs the real pgbench against a 3-node cluster: `pgbench -i
// --foreign-keys` (tables, client-side COPY of the accounts in one
// transaction, VACUUM, ALTER TABLE ADD PRIMARY KEY, then ADD FOREIGN KEY,
// which checks the rows), then the TPC-B-like script with 8 clients
// at READ COMMITTED. No transaction may fail, and afterwards the balances
// must agree: sum(abalance) = sum(bbalance) = sum(tbalance) = sum(delta).
// Scale 1 here; SHALE_LONG=1 (make test-long) runs scale 10, the issue's
// figure. Throughput is logged, not asserted.
func TestPgbench(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	pgbench, err := exec.LookPath("pgbench")
	if err != nil {
		t.Fatal("pgbench not found: `make test` installs postgresql-client")
	}
	scale, duration := 1, "15"
	if os.Getenv("SHALE_LONG") != "" {
		scale, duration = 10, "30"
	}
	c := servertest.NewClusterWith(t, 3, servertest.Options{YSQL: true, Production: true})
	addr := waitYSQL(t, c, 0)
	host, port, _ := net.SplitHostPort(addr)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	run := func(args ...string) string {
		t.Helper()
		args = append([]string{"-h", host, "-p", port, "-U", "yugabyte"}, args...)
		args = append(args, "yugabyte")
		start := time.Now()
		out, err := exec.CommandContext(ctx, pgbench, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("pgbench %v: %v\n%s", args, err, out)
		}
		t.Logf("pgbench %v took %v", args, time.Since(start).Round(time.Millisecond))
		return string(out)
	}
	run("-i", "--foreign-keys", "-s", strconv.Itoa(scale))
	conn := connect(t, addr, "yugabyte")
	var fks int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_constraint WHERE contype = 'f'`).Scan(&fks); err != nil || fks != 5 {
		t.Fatalf("pgbench -i --foreign-keys: %d foreign keys (want 5) %v", fks, err)
	}
	out := run("-c", "8", "-j", "2", "-T", duration)
	t.Logf("%s", out)
	processed := regexp.MustCompile(`number of transactions actually processed: (\d+)`).FindStringSubmatch(out)
	failed := regexp.MustCompile(`number of failed transactions: (\d+)`).FindStringSubmatch(out)
	if processed == nil || processed[1] == "0" || failed == nil || failed[1] != "0" {
		t.Fatalf("pgbench run: processed %v, failed %v", processed, failed)
	}

	var accounts, a, b, tl, h int64
	err = conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM pgbench_accounts), (SELECT sum(abalance) FROM pgbench_accounts),
		(SELECT sum(bbalance) FROM pgbench_branches), (SELECT sum(tbalance) FROM pgbench_tellers),
		(SELECT coalesce(sum(delta), 0) FROM pgbench_history)`).Scan(&accounts, &a, &b, &tl, &h)
	if err != nil {
		t.Fatal(err)
	}
	if accounts != int64(100_000*scale) || a != b || b != tl || tl != h {
		t.Fatalf("after pgbench: %d accounts (want %d); balances accounts %d, branches %d, tellers %d, history %d",
			accounts, 100_000*scale, a, b, tl, h)
	}
	t.Logf("balances agree: %d over %d accounts", a, accounts)
}
