package pgwire

import (
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgproto3"
)

// TestConnReaderFraming: the reader hands the Backend one message at a
// time, so what the client pipelined stays visible: nextIsSync is true
// exactly when the next message already in is a Sync.
func TestConnReaderFraming(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	defer server.Close()
	var buf []byte
	buf, _ = (&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "u"}}).Encode(buf)
	first := len(buf)
	for _, m := range []pgproto3.FrontendMessage{
		&pgproto3.Parse{Query: "SELECT 1"}, &pgproto3.Bind{}, &pgproto3.Execute{}, &pgproto3.Sync{},
		&pgproto3.Query{String: "SELECT 2"}, &pgproto3.Sync{},
	} {
		buf, _ = m.Encode(buf)
	}
	go func() {
		// The startup message alone, then everything else in one write,
		// as a driver pipelines a batch.
		client.Write(buf[:first])
		client.Write(buf[first:])
	}()
	rd := &connReader{conn: server}
	be := pgproto3.NewBackend(rd, server)
	if _, err := be.ReceiveStartupMessage(); err != nil {
		t.Fatal(err)
	}
	rd.typed = true
	want := []struct {
		name     string
		syncNext bool
	}{{"Parse", false}, {"Bind", false}, {"Execute", true}, {"Sync", false}, {"Query", true}, {"Sync", false}}
	for _, w := range want {
		msg, err := be.Receive()
		if err != nil {
			t.Fatal(err)
		}
		if got := msgName(msg); got != w.name {
			t.Fatalf("received %s, want %s", got, w.name)
		}
		if got := rd.nextIsSync(); got != w.syncNext {
			t.Errorf("after %s: nextIsSync = %v, want %v", w.name, got, w.syncNext)
		}
	}
}
