// Package opapi holds what the master's and the agent's v1 operator APIs
// (POST /api/v1) answer alike: GET_METRICS and GET_FLAGS lists, the
// logging-level calls, and writing a response message in the negotiated
// media type. The call and response messages differ (mesos.v1.master vs
// mesos.v1.agent), so each side builds its own envelope around these parts.
package opapi

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"mezzo/api/codec"
	"mezzo/api/mesos"
	"mezzo/internal/loglevel"
)

// Metrics lists m as GET_METRICS answers it: one Metric per key, sorted by
// name so that responses are stable.
func Metrics(m map[string]float64) []*mesos.Metric {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]*mesos.Metric, 0, len(names))
	for _, k := range names {
		out = append(out, &mesos.Metric{Name: proto.String(k), Value: proto.Float64(m[k])})
	}
	return out
}

// Flags lists flags as GET_FLAGS answers them, sorted by name.
func Flags(flags map[string]string) []*mesos.Flag {
	names := make([]string, 0, len(flags))
	for k := range flags {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]*mesos.Flag, 0, len(names))
	for _, k := range names {
		out = append(out, &mesos.Flag{Name: proto.String(k), Value: proto.String(flags[k])})
	}
	return out
}

// RequirePresent checks that call has its sub-message name set, as Mesos's
// call validation requires of each call type that carries one; the error
// names the missing field.
func RequirePresent(call proto.Message, name protoreflect.Name) error {
	m := call.ProtoReflect()
	if fd := m.Descriptor().Fields().ByName(name); fd == nil || !m.Has(fd) {
		return fmt.Errorf("Expecting '%s' to be present", name)
	}
	return nil
}

// ErrNoLogging is SetLoggingLevel's refusal when the process was built
// without a logging control (an embedded master or agent whose logger the
// caller owns).
var ErrNoLogging = errors.New("the logging level of this process cannot be changed")

// LoggingLevel is GET_LOGGING_LEVEL's answer: the current glog-style
// verbosity, 0 without a control.
func LoggingLevel(c *loglevel.Control) uint32 {
	if c == nil {
		return 0
	}
	return c.Verbosity()
}

// SetLoggingLevel applies SET_LOGGING_LEVEL: level for duration, then back
// to the start-up level. The answer is the HTTP status and, on refusal, the
// reason naming the field (400), or ErrNoLogging (501).
func SetLoggingLevel(c *loglevel.Control, level uint32, d *mesos.DurationInfo) (int, error) {
	if d == nil || d.Nanoseconds == nil {
		return http.StatusBadRequest, errors.New("Expecting 'set_logging_level.duration' to be present")
	}
	if c == nil {
		return http.StatusNotImplemented, ErrNoLogging
	}
	if err := c.Set(level, time.Duration(d.GetNanoseconds())); err != nil {
		return http.StatusBadRequest, errors.New("Invalid 'set_logging_level': " + err.Error())
	}
	return http.StatusOK, nil
}

// WriteMessage answers 200 with m encoded as mt, or 500 if it cannot be
// encoded.
func WriteMessage(w http.ResponseWriter, mt codec.MediaType, m proto.Message) {
	body, err := codec.Marshal(mt, m)
	if err != nil {
		WriteText(w, http.StatusInternalServerError, "Failed to encode response: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", string(mt))
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// WriteEmpty answers 200 with no body and no Content-Type, as Mesos answers
// the calls without a response message (mesos-go rejects a 200 with a
// Content-Type for them).
func WriteEmpty(w http.ResponseWriter) {
	w.Header().Del("Content-Type")
	w.WriteHeader(http.StatusOK)
}

// WriteText answers status with a text/plain body.
func WriteText(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	w.Write([]byte(msg))
}

// NoEndpoint answers 404 for a path no endpoint serves, naming the path and
// the process (Go's default body, "404 page not found", says neither).
func NoEndpoint(w http.ResponseWriter, r *http.Request, process string) {
	WriteText(w, http.StatusNotFound, "No endpoint '"+r.URL.Path+"' on this "+process+"\n")
}
