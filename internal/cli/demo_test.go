package cli

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestDemoCommand(t *testing.T) {
	rows := 1000
	if testing.Short() {
		rows = 200
	}
	var out, errOut bytes.Buffer
	code := run([]string{"demo", "--rows", strconv.Itoa(rows), "--data-dir", t.TempDir()}, &out, &errOut)
	t.Logf("output:\n%s", out.String())
	if code != 0 {
		t.Fatalf("exit status %d, stderr:\n%s", code, errOut.String())
	}
	for _, want := range []string{"leader: node", "failover: node", fmt.Sprintf("%d rows verified", rows+1), "what arrives next: `shale start`"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestDemoRunsTwiceOnOneDataDir(t *testing.T) {
	if testing.Short() {
		t.Skip("two demo runs")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for i := 0; i < 2; i++ {
		var out bytes.Buffer
		res, err := runDemo(ctx, &out, &out, demoOptions{DataDir: dir, Rows: 100})
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, out.String())
		}
		if res.RowsVerified != 101 || res.Leader == 0 || res.NewLeader == res.Leader || res.Failover <= 0 {
			t.Fatalf("run %d: %+v", i, res)
		}
	}
}
