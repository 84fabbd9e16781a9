package h2c

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
)

func TestRequestResponse(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/echo":
			body, _ := io.ReadAll(r.Body)
			w.Header().Set("X-Echo", r.Header.Get("X-Test"))
			w.Header().Set("X-Query", r.URL.RawQuery)
			w.Header().Set("X-Content-Length", strconv.FormatInt(r.ContentLength, 10))
			w.Header().Set("X-Authority", r.Host)
			w.Write(body)
		case "/redirect":
			w.Header().Set("Location", "http://leader:8080/internal/v1/agent")
			w.WriteHeader(http.StatusTemporaryRedirect)
		default:
			http.Error(w, "no such thing", http.StatusNotFound)
		}
	})
	_, addr := startServer(t, h, 0)
	tr := newTestTransport(t, Config{})

	req := post(t, context.Background(), "http://"+addr+"/echo?a=1", []byte("hello, master"))
	req.Header.Set("X-Test", "agent-7")
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Status != "200 OK" || resp.Proto != "HTTP/2.0" || resp.ProtoMajor != 2 {
		t.Errorf("status %q %d proto %q %d", resp.Status, resp.StatusCode, resp.Proto, resp.ProtoMajor)
	}
	if string(body) != "hello, master" {
		t.Errorf("body %q", body)
	}
	for k, want := range map[string]string{
		"X-Echo":           "agent-7",
		"X-Query":          "a=1",
		"X-Content-Length": "13",
		"X-Authority":      addr,
	} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if resp.ContentLength != 13 || resp.Request != req {
		t.Errorf("ContentLength %d, Request %p (want %p)", resp.ContentLength, resp.Request, req)
	}

	resp, err = tr.RoundTrip(post(t, context.Background(), "http://"+addr+"/redirect", []byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 307 || resp.Status != "307 Temporary Redirect" {
		t.Errorf("status %q", resp.Status)
	}
	if loc := resp.Header.Get("Location"); loc != "http://leader:8080/internal/v1/agent" {
		t.Errorf("Location %q", loc)
	}

	req, _ = http.NewRequest("GET", "http://"+addr+"/missing", nil)
	resp, err = tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 404 || string(body) != "no such thing\n" {
		t.Errorf("got %d %q %v", resp.StatusCode, body, err)
	}

	// Through an http.Client, as the simulator uses it.
	c := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	resp, err = c.Post("http://"+addr+"/redirect", "text/plain", bytes.NewReader([]byte("y")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 307 {
		t.Errorf("via Client: %d", resp.StatusCode)
	}

	if _, err := tr.RoundTrip(post(t, context.Background(), "https://"+addr+"/", nil)); err == nil {
		t.Error("https URL: no error")
	}
}

// TestLongStream reads a response of many small flushed records, several
// times the stream window, so the server depends on our WINDOW_UPDATEs.
func TestLongStream(t *testing.T) {
	const records, size = 20000, 200 // 4 MB: about 4 stream windows
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := make([]byte, size)
		for i := range records {
			copy(rec, fmt.Sprintf("%-*d\n", size-1, i))
			if _, err := w.Write(rec); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	})
	_, addr := startServer(t, h, 0)
	tr := newTestTransport(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	resp, err := tr.RoundTrip(post(t, ctx, "http://"+addr+"/", []byte("subscribe")))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReaderSize(resp.Body, 100) // small reads, as an agent's decoder does
	rec := make([]byte, size)
	for i := range records {
		if _, err := io.ReadFull(br, rec); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if want := fmt.Sprintf("%-*d\n", size-1, i); string(rec) != want {
			t.Fatalf("record %d = %q", i, rec[:20])
		}
	}
	if n, err := br.Read(rec); n != 0 || err != io.EOF {
		t.Fatalf("after last record: %d, %v", n, err)
	}
}

// TestLargeRequestBody sends a body that needs many DATA frames and, with
// the server's small stream window, several WINDOW_UPDATEs.
func TestLargeRequestBody(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		w.Write(body)
	})
	_, addr := startServerConfig(t, h, &http.HTTP2Config{MaxReceiveBufferPerStream: 20 << 10})
	tr := newTestTransport(t, Config{})
	body := make([]byte, 200<<10)
	for i := range body {
		body[i] = byte(i * 7 / 3)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	for range 3 {
		resp, err := tr.RoundTrip(post(t, ctx, "http://"+addr+"/", body))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("echo: %d bytes (want %d), err %v", len(got), len(body), err)
		}
	}
}

// TestManyStreams holds more streams open than one connection allows and
// checks the pool dials exactly as many connections as needed, one at a time.
func TestManyStreams(t *testing.T) {
	const limit, streams = 4, 60
	release := newGate()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select {
		case <-release.ch:
		case <-r.Context().Done():
		}
	})
	_, addr := startServer(t, h, limit)
	var dc dialCounter
	tr := newTestTransport(t, Config{DialContext: dc.DialContext})
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()

	resps := make(chan *http.Response, streams)
	errs := make(chan error, streams)
	for range streams {
		go func() {
			resp, err := tr.RoundTrip(post(t, ctx, "http://"+addr+"/", []byte("hi")))
			if err != nil {
				errs <- err
				return
			}
			resps <- resp
		}()
	}
	var open []*http.Response
	for range streams {
		select {
		case resp := <-resps:
			if resp.StatusCode != 200 {
				t.Errorf("status %d", resp.StatusCode)
			}
			open = append(open, resp)
		case err := <-errs:
			t.Fatal(err)
		case <-ctx.Done():
			t.Fatalf("only %d of %d streams got headers", len(open), streams)
		}
	}
	if n := dc.dials.Load(); n != (streams+limit-1)/limit {
		t.Errorf("dialed %d connections, want %d", n, (streams+limit-1)/limit)
	}
	if m := dc.maxAtOnce.Load(); m != 1 {
		t.Errorf("%d dials in progress at once", m)
	}
	release.open()
	for _, resp := range open {
		if _, err := io.ReadAll(resp.Body); err != nil {
			t.Error(err)
		}
		resp.Body.Close()
	}
}

func TestCancelBeforeHeaders(t *testing.T) {
	started := make(chan struct{}, 1)
	cancelled := make(chan struct{}, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/quick" {
			return
		}
		started <- struct{}{}
		<-r.Context().Done()
		cancelled <- struct{}{}
	})
	_, addr := startServer(t, h, 1) // one stream: the slot must be freed
	var dc dialCounter
	tr := newTestTransport(t, Config{DialContext: dc.DialContext})

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := tr.RoundTrip(post(t, ctx, "http://"+addr+"/", []byte("x")))
		errc <- err
	}()
	await(t, started, "handler start")
	cancel()
	if err := await(t, errc, "RoundTrip to return"); !errors.Is(err, context.Canceled) {
		t.Fatalf("RoundTrip: %v, want context.Canceled", err)
	}
	await(t, cancelled, "handler to see cancellation")

	resp, err := tr.RoundTrip(post(t, context.Background(), "http://"+addr+"/quick", nil))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if n := dc.dials.Load(); n != 1 {
		t.Errorf("%d dials, want 1", n)
	}

	// A context already done fails at once.
	if _, err := tr.RoundTrip(post(t, ctx, "http://"+addr+"/", nil)); !errors.Is(err, context.Canceled) {
		t.Errorf("done context: %v", err)
	}
}

func TestCancelAfterHeaders(t *testing.T) {
	cancelled := make(chan struct{}, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("first"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		cancelled <- struct{}{}
	})
	_, addr := startServer(t, h, 0)
	tr := newTestTransport(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := tr.RoundTrip(post(t, ctx, "http://"+addr+"/", []byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 5)
	if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != "first" {
		t.Fatalf("read %q, %v", buf, err)
	}
	ch := readAsync(resp.Body, buf) // blocks: no more data
	cancel()
	if r := await(t, ch, "Read to fail"); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Read: %d, %v; want context.Canceled", r.n, r.err)
	}
	await(t, cancelled, "handler to see cancellation")
}

func TestBodyCloseFreesSlot(t *testing.T) {
	cancelled := make(chan struct{}, 1)
	release := newGate()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select {
		case <-release.ch:
		case <-r.Context().Done():
			cancelled <- struct{}{}
		}
	})
	_, addr := startServer(t, h, 2)
	var dc dialCounter
	tr := newTestTransport(t, Config{DialContext: dc.DialContext})
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	defer release.open()

	a, err := tr.RoundTrip(post(t, ctx, "http://"+addr+"/", nil))
	if err != nil {
		t.Fatal(err)
	}
	b, err := tr.RoundTrip(post(t, ctx, "http://"+addr+"/", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Body.Close()
	if err := a.Body.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Body.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if _, err := a.Body.Read(make([]byte, 1)); err == nil {
		t.Error("Read after Close: no error")
	}
	await(t, cancelled, "handler to see the reset")
	c, err := tr.RoundTrip(post(t, ctx, "http://"+addr+"/", nil))
	if err != nil {
		t.Fatal(err)
	}
	c.Body.Close()
	if n := dc.dials.Load(); n != 1 {
		t.Errorf("%d dials, want 1", n)
	}
}

func TestServerDeath(t *testing.T) {
	h := holdOpen
	srv, addr := startServer(t, h, 3)
	tr := newTestTransport(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()

	var open []*http.Response
	for range 5 { // two connections
		resp, err := tr.RoundTrip(post(t, ctx, "http://"+addr+"/", nil))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		open = append(open, resp)
	}
	var reads []<-chan result
	for _, resp := range open {
		reads = append(reads, readAsync(resp.Body, make([]byte, 10)))
	}
	srv.Close()
	for _, ch := range reads {
		if r := await(t, ch, "Read to fail"); r.err == nil || r.err == io.EOF {
			t.Errorf("Read after server death: %d, %v", r.n, r.err)
		}
	}

	// The dead port refuses; a server on a new port works.
	for range 3 {
		_, err := tr.RoundTrip(post(t, ctx, "http://"+addr+"/", nil))
		if !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("request to dead server: %v, want ECONNREFUSED", err)
		}
	}
	_, addr2 := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("new"))
	}), 0)
	resp, err := tr.RoundTrip(post(t, ctx, "http://"+addr2+"/", nil))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "new" {
		t.Errorf("body %q", body)
	}
}

// TestDialErrorFailsWaiters sends many requests at once to a closed port:
// each gets the dial error.
func TestDialErrorFailsWaiters(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var dc dialCounter
	tr := newTestTransport(t, Config{DialContext: dc.DialContext})
	const n = 50
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := tr.RoundTrip(post(t, context.Background(), "http://"+addr+"/", nil))
			errs <- err
		}()
	}
	for range n {
		if err := await(t, errs, "RoundTrip"); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("got %v, want ECONNREFUSED", err)
		}
	}
	if m := dc.maxAtOnce.Load(); m != 1 {
		t.Errorf("%d dials at once", m)
	}
	t.Logf("%d requests, %d dials", n, dc.dials.Load())
}

// TestGoAway shuts a server down gracefully while streams are open: new
// requests fail cleanly, the open streams finish.
func TestGoAway(t *testing.T) {
	finish := newGate()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		<-finish.ch
		w.Write([]byte("done"))
	})
	srv, addr := startServer(t, h, 0)
	tr := newTestTransport(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	var open []*http.Response
	for range 3 {
		resp, err := tr.RoundTrip(post(t, ctx, "http://"+addr+"/", nil))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		open = append(open, resp)
	}
	cc := onlyConn(t, tr, addr)

	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(ctx) }()
	waitFor(t, "GOAWAY", func() bool {
		cc.mu.Lock()
		defer cc.mu.Unlock()
		return cc.goAway
	})
	if _, err := tr.RoundTrip(post(t, ctx, "http://"+addr+"/", nil)); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("request after GOAWAY: %v, want ECONNREFUSED", err)
	}
	finish.open()
	for _, resp := range open {
		body, err := io.ReadAll(resp.Body)
		if err != nil || string(body) != "done" {
			t.Errorf("open stream: %q, %v", body, err)
		}
	}
	if err := await(t, shut, "Shutdown"); err != nil {
		t.Error(err)
	}
	waitFor(t, "connection to leave the pool", func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return tr.pools[addr] == nil
	})
}

// TestGoAwayRetry: a GOAWAY that does not cover a stream makes RoundTrip
// send the request again on a new connection.
func TestGoAwayRetry(t *testing.T) {
	var mu sync.Mutex
	conns := 0
	addr := startFake(t, nil, func(fs *fakeServer) {
		mu.Lock()
		conns++
		first := conns == 1
		mu.Unlock()
		id, ok := fs.awaitHeaders()
		if !ok {
			return
		}
		if first {
			fs.write(frameGoAway, 0, 0, appendUint32(appendUint32(nil, 0), uint32(errCodeNo)))
		} else {
			fs.write(frameHeaders, flagEndHeaders|flagEndStream, id, fs.headerBlock(":status", "204"))
		}
		fs.drain()
	})
	tr := newTestTransport(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	resp, err := tr.RoundTrip(post(t, ctx, "http://"+addr+"/", []byte("again")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 204 {
		t.Errorf("status %d", resp.StatusCode)
	}
}

func onlyConn(t *testing.T, tr *Transport, addr string) *clientConn {
	t.Helper()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	p := tr.pools[addr]
	if p == nil || len(p.conns) != 1 {
		t.Fatalf("want one connection to %s", addr)
	}
	return p.conns[0]
}

func TestCloseIdleConnections(t *testing.T) {
	_, addr := startServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), 0)
	var dc dialCounter
	tr := newTestTransport(t, Config{DialContext: dc.DialContext})
	for range 2 {
		resp, err := tr.RoundTrip(post(t, context.Background(), "http://"+addr+"/", nil))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		tr.CloseIdleConnections()
	}
	if n := dc.dials.Load(); n != 2 {
		t.Errorf("%d dials, want 2", n)
	}
}

// TestNoGoroutineLeak checks that Close leaves no goroutines behind, with
// streams open and a dial failing.
func TestNoGoroutineLeak(t *testing.T) {
	h := holdOpen
	_, addr := startServer(t, h, 2)
	base := runtime.NumGoroutine()

	tr := New(Config{PingInterval: testDeadline, PingTimeout: testDeadline})
	var open []*http.Response
	for range 5 {
		resp, err := tr.RoundTrip(post(t, context.Background(), "http://"+addr+"/", nil))
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, resp)
	}
	if n := runtime.NumGoroutine(); n < base+6 {
		t.Errorf("%d goroutines with 3 connections, want at least %d", n, base+6)
	}
	tr.Close()
	for _, resp := range open {
		if _, err := resp.Body.Read(make([]byte, 1)); err == nil || err == io.EOF {
			t.Errorf("Read after Close: %v", err)
		}
		resp.Body.Close()
	}
	if _, err := tr.RoundTrip(post(t, context.Background(), "http://"+addr+"/", nil)); err == nil {
		t.Error("RoundTrip after Close: no error")
	}
	waitFor(t, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= base })
}

// TestStress mixes concurrent requests that read to the end, close early
// or are cancelled, on connections with few stream slots; afterwards every
// slot must be free again.
func TestStress(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		for i := range 3 {
			if _, err := fmt.Fprintf(w, "record %d\n", i); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
		if r.URL.Query().Get("hold") != "" {
			<-r.Context().Done()
		}
	})
	_, addr := startServer(t, h, 5)
	tr := newTestTransport(t, Config{})
	const workers, each = 50, 20
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
				url := "http://" + addr + "/"
				if (w+i)%3 != 0 {
					url += "?hold=1"
				}
				req := post(t, ctx, url, bytes.Repeat([]byte("b"), 100*(i%4)))
				switch (w + i) % 3 {
				case 0: // read to the end
					resp, err := tr.RoundTrip(req)
					if err != nil {
						t.Error(err)
					} else if b, err := io.ReadAll(resp.Body); err != nil || len(b) != 27 {
						t.Errorf("read %q, %v", b, err)
					}
					if resp != nil {
						resp.Body.Close()
					}
				case 1: // close after the first record
					resp, err := tr.RoundTrip(req)
					if err != nil {
						t.Error(err)
						break
					}
					resp.Body.Read(make([]byte, 4))
					resp.Body.Close()
				case 2: // cancel, at any point
					go cancel()
					if resp, err := tr.RoundTrip(req); err == nil {
						io.ReadAll(resp.Body)
						resp.Body.Close()
					}
				}
				cancel()
			}
		})
	}
	wg.Wait()
	waitFor(t, "all slots free", func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		for _, p := range tr.pools {
			for _, cc := range p.conns {
				if cc.active.Load() != 0 {
					return false
				}
			}
		}
		return true
	})
}
