package cli

import "syscall"

// totalMemory returns the machine's RAM in bytes, or 0 if unknown.
func totalMemory() uint64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0
	}
	return uint64(si.Totalram) * uint64(si.Unit)
}
