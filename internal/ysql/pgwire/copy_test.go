package pgwire

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

func TestCopyInSimple(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.connect(t)
	c.send(&pgproto3.Query{String: "COPY t FROM STDIN; SELECT 1"})
	equal(t, []string{c.recv()}, []string{"CopyInResponse 0 [0 0]"})
	// Lines split across CopyData messages must come out whole.
	c.send(&pgproto3.CopyData{Data: []byte("1\tone\n2\ttw")}, &pgproto3.CopyData{Data: []byte("o\n")},
		&pgproto3.Flush{}, &pgproto3.Sync{}, // ignored during COPY
		&pgproto3.CopyData{Data: []byte("3\tthree\n")}, &pgproto3.CopyDone{})
	equal(t, c.until("ReadyForQuery"), []string{"CommandComplete COPY 3",
		"RowDescription i/23/0 s/25/0", "DataRow 0|row0", "CommandComplete SELECT 1", "ReadyForQuery I"})
	if got, want := ts.eng.rows(), [][]string{{"1", "one"}, {"2", "two"}, {"3", "three"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("copied %q, want %q", got, want)
	}
}

func TestCopyFail(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.connect(t)
	c.send(&pgproto3.Query{String: "COPY t FROM STDIN; SELECT 1"})
	c.until("CopyInResponse")
	c.send(&pgproto3.CopyData{Data: []byte("1\tone\n")}, &pgproto3.CopyFail{Message: "client gave up"})
	equal(t, c.until("ReadyForQuery"), []string{"ErrorResponse ERROR 57014 COPY from stdin failed: client gave up", "ReadyForQuery I"})
	if rows := ts.eng.rows(); len(rows) != 0 {
		t.Fatalf("failed COPY stored %q", rows)
	}
}

func TestCopyEngineErrorDropsRestOfData(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.connect(t)
	c.send(&pgproto3.Query{String: "COPY bad FROM STDIN"})
	c.until("CopyInResponse")
	// The client streams without waiting; what follows the error is dropped.
	c.send(&pgproto3.CopyData{Data: []byte("x\n")}, &pgproto3.CopyData{Data: []byte("y\n")}, &pgproto3.CopyDone{})
	equal(t, c.until("ReadyForQuery"), []string{`ErrorResponse ERROR 22P02 bad copy line "x"`, "ReadyForQuery I"})
	equal(t, c.query("SELECT 1"), []string{"RowDescription i/23/0 s/25/0", "DataRow 0|row0", "CommandComplete SELECT 1", "ReadyForQuery I"})
}

func TestCopyEngineStopsEarly(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.connect(t)
	c.send(&pgproto3.Query{String: "COPY early FROM STDIN"})
	c.until("CopyInResponse")
	// The rest is read and discarded before CommandComplete.
	c.send(&pgproto3.CopyData{Data: []byte("a\nb\nc\n")}, &pgproto3.CopyData{Data: []byte("d\n")}, &pgproto3.CopyDone{})
	equal(t, c.until("ReadyForQuery"), []string{"CommandComplete COPY 1", "ReadyForQuery I"})
	equal(t, c.query("SELECT 0"), []string{"RowDescription i/23/0 s/25/0", "CommandComplete SELECT 0", "ReadyForQuery I"})
}

func TestCopyInExtended(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.connect(t)
	c.send(&pgproto3.Parse{Query: "COPY t FROM STDIN"}, &pgproto3.Bind{}, &pgproto3.Describe{ObjectType: 'P'},
		&pgproto3.Execute{}, &pgproto3.Flush{})
	equal(t, c.until("CopyInResponse"), []string{"ParseComplete", "BindComplete", "NoData", "CopyInResponse 0 [0 0]"})
	var sb strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&sb, "%d\tv%d\n", i, i)
	}
	data := []byte(sb.String())
	for len(data) > 0 {
		n := min(len(data), 1000)
		c.send(&pgproto3.CopyData{Data: data[:n]})
		data = data[n:]
	}
	c.send(&pgproto3.CopyDone{}, &pgproto3.Sync{})
	equal(t, c.until("ReadyForQuery"), []string{"CommandComplete COPY 5000", "ReadyForQuery I"})
	rows := ts.eng.rows()
	if len(rows) != 5000 || rows[4999][1] != "v4999" {
		t.Fatalf("copied %d rows, last %q", len(rows), rows[len(rows)-1])
	}

	// CopyFail in the extended protocol: the error skips to Sync.
	c.send(&pgproto3.Parse{Query: "COPY t FROM STDIN"}, &pgproto3.Bind{}, &pgproto3.Execute{},
		&pgproto3.CopyFail{Message: "nope"}, &pgproto3.Parse{Query: "SELECT 1"}, &pgproto3.Sync{})
	equal(t, c.until("ReadyForQuery"), []string{"ParseComplete", "BindComplete", "CopyInResponse 0 [0 0]",
		"ErrorResponse ERROR 57014 COPY from stdin failed: nope", "ReadyForQuery I"})
}

func TestCopyUnexpectedMessage(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.connect(t)
	c.send(&pgproto3.Query{String: "COPY t FROM STDIN"})
	c.until("CopyInResponse")
	c.send(&pgproto3.Query{String: "SELECT 1"})
	equal(t, c.until("ReadyForQuery"), []string{"ErrorResponse ERROR 08P01 unexpected Query message during COPY from stdin", "ReadyForQuery I"})
}

func TestCopyClientDisconnects(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.connect(t)
	c.send(&pgproto3.Query{String: "COPY t FROM STDIN"})
	c.until("CopyInResponse")
	c.send(&pgproto3.CopyData{Data: []byte("1\tone\n")})
	c.nc.Close()
	waitFor(t, "session closed", func() bool { return ts.eng.open.Load() == 0 })
	if rows := ts.eng.rows(); len(rows) != 0 {
		t.Fatalf("interrupted COPY stored %q", rows)
	}
}

func TestCancelRequestStopsCopy(t *testing.T) {
	ts := startServer(t, newFakeEngine(), nil)
	c := ts.connect(t)
	c.send(&pgproto3.Query{String: "COPY t FROM STDIN"})
	c.until("CopyInResponse")
	c.send(&pgproto3.CopyData{Data: []byte("1\tone\n")})
	ts.cancel(c)
	c.send(&pgproto3.CopyData{Data: []byte("2\ttwo\n")}, &pgproto3.CopyDone{})
	equal(t, c.until("ReadyForQuery"), []string{"ErrorResponse ERROR 57014 canceling statement due to user request", "ReadyForQuery I"})
	equal(t, c.query("SELECT 0"), []string{"RowDescription i/23/0 s/25/0", "CommandComplete SELECT 0", "ReadyForQuery I"})
	if rows := ts.eng.rows(); len(rows) != 0 {
		t.Fatalf("cancelled COPY stored %q", rows)
	}
}
