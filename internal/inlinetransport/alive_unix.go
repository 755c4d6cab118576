//go:build linux || darwin || freebsd || netbsd || openbsd

package inlinetransport

import (
	"crypto/tls"
	"net"
	"syscall"
)

// alive peeks at an idle connection without blocking: a closed connection reads end of file,
// a reset one fails, and one with bytes waiting has something nobody asked for; only one with
// nothing to read (EAGAIN) can carry the next request.
func alive(nc net.Conn) bool {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	ok = false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		ok = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return true
	})
	return err == nil && ok
}
