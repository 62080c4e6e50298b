// Package transportpb is the generated wire format of the Raft transport
// (transport.proto). Regenerate with `make proto`; do not edit the .pb.go
// files by hand.
package transportpb
