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
	v := c.sess.SettingsVersion()
	if v == c.paramsVersion {
		return
	}
	c.paramsVersion = v
	for k, val := range c.sess.ParameterStatus() {
		if old, ok := c.params[k]; !ok || old != val {
			c.params[k] = val
			c.send(&pgproto3.ParameterStatus{Name: k, Value: val})
		}
	}
}
