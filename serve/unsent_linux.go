package serve

import (
	"net"

	"golang.org/x/sys/unix"
)

// unsent is how many bytes of what was written to c the kernel still
// holds, not yet acknowledged by the client: an answer handed over whole
// is not yet read.
func unsent(c net.Conn) int {
	sc, ok := c.(*net.TCPConn)
	if !ok {
		return 0
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	_ = raw.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) })
	return n
}
