package pgwire

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// startup runs the connection's startup phase: SSL/GSS negotiation
// (declined), a CancelRequest, or the StartupMessage that opens a
// session. It returns true when the session is ready for queries.
func (c *conn) startup() bool {
	c.nc.SetReadDeadline(time.Now().Add(c.srv.cfg.StartupTimeout))
	for {
		msg, err := c.be.ReceiveStartupMessage()
		if err != nil {
			c.startupFailed(err)
			return false
		}
		switch m := msg.(type) {
		case *pgproto3.SSLRequest, *pgproto3.GSSEncRequest:
			// No TLS or GSS encryption here: the single byte 'N' tells
			// the client to carry on in the clear.
			if _, err := c.nc.Write([]byte{'N'}); err != nil {
				return false
			}
		case *pgproto3.CancelRequest:
			c.srv.cancelRequest(m.ProcessID, m.SecretKey)
			return false
		case *pgproto3.StartupMessage:
			c.rd.typed = true // typed messages from here on
			c.nc.SetReadDeadline(time.Time{})
			return c.open(m)
		}
	}
}

// startupFailed answers a startup packet pgproto3 could not take.
func (c *conn) startupFailed(err error) {
	if c.rd.err != nil || c.srv.closing.Load() {
		return // the client went away (or timed out) before starting up
	}
	// pgproto3 rejects any version but 3.0 and 3.2 with this error; the
	// version number is only in its text.
	var code uint32
	if _, e := fmt.Sscanf(err.Error(), "unknown startup message code: %d", &code); e == nil {
		c.sendFatal(pgerror.New(pgerror.CodeFeatureNotSupported,
			"unsupported frontend protocol %d.%d: server supports 3.0 to 3.0", code>>16, code&0xffff))
		return
	}
	c.sendFatal(pgerror.New(pgerror.CodeProtocolViolation, "invalid startup packet: %v", err))
	c.linger = true
}

// open answers a StartupMessage: negotiate down to 3.0 if asked for 3.2,
// authenticate (trust), open the session and report its parameters.
func (c *conn) open(m *pgproto3.StartupMessage) bool {
	// Protocol options (_pq_.*) are for a newer protocol: PostgreSQL
	// reports them as unrecognised in NegotiateProtocolVersion, as it does
	// a minor version it does not speak.
	var unknown []string
	params := make(map[string]string, len(m.Parameters))
	for k, v := range m.Parameters {
		if strings.HasPrefix(k, "_pq_.") {
			unknown = append(unknown, k)
			continue
		}
		params[k] = v
	}
	if m.ProtocolVersion != pgproto3.ProtocolVersion30 || len(unknown) > 0 {
		sort.Strings(unknown)
		c.send(&pgproto3.NegotiateProtocolVersion{NewestMinorProtocol: 0, UnrecognizedOptions: unknown})
	}
	if !c.srv.admit() {
		c.sendFatal(pgerror.New(pgerror.CodeTooManyConnections, "sorry, too many clients already"))
		return false
	}
	c.admitted = true
	c.send(&pgproto3.AuthenticationOk{})

	sess, err := c.srv.cfg.Engine.NewSession(c.ctx, params, ConnInfo{
		RemoteAddr: c.nc.RemoteAddr().String(),
		BackendPID: c.pid,
		Cancel:     func() { c.cancelRunning(errCanceled) },
		Terminate:  c.terminate,
	})
	if err != nil {
		c.sendFatal(pgerror.From(err))
		return false
	}
	c.sess = sess

	c.paramsVersion = sess.SettingsVersion()
	ps := sess.ParameterStatus()
	c.params = make(map[string]string, len(ps))
	names := make([]string, 0, len(ps))
	for k := range ps {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		c.params[k] = ps[k]
		c.send(&pgproto3.ParameterStatus{Name: k, Value: ps[k]})
	}
	c.send(&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: c.secret[:]})
	c.send(&pgproto3.ReadyForQuery{TxStatus: sess.TxnStatus()})
	return c.flushOut() == nil
}
