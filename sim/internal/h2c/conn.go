package h2c

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2/hpack"
)

const (
	// streamWindow is the receive window advertised for each stream. With
	// a window this large the server never waits for a WINDOW_UPDATE on a
	// stream whose reader keeps up with its small records.
	streamWindow = 1 << 20

	// connWindow is the connection's receive window. It exceeds the
	// stream windows of all the streams a server lets a connection carry
	// (250 × 1 MiB for a master), so one slow reader cannot hold up the
	// other streams on its connection.
	connWindow = 1 << 30

	// The protocol's defaults.
	initialWindow          = 65535
	defaultMaxFrameSize    = 16384
	initialHeaderTableSize = 4096

	// defaultMaxStreams applies when the server sets no stream limit.
	defaultMaxStreams = 1000

	// maxHeaderListSize bounds a response's decoded header block.
	maxHeaderListSize = 1 << 20

	// maxStreamID: stream ids are 31 bits; a connection that runs out
	// takes no more streams.
	maxStreamID = math.MaxInt32

	// maxKeptWriteBuf is the largest write buffer the writer keeps for
	// reuse after a burst.
	maxKeptWriteBuf = 256 << 10
)

var pingData = []byte("h2c ping")

var (
	errPingTimeout = errors.New("h2c: connection dead: no reply to PING")
	errGoAwayDone  = errors.New("h2c: connection closed after GOAWAY")
)

// clientConn is one HTTP/2 connection. Its reader goroutine (readLoop)
// handles every frame from the server; its writer goroutine (writeLoop)
// writes what requests and the reader queue in wbuf.
type clientConn struct {
	t    *Transport
	addr string
	conn net.Conn

	// Reader goroutine state, used without a lock.
	fr   frameReader
	hdec *hpack.Decoder // must see every header block, to stay in sync
	hb   headerBlock    // the header block being read

	// Pool bookkeeping, read by Transport.getConn without mu. Only
	// tryReserve increases active, and it runs under Transport.mu.
	active     atomic.Int32  // reserved slots plus open streams
	maxStreams atomic.Uint32 // the server's SETTINGS_MAX_CONCURRENT_STREAMS
	unusable   atomic.Bool   // closed, going away or out of stream ids

	lastRead atomic.Int64 // Transport.now when a frame last arrived

	mu      sync.Mutex
	wcond   sync.Cond // signals the writer: wbuf not empty, or closed
	wbuf    []byte    // frames queued for the writer
	closed  bool
	err     error // why the connection closed
	goAway  bool  // GOAWAY received or ids exhausted: no new streams
	streams map[uint32]*stream
	nextID  uint32

	// hpack encoding state; used under mu in the order HEADERS frames
	// are queued, which is the order the server decodes them.
	henc *hpack.Encoder
	hbuf bytes.Buffer

	peerMaxFrame   int   // server's SETTINGS_MAX_FRAME_SIZE
	peerInitWindow int32 // server's SETTINGS_INITIAL_WINDOW_SIZE
	sendWindow     int32 // how much DATA we may still send on the connection
	sendBlocked    int   // streams waiting for sendWindow
	inflow         int32 // how much DATA the server may still send
	unacked        int32 // consumed DATA not yet returned in a WINDOW_UPDATE

	pingTimer *time.Timer // nil when liveness checks are off
	pingAt    int64       // Transport.now when the PING now unanswered was sent; 0 if none
}

func newClientConn(t *Transport, addr string, conn net.Conn) *clientConn {
	cc := &clientConn{
		t:              t,
		addr:           addr,
		conn:           conn,
		streams:        make(map[uint32]*stream),
		nextID:         1,
		peerMaxFrame:   defaultMaxFrameSize,
		peerInitWindow: initialWindow,
		sendWindow:     initialWindow,
		inflow:         connWindow,
	}
	cc.wcond.L = &cc.mu
	cc.maxStreams.Store(defaultMaxStreams)
	cc.henc = hpack.NewEncoder(&cc.hbuf)

	cc.fr.r = bufio.NewReaderSize(conn, 16<<10)
	cc.hdec = hpack.NewDecoder(initialHeaderTableSize, cc.emit)
	cc.hdec.SetMaxStringLength(maxHeaderListSize)

	// The preface, our settings and the connection window increase go
	// out in the writer's first batch.
	cc.wbuf = append(cc.wbuf, clientPreface...)
	cc.writeSettings(
		setting{settingEnablePush, 0},
		setting{settingInitialWindowSize, streamWindow},
		setting{settingMaxHeaderListSize, maxHeaderListSize},
	)
	cc.writeWindowUpdate(0, connWindow-initialWindow)
	return cc
}

// handshake waits for the server's first frame, which must be SETTINGS.
func (cc *clientConn) handshake() error {
	h, p, err := cc.fr.readFrame()
	if err != nil {
		return err
	}
	if h.typ != frameSettings || h.has(flagAck) {
		return errors.New("server did not start with SETTINGS")
	}
	cc.lastRead.Store(cc.t.now())
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.handleSettings(h, p)
}

// tryReserve takes a stream slot if the connection has one. It runs under
// Transport.mu.
func (cc *clientConn) tryReserve() bool {
	if cc.unusable.Load() || uint32(cc.active.Load()) >= cc.maxStreams.Load() {
		return false
	}
	cc.active.Add(1)
	return true
}

// releaseLocked gives back a stream slot, and closes a connection that is
// going away once its last stream is done.
func (cc *clientConn) releaseLocked() {
	if cc.active.Add(-1) == 0 && cc.goAway {
		cc.closeLocked(errGoAwayDone)
	}
}

func (cc *clientConn) close(err error) {
	cc.mu.Lock()
	cc.closeLocked(err)
	cc.mu.Unlock()
}

// closeLocked closes the connection. The reader goroutine then fails the
// streams and removes the connection from its pool.
func (cc *clientConn) closeLocked(err error) {
	if cc.closed {
		return
	}
	cc.closed = true
	cc.err = err
	cc.unusable.Store(true)
	cc.wcond.Signal()
	cc.conn.Close()
}

// roundTrip sends req on a stream of cc, using the slot the caller
// reserved, and waits for the response headers.
func (cc *clientConn) roundTrip(req *http.Request, authority string, body []byte) (*http.Response, error) {
	s := &stream{cc: cc, req: req}
	s.cond.L = &cc.mu

	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.closed || cc.goAway {
		// Lost the connection between reserving and sending.
		cc.releaseLocked()
		return nil, fmt.Errorf("%w: connection no longer usable", ErrUnprocessed)
	}
	s.id = cc.nextID
	cc.nextID += 2
	if cc.nextID > maxStreamID {
		cc.goAway = true
		cc.unusable.Store(true)
	}
	s.sendWindow = cc.peerInitWindow
	s.inflow = streamWindow
	cc.streams[s.id] = s
	if ctx := req.Context(); ctx.Done() != nil {
		// Runs in its own goroutine, and only if ctx ends.
		s.stopCtx = context.AfterFunc(ctx, s.cancel)
	}

	cc.writeHeaders(s.id, req, authority, len(body))
	if len(body) == 0 {
		s.sentEnd = true
	}
	for off := 0; off < len(body) && !s.done; {
		n := min(len(body)-off, cc.peerMaxFrame, int(s.sendWindow), int(cc.sendWindow))
		if n <= 0 {
			// Flow control: wait for a WINDOW_UPDATE (or the end of
			// the stream).
			s.sendBlocked = true
			cc.sendBlocked++
			s.cond.Wait()
			cc.sendBlocked--
			s.sendBlocked = false
			continue
		}
		end := off+n == len(body)
		cc.writeData(s.id, body[off:off+n], end)
		s.sendWindow -= int32(n)
		cc.sendWindow -= int32(n)
		off += n
		if end {
			s.sentEnd = true
		}
	}
	if s.sentEnd && s.recvEnd {
		s.finishLocked()
	}

	for s.resp == nil && s.err == nil && s.cancelErr == nil {
		s.cond.Wait()
	}
	switch {
	case s.cancelErr != nil:
		return nil, s.cancelErr
	case s.resp != nil:
		return s.resp, nil
	default:
		return nil, s.err
	}
}

// writeLoop is the connection's writer goroutine: it writes each batch of
// queued frames with one Write call.
func (cc *clientConn) writeLoop() {
	defer cc.t.wg.Done()
	var buf []byte
	cc.mu.Lock()
	defer cc.mu.Unlock()
	for {
		for len(cc.wbuf) == 0 && !cc.closed {
			cc.wcond.Wait()
		}
		if !cc.closed {
			// Yield once before taking the batch, so that runnable
			// requests queue their frames first and one write carries
			// more of them. (With nothing else runnable, Gosched
			// returns at once.)
			cc.mu.Unlock()
			runtime.Gosched()
			cc.mu.Lock()
		}
		if cc.closed {
			return
		}
		// Swap buffers, so requests append to the other one while
		// this batch is written.
		buf, cc.wbuf = cc.wbuf, buf[:0]
		cc.mu.Unlock()
		_, err := cc.conn.Write(buf)
		if cap(buf) > maxKeptWriteBuf {
			buf = nil
		}
		cc.mu.Lock()
		if err != nil {
			cc.closeLocked(fmt.Errorf("h2c: write to %s: %w", cc.addr, err))
			return
		}
	}
}

// Frame writing. Each method appends a frame to wbuf and wakes the writer;
// the caller holds mu. Nothing is queued once the connection is closed.

func (cc *clientConn) writeSettings(settings ...setting) {
	cc.wbuf = appendFrameHeader(cc.wbuf, 6*len(settings), frameSettings, 0, 0)
	for _, s := range settings {
		cc.wbuf = append(cc.wbuf, byte(s.id>>8), byte(s.id))
		cc.wbuf = appendUint32(cc.wbuf, s.val)
	}
	cc.wcond.Signal()
}

func (cc *clientConn) writeSettingsAck() {
	if cc.closed {
		return
	}
	cc.wbuf = appendFrameHeader(cc.wbuf, 0, frameSettings, flagAck, 0)
	cc.wcond.Signal()
}

func (cc *clientConn) writeWindowUpdate(id, inc uint32) {
	if cc.closed {
		return
	}
	cc.wbuf = appendFrameHeader(cc.wbuf, 4, frameWindowUpdate, 0, id)
	cc.wbuf = appendUint32(cc.wbuf, inc)
	cc.wcond.Signal()
}

func (cc *clientConn) writePing(ack bool, data []byte) {
	if cc.closed {
		return
	}
	var flags uint8
	if ack {
		flags = flagAck
	}
	cc.wbuf = appendFrameHeader(cc.wbuf, 8, framePing, flags, 0)
	cc.wbuf = append(cc.wbuf, data[:8]...)
	cc.wcond.Signal()
}

func (cc *clientConn) writeRSTStream(id uint32, code errCode) {
	if cc.closed {
		return
	}
	cc.wbuf = appendFrameHeader(cc.wbuf, 4, frameRSTStream, 0, id)
	cc.wbuf = appendUint32(cc.wbuf, uint32(code))
	cc.wcond.Signal()
}

func (cc *clientConn) writeData(id uint32, data []byte, end bool) {
	if cc.closed {
		return
	}
	var flags uint8
	if end {
		flags = flagEndStream
	}
	cc.wbuf = appendFrameHeader(cc.wbuf, len(data), frameData, flags, id)
	cc.wbuf = append(cc.wbuf, data...)
	cc.wcond.Signal()
}

// writeHeaders encodes the request's header block and queues it as a
// HEADERS frame followed by any CONTINUATION frames, contiguously.
func (cc *clientConn) writeHeaders(id uint32, req *http.Request, authority string, bodyLen int) {
	if cc.closed {
		return
	}
	cc.hbuf.Reset()
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	cc.encode(":method", method)
	cc.encode(":scheme", "http")
	cc.encode(":authority", authority)
	cc.encode(":path", req.URL.RequestURI())
	for k, vv := range req.Header {
		name := lowerHeader(k)
		switch name {
		case "connection", "proxy-connection", "keep-alive", "transfer-encoding",
			"upgrade", "host", "content-length", "http2-settings":
			// Connection-specific, or set here from the request.
			continue
		case "te":
			// Only "trailers" is allowed in HTTP/2.
			for _, v := range vv {
				if strings.EqualFold(v, "trailers") {
					cc.encode("te", "trailers")
					break
				}
			}
			continue
		}
		for _, v := range vv {
			cc.encode(name, v)
		}
	}
	if bodyLen > 0 || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		cc.encode("content-length", strconv.Itoa(bodyLen))
	}

	block := cc.hbuf.Bytes()
	typ, flags := frameHeaders, uint8(0)
	if bodyLen == 0 {
		flags = flagEndStream
	}
	for {
		n := min(len(block), cc.peerMaxFrame)
		if n == len(block) {
			flags |= flagEndHeaders
		}
		cc.wbuf = appendFrameHeader(cc.wbuf, n, typ, flags, id)
		cc.wbuf = append(cc.wbuf, block[:n]...)
		block = block[n:]
		if len(block) == 0 {
			break
		}
		typ, flags = frameContinuation, 0
	}
	cc.wcond.Signal()
}

func (cc *clientConn) encode(name, value string) {
	// Writes to a bytes.Buffer cannot fail.
	cc.henc.WriteField(hpack.HeaderField{Name: name, Value: value})
}

// lowerHeader returns the lower-case form of a header name, without
// allocating for common names.
func lowerHeader(name string) string {
	if l, ok := commonLower[name]; ok {
		return l
	}
	return strings.ToLower(name)
}

var commonLower = func() map[string]string {
	m := make(map[string]string)
	for _, k := range []string{
		"Accept", "Accept-Encoding", "Accept-Language", "Authorization",
		"Cache-Control", "Connection", "Content-Encoding", "Content-Length",
		"Content-Type", "Cookie", "Date", "Host", "Keep-Alive", "Proxy-Connection",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade", "User-Agent",
		"X-Forwarded-For", "X-Request-Id",
	} {
		m[k] = strings.ToLower(k)
	}
	return m
}()

// statusLines holds "200 OK" and the like, so responses need not build them.
var statusLines = func() (s [600]string) {
	for code := range s {
		if text := http.StatusText(code); text != "" {
			s[code] = strconv.Itoa(code) + " " + text
		}
	}
	return s
}()

func statusLine(code int) string {
	if code < len(statusLines) && statusLines[code] != "" {
		return statusLines[code]
	}
	return strconv.Itoa(code)
}
