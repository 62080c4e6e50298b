package rpc

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// controlFramed sets TCP_USER_TIMEOUT on a framed data connection:
// keepalive probes only run while nothing is unacknowledged, so a peer
// that vanished while data was in flight is noticed by this timeout.
func controlFramed(_, _ string, rc syscall.RawConn) error {
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(framedUserTimeout.Milliseconds()))
	})
	if err != nil {
		return err
	}
	return serr
}
