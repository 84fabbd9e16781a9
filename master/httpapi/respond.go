package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/recordio"
	"mezzo/master"
)

// fail writes a text/plain error response.
func fail(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	io.WriteString(w, msg)
}

// failErr maps an error from the master to a response.
func (s *server) failErr(w http.ResponseWriter, r *http.Request, err error) {
	var apiErr *master.APIError
	switch {
	case errors.As(err, &apiErr) && apiErr.Status == http.StatusTemporaryRedirect && apiErr.Leader != "":
		// A follower (or a master deposed while the call ran): Location
		// names the leader, protocol-relative, as Mesos's redirect does.
		w.Header().Set("Location", "//"+apiErr.Leader+r.URL.Path)
		fail(w, apiErr.Status, apiErr.Message)
	case errors.As(err, &apiErr):
		fail(w, apiErr.Status, apiErr.Message)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		fail(w, http.StatusServiceUnavailable, "Request cancelled: "+err.Error())
	default:
		s.log.Error("internal error serving request", "err", err)
		fail(w, http.StatusInternalServerError, err.Error())
	}
}

// checkPost enforces POST, as Mesos's MethodNotAllowed({"POST"}) does.
func checkPost(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodPost {
		return true
	}
	w.Header().Set("Allow", http.MethodPost)
	fail(w, http.StatusMethodNotAllowed, fmt.Sprintf("Expecting one of { 'POST' }, but received '%s'", r.Method))
	return false
}

// readBody reads at most limit bytes; a larger body is 413 naming the limit.
func (s *server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.ContentLength > s.maxBody {
		fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body of %d bytes exceeds the limit of %d bytes", r.ContentLength, s.maxBody))
		return nil, false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, s.maxBody+1))
	if err != nil {
		fail(w, http.StatusBadRequest, "Failed to read request body: "+err.Error())
		return nil, false
	}
	if int64(len(body)) > s.maxBody {
		fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body exceeds the limit of %d bytes", s.maxBody))
		return nil, false
	}
	return body, true
}

// parseError is Mesos's wording for an undecodable Call body.
func parseError(mt codec.MediaType, what string, err error) string {
	if mt == codec.JSON {
		return fmt.Sprintf("Failed to convert JSON into %s protobuf: %v", what, err)
	}
	return fmt.Sprintf("Failed to parse body into %s protobuf: %v", what, err)
}

// streamStart writes the 200 header of a RecordIO event stream: the
// message media type as Content-Type, no Content-Length (chunked on
// HTTP/1.1), flushed at once so the client sees the subscription accepted.
func streamStart(w http.ResponseWriter, mt codec.MediaType, extra map[string]string) *recordio.Writer {
	h := w.Header()
	h.Set("Content-Type", string(mt))
	h.Set("Cache-Control", "no-cache")
	for k, v := range extra {
		h.Set(k, v)
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	// Streams outlive any server-wide write timeout.
	_ = rc.SetWriteDeadline(time.Time{})
	// No flush: the caller's first sendQueued sends the headers together
	// with the events already queued (SUBSCRIBED), in one write.
	return recordio.NewWriter(w)
}

// writeBatch encodes events as records and flushes them together, in one
// write; with no events it flushes what is pending (the headers).
func writeBatch[E proto.Message](rw *recordio.Writer, mt codec.MediaType, events []E) error {
	for _, ev := range events {
		data, err := encodeRecord(mt, ev)
		if err != nil {
			return err
		}
		if err := rw.Append(data); err != nil {
			return err
		}
	}
	rw.Flush()
	return nil
}

// sendQueued writes the events a stream has queued (drain) as one batch
// and reports whether the stream goes on. The first call after
// streamStart flushes even with nothing queued, so that the headers go
// out; later calls with nothing queued write nothing.
func sendQueued[E proto.Message](rw *recordio.Writer, mt codec.MediaType, drain func() ([]E, bool), first bool) bool {
	events, ended := drain()
	if len(events) > 0 || first {
		if err := writeBatch(rw, mt, events); err != nil {
			return false
		}
	}
	return !ended
}

// writeRecord encodes and writes one event, flushed.
func writeRecord(rw *recordio.Writer, mt codec.MediaType, m proto.Message) error {
	data, err := encodeRecord(mt, m)
	if err != nil {
		return err
	}
	return rw.Write(data)
}

// encodeRecord encodes one event as a record.
func encodeRecord(mt codec.MediaType, m proto.Message) ([]byte, error) {
	data, err := codec.Marshal(mt, m)
	if err != nil {
		return nil, err
	}
	if mt == codec.JSON && strings.ContainsRune(string(data), '\n') {
		// Records must be single-line JSON (the npm client splits on "\n").
		data = []byte(strings.ReplaceAll(string(data), "\n", ""))
	}
	return data, nil
}

// redirectIfFollower answers a request to a master that does not lead:
// 307 with Location //leader:port/path, or 503 when no leader is known
// (Mesos checks this before anything else). It reports whether it did.
func (s *server) redirectIfFollower(w http.ResponseWriter, r *http.Request) bool {
	snap := s.m.LastPublished()
	if snap == nil || snap.Elected {
		return false
	}
	if snap.Leader == nil && s.wait > 0 {
		snap = s.m.AwaitLeader(r.Context(), s.wait)
		if snap.Elected {
			return false
		}
	}
	if snap.Leader == nil {
		fail(w, http.StatusServiceUnavailable, "No leader elected")
		return true
	}
	w.Header().Set("Location", "//"+master.LeaderHostPort(snap.Leader)+r.URL.Path)
	fail(w, http.StatusTemporaryRedirect, "This master is not the leader")
	return true
}
