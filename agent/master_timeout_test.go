package agent

import (
	"net"
	"net/http"
	"testing"
	"time"
)

// TestSubscribeSkipsFrozenMaster: a master that accepts connections but
// never answers (a frozen process or a partition: the kernel completes the
// handshake) must not hold the agent; after the client's response timeout
// it subscribes at the next master.
func TestSubscribeSkipsFrozenMaster(t *testing.T) {
	frozen, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer frozen.Close() // never Accept()ed: the kernel's backlog holds the connection
	m := newFakeMaster(t)
	const timeout = 200 * time.Millisecond
	start := time.Now()
	startTestAgent(t, m, func(c *Config) {
		c.Masters = []string{frozen.Addr().String(), m.addr()}
		c.HTTPClient = NewHTTPClient(timeout)
	})
	select {
	case sub := <-m.subs:
		if got := time.Since(start); got < timeout {
			t.Errorf("subscribed after %v, before the frozen master's timeout %v", got, timeout)
		}
		if sub.call.GetSubscribe() == nil {
			t.Errorf("first call is %v, want SUBSCRIBE", sub.call.GetType())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not move on from the frozen master")
	}
}

func TestDefaultHTTPClientTimeouts(t *testing.T) {
	for _, tt := range []struct {
		name string
		c    func() (time.Duration, time.Duration)
		want time.Duration
	}{
		{"default", func() (time.Duration, time.Duration) { return transportTimeouts(t, DefaultHTTPClient()) }, MasterResponseTimeout},
		{"injected", func() (time.Duration, time.Duration) { return transportTimeouts(t, NewHTTPClient(time.Second)) }, time.Second},
		{"none", func() (time.Duration, time.Duration) { return transportTimeouts(t, NewHTTPClient(-1)) }, 0},
	} {
		header, ping := tt.c()
		if header != tt.want || ping != masterPingTimeout {
			t.Errorf("%s: header timeout %v, ping %v; want %v, %v", tt.name, header, ping, tt.want, masterPingTimeout)
		}
	}
}

func transportTimeouts(t *testing.T, c *http.Client) (header, ping time.Duration) {
	t.Helper()
	tr, ok := c.Transport.(*http.Transport)
	if !ok || tr.HTTP2 == nil || tr.Protocols == nil || !tr.Protocols.UnencryptedHTTP2() || tr.Protocols.HTTP1() {
		t.Fatalf("transport %#v is not h2c-only", c.Transport)
	}
	return tr.ResponseHeaderTimeout, tr.HTTP2.PingTimeout
}
