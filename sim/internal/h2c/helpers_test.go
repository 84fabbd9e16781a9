package h2c

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2/hpack"
)

// testDeadline bounds every wait in these tests, so a bug fails a test
// instead of hanging it.
const testDeadline = 10 * time.Second

// startServer serves h over h2c with prior knowledge on a new port, with at
// most maxStreams concurrent streams per connection (0: the default).
func startServer(t testing.TB, h http.Handler, maxStreams int) (*http.Server, string) {
	t.Helper()
	return startServerConfig(t, h, &http.HTTP2Config{MaxConcurrentStreams: maxStreams})
}

func startServerConfig(t testing.TB, h http.Handler, conf *http.HTTP2Config) (*http.Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: h, Protocols: &p, HTTP2: conf}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return srv, ln.Addr().String()
}

func newTestTransport(t testing.TB, cfg Config) *Transport {
	t.Helper()
	tr := New(cfg)
	t.Cleanup(func() { tr.Close() })
	return tr
}

// dialCounter counts dials and the most ever in progress at once.
type dialCounter struct {
	dials      atomic.Int32
	inProgress atomic.Int32
	maxAtOnce  atomic.Int32
}

func (d *dialCounter) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	d.dials.Add(1)
	n := d.inProgress.Add(1)
	defer d.inProgress.Add(-1)
	for {
		m := d.maxAtOnce.Load()
		if n <= m || d.maxAtOnce.CompareAndSwap(m, n) {
			break
		}
	}
	return (&net.Dialer{}).DialContext(ctx, network, addr)
}

func post(t testing.TB, ctx context.Context, url string, body []byte) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// result is the outcome of a call made in another goroutine.
type result struct {
	n   int
	err error
}

// readAsync reads from r in a new goroutine.
func readAsync(r io.Reader, p []byte) <-chan result {
	ch := make(chan result, 1)
	go func() {
		n, err := r.Read(p)
		ch <- result{n, err}
	}()
	return ch
}

func await[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(testDeadline):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// waitFor polls cond until it holds or the test deadline passes.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(testDeadline)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// gate is a handler barrier: handlers call wait, the test calls open.
type gate struct {
	once sync.Once
	ch   chan struct{}
}

func newGate() *gate  { return &gate{ch: make(chan struct{})} }
func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

// fakeServer is a raw HTTP/2 peer for tests that need a misbehaving server.
type fakeServer struct {
	t    testing.TB
	conn net.Conn
	fr   frameReader
	enc  *hpack.Encoder
	ebuf bytes.Buffer
	mu   sync.Mutex // serialises writes
}

// startFake listens on a new port and runs script for each accepted
// connection, after reading the client preface and sending SETTINGS.
func startFake(t testing.TB, settings []setting, script func(fs *fakeServer)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var conns sync.Map
	t.Cleanup(func() {
		ln.Close()
		conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Store(c, nil)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				fs := &fakeServer{t: t, conn: c, fr: frameReader{r: c}}
				fs.enc = hpack.NewEncoder(&fs.ebuf)
				preface := make([]byte, len(clientPreface))
				if _, err := io.ReadFull(c, preface); err != nil || string(preface) != clientPreface {
					return
				}
				var p []byte
				for _, s := range settings {
					p = append(p, byte(s.id>>8), byte(s.id))
					p = appendUint32(p, s.val)
				}
				fs.write(frameSettings, 0, 0, p)
				script(fs)
			}()
		}
	}()
	return ln.Addr().String()
}

func (fs *fakeServer) write(typ frameType, flags uint8, id uint32, payload []byte) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	b := appendFrameHeader(nil, len(payload), typ, flags, id)
	fs.conn.Write(append(b, payload...))
}

func (fs *fakeServer) writeRaw(b []byte) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.conn.Write(b)
}

// headerBlock hpack-encodes fields given as name, value pairs.
func (fs *fakeServer) headerBlock(kv ...string) []byte {
	fs.ebuf.Reset()
	for i := 0; i < len(kv); i += 2 {
		fs.enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	return bytes.Clone(fs.ebuf.Bytes())
}

// awaitHeaders reads frames until the client's HEADERS for a new stream
// arrive, and returns the stream id.
func (fs *fakeServer) awaitHeaders() (uint32, bool) {
	for {
		h, _, err := fs.fr.readFrame()
		if err != nil {
			return 0, false
		}
		if h.typ == frameHeaders {
			return h.streamID, true
		}
	}
}

// drain reads and discards frames until the connection fails.
func (fs *fakeServer) drain() {
	for {
		if _, _, err := fs.fr.readFrame(); err != nil {
			return
		}
	}
}

// holdOpen answers 200 at once and keeps the response open until the
// request's context ends (the client resets the stream or goes away).
var holdOpen = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(200)
	w.(http.Flusher).Flush()
	<-r.Context().Done()
})
