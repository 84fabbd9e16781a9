package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"sync"

	"mezzo/api/codec"
	"mezzo/api/executorpb"
	"mezzo/api/mesos"
	"mezzo/api/recordio"
	"mezzo/internal/authn"

	"github.com/google/uuid"
)

// maxCallBody bounds an executor call's body (an UPDATE carries a status
// with optional data; Mesos frameworks keep these small).
const maxCallBody = 16 << 20

// executor serves POST /api/v1/executor as Mesos's agent does: 503 while
// recovering, 405 for other methods, 400/415 for the Content-Type, 400 for
// a malformed or invalid call, 406 when the Accept header allows neither
// media type, 200 + RecordIO stream for SUBSCRIBE, 202 for the rest.
func (h *Handler) executor(w http.ResponseWriter, r *http.Request) {
	if h.b.Recovering() {
		writeError(w, Errorf(http.StatusServiceUnavailable, "Agent has not finished recovery"))
		return
	}
	mt, ok := postType(w, r)
	if !ok {
		return
	}
	call := &executorpb.Call{}
	if e := decodeCall(r, mt, maxCallBody, call); e != nil {
		writeError(w, e)
		return
	}
	if err := ValidateCall(call); err != nil {
		writeError(w, Errorf(http.StatusBadRequest, "Failed to validate Executor::Call: %v", err))
		return
	}
	if h.execAuth != nil {
		if err := h.execAuth(r, call); err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="`+string(authn.AgentExecutor)+`"`)
			writeError(w, err)
			return
		}
	}
	switch call.GetType() {
	case executorpb.Call_SUBSCRIBE:
		h.subscribe(w, r, call)
	case executorpb.Call_UNKNOWN:
		writeError(w, Errorf(http.StatusNotImplemented, "Received 'UNKNOWN' call"))
	default:
		if err := h.b.ExecutorCall(call); err != nil {
			writeError(w, err)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}
}

func (h *Handler) subscribe(w http.ResponseWriter, r *http.Request, call *executorpb.Call) {
	mt, err := codec.ResponseType(r)
	if err != nil {
		writeError(w, Errorf(http.StatusNotAcceptable, "Expecting 'Accept' to allow '%s' or '%s'", codec.JSON, codec.Protobuf))
		return
	}
	s := NewExecutorStream(mt)
	defer s.finish()
	if err := h.b.SubscribeExecutor(call, s); err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", string(mt))
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	if err := s.serve(r, recordio.NewWriter(w)); err != nil {
		h.log.Debug("executor stream ended", "framework", call.GetFrameworkId().GetValue(),
			"executor", call.GetExecutorId().GetValue(), "err", err)
	}
}

// ValidateCall checks an executor call as Mesos does before acting on it;
// the error names the offending field.
func ValidateCall(c *executorpb.Call) error {
	switch {
	case c.GetExecutorId().GetValue() == "":
		return errors.New("Expecting 'executor_id' to be present")
	case c.GetFrameworkId().GetValue() == "":
		return errors.New("Expecting 'framework_id' to be present")
	case c.Type == nil:
		return errors.New("Expecting 'type' to be present")
	}
	switch c.GetType() {
	case executorpb.Call_SUBSCRIBE:
		if c.Subscribe == nil {
			return errors.New("Expecting 'subscribe' to be present")
		}
		for _, u := range c.GetSubscribe().GetUnacknowledgedUpdates() {
			if err := validateStatus(c, u.GetStatus()); err != nil {
				return fmt.Errorf("'subscribe.unacknowledged_updates': %w", err)
			}
		}
	case executorpb.Call_UPDATE:
		if c.Update == nil {
			return errors.New("Expecting 'update' to be present")
		}
		return validateStatus(c, c.GetUpdate().GetStatus())
	case executorpb.Call_MESSAGE:
		if c.Message == nil {
			return errors.New("Expecting 'message' to be present")
		}
	}
	return nil
}

func validateStatus(c *executorpb.Call, st *mesos.TaskStatus) error {
	switch {
	case st == nil:
		return errors.New("Expecting 'status' to be present")
	case st.GetTaskId().GetValue() == "":
		return errors.New("Expecting 'status.task_id' to be present")
	case st.State == nil:
		return errors.New("Expecting 'status.state' to be present")
	case st.Uuid == nil:
		return errors.New("Expecting 'uuid' to be present")
	}
	if _, err := uuid.FromBytes(st.GetUuid()); err != nil {
		return fmt.Errorf("Invalid 'uuid': %d bytes, expecting 16", len(st.GetUuid()))
	}
	if st.ExecutorId != nil && st.GetExecutorId().GetValue() != c.GetExecutorId().GetValue() {
		return fmt.Errorf("ExecutorID in Call: %s does not match ExecutorID in TaskStatus: %s",
			c.GetExecutorId().GetValue(), st.GetExecutorId().GetValue())
	}
	if st.GetSource() != mesos.TaskStatus_SOURCE_EXECUTOR {
		return fmt.Errorf("Received Call from executor %s of framework %s with invalid source, expecting 'SOURCE_EXECUTOR'",
			c.GetExecutorId().GetValue(), c.GetFrameworkId().GetValue())
	}
	if st.GetState() == mesos.TaskState_TASK_STAGING {
		return fmt.Errorf("Received TASK_STAGING from executor %s of framework %s which is not allowed",
			c.GetExecutorId().GetValue(), c.GetFrameworkId().GetValue())
	}
	return nil
}

// ExecutorStream is the event stream of one subscribed executor. The agent
// loop sends on it without ever blocking (events queue in memory until the
// request goroutine writes them); Close ends the stream after the queued
// events; Done is closed once the HTTP response has ended (the executor
// disconnected, or the stream was closed and drained).
type ExecutorStream struct {
	mt codec.MediaType

	mu     sync.Mutex
	queue  [][]byte
	closed bool
	ended  bool

	wake chan struct{}
	done chan struct{}
}

// ErrStreamClosed is returned by Send after Close or after the connection
// ended.
var ErrStreamClosed = errors.New("executor stream closed")

// NewExecutorStream returns a stream encoding events as mt. The HTTP
// handler creates them; tests of the agent may drive one with Next.
func NewExecutorStream(mt codec.MediaType) *ExecutorStream {
	return &ExecutorStream{mt: mt, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// MediaType is the stream's encoding.
func (s *ExecutorStream) MediaType() codec.MediaType { return s.mt }

// Send queues ev for the executor.
func (s *ExecutorStream) Send(ev *executorpb.Event) error {
	b, err := codec.Marshal(s.mt, ev)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.ended {
		return ErrStreamClosed
	}
	s.queue = append(s.queue, b)
	s.signalLocked()
	return nil
}

// Close ends the stream once the queued events are written.
func (s *ExecutorStream) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.signalLocked()
}

// Done is closed when the HTTP response has ended.
func (s *ExecutorStream) Done() <-chan struct{} { return s.done }

func (s *ExecutorStream) signalLocked() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// take returns the queued records and whether the stream was closed.
func (s *ExecutorStream) take() ([][]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queue
	s.queue = nil
	return q, s.closed
}

// serve writes records until the stream is closed and drained or the
// request's context ends.
func (s *ExecutorStream) serve(r *http.Request, w *recordio.Writer) error {
	ctx := r.Context()
	for {
		q, closed := s.take()
		for _, rec := range q {
			if err := w.Write(rec); err != nil {
				return err
			}
		}
		if closed {
			return nil
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// finish marks the response as ended and wakes watchers of Done.
func (s *ExecutorStream) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.ended = true
		s.queue = nil
		close(s.done)
	}
}

// Next is for tests that drive a stream without HTTP: it returns the
// queued records, oldest first, without waiting.
func (s *ExecutorStream) Next() [][]byte {
	q, _ := s.take()
	return q
}

// End is for tests that drive a stream without HTTP: it simulates the
// executor's connection going away.
func (s *ExecutorStream) End() { s.finish() }
