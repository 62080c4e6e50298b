// Package client is ShaleDB's Go client library and router: the piece that
// every node embeds and that the query layers, tools and tests use to
// reach data.
//
// A Client talks to the master leader for DDL and table locations
// (Masters) and to tablet leaders for data. Its meta cache maps a table to
// its tablets sorted by key span, and each tablet to its replicas and
// leader; a key is routed by binary search. Answers refresh the cache:
// NOT_LEADER moves the leader to the hinted replica (or the others are
// tried), TABLET_NOT_FOUND, KEY_OUT_OF_RANGE and TABLET_SPLIT reload the
// table's locations from the master (one lookup for all concurrent
// callers), and an unreachable node is skipped and, if no replica answers,
// the locations are reloaded too. Every operation retries with exponential
// backoff inside its deadline (Config.Timeout unless the context's is
// sooner) and then fails with an *Error whose Code says whether a write
// may have been applied (IsAmbiguous). Writes are idempotent at this
// layer, so they are retried after ambiguous answers too; an insert
// (OpInsert) that then finds its row reports CodeAmbiguous, since the
// earlier attempt may have written it (a transaction's retried insert does
// not collide with its own earlier attempt). A hybrid clock travels with
// every request and response.
//
// Usage:
//
//	c, err := client.Open(ctx, client.Config{Masters: []string{"127.0.0.1:7100"}})
//	defer c.Close()
//	_, err = c.CreateTable(ctx, &masterpb.CreateTableRequest{…})
//	t, err := c.OpenTable(ctx, "ns", "kv")
//	err = t.Put(ctx, client.Row{"k": docdb.Text("a"), "v": docdb.Int64(1)})
//	row, found, err := t.Get(ctx, client.Row{"k": docdb.Text("a")})
//	rows, err := t.ScanAll(ctx, client.ScanOptions{Limit: 10})
//	err = t.Apply(ctx, []client.Op{{Kind: client.OpPut, Row: …}, …})
//
// Rows are maps from column name to docdb.Value and are checked against
// the schema before anything is sent: unknown columns, missing key columns
// and values of the wrong type are CodeInvalidArgument errors.
package client
