// Package storage opens the node's single Pebble engine and defines how its
// key space is divided. It knows nothing of rows, SQL or Raft semantics: it is
// the leaf that docdb (replicated data and intents) and consensus (node-local
// Raft state) both build on.
//
// Key space (first byte):
//
//	0x01 local    node-local, unreplicated state keyed by group (tablet) id:
//	              0x01 | group id (8 bytes BE) | kind | suffix
//	0x02 intents  provisional writes of open transactions (docdb defines the rest)
//	0x10 data     regular MVCC data: 0x10 | table id | ... (docdb defines the rest)
//
// Everything after the first byte is order-preserving, so a tablet's data is
// one contiguous span and a group's local state is another.
package storage
