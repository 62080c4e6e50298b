// Package tserverpb is the generated wire format of the tablet server's RPC
// service (tserver.proto). Regenerate with `make proto`; do not edit the
// .pb.go files by hand.
package tserverpb
