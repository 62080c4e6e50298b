package balancer

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
)

// TestBalancer runs the scripts in testdata/. Each file starts from an empty
// cluster. Regenerate expectations with:
//
//	go test ./internal/master/balancer -run TestBalancer -rewrite
//
// Commands:
//
//	reset                    starts again from an empty cluster and default options
//	options [timeout=<dur>] [max-adds=N] [max-adds-per-ts=N] [max-leader-moves=N]
//	tservers                 one per line: <id> [zone=z] [region=r] [cloud=c] [dead=<dur>] [blacklisted]
//	                         (adds or replaces)
//	tablets                  one per line: <id> table=T rf=R voters=1,2,3 [learners=4] [leader=L] [size=B]
//	table id=T tablets=N rf=R on=1,2,3
//	                         N tablets with ids T*100+1…, replica j of tablet i on on[(i+j) mod len(on)],
//	                         leader the first replica
//	kill id=N | revive id=N | blacklist id=N | unblacklist id=N
//	tick dur=<dur>           dead tservers have been dead that much longer
//	plan                     prints the moves (and any safety rule they break)
//	apply                    finishes the last plan's moves, then elects leaders where missing
//	inflight                 puts the last plan's moves in flight instead
//	finish                   finishes the in-flight moves
//	converge [rounds=N]      plan+apply until no moves (at most N rounds, default 100); prints
//	                         the rounds, the moves by kind and the per-tserver counts
//	check [global] [leaders] prints the balance goals missed
//	show                     prints the tablets and per-tserver counts
func TestBalancer(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		c := &cluster{}
		var last []Move
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := runCmd(c, &last, d)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			return out
		})
	})
}

func runCmd(c *cluster, last *[]Move, d *datadriven.TestData) (string, error) {
	args := map[string]string{}
	for _, a := range d.CmdArgs {
		args[a.Key] = strings.Join(a.Vals, ",")
	}
	id := func() (uint64, error) { return strconv.ParseUint(args["id"], 10, 64) }
	switch d.Cmd {
	case "reset":
		*c = cluster{}
		*last = nil
		return "", nil
	case "options":
		return "", parseOptions(&c.opts, args)
	case "tservers":
		for _, line := range lines(d.Input) {
			ts, err := parseTServer(line)
			if err != nil {
				return "", err
			}
			if old := c.tserver(ts.ID); old != nil {
				*old = ts
			} else {
				c.s.TServers = append(c.s.TServers, ts)
			}
		}
		return "", nil
	case "tablets":
		for _, line := range lines(d.Input) {
			t, err := parseTablet(line)
			if err != nil {
				return "", err
			}
			if old := c.tablet(t.ID); old != nil {
				*old = t
			} else {
				c.s.Tablets = append(c.s.Tablets, t)
			}
		}
		return "", nil
	case "table":
		return "", makeTable(c, args)
	case "kill", "revive", "blacklist", "unblacklist":
		n, err := id()
		if err != nil {
			return "", err
		}
		ts := c.tserver(n)
		if ts == nil {
			return "", fmt.Errorf("no tserver %d", n)
		}
		switch d.Cmd {
		case "kill":
			ts.Live, ts.DeadFor = false, 0
		case "revive":
			ts.Live, ts.DeadFor = true, 0
		case "blacklist":
			ts.Blacklisted = true
		case "unblacklist":
			ts.Blacklisted = false
		}
		c.elect()
		return "", nil
	case "tick":
		dur, err := time.ParseDuration(args["dur"])
		if err != nil {
			return "", err
		}
		for i := range c.s.TServers {
			if !c.s.TServers[i].Live {
				c.s.TServers[i].DeadFor += dur
			}
		}
		return "", nil
	case "plan":
		*last = Plan(c.s, c.opts)
		var b strings.Builder
		for _, m := range *last {
			fmt.Fprintln(&b, m)
		}
		for _, e := range c.checkPlan(*last) {
			fmt.Fprintln(&b, "UNSAFE:", e)
		}
		if len(*last) == 0 {
			b.WriteString("no moves\n")
		}
		return b.String(), nil
	case "apply":
		for _, m := range *last {
			c.apply(m)
		}
		c.elect()
		*last = nil
		return "", nil
	case "inflight":
		c.s.InFlight = append(c.s.InFlight, *last...)
		*last = nil
		return "", nil
	case "finish":
		for _, m := range c.s.InFlight {
			c.apply(m)
		}
		c.s.InFlight = nil
		c.elect()
		return "", nil
	case "converge":
		rounds := 100
		if v, ok := args["rounds"]; ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return "", err
			}
			rounds = n
		}
		return converge(c, rounds), nil
	case "check":
		_, global := args["global"]
		_, leaders := args["leaders"]
		errs := c.checkBalanced(global, leaders)
		if _, ok := args["table-leaders"]; ok {
			errs = append(errs, c.checkTableLeaders()...)
		}
		if len(errs) == 0 {
			return "ok\n", nil
		}
		return strings.Join(errs, "\n") + "\n", nil
	case "show":
		return c.show(), nil
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

func converge(c *cluster, rounds int) string {
	var b strings.Builder
	byKind := map[MoveKind]int{}
	maxAdds := 0
	for r := 1; r <= rounds; r++ {
		moves, errs := c.round()
		for _, e := range errs {
			fmt.Fprintf(&b, "round %d: UNSAFE: %s\n", r, e)
		}
		if len(moves) == 0 {
			fmt.Fprintf(&b, "converged after %d rounds:", r-1)
			for k := AddLearner; k <= TransferLeader; k++ {
				fmt.Fprintf(&b, " %s=%d", k, byKind[k])
			}
			fmt.Fprintf(&b, "; at most %d adds per round\n", maxAdds)
			b.WriteString(c.summary())
			return b.String()
		}
		adds := 0
		for _, m := range moves {
			byKind[m.Kind]++
			if m.Kind == AddLearner {
				adds++
			}
		}
		maxAdds = max(maxAdds, adds)
	}
	fmt.Fprintf(&b, "did not converge in %d rounds\n", rounds)
	b.WriteString(c.show())
	return b.String()
}

func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func parseOptions(o *Options, args map[string]string) error {
	for k, v := range args {
		var err error
		switch k {
		case "timeout":
			o.FollowerUnavailableTimeout, err = time.ParseDuration(v)
		case "max-adds":
			o.MaxConcurrentAdds, err = strconv.Atoi(v)
		case "max-adds-per-ts":
			o.MaxConcurrentAddsPerTServer, err = strconv.Atoi(v)
		case "max-leader-moves":
			o.MaxLeaderMovesPerRun, err = strconv.Atoi(v)
		default:
			err = fmt.Errorf("unknown option %q", k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func parseTServer(line string) (TServer, error) {
	f := strings.Fields(line)
	id, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil {
		return TServer{}, err
	}
	ts := TServer{ID: id, Live: true}
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "zone":
			ts.Placement.Zone = v
		case "region":
			ts.Placement.Region = v
		case "cloud":
			ts.Placement.Cloud = v
		case "dead":
			ts.Live = false
			if ts.DeadFor, err = time.ParseDuration(v); err != nil {
				return ts, err
			}
		case "blacklisted":
			ts.Blacklisted = true
		default:
			return ts, fmt.Errorf("unknown tserver field %q", k)
		}
	}
	return ts, nil
}

func parseIDs(s string) ([]uint64, error) {
	var ids []uint64
	for _, p := range strings.Split(s, ",") {
		id, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func parseTablet(line string) (Tablet, error) {
	f := strings.Fields(line)
	id, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil {
		return Tablet{}, err
	}
	t := Tablet{ID: id, TableID: 1, RF: 3}
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		var ids []uint64
		switch k {
		case "table":
			t.TableID, err = strconv.ParseUint(v, 10, 64)
		case "rf":
			t.RF, err = strconv.Atoi(v)
		case "leader":
			t.Leader, err = strconv.ParseUint(v, 10, 64)
		case "size":
			t.SizeBytes, err = strconv.ParseInt(v, 10, 64)
		case "voters", "learners":
			ids, err = parseIDs(v)
			role := Voter
			if k == "learners" {
				role = Learner
			}
			for _, id := range ids {
				t.Replicas = append(t.Replicas, Replica{TServer: id, Role: role})
			}
		default:
			err = fmt.Errorf("unknown tablet field %q", k)
		}
		if err != nil {
			return t, err
		}
	}
	return t, nil
}

func makeTable(c *cluster, args map[string]string) error {
	table, err := strconv.ParseUint(args["id"], 10, 64)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(args["tablets"])
	if err != nil {
		return err
	}
	rf, err := strconv.Atoi(args["rf"])
	if err != nil {
		return err
	}
	on, err := parseIDs(args["on"])
	if err != nil {
		return err
	}
	if rf > len(on) {
		return fmt.Errorf("rf %d > %d tservers", rf, len(on))
	}
	for i := 0; i < n; i++ {
		t := Tablet{ID: table*100 + uint64(i+1), TableID: table, RF: rf}
		for j := 0; j < rf; j++ {
			t.Replicas = append(t.Replicas, Replica{TServer: on[(i+j)%len(on)]})
		}
		t.Leader = t.Replicas[0].TServer
		c.s.Tablets = append(c.s.Tablets, t)
	}
	return nil
}
