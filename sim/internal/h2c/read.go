package h2c

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/net/http2/hpack"
)

// headerBlock is a header block being read: a HEADERS frame and its
// CONTINUATIONs, decoded as they arrive.
type headerBlock struct {
	open       bool // HEADERS read, END_HEADERS not yet
	streamID   uint32
	endStream  bool
	encoded    int // bytes of header block fragments
	fields     []hpack.HeaderField
	size       uint32 // decoded size, as counted for SETTINGS_MAX_HEADER_LIST_SIZE
	truncated  bool   // too large: fields are incomplete
	sawRegular bool
	invalid    error // malformed field
}

// readLoop is the connection's reader goroutine. When reading fails, it
// fails all streams and removes the connection from its pool.
func (cc *clientConn) readLoop() {
	defer cc.t.wg.Done()
	cc.mu.Lock()
	if cc.t.pingInterval > 0 && !cc.closed {
		cc.pingTimer = time.AfterFunc(cc.t.pingInterval, cc.checkAlive)
	}
	cc.mu.Unlock()

	err := cc.readFrames()

	cc.mu.Lock()
	if err == io.EOF {
		err = io.ErrUnexpectedEOF // a stream's io.EOF means a complete response
	}
	cc.closeLocked(fmt.Errorf("h2c: connection to %s lost: %w", cc.addr, err))
	if cc.pingTimer != nil {
		cc.pingTimer.Stop()
	}
	for _, s := range cc.streams {
		s.failLocked(cc.err)
	}
	cc.mu.Unlock()
	cc.t.removeConn(cc)
}

// checkAlive runs on the ping timer: it sends a PING when nothing has been
// read for pingInterval, and closes the connection when nothing has been
// read for pingTimeout after that.
func (cc *clientConn) checkAlive() {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.closed {
		return
	}
	now, last := cc.t.now(), cc.lastRead.Load()
	if cc.pingAt != 0 {
		if last < cc.pingAt {
			cc.closeLocked(errPingTimeout)
			return
		}
		cc.pingAt = 0
	}
	if idle := now - last; idle < int64(cc.t.pingInterval) {
		cc.pingTimer.Reset(cc.t.pingInterval - time.Duration(idle))
		return
	}
	cc.pingAt = now
	cc.writePing(false, pingData)
	cc.pingTimer.Reset(cc.t.pingTimeout)
}

// readFrames reads and handles frames until the connection fails.
func (cc *clientConn) readFrames() error {
	for {
		h, p, err := cc.fr.readFrame()
		if err != nil {
			return err
		}
		if cc.pingTimer != nil {
			cc.lastRead.Store(cc.t.now())
		}
		if cc.hb.open && h.typ != frameContinuation {
			return connError{errCodeProtocol, fmt.Sprintf("%d frame inside header block", h.typ)}
		}
		switch h.typ {
		case frameData:
			err = cc.handleData(h, p)
		case frameHeaders:
			err = cc.startHeaderBlock(h, p)
		case frameContinuation:
			err = cc.continueHeaderBlock(h, p)
		case frameRSTStream:
			err = cc.handleRSTStream(h, p)
		case frameSettings:
			cc.mu.Lock()
			err = cc.handleSettings(h, p)
			cc.mu.Unlock()
		case framePing:
			err = cc.handlePing(h, p)
		case frameGoAway:
			err = cc.handleGoAway(h, p)
		case frameWindowUpdate:
			err = cc.handleWindowUpdate(h, p)
		case framePushPromise:
			// We sent SETTINGS_ENABLE_PUSH=0.
			err = connError{errCodeProtocol, "PUSH_PROMISE"}
		}
		// PRIORITY and unknown frame types are ignored.
		if err != nil {
			return err
		}
	}
}

// streamFor returns the open stream with the given id, or nil for a stream
// that is closed. A frame for a stream we never opened is a connection
// error.
func (cc *clientConn) streamFor(id uint32) (*stream, error) {
	if s := cc.streams[id]; s != nil {
		return s, nil
	}
	if id%2 == 0 || id >= cc.nextID {
		return nil, connError{errCodeProtocol, fmt.Sprintf("frame for idle stream %d", id)}
	}
	return nil, nil
}

func (cc *clientConn) startHeaderBlock(h frameHeader, p []byte) error {
	if h.streamID == 0 {
		return connError{errCodeProtocol, "HEADERS on stream 0"}
	}
	p, err := unpad(h, p)
	if err != nil {
		return err
	}
	if h.has(flagPriority) {
		if len(p) < 5 {
			return connError{errCodeFrameSize, "short HEADERS"}
		}
		p = p[5:]
	}
	cc.hb = headerBlock{
		open:      true,
		streamID:  h.streamID,
		endStream: h.has(flagEndStream),
		fields:    cc.hb.fields[:0],
	}
	return cc.decodeFragment(h, p)
}

func (cc *clientConn) continueHeaderBlock(h frameHeader, p []byte) error {
	if !cc.hb.open || h.streamID != cc.hb.streamID {
		return connError{errCodeProtocol, "unexpected CONTINUATION"}
	}
	return cc.decodeFragment(h, p)
}

// decodeFragment decodes part of a header block, and handles the block
// when it is complete. Every block goes through the decoder, including
// blocks for streams we have reset, to keep its state in step with the
// server's encoder.
func (cc *clientConn) decodeFragment(h frameHeader, frag []byte) error {
	cc.hb.encoded += len(frag)
	if cc.hb.encoded > 2*maxHeaderListSize {
		return connError{errCodeProtocol, "header block too large"}
	}
	if _, err := cc.hdec.Write(frag); err != nil {
		return connError{errCodeCompression, err.Error()}
	}
	if !h.has(flagEndHeaders) {
		return nil
	}
	cc.hb.open = false
	if err := cc.hdec.Close(); err != nil {
		return connError{errCodeCompression, err.Error()}
	}
	err := cc.handleHeaders(&cc.hb)
	clear(cc.hb.fields) // drop the strings
	return err
}

// emit collects a decoded header field. It is the hpack decoder's callback.
func (cc *clientConn) emit(f hpack.HeaderField) {
	hb := &cc.hb
	if hb.invalid != nil || hb.truncated {
		return
	}
	if hb.size += f.Size(); hb.size > maxHeaderListSize {
		hb.truncated = true
		return
	}
	switch {
	case !f.IsPseudo():
		hb.sawRegular = true
		if !validFieldName(f.Name) || hasUpper(f.Name) {
			hb.invalid = fmt.Errorf("h2c: invalid response header name %q", f.Name)
		}
	case hb.sawRegular:
		hb.invalid = errors.New("h2c: pseudo-header after regular header")
	case f.Name != ":status":
		hb.invalid = fmt.Errorf("h2c: invalid response pseudo-header %q", f.Name)
	case len(hb.fields) > 0:
		hb.invalid = errors.New("h2c: duplicate :status")
	}
	if !validFieldValue(f.Value) {
		hb.invalid = fmt.Errorf("h2c: invalid value for response header %q", f.Name)
	}
	hb.fields = append(hb.fields, f)
}

func hasUpper(s string) bool {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			return true
		}
	}
	return false
}

func (cc *clientConn) handleHeaders(hb *headerBlock) error {
	// Build the response before taking the lock. (Trailers and
	// informational responses, which are rare, build nothing.)
	code, status := 0, ""
	if len(hb.fields) > 0 && hb.fields[0].Name == ":status" {
		status = hb.fields[0].Value
		if c, err := strconv.Atoi(status); err == nil && len(status) == 3 && c >= 100 {
			code = c
		}
	}
	var header http.Header
	contentLength := int64(-1)
	if code >= 200 && hb.invalid == nil && !hb.truncated {
		header, contentLength = responseHeader(hb.fields[1:])
	}

	cc.mu.Lock()
	defer cc.mu.Unlock()
	s, err := cc.streamFor(hb.streamID)
	if s == nil {
		return err // a reset stream's header block: decoded, dropped
	}
	switch {
	case hb.invalid != nil:
		s.resetLocked(errCodeProtocol, hb.invalid)
	case hb.truncated:
		s.resetLocked(errCodeProtocol, errors.New("h2c: response header list too large"))
	case s.resp != nil:
		// Trailers: ignored, but they must end the stream.
		if !hb.endStream || status != "" {
			s.resetLocked(errCodeProtocol, errors.New("h2c: malformed trailers"))
			return nil
		}
		s.endOfResponseLocked()
	case code == 0:
		s.resetLocked(errCodeProtocol, fmt.Errorf("h2c: malformed response status %q", status))
	case code < 200:
		// An informational response; the final one follows.
		if hb.endStream {
			s.resetLocked(errCodeProtocol, errors.New("h2c: informational response ends stream"))
		}
	default:
		s.resp = &http.Response{
			Status:        statusLine(code),
			StatusCode:    code,
			Proto:         "HTTP/2.0",
			ProtoMajor:    2,
			Header:        header,
			ContentLength: contentLength,
			Body:          s,
			Request:       s.req,
		}
		if hb.endStream {
			s.endOfResponseLocked()
		}
		s.cond.Broadcast()
	}
	return nil
}

// responseHeader converts decoded fields to an http.Header with canonical
// keys, and returns the content length (-1 if unknown).
func responseHeader(fields []hpack.HeaderField) (http.Header, int64) {
	h := make(http.Header, len(fields))
	vals := make([]string, len(fields)) // one backing array for all single values
	cl := int64(-1)
	for _, f := range fields {
		key := http.CanonicalHeaderKey(f.Name)
		if vv, ok := h[key]; ok {
			h[key] = append(vv, f.Value)
		} else {
			vals[0] = f.Value
			h[key] = vals[:1:1]
			vals = vals[1:]
		}
		if key == "Content-Length" {
			if v, err := strconv.ParseInt(f.Value, 10, 64); err == nil && v >= 0 {
				cl = v
			}
		}
	}
	return h, cl
}

func (cc *clientConn) handleData(h frameHeader, p []byte) error {
	if h.streamID == 0 {
		return connError{errCodeProtocol, "DATA on stream 0"}
	}
	data, err := unpad(h, p)
	if err != nil {
		return err
	}
	n := int32(h.length) // padding included: all of it is flow controlled
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if n > cc.inflow {
		return connError{errCodeFlowControl, "server overran connection window"}
	}
	cc.inflow -= n
	s, err := cc.streamFor(h.streamID)
	if err != nil {
		return err
	}
	if s == nil || s.resp == nil || s.recvEnd || n > s.inflow {
		// The bytes will never be read: return them to the connection
		// window at once.
		cc.consumedLocked(n)
		switch {
		case s == nil:
			// DATA for a stream we reset or finished.
		case s.resp == nil:
			s.resetLocked(errCodeProtocol, errors.New("h2c: DATA before response headers"))
		case s.recvEnd:
			s.resetLocked(errCodeStreamClosed, errors.New("h2c: DATA after end of stream"))
		default:
			s.resetLocked(errCodeFlowControl, errors.New("h2c: server overran stream window"))
		}
		return nil
	}
	s.inflow -= n
	if pad := n - int32(len(data)); pad > 0 {
		s.consumedLocked(pad) // padding is consumed on arrival
	}
	if len(data) > 0 {
		s.appendLocked(data)
		s.cond.Broadcast()
	}
	if h.has(flagEndStream) {
		s.endOfResponseLocked()
	}
	return nil
}

// consumedLocked returns n bytes to the connection's receive window,
// sending a WINDOW_UPDATE when half the window has been consumed.
func (cc *clientConn) consumedLocked(n int32) {
	cc.unacked += n
	if cc.unacked >= connWindow/2 {
		cc.writeWindowUpdate(0, uint32(cc.unacked))
		cc.inflow += cc.unacked
		cc.unacked = 0
	}
}

// handleSettings applies the server's settings and acknowledges them. The
// caller holds mu.
func (cc *clientConn) handleSettings(h frameHeader, p []byte) error {
	switch {
	case h.streamID != 0:
		return connError{errCodeProtocol, "SETTINGS on a stream"}
	case h.has(flagAck):
		if len(p) != 0 {
			return connError{errCodeFrameSize, "SETTINGS ACK with payload"}
		}
		return nil
	case len(p)%6 != 0:
		return connError{errCodeFrameSize, "bad SETTINGS length"}
	}
	for ; len(p) > 0; p = p[6:] {
		id, val := settingID(binary.BigEndian.Uint16(p)), binary.BigEndian.Uint32(p[2:])
		switch id {
		case settingMaxConcurrentStreams:
			cc.maxStreams.Store(min(val, math.MaxInt32))
		case settingInitialWindowSize:
			if val > math.MaxInt32 {
				return connError{errCodeFlowControl, "SETTINGS_INITIAL_WINDOW_SIZE too large"}
			}
			// The change applies to the send windows of open
			// streams too.
			delta := int32(val) - cc.peerInitWindow
			cc.peerInitWindow = int32(val)
			for _, s := range cc.streams {
				w := int64(s.sendWindow) + int64(delta)
				if w > math.MaxInt32 {
					return connError{errCodeFlowControl, "SETTINGS overflows a stream window"}
				}
				s.sendWindow = int32(w)
				if s.sendBlocked {
					s.cond.Broadcast()
				}
			}
		case settingMaxFrameSize:
			if val < defaultMaxFrameSize || val > 1<<24-1 {
				return connError{errCodeProtocol, "bad SETTINGS_MAX_FRAME_SIZE"}
			}
			cc.peerMaxFrame = int(val)
		case settingHeaderTableSize:
			cc.henc.SetMaxDynamicTableSizeLimit(val)
		}
	}
	cc.writeSettingsAck()
	return nil
}

func (cc *clientConn) handlePing(h frameHeader, p []byte) error {
	if h.streamID != 0 {
		return connError{errCodeProtocol, "PING on a stream"}
	}
	if len(p) != 8 {
		return connError{errCodeFrameSize, "bad PING length"}
	}
	// A PING ACK needs no handling: like any frame, it updated lastRead.
	if !h.has(flagAck) {
		cc.mu.Lock()
		cc.writePing(true, p)
		cc.mu.Unlock()
	}
	return nil
}

func (cc *clientConn) handleWindowUpdate(h frameHeader, p []byte) error {
	if len(p) != 4 {
		return connError{errCodeFrameSize, "bad WINDOW_UPDATE length"}
	}
	inc := binary.BigEndian.Uint32(p) & (1<<31 - 1)
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if h.streamID == 0 {
		w := int64(cc.sendWindow) + int64(inc)
		if inc == 0 || w > math.MaxInt32 {
			return connError{errCodeFlowControl, "bad connection WINDOW_UPDATE"}
		}
		cc.sendWindow = int32(w)
		if cc.sendBlocked > 0 {
			for _, s := range cc.streams {
				if s.sendBlocked {
					s.cond.Broadcast()
				}
			}
		}
		return nil
	}
	s, err := cc.streamFor(h.streamID)
	if s == nil {
		return err
	}
	w := int64(s.sendWindow) + int64(inc)
	switch {
	case inc == 0:
		s.resetLocked(errCodeProtocol, errors.New("h2c: WINDOW_UPDATE of 0"))
	case w > math.MaxInt32:
		s.resetLocked(errCodeFlowControl, errors.New("h2c: stream window overflow"))
	default:
		s.sendWindow = int32(w)
		if s.sendBlocked {
			s.cond.Broadcast()
		}
	}
	return nil
}

func (cc *clientConn) handleRSTStream(h frameHeader, p []byte) error {
	if h.streamID == 0 {
		return connError{errCodeProtocol, "RST_STREAM on stream 0"}
	}
	if len(p) != 4 {
		return connError{errCodeFrameSize, "bad RST_STREAM length"}
	}
	code := errCode(binary.BigEndian.Uint32(p))
	cc.mu.Lock()
	defer cc.mu.Unlock()
	s, err := cc.streamFor(h.streamID)
	if s == nil {
		return err
	}
	if code == errCodeNo && s.recvEnd {
		// The response is complete; the server just wants no more of
		// the request body.
		s.sentEnd = true
		s.finishLocked()
		return nil
	}
	err = fmt.Errorf("h2c: stream reset by server: %v", code)
	if code == errCodeRefusedStream && s.resp == nil {
		err = fmt.Errorf("%w: stream refused", ErrUnprocessed)
	}
	s.failLocked(err) // the server has forgotten the stream: no RST back
	return nil
}

func (cc *clientConn) handleGoAway(h frameHeader, p []byte) error {
	if h.streamID != 0 {
		return connError{errCodeProtocol, "GOAWAY on a stream"}
	}
	if len(p) < 8 {
		return connError{errCodeFrameSize, "short GOAWAY"}
	}
	last := binary.BigEndian.Uint32(p) & (1<<31 - 1)
	code := errCode(binary.BigEndian.Uint32(p[4:]))
	cc.mu.Lock()
	defer cc.mu.Unlock()
	cc.goAway = true
	cc.unusable.Store(true)
	for id, s := range cc.streams {
		if id > last {
			s.failLocked(fmt.Errorf("%w: GOAWAY (%v) after stream %d", ErrUnprocessed, code, last))
		}
	}
	if cc.active.Load() == 0 {
		cc.closeLocked(errGoAwayDone)
	}
	return nil
}
