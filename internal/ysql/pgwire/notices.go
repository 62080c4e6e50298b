package pgwire

import (
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// sendNotices sends the notices the session raised since the last call.
func (c *conn) sendNotices() {
	for _, n := range c.sess.Notices() {
		sev, code := n.Severity, n.Code
		if sev == "" {
			sev = pgerror.SeverityNotice
		}
		if code == "" {
			code = pgerror.CodeSuccessfulCompletion
		}
		c.send(&pgproto3.NoticeResponse{
			Severity: sev, SeverityUnlocalized: sev, Code: code,
			Message: n.Message, Detail: n.Detail, Hint: n.Hint,
		})
	}
}

// afterStatement sends what a statement left to report: its notices and
// the parameters it changed (only executing can change them, so Parse and
// Bind send just notices).
func (c *conn) afterStatement() {
	c.sendNotices()
	for k, v := range c.sess.ParameterStatus() {
		if old, ok := c.params[k]; !ok || old != v {
			c.params[k] = v
			c.send(&pgproto3.ParameterStatus{Name: k, Value: v})
		}
	}
}
