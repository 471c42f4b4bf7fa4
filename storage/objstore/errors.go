package objstore

import (
	"errors"
	"io"
	"net"
	"syscall"
)

// Unreachable reports an error of the network rather than of the store:
// a refused or reset connection, a timeout, a name that does not resolve,
// an answer cut short.
func Unreachable(err error) bool {
	var netErr net.Error
	var opErr *net.OpError
	var dnsErr *net.DNSError
	return errors.As(err, &netErr) || errors.As(err, &opErr) || errors.As(err, &dnsErr) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)
}

// Innermost is the network error inside err, without the layers of
// request boilerplate a client puts around it; err if there is none.
func Innermost(err error) error {
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return opErr
	}
	return err
}
