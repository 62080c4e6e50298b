package pgwire

import (
	"context"
	"io"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// copyIn runs COPY FROM STDIN: CopyInResponse, then the portal reads the
// client's CopyData messages as a stream, one message at a time.
func (c *conn) copyIn(ctx context.Context, p CopyInPortal) (string, error) {
	format, ncols := p.CopyInFormat()
	c.send(&pgproto3.CopyInResponse{OverallFormat: byte(format), ColumnFormatCodes: formatCodes(format, ncols)})
	if err := c.flushOut(); err != nil {
		return "", err
	}
	r := &copyReader{c: c, ctx: ctx}
	tag, err := p.CopyIn(ctx, r)
	if err != nil {
		// CopyData still on its way is dropped by the main loop, as the
		// protocol prescribes after a failed COPY.
		return "", err
	}
	if !r.done {
		// The portal stopped reading early; the client still owes the
		// rest and CopyDone before the command can complete.
		if _, err := io.Copy(io.Discard, r); err != nil {
			return "", err
		}
	}
	return tag, nil
}

// copyReader reads the data of CopyData messages until CopyDone (io.EOF)
// or CopyFail (57014). A cancelled statement fails the next Read, so that
// a CancelRequest stops a COPY whose data is still streaming in.
type copyReader struct {
	c    *conn
	ctx  context.Context
	data []byte // the current CopyData's unread part; valid until the next Receive
	done bool
	err  error
}

func (r *copyReader) Read(p []byte) (int, error) {
	for {
		if !r.done && r.ctx.Err() != nil {
			r.done, r.err, r.data = true, context.Cause(r.ctx), nil
		}
		if len(r.data) > 0 {
			n := copy(p, r.data)
			r.data = r.data[n:]
			return n, nil
		}
		if r.done {
			return 0, r.err
		}
		r.next()
	}
}

// next receives the next message of the COPY.
func (r *copyReader) next() {
	c := r.c
	msg, err := c.be.Receive()
	if err != nil {
		// The loop ends the connection once the portal returns.
		c.recvErr, c.broken = err, true
		r.done, r.err = true, errClientGone
		return
	}
	switch m := msg.(type) {
	case *pgproto3.CopyData:
		r.data = m.Data
	case *pgproto3.CopyDone:
		r.done, r.err = true, io.EOF
	case *pgproto3.CopyFail:
		r.done, r.err = true, pgerror.New(pgerror.CodeQueryCanceled, "COPY from stdin failed: %s", m.Message)
	case *pgproto3.Flush, *pgproto3.Sync:
		// Ignored during COPY, as PostgreSQL does.
	default:
		r.done, r.err = true, pgerror.New(pgerror.CodeProtocolViolation,
			"unexpected %s message during COPY from stdin", msgName(msg))
	}
}

// copyOut runs COPY TO STDOUT: CopyOutResponse, the portal's CopyData
// messages (flushed as result rows are), CopyDone. After an error the
// ErrorResponse ends the copy, as in PostgreSQL.
func (c *conn) copyOut(ctx context.Context, p CopyOutPortal) (string, error) {
	format, ncols := p.CopyOutFormat()
	c.send(&pgproto3.CopyOutResponse{OverallFormat: byte(format), ColumnFormatCodes: formatCodes(format, ncols)})
	tag, err := p.CopyOut(ctx, copyWriter{c})
	if err != nil {
		return "", err
	}
	c.send(&pgproto3.CopyDone{})
	return tag, nil
}

// copyWriter sends each Write as one CopyData message.
type copyWriter struct{ c *conn }

func (w copyWriter) Write(b []byte) (int, error) {
	if err := w.c.sendStreamed(&pgproto3.CopyData{Data: b}, 5+len(b)); err != nil {
		return 0, err
	}
	return len(b), nil
}

// formatCodes is format for each of n columns.
func formatCodes(format int16, n int) []uint16 {
	codes := make([]uint16, n)
	for i := range codes {
		codes[i] = uint16(format)
	}
	return codes
}
