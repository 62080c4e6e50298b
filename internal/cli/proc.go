package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// processAlive reports whether pid is a running (not zombie) process that
// looks like the node of dataDir. Where /proc exists it guards against a
// recycled pid by checking the command line names the data dir.
func processAlive(pid int, dataDir string) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) || !procMounted()
	}
	// The state follows the command name, which is in parentheses and may
	// itself contain them.
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
		return false
	}
	if dataDir == "" {
		return true
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return true
	}
	return bytes.Contains(cmdline, []byte(filepath.Base(dataDir)))
}

func procMounted() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}

// stopProcess sends SIGTERM, waits up to grace for the process to end and
// then sends SIGKILL. It reports whether SIGKILL was needed.
func stopProcess(pid int, dataDir string, grace time.Duration) (killed bool, err error) {
	if !processAlive(pid, dataDir) {
		return false, nil
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return false, fmt.Errorf("signal process %d: %w", pid, err)
	}
	if waitExit(pid, dataDir, grace) {
		return false, nil
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return true, fmt.Errorf("kill process %d: %w", pid, err)
	}
	if !waitExit(pid, dataDir, 10*time.Second) {
		return true, fmt.Errorf("process %d still runs after SIGKILL", pid)
	}
	return true, nil
}

// waitExit polls until the process is gone or d passes.
func waitExit(pid int, dataDir string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for processAlive(pid, dataDir) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}
