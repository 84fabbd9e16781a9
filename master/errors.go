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
