//go:build !linux

package cli

// totalMemory returns 0: the machine's RAM is read on Linux only.
func totalMemory() uint64 { return 0 }
