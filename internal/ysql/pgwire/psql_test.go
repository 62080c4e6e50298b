package pgwire

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
)

// psql finds the psql binary; a machine without it fails these tests
// rather than skipping them.
func psql(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("psql"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/bin/psql"); err == nil {
		return "/usr/bin/psql"
	}
	t.Fatal("psql not found: install postgresql-client (`make deps` does)")
	return ""
}

// runPsql runs psql against ts with stdin and returns stdout, stderr and
// the exit code.
func runPsql(t *testing.T, ts *testServer, stdin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	defer cancel()
	base := []string{"-X", "-h", "127.0.0.1", "-p", ts.port(), "-U", "tester", "-d", "db", "-v", "ON_ERROR_STOP=1"}
	cmd := exec.CommandContext(ctx, psql(t), append(base, args...)...)
	// sslmode=prefer makes psql open with an SSLRequest, which we decline.
	cmd.Env = append(os.Environ(), "PGSSLMODE=prefer", "PGAPPNAME=psqltest", "PGCONNECT_TIMEOUT=10", "HOME="+t.TempDir())
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("psql: %v", err)
	}
	return out.String(), errOut.String(), code
}

func TestPsql(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)

	out, errOut, code := runPsql(t, ts, "", "-At", "-c", "SELECT 3")
	if code != 0 || out != "0|row0\n1|row1\n2|row2\n" {
		t.Fatalf("SELECT 3: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// Several statements in one -c string: one Query message; psql 15
	// prints every result.
	out, errOut, code = runPsql(t, ts, "", "-At", "-c", "SELECT 1; NOTICE from psql; SELECT 2")
	if code != 0 || out != "0|row0\nDO\n0|row0\n1|row1\n" || !strings.Contains(errOut, "NOTICE:  from psql") {
		t.Fatalf("multi-statement: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	out, errOut, code = runPsql(t, ts, "1\tone\n2\ttwo\n3\tthree\n", "-c", `\copy t from stdin`)
	if code != 0 || out != "COPY 3\n" {
		t.Fatalf(`\copy: exit %d, stdout %q, stderr %q`, code, out, errOut)
	}
	if got, want := ts.eng.rows(), [][]string{{"1", "one"}, {"2", "two"}, {"3", "three"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("copied %q", got)
	}

	// An error with a position: psql draws the caret under character 6.
	out, errOut, code = runPsql(t, ts, "", "-c", "FAIL 42601")
	want := "ERROR:  fake failure 42601\n" +
		"LINE 1: FAIL 42601\n" +
		"             ^\n" +
		"DETAIL:  the detail\n" +
		"HINT:  the hint\n"
	if code != 1 || out != "" || errOut != want {
		t.Fatalf("error: exit %d, stdout %q, stderr:\n%s\nwant:\n%s", code, out, errOut, want)
	}
	ts.eng.mu.Lock()
	app := ts.eng.startup["application_name"]
	ts.eng.mu.Unlock()
	if app != "psqltest" {
		t.Fatalf("application_name %q", app)
	}
}
