package objstore

import (
	"context"
	"net"
	"net/http"
	"time"
)

// Timeouts of the connections Transport makes. Variables so that tests
// and callers with unusual stores can adjust them before the first use.
var (
	// DialTimeout bounds connecting to the store, so that one that is
	// down fails fast.
	DialTimeout = 5 * time.Second
	// IOTimeout bounds each network read or write once connected, so
	// that a hung server fails the request.
	IOTimeout = 60 * time.Second
)

// Transport is the HTTP transport of a store's client: connecting fails
// after DialTimeout, and a connection that moves no byte for IOTimeout
// fails its request rather than hanging it.
func Transport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	dialer := &net.Dialer{Timeout: DialTimeout, KeepAlive: 30 * time.Second}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &deadlineConn{Conn: c}, nil
	}
	tr.MaxIdleConnsPerHost = 32
	tr.ResponseHeaderTimeout = IOTimeout
	return tr
}

// deadlineConn gives every read and write a deadline.
type deadlineConn struct{ net.Conn }

func (c *deadlineConn) Read(b []byte) (int, error) {
	c.Conn.SetReadDeadline(time.Now().Add(IOTimeout))
	return c.Conn.Read(b)
}

func (c *deadlineConn) Write(b []byte) (int, error) {
	c.Conn.SetWriteDeadline(time.Now().Add(IOTimeout))
	return c.Conn.Write(b)
}
