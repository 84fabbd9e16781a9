package h2c

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"time"
)

// awaitFrame reads frames until one of type typ arrives.
func (fs *fakeServer) awaitFrame(typ frameType) (frameHeader, bool) {
	for {
		h, _, err := fs.fr.readFrame()
		if err != nil {
			return h, false
		}
		if h.typ == typ {
			return h, true
		}
	}
}

// TestPingTimeout: a server that completes the handshake and then answers
// nothing, not even PINGs, is declared dead.
func TestPingTimeout(t *testing.T) {
	addr := startFake(t, nil, func(fs *fakeServer) {
		id, ok := fs.awaitHeaders()
		if !ok {
			return
		}
		fs.write(frameHeaders, flagEndHeaders, id, fs.headerBlock(":status", "200"))
		fs.drain() // never answers PING
	})
	tr := newTestTransport(t, Config{PingInterval: 50 * time.Millisecond, PingTimeout: 50 * time.Millisecond})
	resp, err := tr.RoundTrip(post(t, context.Background(), "http://"+addr+"/", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	r := await(t, readAsync(resp.Body, make([]byte, 10)), "Read to fail")
	if !errors.Is(r.err, errPingTimeout) {
		t.Fatalf("Read: %v, want ping timeout", r.err)
	}
	t.Logf("stream failed after %v", time.Since(start))
}

// TestPingKeepsAlive: a live server answers PINGs, and an idle stream
// outlives many ping intervals and more than one ping timeout (so
// unanswered pings would have ended it). The timeout is 1s, not 100ms: a
// pong delayed 100ms by a loaded machine failed the test for nothing.
func TestPingKeepsAlive(t *testing.T) {
	h := holdOpen
	_, addr := startServer(t, h, 0)
	tr := newTestTransport(t, Config{PingInterval: 10 * time.Millisecond, PingTimeout: time.Second})
	resp, err := tr.RoundTrip(post(t, context.Background(), "http://"+addr+"/", nil))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	select {
	case r := <-readAsync(resp.Body, make([]byte, 10)):
		t.Fatalf("idle stream ended: %d, %v", r.n, r.err)
	case <-time.After(1500 * time.Millisecond):
	}
}

// TestHpackSyncAfterReset: the header block of a stream we reset still
// updates the decoder's dynamic table, which a later response relies on.
func TestHpackSyncAfterReset(t *testing.T) {
	addr := startFake(t, nil, func(fs *fakeServer) {
		id, ok := fs.awaitHeaders()
		if !ok {
			return
		}
		if _, ok := fs.awaitFrame(frameRSTStream); !ok {
			return
		}
		// Indexed into the dynamic table by both encoder and decoder.
		fs.write(frameHeaders, flagEndHeaders, id, fs.headerBlock(":status", "200", "x-leader", "master-2:8080"))
		id, ok = fs.awaitHeaders()
		if !ok {
			return
		}
		fs.write(frameHeaders, flagEndHeaders|flagEndStream, id, fs.headerBlock(":status", "200", "x-leader", "master-2:8080"))
		fs.drain()
	})
	tr := newTestTransport(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := tr.RoundTrip(post(t, ctx, "http://"+addr+"/", nil))
		errc <- err
	}()
	waitFor(t, "request to be sent", func() bool {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		p := tr.pools[addr]
		return p != nil && len(p.conns) == 1 && p.conns[0].active.Load() == 1
	})
	cancel()
	if err := await(t, errc, "cancelled RoundTrip"); !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), testDeadline)
	defer cancel2()
	resp, err := tr.RoundTrip(post(t, ctx2, "http://"+addr+"/", nil))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("X-Leader"); got != "master-2:8080" {
		t.Errorf("X-Leader = %q", got)
	}
}

// TestMalformedServer: a server sending invalid frames must not crash the
// client; the affected streams fail with errors.
func TestMalformedServer(t *testing.T) {
	frame := func(typ frameType, flags uint8, id uint32, p ...byte) []byte {
		return append(appendFrameHeader(nil, len(p), typ, flags, id), p...)
	}
	ok200 := func(fs *fakeServer, id uint32) []byte {
		return frame(frameHeaders, flagEndHeaders, id, fs.headerBlock(":status", "200")...)
	}
	cases := []struct {
		name string
		send func(fs *fakeServer, id uint32) []byte
		ok   bool // the response is complete before anything invalid
	}{
		{"DATA on idle stream", func(fs *fakeServer, id uint32) []byte {
			return frame(frameData, 0, 99, 'x')
		}, false},
		{"DATA on stream 0", func(fs *fakeServer, id uint32) []byte {
			return frame(frameData, 0, 0, 'x')
		}, false},
		{"garbage hpack", func(fs *fakeServer, id uint32) []byte {
			return frame(frameHeaders, flagEndHeaders, id, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f)
		}, false},
		{"hpack index out of range", func(fs *fakeServer, id uint32) []byte {
			return frame(frameHeaders, flagEndHeaders, id, 0xbf) // index 63, empty dynamic table
		}, false},
		{"CONTINUATION alone", func(fs *fakeServer, id uint32) []byte {
			return frame(frameContinuation, flagEndHeaders, id, fs.headerBlock(":status", "200")...)
		}, false},
		{"header block interrupted", func(fs *fakeServer, id uint32) []byte {
			b := frame(frameHeaders, 0, id, fs.headerBlock(":status", "200")...)
			return append(b, frame(frameData, 0, id, 'x')...)
		}, false},
		{"oversized frame", func(fs *fakeServer, id uint32) []byte {
			return appendFrameHeader(nil, 1<<20, frameData, 0, id)
		}, false},
		{"PUSH_PROMISE", func(fs *fakeServer, id uint32) []byte {
			return frame(framePushPromise, flagEndHeaders, id, 0, 0, 0, 2)
		}, false},
		{"missing :status", func(fs *fakeServer, id uint32) []byte {
			return frame(frameHeaders, flagEndHeaders, id, fs.headerBlock("content-type", "text/plain")...)
		}, false},
		{"bad :status", func(fs *fakeServer, id uint32) []byte {
			return frame(frameHeaders, flagEndHeaders, id, fs.headerBlock(":status", "2x0")...)
		}, false},
		{"upper-case header name", func(fs *fakeServer, id uint32) []byte {
			return frame(frameHeaders, flagEndHeaders, id, fs.headerBlock(":status", "200", "X-Bad", "1")...)
		}, false},
		{"pseudo-header after regular", func(fs *fakeServer, id uint32) []byte {
			return frame(frameHeaders, flagEndHeaders, id, fs.headerBlock("a", "1", ":status", "200")...)
		}, false},
		{"DATA before HEADERS", func(fs *fakeServer, id uint32) []byte {
			return frame(frameData, flagEndStream, id, 'x')
		}, false},
		{"bad padding", func(fs *fakeServer, id uint32) []byte {
			return append(ok200(fs, id), frame(frameData, flagPadded, id, 200, 'x')...)
		}, false},
		{"DATA after END_STREAM", func(fs *fakeServer, id uint32) []byte {
			// Both sides have closed the stream: the stray frame
			// is ignored.
			b := append(ok200(fs, id), frame(frameData, flagEndStream, id, 'x')...)
			return append(b, frame(frameData, 0, id, 'y')...)
		}, true},
		{"connection window overflow", func(fs *fakeServer, id uint32) []byte {
			return frame(frameWindowUpdate, 0, 0, 0x7f, 0xff, 0xff, 0xff)
		}, false},
		{"zero WINDOW_UPDATE", func(fs *fakeServer, id uint32) []byte {
			return frame(frameWindowUpdate, 0, id, 0, 0, 0, 0)
		}, false},
		{"RST_STREAM on idle stream", func(fs *fakeServer, id uint32) []byte {
			return frame(frameRSTStream, 0, 41, 0, 0, 0, 1)
		}, false},
		{"RST_STREAM", func(fs *fakeServer, id uint32) []byte {
			return frame(frameRSTStream, 0, id, 0, 0, 0, byte(errCodeInternal))
		}, false},
		{"bad SETTINGS", func(fs *fakeServer, id uint32) []byte {
			return frame(frameSettings, 0, 0, 0, byte(settingMaxFrameSize), 0, 0, 0, 1)
		}, false},
		{"short PING", func(fs *fakeServer, id uint32) []byte {
			return frame(framePing, 0, 0, 1, 2, 3)
		}, false},
		{"informational response ending stream", func(fs *fakeServer, id uint32) []byte {
			return frame(frameHeaders, flagEndHeaders|flagEndStream, id, fs.headerBlock(":status", "103")...)
		}, false},
		{"headers then trailers without END_STREAM", func(fs *fakeServer, id uint32) []byte {
			b := ok200(fs, id)
			return append(b, frame(frameHeaders, flagEndHeaders, id, fs.headerBlock("x-t", "1")...)...)
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := startFake(t, nil, func(fs *fakeServer) {
				id, ok := fs.awaitHeaders()
				if !ok {
					return
				}
				fs.writeRaw(tc.send(fs, id))
				fs.drain() // the client must act on its own
			})
			err := fetch(t, addr)
			switch {
			case tc.ok && err != nil:
				t.Error(err)
			case !tc.ok && err == nil:
				t.Error("no error")
			default:
				t.Log(err)
			}
		})
	}
}

// fetch makes one request and reads the whole response, returning the
// first error.
func fetch(t *testing.T, addr string) error {
	tr := New(Config{})
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testDeadline)
	defer cancel()
	resp, err := tr.RoundTrip(post(t, ctx, "http://"+addr+"/", []byte("body")))
	if ctx.Err() != nil {
		t.Fatal("RoundTrip hung")
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	if ctx.Err() != nil {
		t.Fatal("Read hung")
	}
	return err
}

// TestRandomFrames sends random frame sequences, then closes the
// connection: the client must neither panic nor hang.
func TestRandomFrames(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 20
	}
	for seed := range n {
		rng := rand.New(rand.NewPCG(uint64(seed), 1))
		addr := startFake(t, nil, func(fs *fakeServer) {
			id, ok := fs.awaitHeaders()
			if !ok {
				return
			}
			var b []byte
			if rng.IntN(2) == 0 {
				b = append(appendFrameHeader(nil, 0, frameHeaders, flagEndHeaders, id), fs.headerBlock(":status", "200")...)
				b[2] = byte(len(b) - frameHeaderLen)
			}
			for range 1 + rng.IntN(6) {
				typ := frameType(rng.IntN(11))
				ids := []uint32{0, id, id, id + 2, 2}
				p := make([]byte, rng.IntN(24))
				for i := range p {
					p[i] = byte(rng.Uint32())
				}
				b = appendFrameHeader(b, len(p), typ, uint8(rng.Uint32()), ids[rng.IntN(len(ids))])
				b = append(b, p...)
			}
			fs.writeRaw(b)
			fs.conn.Close()
		})
		fetch(t, addr) // any outcome but a panic or a hang
	}
}
