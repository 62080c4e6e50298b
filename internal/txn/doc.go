// Package txn holds the pieces of distributed transactions shared by the
// coordinator (the client) and the participants and status tablets (the
// tservers): the status table's schema and the state machine of a status
// record. The participant side (intents, conflicts, wait queues, reads
// that resolve intents) lives in package tablet; the coordinator (the Txn
// API) in package client. docs/transactions.md has the whole protocol.
package txn
