package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// newServer returns an HTTP server speaking HTTP/1.1 and cleartext HTTP/2
// (h2c) on the same port: frameworks and tools use HTTP/1.1, agents share
// HTTP/2 connections (DESIGN.md: many agents per TCP connection).
func newServer(h http.Handler) *http.Server {
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	return &http.Server{
		Handler:   h,
		Protocols: &p,
		// Agents may multiplex on shared connections (the emulated
		// fleets of sim do), but not too many per connection: Go's HTTP/2
		// server picks the next frame to write by walking every open
		// stream of the connection, so a write costs O(streams) and with
		// thousands of subscriptions on one connection that walk was the
		// largest cost of a master during a re-registration storm. At this
		// limit a client opens another connection: 50,000 agents need 200,
		// far below the 20,000 open files a process may hold.
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: maxStreamsPerConn},
		ReadHeaderTimeout: 10 * time.Second,
		// No WriteTimeout: subscription streams live for days.
	}
}

// maxStreamsPerConn is the HTTP/2 concurrent-stream limit of mezzo's
// servers (see newServer).
const maxStreamsPerConn = 250

// serve runs srv on ln until ctx ends, then shuts it down gracefully.
func serve(ctx context.Context, srv *http.Server, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			srv.Close()
		}
		return nil
	}
}

// signalContext is cancelled on SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
