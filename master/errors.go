package master

import (
	"fmt"
	"net/http"
)

// APIError is a call the master refuses; Status is the HTTP status the
// API layer answers with and Message its text/plain body.
type APIError struct {
	Status  int
	Message string
	// Leader is the leading master's "host:port" when Status is 307 (this
	// master does not lead): the HTTP layer answers with
	// Location: //Leader + the request's path.
	Leader string
}

func (e *APIError) Error() string { return e.Message }

// HTTPStatus is the status an HTTP layer should answer with.
func (e *APIError) HTTPStatus() int { return e.Status }

func badRequest(format string, args ...any) *APIError {
	return &APIError{Status: http.StatusBadRequest, Message: fmt.Sprintf(format, args...)}
}

func forbidden(format string, args ...any) *APIError {
	return &APIError{Status: http.StatusForbidden, Message: fmt.Sprintf(format, args...)}
}

// ErrStopped is returned by calls made after Stop.
var ErrStopped = &APIError{Status: http.StatusServiceUnavailable, Message: "Master is shutting down"}

// ErrNotLeading answers a call whose master lost its leadership before
// the call completed; the caller should retry with the new leader.
var ErrNotLeading = &APIError{Status: http.StatusServiceUnavailable, Message: "Master lost its leadership; retry with the new leader"}
