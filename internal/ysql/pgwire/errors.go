package pgwire

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// Causes of a cancelled statement context, reported when the engine
// returns a bare context error.
var (
	errCanceled   = pgerror.New(pgerror.CodeQueryCanceled, "canceling statement due to user request")
	errClientGone = pgerror.New(pgerror.CodeConnectionFailure, "client connection lost")
)

// callErr maps an engine error: a plain error from a cancelled context is
// reported as why the context was cancelled (57014, 57P01...).
func callErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var pe *pgerror.Error
	if !errors.As(err, &pe) && ctx.Err() != nil {
		if cause := context.Cause(ctx); errors.As(cause, &pe) {
			return pe
		}
	}
	return err
}

// sendError buffers an ErrorResponse for err. An error of severity FATAL
// or PANIC ends the connection, as in PostgreSQL.
func (c *conn) sendError(err error) {
	pe := pgerror.From(err)
	sev := pe.Severity
	if sev == "" {
		sev = pgerror.SeverityError
	}
	c.send(&pgproto3.ErrorResponse{
		Severity:            sev,
		SeverityUnlocalized: sev,
		Code:                pe.Code,
		Message:             pe.Message,
		Detail:              pe.Detail,
		Hint:                pe.Hint,
		Position:            pe.Position,
		ConstraintName:      pe.Constraint,
		TableName:           pe.Table,
		ColumnName:          pe.Column,
	})
	c.srv.m.error(pe.Code)
	if pe.Code == pgerror.CodeInternalError {
		c.srv.log.Warn("internal error", "pid", c.pid, "err", err)
	}
	if sev == pgerror.SeverityFatal || sev == "PANIC" {
		c.flushOut()
		c.broken = true
	}
}

// sendFatal sends err as a FATAL error and marks the connection to close.
func (c *conn) sendFatal(err *pgerror.Error) {
	e := *err
	e.Severity = pgerror.SeverityFatal
	c.sendError(&e)
}
