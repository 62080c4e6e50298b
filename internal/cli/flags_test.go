package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestStartOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mod      func(o *startOptions)
		wantErr  string
		wantJoin []string
	}{
		{name: "defaults", mod: func(o *startOptions) {}},
		{name: "no data dir", mod: func(o *startOptions) { o.DataDir = "" }, wantErr: "--data-dir is required"},
		{name: "listen hostname", mod: func(o *startOptions) { o.Listen = "localhost" }, wantErr: "not an IP"},
		{name: "listen ipv6", mod: func(o *startOptions) { o.Listen = "::1" }},
		{name: "rf 2", mod: func(o *startOptions) { o.RF = 2 }, wantErr: "1, 3, 5 or 7"},
		{name: "rf 0", mod: func(o *startOptions) { o.RF = 0 }, wantErr: "1, 3, 5 or 7"},
		{name: "rf 5", mod: func(o *startOptions) { o.RF = 5 }},
		{name: "placement", mod: func(o *startOptions) { o.Placement = "aws.us-east-1.us-east-1a" }},
		{name: "placement two parts", mod: func(o *startOptions) { o.Placement = "aws.us-east-1" }, wantErr: "cloud.region.zone"},
		{name: "placement empty part", mod: func(o *startOptions) { o.Placement = "aws..z" }, wantErr: "cloud.region.zone"},
		{name: "placement four parts", mod: func(o *startOptions) { o.Placement = "a.b.c.d" }, wantErr: "cloud.region.zone"},
		{name: "rpc port", mod: func(o *startOptions) { o.RPCPort = 70000 }, wantErr: "--rpc-port 70000"},
		{name: "same ports", mod: func(o *startOptions) { o.HTTPPort = o.RPCPort }, wantErr: "both"},
		{name: "timeout", mod: func(o *startOptions) { o.FollowerUnavailableTimeout = 0 }, wantErr: "must be positive"},
		{name: "dead after", mod: func(o *startOptions) { o.TServerDeadAfter = -time.Second }, wantErr: "negative"},
		{
			name:     "join list",
			mod:      func(o *startOptions) { o.RPCPort = 9100; o.Join = []string{"127.0.0.1, 127.0.0.2:7200", "127.0.0.3"} },
			wantJoin: []string{"127.0.0.1:9100", "127.0.0.2:7200", "127.0.0.3:9100"},
		},
		{name: "join hostname", mod: func(o *startOptions) { o.Join = []string{"db1"} }, wantErr: `--join "db1": want IP or IP:port`},
		{name: "join bad port", mod: func(o *startOptions) { o.Join = []string{"127.0.0.1:0"} }, wantErr: "bad port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := defaultStartOptions()
			o.DataDir = "d"
			tc.mod(&o)
			err := o.validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if tc.wantJoin != nil && strings.Join(o.Join, " ") != strings.Join(tc.wantJoin, " ") {
					t.Fatalf("join %v, want %v", o.Join, tc.wantJoin)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestValidateCreate(t *testing.T) {
	for _, tc := range []struct {
		nodes, rf, rpc, http int
		wantErr              string
	}{
		{3, 3, 7100, 7000, ""},
		{1, 1, 7100, 7000, ""},
		{0, 1, 7100, 7000, "--nodes 0"},
		{255, 3, 7100, 7000, "--nodes 255"},
		{2, 3, 7100, 7000, "needs at least 3 nodes"},
		{4, 4, 7100, 7000, "1, 3, 5 or 7"},
		{3, 3, 7100, 7100, "both"},
		{3, 3, 0, 7000, "--rpc-port 0"},
	} {
		err := validateCreate(tc.nodes, tc.rf, tc.rpc, tc.http)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("validateCreate(%d, %d, %d, %d) = %v, want %q", tc.nodes, tc.rf, tc.rpc, tc.http, err, tc.wantErr)
		}
	}
}

// TestStartBadFlagsExitNonZero runs the command line itself: bad flags
// fail before anything starts, with a message on stderr.
func TestStartBadFlagsExitNonZero(t *testing.T) {
	for _, args := range [][]string{
		{"start"},
		{"start", "--data-dir", t.TempDir(), "--rf", "2"},
		{"start", "--data-dir", t.TempDir(), "--listen", "nowhere"},
		{"start", "--data-dir", t.TempDir(), "--placement", "a.b"},
		{"start", "--data-dir", t.TempDir(), "--no-such-flag"},
		{"cluster", "create", "--nodes", "2", "--rf", "3", "--base-dir", t.TempDir()},
		{"cluster", "stop-node", "x", "--base-dir", t.TempDir()},
		{"cluster", "status", "--base-dir", t.TempDir()},
		{"admin", "leader-stepdown", "abc"},
		{"admin", "--master-addrs", "host-name", "list-masters"},
	} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code == 0 || !strings.HasPrefix(errOut.String(), "error: ") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut.String())
		} else {
			t.Logf("%v: %s", args, strings.TrimSpace(errOut.String()))
		}
	}
}

// --max-sql-memory takes a share of the machine's memory or a size, as
// CockroachDB's flag does, and refuses what is not one.
func TestParseMaxSQLMemory(t *testing.T) {
	const total = 16 << 30
	for in, want := range map[string]int64{
		"25%": 4 << 30, " 12.5 % ": 2 << 30, "100%": total,
		"4GiB": 4 << 30, "512MiB": 512 << 20, "2GB": 2e9, "1.5gib": 3 << 29, "1048576": 1 << 20,
	} {
		if got, err := parseMaxSQLMemory(in, total); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0%", "101%", "-1GiB", "4 furlongs", "GiB", "100kB", "%"} {
		if got, err := parseMaxSQLMemory(in, total); err == nil {
			t.Errorf("%q accepted as %d", in, got)
		}
	}
	if got, err := parseMaxSQLMemory("25%", 0); err != nil || got != 0 {
		t.Errorf("25%% of an unknown total: %d, %v; want 0 (no limit)", got, err)
	}
}
