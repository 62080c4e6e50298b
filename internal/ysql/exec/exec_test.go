package exec

import (
	"bufio"
	"fmt"
	"strings"
	"testing"
)

func TestYBExtensions(t *testing.T) {
	cases := []struct {
		in, out   string
		splitInto int
		pk        []keySpec
	}{
		{in: "CREATE TABLE t (a int PRIMARY KEY) SPLIT INTO 6 TABLETS;", out: "CREATE TABLE t (a int PRIMARY KEY)", splitInto: 6},
		{in: "CREATE TABLE t (a int, b int, c text, PRIMARY KEY ((a, b) HASH, c DESC))",
			out: `CREATE TABLE t (a int, b int, c text, PRIMARY KEY ("a", "b", "c"))`,
			pk:  []keySpec{{name: "a", hash: true, set: true}, {name: "b", hash: true, set: true}, {name: "c", desc: true, set: true}}},
		{in: "create table t (K int, primary key (K asc)) split into 2 tablets", out: `create table t (K int, primary key ("k"))`, splitInto: 2,
			pk: []keySpec{{name: "k", set: true}}},
		{in: "CREATE TABLE t (a int, PRIMARY KEY (a))", out: "CREATE TABLE t (a int, PRIMARY KEY (a))"},
		{in: "SELECT 'PRIMARY KEY (a HASH)'", out: "SELECT 'PRIMARY KEY (a HASH)'"},
	}
	for _, c := range cases {
		out, opts, err := ybExtensions(c.in)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		if out != c.out {
			t.Errorf("%q: rewritten to %q, want %q", c.in, out, c.out)
		}
		var split int
		var pk []keySpec
		if opts != nil {
			split, pk = opts.splitInto, opts.pk
		}
		if split != c.splitInto || len(pk) != len(c.pk) {
			t.Errorf("%q: options %+v", c.in, opts)
			continue
		}
		for i := range pk {
			if pk[i] != c.pk[i] {
				t.Errorf("%q: key column %d is %+v, want %+v", c.in, i, pk[i], c.pk[i])
			}
		}
	}
	if _, _, err := ybExtensions("CREATE TABLE t (a int PRIMARY KEY) SPLIT INTO 0 TABLETS"); err == nil {
		t.Error("SPLIT INTO 0 TABLETS accepted")
	}
}

func TestYBSplitAt(t *testing.T) {
	out, opts, err := ybExtensions("CREATE TABLE t (a int, b text, PRIMARY KEY (a ASC, b DESC)) SPLIT AT VALUES ((10), (20, 'x'), (-5 + 40));")
	if err != nil {
		t.Fatal(err)
	}
	if want := `CREATE TABLE t (a int, b text, PRIMARY KEY ("a", "b"))`; out != want {
		t.Errorf("rewritten to %q, want %q", out, want)
	}
	if opts == nil || len(opts.splitAt) != 3 || len(opts.splitAt[1]) != 2 || len(opts.pk) != 2 || !opts.pk[1].desc {
		t.Fatalf("options %+v", opts)
	}
	for _, bad := range []string{
		"CREATE TABLE t (a int PRIMARY KEY) SPLIT AT VALUES ((1)) WITH (x = 1)",
		"CREATE TABLE t (a int PRIMARY KEY) SPLIT AT VALUES ((1)",
	} {
		if _, _, err := ybExtensions(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestCopyTextAndCSV(t *testing.T) {
	text := &copyPortal{opts: copyOptions{delim: '\t', null: `\N`}}
	fields, err := text.readRecord(bufio.NewReader(strings.NewReader("1\ta\\tb\\\\c\t\\N\t\\101\n")))
	if err != nil {
		t.Fatal(err)
	}
	if len(fields) != 4 || *fields[0] != "1" || *fields[1] != "a\tb\\c" || fields[2] != nil || *fields[3] != "A" {
		t.Fatalf("text fields: %v", fields)
	}
	if f, _ := text.readRecord(bufio.NewReader(strings.NewReader("\\.\n"))); f != nil {
		t.Fatalf("end marker read as %v", f)
	}
	csv := &copyPortal{opts: copyOptions{csv: true, delim: ',', null: "", quote: '"', escape: '"'}}
	fields, err = csv.readRecord(bufio.NewReader(strings.NewReader("1,\"a, \"\"q\"\"\",,\"\",\"two\nlines\"\n")))
	if err != nil {
		t.Fatal(err)
	}
	if len(fields) != 5 || *fields[1] != `a, "q"` || fields[2] != nil || *fields[3] != "" || *fields[4] != "two\nlines" {
		var got []string
		for _, f := range fields {
			if f == nil {
				got = append(got, "<null>")
			} else {
				got = append(got, *f)
			}
		}
		t.Fatalf("csv fields: %q", got)
	}
}

func TestParseDurationMs(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "250": 250, "2s": 2000, "1min": 60000, "3 ms": 3} {
		if got, err := parseDurationMs(in); err != nil || got != want {
			t.Errorf("%q: %d %v, want %d", in, got, err, want)
		}
	}
	if _, err := parseDurationMs("soon"); err == nil {
		t.Error("a bad timeout was accepted")
	}
}

// TestStartupOptions: the forms of the startup "options" parameter (what
// PGOPTIONS sends) that PostgreSQL accepts.
func TestStartupOptions(t *testing.T) {
	s := &Session{settings: defaultSettings("u")}
	if err := s.startupOptions("-c search_path=a,b -cclient_min_messages=warning --application-name=x"); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"search_path": "a,b", "client_min_messages": "warning", "application_name": "x"} {
		if got := s.settings[k]; got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if err := s.startupOptions("-cno_such_setting=1"); err == nil {
		t.Error("unknown setting accepted")
	}
}

// TestNoticesFollowClientMinMessages: notices below client_min_messages
// are not sent.
func TestNoticesFollowClientMinMessages(t *testing.T) {
	s := &Session{settings: defaultSettings("u")}
	s.notice("NOTICE", "00000", "table %q does not exist, skipping", "t")
	s.notice("WARNING", "25P01", "there is no transaction in progress")
	if n := s.Notices(); len(n) != 2 {
		t.Fatalf("default level: %d notices", len(n))
	}
	s.settings["client_min_messages"] = "warning"
	s.notice("NOTICE", "00000", "skipping")
	s.notice("WARNING", "25P01", "there is no transaction in progress")
	s.notice("INFO", "00000", "info goes anyway")
	n := s.Notices()
	if len(n) != 2 || n[0].Severity != "WARNING" || n[1].Severity != "INFO" {
		t.Fatalf("at warning: %+v", n)
	}
}

// TestParameterStatusFollowsSettings: the reported parameters are built
// once and reused while no reported setting changes, and show a change.
func TestParameterStatusFollowsSettings(t *testing.T) {
	s := &Session{settings: defaultSettings("u")}
	first := s.ParameterStatus()
	if first["application_name"] != "" || first["DateStyle"] == "" {
		t.Fatalf("initial parameters: %v", first)
	}
	if again := s.ParameterStatus(); fmt.Sprint(again) != fmt.Sprint(first) {
		t.Fatalf("unchanged settings reported differently: %v vs %v", again, first)
	}
	v := s.SettingsVersion()
	if err := s.set("application_name", "bench"); err != nil {
		t.Fatal(err)
	}
	if s.SettingsVersion() == v {
		t.Fatal("SET left the settings version")
	}
	if got := s.ParameterStatus()["application_name"]; got != "bench" {
		t.Fatalf("after SET application_name: %q", got)
	}
	if err := s.set("timezone", "Europe/Paris"); err != nil {
		t.Fatal(err)
	}
	if got := s.ParameterStatus()["TimeZone"]; got != "Europe/Paris" {
		t.Fatalf("after SET timezone: %q", got)
	}
}
