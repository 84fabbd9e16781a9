package scheduler

import (
	"errors"
	"fmt"
	"net/http"
)

// Error is a master's answer other than 200 or 202 to a call. Mesos puts a
// text/plain explanation in the body ("Framework is not subscribed").
type Error struct {
	// Call is the call type, e.g. "DECLINE".
	Call string
	// Status is the HTTP status code.
	Status int
	// Body is the response body text (truncated to 4 KiB).
	Body string
}

func (e *Error) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("scheduler: %s: %d %s", e.Call, e.Status, http.StatusText(e.Status))
	}
	return fmt.Sprintf("scheduler: %s: %d %s: %s", e.Call, e.Status, http.StatusText(e.Status), e.Body)
}

// Temporary reports whether retrying later may succeed: the master is not
// ready or not the leader (503), is throttling (429), or redirected (307).
func (e *Error) Temporary() bool {
	switch e.Status {
	case http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusTemporaryRedirect:
		return true
	}
	return false
}

// Errors reported by the client.
var (
	// ErrNotSubscribed: a call was made before a subscription was
	// established (there is no stream id to send).
	ErrNotSubscribed = errors.New("scheduler: not subscribed")
	// ErrTornDown: the framework was torn down through this client.
	ErrTornDown = errors.New("scheduler: framework torn down")
	// ErrDeadStream: no event arrived for MissedHeartbeats intervals.
	ErrDeadStream = errors.New("scheduler: no heartbeat from master")
	// ErrNoMaster: no master accepted the subscription.
	ErrNoMaster = errors.New("scheduler: no master reachable")
)

// FrameworkError is why the event channel closed after the master sent an
// ERROR event: the framework was removed, failed over to another
// scheduler, or is not allowed.
type FrameworkError struct{ Message string }

func (e *FrameworkError) Error() string { return "scheduler: master sent ERROR: " + e.Message }

// isFatal reports whether a subscription error ends the client rather than
// being retried: the master understood and refused (4xx other than 429).
func isFatal(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Status >= 400 && e.Status < 500 && e.Status != http.StatusTooManyRequests
	}
	return false
}
