// Package masterpb is the generated wire format of the master's RPC service
// (master.proto). Regenerate with `make proto`; do not edit the .pb.go
// files by hand.
package masterpb
