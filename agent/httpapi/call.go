package httpapi

import (
	"io"
	"net/http"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
)

// postType checks that r is a POST and returns its body's media type from
// Content-Type; otherwise it answers 405 (with Allow) or the codec's
// status (400/415) and returns false.
func postType(w http.ResponseWriter, r *http.Request) (codec.MediaType, bool) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, Errorf(http.StatusMethodNotAllowed, "Expecting one of { 'POST' }, but received '%s'", r.Method))
		return "", false
	}
	mt, status, err := codec.RequestType(r)
	if err != nil {
		writeError(w, &Error{Status: status, Message: err.Error()})
		return "", false
	}
	return mt, true
}

// decodeCall reads a call's body, at most limit bytes, and decodes it as mt
// into call, answering as Mesos's agent does: 400 for an unreadable or
// malformed body, 413 for one over the limit.
func decodeCall(r *http.Request, mt codec.MediaType, limit int, call proto.Message) *Error {
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	if err != nil {
		return Errorf(http.StatusBadRequest, "Failed to read body: %v", err)
	}
	if len(body) > limit {
		return Errorf(http.StatusRequestEntityTooLarge, "Call body exceeds %d bytes", limit)
	}
	if err := codec.Unmarshal(mt, body, call); err != nil {
		return Errorf(http.StatusBadRequest, "Failed to parse body into Call protobuf: %v", err)
	}
	return nil
}
