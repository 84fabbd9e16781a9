// Package h2c is a lean HTTP/2 client transport for cleartext HTTP/2 with
// prior knowledge ("h2c"), written for the simulator's agents.
//
// The simulator emulates tens of thousands of cluster agents in one process.
// Each agent POSTs a small body to a master and keeps the response open as a
// long-lived event stream on which small records arrive rarely. Agents share a
// few TCP connections: a master allows 250 concurrent streams per connection,
// so 40,000 agents need about 160 connections. In a failover all agents
// reconnect at once, on a two-core machine shared with the masters being
// measured. net/http's general HTTP/2 client spent about 25µs of its own CPU
// per request in BenchmarkRoundTrip (a goroutine per request for writing, a
// write and a flush per frame, contexts, channels, stack growth); this one
// spends about 7µs. In a 40,000-agent failover the emulation's CPU fell from
// 3.8-4.0 s to 2.5-2.7 s.
//
// Transport does only what the agents need, and does it cheaply:
//
//   - Each connection has exactly one reader and one writer goroutine; there
//     is no goroutine per request or per stream. Callers wait in their own
//     goroutines, and request contexts are watched with [context.AfterFunc].
//   - Frames are appended to a per-connection buffer under the connection's
//     mutex; the writer goroutine sends everything queued with one write
//     system call per batch.
//   - Request bodies are read fully before they are sent.
//   - Connections are pooled per host:port, with at most one dial in
//     progress per host: requests arriving during a dial wait for it.
//
// Only http:// URLs are supported. Response trailers are ignored, server push
// is refused, and responses are not decompressed.
package h2c

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Config configures a Transport.
type Config struct {
	// DialContext opens TCP connections; nil means (&net.Dialer{}).DialContext.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)

	// PingInterval: after this long without reading anything on a
	// connection, send a PING. PingTimeout: if no frame arrives within this
	// after the PING, the connection is dead (close it, fail its streams).
	// Liveness checks are off unless both are positive.
	PingInterval, PingTimeout time.Duration
}

// ErrUnprocessed marks errors for requests the server did not process (the
// stream was refused, or a GOAWAY did not cover it), so they may be retried.
// RoundTrip retries such requests itself a few times before giving up.
var ErrUnprocessed = errors.New("h2c: request not processed by server")

var errClosed = errors.New("h2c: transport closed")

const (
	// handshakeTimeout bounds dialing plus waiting for the server's first
	// SETTINGS frame. Requests wait on a host's dial in progress, so a dial
	// must not hang forever.
	handshakeTimeout = 30 * time.Second

	// maxAttempts bounds how often RoundTrip sends a request that the
	// server declined without processing it.
	maxAttempts = 5

	// maxPooledBody is the largest request body buffer kept for reuse.
	maxPooledBody = 256 << 10
)

// Transport is an http.RoundTripper speaking cleartext HTTP/2 with prior
// knowledge. Create it with New. It is safe for concurrent use.
type Transport struct {
	dial         func(ctx context.Context, network, addr string) (net.Conn, error)
	pingInterval time.Duration
	pingTimeout  time.Duration
	epoch        time.Time // origin of the monotonic timestamps in clientConn

	ctx    context.Context // cancelled by Close; bounds dials and handshakes
	cancel context.CancelFunc
	wg     sync.WaitGroup // dial/reader and writer goroutines

	mu     sync.Mutex
	pools  map[string]*pool // by dial address (host:port)
	closed bool
}

// pool holds the connections to one host:port.
type pool struct {
	conns []*clientConn
	dial  *dialCall // the dial in progress, if any
}

// dialCall is a dial in progress; requests that found no free stream slot
// wait for done.
type dialCall struct {
	done chan struct{}
	cc   *clientConn // set before done is closed, on success
	err  error       // set before done is closed, on failure
}

// New returns a Transport configured by cfg.
func New(cfg Config) *Transport {
	t := &Transport{
		dial:  cfg.DialContext,
		epoch: time.Now(),
		pools: make(map[string]*pool),
	}
	if t.dial == nil {
		t.dial = (&net.Dialer{}).DialContext
	}
	if cfg.PingInterval > 0 && cfg.PingTimeout > 0 {
		t.pingInterval, t.pingTimeout = cfg.PingInterval, cfg.PingTimeout
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return t
}

// RoundTrip implements http.RoundTripper. It returns once the response
// headers have arrived; the response body is the stream's remaining data.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	addr, authority, err := target(req)
	if err == nil {
		err = checkHeader(req.Header)
	}
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	var data []byte
	if body != nil {
		data = body.Bytes()
		defer putBody(body)
	}

	ctx := req.Context()
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cc, err := t.getConn(ctx, addr)
		if err != nil {
			return nil, err
		}
		resp, err := cc.roundTrip(req, authority, data)
		if err == nil || attempt == maxAttempts || !errors.Is(err, ErrUnprocessed) {
			return resp, err
		}
	}
}

// target returns the address to dial and the :authority for req.
func target(req *http.Request) (addr, authority string, err error) {
	u := req.URL
	switch {
	case u == nil:
		return "", "", errors.New("h2c: nil request URL")
	case u.Scheme != "http":
		return "", "", fmt.Errorf("h2c: unsupported URL scheme %q", u.Scheme)
	case u.Host == "":
		return "", "", errors.New("h2c: no host in request URL")
	}
	addr = u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	authority = req.Host
	if authority == "" {
		authority = u.Host
	}
	return addr, authority, nil
}

var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// readBody reads and closes req.Body. The buffer returned, nil for no body,
// goes back with putBody.
func readBody(req *http.Request) (*bytes.Buffer, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	b := bodyPool.Get().(*bytes.Buffer)
	_, err := b.ReadFrom(req.Body)
	req.Body.Close()
	if err != nil {
		putBody(b)
		return nil, fmt.Errorf("h2c: reading request body: %w", err)
	}
	if b.Len() == 0 {
		putBody(b)
		return nil, nil
	}
	return b, nil
}

func putBody(b *bytes.Buffer) {
	if b.Cap() <= maxPooledBody {
		b.Reset()
		bodyPool.Put(b)
	}
}

// getConn returns a connection to addr with a stream slot reserved for the
// caller, dialing one if none has a free slot. The caller must use the slot
// (cc.roundTrip) or give it back.
func (t *Transport) getConn(ctx context.Context, addr string) (*clientConn, error) {
	for {
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return nil, errClosed
		}
		p := t.pools[addr]
		if p == nil {
			p = new(pool)
			t.pools[addr] = p
		}
		// The newest connection is the one most likely to have room
		// when many requests arrive at once.
		for i := len(p.conns) - 1; i >= 0; i-- {
			if cc := p.conns[i]; cc.tryReserve() {
				t.mu.Unlock()
				return cc, nil
			}
		}
		d := p.dial
		if d == nil {
			// The dialing goroutine goes on to be the connection's
			// reader, so a dial costs no goroutine of its own.
			d = &dialCall{done: make(chan struct{})}
			p.dial = d
			t.wg.Add(1)
			go t.dialConn(addr, p, d)
		}
		t.mu.Unlock()

		select {
		case <-d.done:
			if d.err != nil {
				return nil, d.err
			}
			if d.cc.maxStreams.Load() == 0 {
				// Dialing again would not help.
				return nil, fmt.Errorf("h2c: %s allows no streams", addr)
			}
			// Compete for the new connection's slots; when they are
			// gone, the loop starts the next dial.
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// dialConn dials addr for p, reports to the requests waiting on d, and then
// serves as the new connection's reader.
func (t *Transport) dialConn(addr string, p *pool, d *dialCall) {
	cc, err := t.connect(addr)
	t.mu.Lock()
	p.dial = nil
	if err == nil && t.closed {
		err = errClosed
	}
	if err == nil {
		p.conns = append(p.conns, cc)
	} else if len(p.conns) == 0 && t.pools[addr] == p {
		delete(t.pools, addr)
	}
	if err == nil {
		d.cc = cc
	}
	d.err = err
	t.mu.Unlock()
	close(d.done)

	if cc == nil {
		t.wg.Done()
		return
	}
	if err != nil {
		cc.close(err)
	}
	cc.readLoop() // calls t.wg.Done
}

// connect dials addr and performs the HTTP/2 handshake: it sends the client
// preface and settings and waits for the server's SETTINGS, so that the
// server's stream limit is known before any request uses the connection.
// The connection's writer goroutine is running when it returns a conn.
func (t *Transport) connect(addr string) (*clientConn, error) {
	ctx, cancel := context.WithTimeout(t.ctx, handshakeTimeout)
	defer cancel()
	conn, err := t.dial(ctx, "tcp", addr)
	if err != nil {
		// Returned as is, so errors.Is(err, syscall.ECONNREFUSED) works.
		return nil, err
	}
	// Close and the timeout end the handshake as they end the dial.
	stop := context.AfterFunc(ctx, func() { conn.Close() })

	cc := newClientConn(t, addr, conn)
	t.wg.Add(1)
	go cc.writeLoop()
	err = cc.handshake()
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		cc.close(err)
		return nil, fmt.Errorf("h2c: handshake with %s: %w", addr, err)
	}
	return cc, nil
}

// removeConn drops a dead connection from its pool.
func (t *Transport) removeConn(cc *clientConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.pools[cc.addr]
	if p == nil {
		return
	}
	if i := slices.Index(p.conns, cc); i >= 0 {
		p.conns = slices.Delete(p.conns, i, i+1)
	}
	if len(p.conns) == 0 && p.dial == nil {
		delete(t.pools, cc.addr)
	}
}

// CloseIdleConnections closes the connections that carry no streams.
func (t *Transport) CloseIdleConnections() {
	var idle []*clientConn
	t.mu.Lock()
	for _, p := range t.pools {
		for _, cc := range p.conns {
			// Slots are reserved under t.mu, so none can appear
			// between this check and marking the connection unusable.
			if cc.active.Load() == 0 {
				cc.unusable.Store(true)
				idle = append(idle, cc)
			}
		}
	}
	t.mu.Unlock()
	for _, cc := range idle {
		cc.close(errors.New("h2c: idle connection closed"))
	}
}

// Close closes all connections and waits for their goroutines to exit.
// Streams in flight fail, and later requests return an error.
func (t *Transport) Close() error {
	var all []*clientConn
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	for _, p := range t.pools {
		all = append(all, p.conns...)
	}
	t.mu.Unlock()
	t.cancel() // ends dials and handshakes in progress
	for _, cc := range all {
		cc.close(errClosed)
	}
	t.wg.Wait()
	return nil
}

// now is a monotonic timestamp for liveness checks.
func (t *Transport) now() int64 { return int64(time.Since(t.epoch)) }

// checkHeader rejects header fields that cannot be sent, before anything is
// encoded: a request abandoned after hpack encoding would desynchronise the
// connection's compression state.
func checkHeader(h http.Header) error {
	for k, vv := range h {
		if !validFieldName(k) {
			return fmt.Errorf("h2c: invalid header field name %q", k)
		}
		for _, v := range vv {
			if !validFieldValue(v) {
				return fmt.Errorf("h2c: invalid header field value for %q", k)
			}
		}
	}
	return nil
}

// validFieldName reports whether name is an RFC 9110 token.
func validFieldName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 0x80 || !isTokenChar[c] {
			return false
		}
	}
	return true
}

// validFieldValue reports whether v contains no control characters other
// than horizontal tab.
func validFieldValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

var isTokenChar = func() (t [128]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		t[c] = true
	}
	return t
}()
