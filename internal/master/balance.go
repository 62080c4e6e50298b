package master

import "context"

// balance runs one round of the balancer (see package balancer).
func (m *Master) balance(ctx context.Context) {}
