package pgwire

import (
	"github.com/jackc/pgx/v5/pgproto3"
	"slices"
)

// simpleQuery runs a Query message: each statement is prepared, bound and
// executed in turn; the first error skips the rest. One ReadyForQuery
// ends it.
func (c *conn) simpleQuery(q string) {
	// As in PostgreSQL, a simple query replaces the unnamed statement and
	// portal.
	c.closeStmt("")
	c.closePortal("")
	failed := false
	texts, err := c.sess.Split(q)
	switch {
	case err != nil:
		c.sendError(err)
		failed = true
	case len(texts) == 0:
		c.send(&pgproto3.EmptyQueryResponse{})
	}
	if c.broken {
		return
	}
	for _, text := range texts {
		ok := c.simpleStatement(text)
		if c.broken {
			return
		}
		c.afterStatement()
		if !ok {
			failed = true
			break
		}
	}
	c.endBatch(failed)
}

// simpleStatement runs one statement of a simple query, sending its rows
// and CommandComplete or its error. It returns false on error.
func (c *conn) simpleStatement(text string) bool {
	c.srv.m.query()
	ctx := c.begin()
	defer c.end()
	c.watchStart()
	stmt, err := c.sess.Prepare(ctx, text, nil)
	if err != nil {
		c.sendError(callErr(ctx, err))
		return false
	}
	defer stmt.Close()
	p, err := stmt.Bind(ctx, nil, nil, nil)
	if err != nil {
		c.sendError(callErr(ctx, err))
		return false
	}
	defer p.Close()
	if cols := stmt.Columns(); cols != nil {
		c.sendRowDescription(cols, nil)
	}
	var tag string
	if cp, ok := p.(CopyInPortal); ok {
		c.watchStop() // copyIn reads the socket itself
		tag, err = c.copyIn(ctx, cp)
	} else if co, ok := p.(CopyOutPortal); ok {
		tag, err = c.copyOut(ctx, co)
	} else {
		tag, _, err = p.Execute(ctx, 0, &c.sink)
	}
	if err != nil {
		if !c.broken {
			c.sendError(callErr(ctx, err))
		}
		return false
	}
	c.send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
	c.afterTag(tag)
	return true
}

// endBatch ends a simple query or an extended-protocol batch (Sync): the
// session commits or rolls back its implicit transaction, portals go when
// the transaction has ended, and ReadyForQuery is sent and flushed.
func (c *conn) endBatch(failed bool) {
	ctx := c.begin()
	c.watchStart()
	err := callErr(ctx, c.sess.Sync(ctx, failed))
	c.end()
	if err != nil {
		c.sendError(err)
		if c.broken {
			return
		}
	}
	c.afterStatement()
	status := c.sess.TxnStatus()
	if status == 'I' {
		c.closePortals()
	}
	c.ignoreTillSync, c.batchFailed = false, false
	c.send(&pgproto3.ReadyForQuery{TxStatus: status})
	c.flushOut()
}

// sendRowDescription describes cols with the given result formats (in
// Bind's convention: none = text, one = for all, else one per column).
// The message and its names are the connection's, reused: Send encodes at
// once, and libpq describes the portal of every prepared execution.
func (c *conn) sendRowDescription(cols []Column, formats []int16) {
	fields := slices.Grow(c.rowDesc.Fields[:0], len(cols))[:len(cols)]
	names := c.rowDescNames[:0]
	for _, col := range cols {
		names = append(names, col.Name...)
	}
	c.rowDescNames = names
	for i, col := range cols {
		name := names[:len(col.Name):len(col.Name)]
		names = names[len(col.Name):]
		fields[i] = pgproto3.FieldDescription{
			Name:                 name,
			TableOID:             col.TableOID,
			TableAttributeNumber: uint16(col.AttrNum),
			DataTypeOID:          col.TypeOID,
			DataTypeSize:         col.TypeSize,
			TypeModifier:         col.TypeModifier,
			Format:               formatOf(formats, i),
		}
	}
	c.rowDesc.Fields = fields
	c.send(&c.rowDesc)
}

// formatOf is the format of value i under Bind's format-list convention.
func formatOf(formats []int16, i int) int16 {
	switch len(formats) {
	case 0:
		return 0
	case 1:
		return formats[0]
	default:
		return formats[i]
	}
}
