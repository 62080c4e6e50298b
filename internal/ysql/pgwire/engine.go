// Package pgwire serves the PostgreSQL frontend/backend protocol (version
// 3.0) on top of pgproto3: startup, simple and extended query, COPY FROM
// STDIN, cancel requests. It knows nothing of SQL: each connection gets a
// Session from the Engine, and the session parses, plans and executes; this
// package only moves messages, keeps the protocol's state (statements,
// portals, error-until-Sync) and buffers replies until Sync, Flush or the
// end of a simple query.
package pgwire

import (
	"context"
	"io"
)

// Engine opens one Session per client connection.
type Engine interface {
	// NewSession is called after the startup message. params holds the
	// startup parameters (user, database, application_name, options...).
	// An error (a *pgerror.Error, e.g. 3D000 for an unknown database) is
	// sent as a FATAL ErrorResponse and the connection closed.
	NewSession(ctx context.Context, params map[string]string, info ConnInfo) (Session, error)
}

// ConnInfo describes the connection to the session.
type ConnInfo struct {
	RemoteAddr string
	BackendPID uint32
	// Cancel cancels the connection's running statement (57014), as a
	// CancelRequest does; Terminate also ends the connection (FATAL
	// 57P01). Other sessions call them: pg_cancel_backend,
	// pg_terminate_backend.
	Cancel, Terminate func()
}

// Session is the SQL side of one connection. Calls are never concurrent.
// Errors returned are *pgerror.Error where the engine knows the SQLSTATE;
// anything else is reported as XX000.
type Session interface {
	// ParameterStatus returns the parameters reported to the client
	// (server_version, server_encoding, client_encoding, DateStyle,
	// TimeZone, integer_datetimes, standard_conforming_strings,
	// application_name, is_superuser, session_authorization, IntervalStyle).
	// Called after startup and after every statement; pgwire sends a
	// ParameterStatus message for each value that changed.
	ParameterStatus() map[string]string
	// SettingsVersion changes whenever a parameter may have changed:
	// pgwire asks ParameterStatus after a statement only if it moved.
	SettingsVersion() uint64

	// Split splits a simple-query string into its statements' texts, in
	// order. An empty or comment-only string gives none. A syntax error is
	// returned as a 42601 error.
	Split(query string) ([]string, error)

	// Prepare parses and analyses one statement. paramTypes are the OIDs
	// the client gave (0 = infer); the returned statement has all of them.
	Prepare(ctx context.Context, query string, paramTypes []uint32) (Statement, error)

	// TxnStatus is the transaction state for ReadyForQuery: 'I' idle, 'T'
	// in a transaction block, 'E' in a failed transaction block.
	TxnStatus() byte

	// Sync marks the end of an extended-query batch (the Sync message): an
	// implicit transaction the batch ran in commits here, or rolls back
	// when the batch failed (failed is true). It is also called at the
	// end of every simple Query message, after its last statement or the
	// one that failed: the statements of one Query share an implicit
	// transaction the same way.
	Sync(ctx context.Context, failed bool) error

	// Notices returns and clears the notices (severity NOTICE/WARNING)
	// raised since the last call; pgwire sends them as NoticeResponse.
	Notices() []*Notice

	// Close ends the session (rolls back an open transaction).
	Close()
}

// Notice is a NoticeResponse.
type Notice struct {
	Severity string // NOTICE, WARNING, INFO
	Code     string
	Message  string
	Detail   string
	Hint     string
}

// Column describes one result column, as RowDescription does.
type Column struct {
	Name         string
	TableOID     uint32
	AttrNum      int16
	TypeOID      uint32
	TypeSize     int16
	TypeModifier int32
}

// Statement is a prepared statement.
type Statement interface {
	// ParamTypes are the parameter type OIDs (ParameterDescription).
	ParamTypes() []uint32
	// Columns are the result columns; nil for a statement that returns no
	// rows (NoData).
	Columns() []Column
	// Bind makes a portal. params are the raw parameter values (nil =
	// NULL) in the formats given (0 text, 1 binary; per the protocol an
	// empty list means all text and a single entry applies to all).
	// resultFormats likewise gives the output format per column. pgwire
	// has checked the counts and that every format is 0 or 1; params are
	// a copy the portal may keep.
	Bind(ctx context.Context, params [][]byte, paramFormats []int16, resultFormats []int16) (Portal, error)
	// Close releases the statement. Portals bound from it stay usable
	// until their own Close, as in PostgreSQL (re-parsing the unnamed
	// statement must not break the unnamed portal).
	Close()
}

// Portal is a bound statement ready to execute.
type Portal interface {
	// Execute runs the portal, or resumes it after a suspension, sending
	// up to maxRows rows (0 = all) to out. It returns the command tag
	// ("SELECT 3", "INSERT 0 1", "BEGIN"...) and whether the portal is
	// suspended (more rows remain; PortalSuspended is sent, no tag).
	// The tags "DEALLOCATE ALL" and "DISCARD ALL" make pgwire drop its
	// named prepared statements (and, for DISCARD ALL, its portals).
	Execute(ctx context.Context, maxRows int, out RowWriter) (tag string, suspended bool, err error)
	// Close releases the portal.
	Close()
}

// RowWriter receives result rows, each value already encoded in the
// column's result format (nil = NULL). The slice is only valid during the
// call.
type RowWriter interface {
	WriteRow(values [][]byte) error
}

// CopyOutPortal is implemented by portals of COPY ... TO STDOUT. Instead of
// Execute, pgwire sends CopyOutResponse, calls CopyOut with a writer whose
// every Write is one CopyData message, then sends CopyDone. CopyOut returns
// the command tag ("COPY 10").
type CopyOutPortal interface {
	Portal
	// CopyOutFormat is the overall format (0 text/csv) and the number of
	// columns for CopyOutResponse.
	CopyOutFormat() (format int16, columns int)
	CopyOut(ctx context.Context, data io.Writer) (tag string, err error)
}

// CopyInPortal is implemented by portals of COPY ... FROM STDIN. Instead of
// Execute, pgwire sends CopyInResponse and calls CopyIn with a reader over
// the CopyData messages; the reader returns io.EOF at CopyDone and an error
// at CopyFail. CopyIn returns the command tag ("COPY 10").
type CopyInPortal interface {
	Portal
	// CopyInFormat is the overall format (0 text/csv, 1 binary) and the
	// number of columns for CopyInResponse.
	CopyInFormat() (format int16, columns int)
	CopyIn(ctx context.Context, data io.Reader) (tag string, err error)
}

type endsBatchKey struct{}

// EndsBatch reports whether the statement running under ctx (an Execute)
// is the last of its extended-protocol batch: the client's Sync has
// already arrived. A session can then commit it on its own, as a simple
// Query's only statement, instead of holding an implicit transaction open
// until Sync.
func EndsBatch(ctx context.Context) bool {
	v, _ := ctx.Value(endsBatchKey{}).(bool)
	return v
}
