package pgwire

import (
	"context"
	"math"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/shaledb/shaledb/internal/ysql/pgerror"
)

// extError reports an error in the extended protocol: everything up to
// the next Sync is skipped and the batch counts as failed.
func (c *conn) extError(err error) {
	c.sendError(err)
	c.ignoreTillSync, c.batchFailed = true, true
}

func (c *conn) parse(m *pgproto3.Parse) {
	if m.Name == "" {
		c.closeStmt("") // re-parsing the unnamed statement replaces it
	} else if _, ok := c.stmts[m.Name]; ok {
		c.extError(pgerror.New(pgerror.CodeDuplicatePreparedStatement, "prepared statement \"%s\" already exists", m.Name))
		return
	}
	ctx := c.begin()
	c.watchStart()
	stmt, err := c.sess.Prepare(ctx, m.Query, m.ParameterOIDs)
	err = callErr(ctx, err)
	c.end()
	c.sendNotices()
	if err != nil {
		c.extError(err)
		return
	}
	if c.stmts == nil {
		c.stmts = make(map[string]Statement)
	}
	c.stmts[m.Name] = stmt
	c.send(&pgproto3.ParseComplete{})
}

func (c *conn) bind(m *pgproto3.Bind) {
	stmt, ok := c.stmts[m.PreparedStatement]
	if !ok {
		c.extError(noStatement(m.PreparedStatement))
		return
	}
	if m.DestinationPortal == "" {
		c.closePortal("") // binding the unnamed portal replaces it
	} else if _, ok := c.portals[m.DestinationPortal]; ok {
		c.extError(pgerror.New(pgerror.CodeDuplicateCursor, "cursor \"%s\" already exists", m.DestinationPortal))
		return
	}
	cols := stmt.Columns()
	if err := checkBind(m, len(stmt.ParamTypes()), len(cols)); err != nil {
		c.extError(err)
		return
	}
	ctx := c.begin()
	c.watchStart()
	p, err := stmt.Bind(ctx, copyParams(m.Parameters), m.ParameterFormatCodes, m.ResultFormatCodes)
	err = callErr(ctx, err)
	c.end()
	c.sendNotices()
	if err != nil {
		c.extError(err)
		return
	}
	if c.portals == nil {
		c.portals = make(map[string]*portal)
	}
	c.portals[m.DestinationPortal] = &portal{p: p, cols: cols, formats: m.ResultFormatCodes}
	c.send(&pgproto3.BindComplete{})
}

// checkBind checks Bind's counts and format codes against the statement,
// as PostgreSQL does before binding, so that the engine can trust them.
func checkBind(m *pgproto3.Bind, params, cols int) error {
	if len(m.Parameters) != params {
		return pgerror.New(pgerror.CodeProtocolViolation,
			"bind message supplies %d parameters, but prepared statement \"%s\" requires %d",
			len(m.Parameters), m.PreparedStatement, params)
	}
	if n := len(m.ParameterFormatCodes); n > 1 && n != params {
		return pgerror.New(pgerror.CodeProtocolViolation,
			"bind message has %d parameter formats but %d parameters", n, params)
	}
	if n := len(m.ResultFormatCodes); n > 1 && n != cols {
		return pgerror.New(pgerror.CodeProtocolViolation,
			"bind message has %d result formats but query has %d columns", n, cols)
	}
	for _, codes := range [][]int16{m.ParameterFormatCodes, m.ResultFormatCodes} {
		for _, f := range codes {
			if f != 0 && f != 1 {
				return pgerror.New(pgerror.CodeInvalidParameterValue, "unsupported format code: %d", f)
			}
		}
	}
	return nil
}

// copyParams copies Bind's parameter values out of the receive buffer,
// which the next message overwrites, into one allocation; nil (NULL)
// stays nil and empty stays empty.
func copyParams(params [][]byte) [][]byte {
	if len(params) == 0 {
		return nil
	}
	n := 0
	for _, p := range params {
		n += len(p)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(params))
	for i, p := range params {
		if p == nil {
			continue
		}
		start := len(buf)
		buf = append(buf, p...)
		out[i] = buf[start:len(buf):len(buf)]
	}
	return out
}

func (c *conn) describe(m *pgproto3.Describe) {
	switch m.ObjectType {
	case 'S':
		stmt, ok := c.stmts[m.Name]
		if !ok {
			c.extError(noStatement(m.Name))
			return
		}
		c.send(&pgproto3.ParameterDescription{ParameterOIDs: stmt.ParamTypes()})
		c.describeRows(stmt.Columns(), nil)
	case 'P':
		p, ok := c.portals[m.Name]
		if !ok {
			c.extError(noPortal(m.Name))
			return
		}
		c.describeRows(p.cols, p.formats)
	default:
		c.extError(pgerror.New(pgerror.CodeProtocolViolation, "invalid DESCRIBE message subtype %d", m.ObjectType))
	}
}

func (c *conn) describeRows(cols []Column, formats []int16) {
	if cols == nil {
		c.send(&pgproto3.NoData{})
		return
	}
	c.sendRowDescription(cols, formats)
}

func (c *conn) execute(m *pgproto3.Execute) {
	p, ok := c.portals[m.Portal]
	if !ok {
		c.extError(noPortal(m.Portal))
		return
	}
	c.srv.m.query()
	maxRows := 0
	if uint64(m.MaxRows) <= math.MaxInt {
		maxRows = int(m.MaxRows)
	}
	ctx := c.begin()
	if c.rd.nextIsSync() {
		ctx = context.WithValue(ctx, endsBatchKey{}, true)
	}
	var (
		tag       string
		suspended bool
		err       error
	)
	if cp, ok := p.p.(CopyInPortal); ok {
		tag, err = c.copyIn(ctx, cp)
	} else if co, ok := p.p.(CopyOutPortal); ok {
		c.watchStart()
		tag, err = c.copyOut(ctx, co)
	} else {
		c.watchStart()
		tag, suspended, err = p.p.Execute(ctx, maxRows, &c.sink)
	}
	err = callErr(ctx, err)
	c.end()
	if c.broken {
		return
	}
	c.afterStatement()
	switch {
	case err != nil:
		c.extError(err)
	case suspended:
		c.send(&pgproto3.PortalSuspended{})
	default:
		c.send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
		c.afterTag(tag)
	}
}

// afterTag applies what a completed statement did to the protocol's own
// objects: SQL and protocol share PostgreSQL's prepared-statement
// namespace, so DEALLOCATE ALL drops the named statements (pgx's
// DeallocateAll re-prepares the same names next), and DISCARD ALL also
// closes the portals. The engine cannot reach these maps; the tag, which
// the protocol shows anyway, tells pgwire.
func (c *conn) afterTag(tag string) {
	switch tag {
	case "DISCARD ALL":
		c.closePortals()
		fallthrough
	case "DEALLOCATE ALL":
		for name, s := range c.stmts {
			if name != "" {
				delete(c.stmts, name)
				s.Close()
			}
		}
	}
}

func (c *conn) closeMsg(m *pgproto3.Close) {
	switch m.ObjectType {
	case 'S':
		c.closeStmt(m.Name)
	case 'P':
		c.closePortal(m.Name)
	default:
		c.extError(pgerror.New(pgerror.CodeProtocolViolation, "invalid CLOSE message subtype %d", m.ObjectType))
		return
	}
	// Closing what does not exist is not an error.
	c.send(&pgproto3.CloseComplete{})
}

func (c *conn) closeStmt(name string) {
	if s, ok := c.stmts[name]; ok {
		delete(c.stmts, name)
		s.Close()
	}
}

func (c *conn) closePortal(name string) {
	if p, ok := c.portals[name]; ok {
		delete(c.portals, name)
		p.p.Close()
	}
}

// closePortals closes every portal: the transaction they belonged to has
// ended.
func (c *conn) closePortals() {
	for name, p := range c.portals {
		delete(c.portals, name)
		p.p.Close()
	}
}

func noStatement(name string) error {
	if name == "" {
		return pgerror.New(pgerror.CodeUndefinedPreparedStatement, "unnamed prepared statement does not exist")
	}
	return pgerror.New(pgerror.CodeUndefinedPreparedStatement, "prepared statement \"%s\" does not exist", name)
}

func noPortal(name string) error {
	return pgerror.New(pgerror.CodeInvalidCursorName, "portal \"%s\" does not exist", name)
}
