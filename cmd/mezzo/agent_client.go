package main

import (
	"net/http"
	"time"

	"mezzo/agent"
)

// agentSubscribeHeaderTimeout bounds how long an agent waits for a
// master's answer to a request (the SUBSCRIBE's 200 header included). A
// master whose process is frozen or cut off by a partition accepts the
// connection (the kernel does) but never answers; without a bound the
// agent would wait forever instead of trying the other masters. A live
// master answers well within it: a master that knows no leader holds a
// request for a few seconds at most (the election), then answers.
const agentSubscribeHeaderTimeout = 10 * time.Second

// agentHTTPClient is agent.DefaultHTTPClient (h2c, shared connections)
// with the header timeout above and a quicker dead-connection check.
func agentHTTPClient() *http.Client {
	c := agent.DefaultHTTPClient()
	if t, ok := c.Transport.(*http.Transport); ok {
		t.ResponseHeaderTimeout = agentSubscribeHeaderTimeout
		if t.HTTP2 != nil {
			t.HTTP2.SendPingTimeout = 5 * time.Second
			t.HTTP2.PingTimeout = 5 * time.Second
		}
	}
	return c
}
