package h2c

import (
	"errors"
	"io"
	"net/http"
	"sync"
)

var errBodyClosed = errors.New("h2c: read on closed response body")

// stream is one request and its response. It is also the response Body,
// so a request costs one stream allocation. The fields after cond are
// guarded by cc.mu.
type stream struct {
	cc   *clientConn
	req  *http.Request
	id   uint32
	cond sync.Cond // L is &cc.mu; broadcast when the stream's state changes

	resp      *http.Response // set when the final response headers arrive
	rbuf      []byte         // received data not yet read: rbuf[roff:]
	roff      int
	err       error // io.EOF after END_STREAM, or why the stream failed
	cancelErr error // the request context's error; beats buffered data

	sendWindow  int32 // how much DATA we may still send
	sendBlocked bool  // roundTrip waits for sendWindow
	inflow      int32 // how much DATA the server may still send
	unacked     int32 // consumed DATA not yet returned in a WINDOW_UPDATE

	sentEnd    bool // END_STREAM sent
	recvEnd    bool // END_STREAM received
	done       bool // closed: no longer in cc.streams, slot released
	bodyClosed bool

	stopCtx func() bool // stops the context.AfterFunc watching req's context
}

var _ io.ReadCloser = (*stream)(nil)

// Read reads response data, waiting for it if none is buffered.
func (s *stream) Read(p []byte) (int, error) {
	s.cc.mu.Lock()
	defer s.cc.mu.Unlock()
	for {
		switch {
		case s.bodyClosed:
			return 0, errBodyClosed
		case s.cancelErr != nil:
			return 0, s.cancelErr
		case s.roff < len(s.rbuf):
			n := copy(p, s.rbuf[s.roff:])
			s.roff += n
			if s.roff == len(s.rbuf) {
				s.rbuf, s.roff = s.rbuf[:0], 0
			}
			s.consumedLocked(int32(n))
			return n, nil
		case s.err != nil:
			return 0, s.err
		case len(p) == 0:
			return 0, nil
		}
		s.cond.Wait()
	}
}

// Close closes the response body. Before the response is complete, it
// resets the stream, which frees its slot on the connection.
func (s *stream) Close() error {
	s.cc.mu.Lock()
	defer s.cc.mu.Unlock()
	if s.bodyClosed {
		return nil
	}
	s.bodyClosed = true
	if unread := len(s.rbuf) - s.roff; unread > 0 {
		s.cc.consumedLocked(int32(unread))
	}
	s.rbuf, s.roff = nil, 0
	s.resetLocked(errCodeCancel, errBodyClosed)
	s.cond.Broadcast() // for a concurrent Read
	return nil
}

// cancel runs, in its own goroutine, when the request's context ends.
func (s *stream) cancel() {
	s.cc.mu.Lock()
	defer s.cc.mu.Unlock()
	if s.done {
		return
	}
	s.cancelErr = s.req.Context().Err()
	s.resetLocked(errCodeCancel, s.cancelErr)
}

// appendLocked buffers received data for Read.
func (s *stream) appendLocked(data []byte) {
	if s.roff > 0 && len(s.rbuf)+len(data) > cap(s.rbuf) {
		// Reuse the space already read instead of growing.
		n := copy(s.rbuf, s.rbuf[s.roff:])
		s.rbuf, s.roff = s.rbuf[:n], 0
	}
	s.rbuf = append(s.rbuf, data...)
}

// consumedLocked returns n bytes read by the application to the connection
// and stream receive windows. WINDOW_UPDATEs are batched: one is sent when
// half a window has been consumed, long before the server could run out.
func (s *stream) consumedLocked(n int32) {
	s.cc.consumedLocked(n)
	if s.done || s.recvEnd {
		return // the server sends no more on this stream
	}
	s.unacked += n
	if s.unacked >= streamWindow/2 {
		s.cc.writeWindowUpdate(s.id, uint32(s.unacked))
		s.inflow += s.unacked
		s.unacked = 0
	}
}

// endOfResponseLocked records END_STREAM from the server.
func (s *stream) endOfResponseLocked() {
	s.recvEnd = true
	if s.err == nil {
		s.err = io.EOF
	}
	if s.sentEnd {
		s.finishLocked()
	}
	s.cond.Broadcast()
}

// resetLocked sends RST_STREAM with code and fails the stream with err.
func (s *stream) resetLocked(code errCode, err error) {
	if s.done {
		return
	}
	s.cc.writeRSTStream(s.id, code)
	s.failLocked(err)
}

// failLocked ends the stream with err, unless the response was already
// complete. Buffered data stays readable.
func (s *stream) failLocked(err error) {
	if s.err == nil {
		s.err = err
	}
	s.finishLocked()
}

// finishLocked closes the stream: it leaves the connection, frees its slot
// and stops watching the request context.
func (s *stream) finishLocked() {
	if s.done {
		return
	}
	s.done = true
	delete(s.cc.streams, s.id)
	if s.stopCtx != nil {
		s.stopCtx()
	}
	s.cc.releaseLocked()
	s.cond.Broadcast()
}
