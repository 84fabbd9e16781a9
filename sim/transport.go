package sim

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"mezzo/sim/internal/h2c"
)

// ConnStats counts the TCP connections a fleet's transport made.
type ConnStats struct {
	// Dialed is every connection opened so far (including ones the
	// HTTP/2 pool closed at once because another dial to the same master
	// won the race).
	Dialed int64
	// Open is how many are open now.
	Open int64
}

// connCounter wraps a dialer and counts connections, so tests and
// benchmarks can show that thousands of agents share a handful.
type connCounter struct {
	dial   func(ctx context.Context, network, addr string) (net.Conn, error)
	dialed atomic.Int64
	open   atomic.Int64
}

func (c *connCounter) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := c.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c.dialed.Add(1)
	c.open.Add(1)
	return &countedConn{Conn: conn, c: c}, nil
}

func (c *connCounter) stats() ConnStats {
	return ConnStats{Dialed: c.dialed.Load(), Open: c.open.Load()}
}

type countedConn struct {
	net.Conn
	c    *connCounter
	once sync.Once
}

func (cc *countedConn) Close() error {
	cc.once.Do(func() { cc.c.open.Add(-1) })
	return cc.Conn.Close()
}

// newH2CClient returns a client that speaks only cleartext HTTP/2 with
// prior knowledge: every request to a master is a stream on one of a few
// shared TCP connections (the transport opens another only when a
// connection reaches the server's concurrent-stream limit). Redirects are
// not followed: the agent follows 307s itself to learn the leader.
//
// The transport is package h2c's rather than net/http's: the emulated
// agents share the machine with the masters they measure, and net/http's
// HTTP/2 client cost about three times more CPU per subscription.
func newH2CClient(cc *connCounter) *http.Client {
	return &http.Client{
		Transport: h2c.New(h2c.Config{
			DialContext: cc.DialContext,
			// Detect a dead master connection (a killed process on
			// another host) without waiting for TCP timeouts.
			PingInterval: 15 * time.Second,
			PingTimeout:  10 * time.Second,
		}),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
