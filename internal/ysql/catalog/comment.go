package catalog

import (
	"context"
	"fmt"

	"github.com/shaledb/shaledb/internal/master/masterpb"
)

// CommentID names what a COMMENT ON describes: an object of a PostgreSQL
// catalog (ClassOID: pg_class's for relations, pg_namespace's for
// schemas) and, for a table column, the column's id. An id, not its
// attnum: dropping an earlier column moves the attnums.
type CommentID struct {
	Database string `json:"database"`
	ClassOID uint32 `json:"class"`
	ObjOID   uint32 `json:"oid"`
	Column   uint32 `json:"column,omitempty"`
}

// comment is a COMMENT ON's catalog object.
type comment struct {
	CommentID
	Text string `json:"text"`
}

func commentKey(id CommentID) string {
	return fmt.Sprintf("comment/%s/%d/%d/%d", id.Database, id.ClassOID, id.ObjOID, id.Column)
}

// SetComment sets the comment of id; an empty text removes it.
func (c *Cache) SetComment(ctx context.Context, id CommentID, text string) error {
	return c.update(ctx, func(s *Snapshot, req *masterpb.UpdateCatalogObjectsRequest) error {
		if text == "" {
			req.Delete = append(req.Delete, commentKey(id))
			return nil
		}
		req.Put[commentKey(id)] = encode(comment{CommentID: id, Text: text})
		return nil
	})
}
