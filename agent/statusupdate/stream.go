package statusupdate

import (
	"errors"
	"fmt"
	"time"

	"mezzo/api/mesos"
	"mezzo/api/protocol"

	"github.com/google/uuid"
)

// Retry intervals for an unacknowledged head update; Mesos's
// STATUS_UPDATE_RETRY_INTERVAL_MIN and _MAX.
const (
	RetryIntervalMin = 10 * time.Second
	RetryIntervalMax = 10 * time.Minute
	// NotSentRetryInterval is how soon a head is offered to Forward again
	// after Forward reported that it could not send it.
	NotSentRetryInterval = time.Second
)

// Errors returned by Update and Acknowledge; compare with errors.Is.
var (
	// ErrUnknownStream: no stream exists for the framework and task.
	ErrUnknownStream = errors.New("no status update stream for task")
	// ErrUnexpectedAck: the acknowledged uuid is not the head of the stream.
	ErrUnexpectedAck = errors.New("unexpected status update acknowledgement")
	// ErrDuplicateAck: the uuid was acknowledged already.
	ErrDuplicateAck = errors.New("duplicate status update acknowledgement")
	// ErrTerminated: the stream already holds a terminal update.
	ErrTerminated = errors.New("status update stream already has a terminal update")
	// ErrInvalidUpdate: the update is malformed (the message names the field).
	ErrInvalidUpdate = errors.New("invalid status update")
)

// streamKey identifies a stream: one per (framework, task).
type streamKey struct{ framework, task string }

func (k streamKey) String() string {
	return fmt.Sprintf("task %q of framework %q", k.task, k.framework)
}

// stream is the in-memory state of one task's update stream. It is plain
// data manipulated by the Manager with its lock held; it does no I/O.
type stream struct {
	key        streamKey
	checkpoint bool   // whether records are appended to path
	path       string // checkpoint file, when checkpoint

	pending      []*protocol.AgentCall_StatusUpdate // unacknowledged, oldest first
	received     map[uuid.UUID]bool                 // every uuid ever received
	acknowledged map[uuid.UUID]bool                 // every uuid acknowledged
	latest       *mesos.TaskStatus                  // latest update received
	terminal     bool                               // a terminal update was received

	// Retry state of the head.
	next     time.Time     // when the head is due to be forwarded; zero = now
	interval time.Duration // the wait after the next forward
}

func newStream(key streamKey) *stream {
	return &stream{
		key:          key,
		received:     map[uuid.UUID]bool{},
		acknowledged: map[uuid.UUID]bool{},
		interval:     RetryIntervalMin,
	}
}

// validate checks the fields the manager depends on.
func validate(u *protocol.AgentCall_StatusUpdate) (streamKey, uuid.UUID, error) {
	switch {
	case u == nil:
		return streamKey{}, uuid.UUID{}, fmt.Errorf("%w: nil update", ErrInvalidUpdate)
	case u.GetFrameworkId().GetValue() == "":
		return streamKey{}, uuid.UUID{}, fmt.Errorf("%w: missing 'framework_id'", ErrInvalidUpdate)
	case u.GetStatus() == nil:
		return streamKey{}, uuid.UUID{}, fmt.Errorf("%w: missing 'status'", ErrInvalidUpdate)
	case u.GetStatus().GetTaskId().GetValue() == "":
		return streamKey{}, uuid.UUID{}, fmt.Errorf("%w: missing 'status.task_id'", ErrInvalidUpdate)
	case u.GetStatus().State == nil:
		return streamKey{}, uuid.UUID{}, fmt.Errorf("%w: missing 'status.state'", ErrInvalidUpdate)
	}
	id, err := uuid.FromBytes(u.GetStatus().GetUuid())
	if err != nil {
		return streamKey{}, uuid.UUID{}, fmt.Errorf("%w: 'status.uuid' must be 16 bytes, got %d", ErrInvalidUpdate, len(u.GetStatus().GetUuid()))
	}
	return streamKey{u.GetFrameworkId().GetValue(), u.GetStatus().GetTaskId().GetValue()}, id, nil
}

// check reports whether u may be appended: (false, nil) for a duplicate.
func (s *stream) check(u *protocol.AgentCall_StatusUpdate, id uuid.UUID) (bool, error) {
	if s.received[id] || s.acknowledged[id] {
		return false, nil
	}
	if s.terminal {
		return false, fmt.Errorf("%w: %s is %s; refusing %s (uuid %s)", ErrTerminated, s.key,
			s.latest.GetState(), u.GetStatus().GetState(), id)
	}
	return true, nil
}

// apply appends u (already validated and checked); it reports whether u
// became the head.
func (s *stream) apply(u *protocol.AgentCall_StatusUpdate, id uuid.UUID) bool {
	s.received[id] = true
	s.latest = u.GetStatus()
	if mesos.IsTerminal(u.GetStatus().GetState()) {
		s.terminal = true
	}
	s.pending = append(s.pending, u)
	if len(s.pending) == 1 {
		s.next, s.interval = time.Time{}, RetryIntervalMin
		return true
	}
	return false
}

// checkAck verifies that id acknowledges the head.
func (s *stream) checkAck(id uuid.UUID) error {
	if s.acknowledged[id] {
		return fmt.Errorf("%w: %s, uuid %s", ErrDuplicateAck, s.key, id)
	}
	if len(s.pending) == 0 {
		return fmt.Errorf("%w: %s has no pending update, got uuid %s", ErrUnexpectedAck, s.key, id)
	}
	head := uuid.UUID(s.pending[0].GetStatus().GetUuid())
	if head != id {
		return fmt.Errorf("%w: %s expects uuid %s, got %s", ErrUnexpectedAck, s.key, head, id)
	}
	return nil
}

// applyAck pops the head (checkAck passed). It reports whether the acked
// update was terminal, which closes the stream.
func (s *stream) applyAck(id uuid.UUID) (terminal bool) {
	head := s.pending[0]
	s.pending[0] = nil
	s.pending = s.pending[1:]
	s.acknowledged[id] = true
	s.next, s.interval = time.Time{}, RetryIntervalMin
	return mesos.IsTerminal(head.GetStatus().GetState())
}

// due reports whether the head should be forwarded at now.
func (s *stream) due(now time.Time) bool {
	return len(s.pending) > 0 && !s.next.After(now)
}

// forwarded records that the head was sent at now: the next send waits for
// the current interval, and the interval doubles up to RetryIntervalMax.
func (s *stream) forwarded(now time.Time) {
	s.next = now.Add(s.interval)
	s.interval = min(2*s.interval, RetryIntervalMax)
}

// headMessage is what Forward receives: the head with latest_state set to
// the most recent state received. It is a shallow copy: the sub-messages are
// shared and must be treated as read-only.
func (s *stream) headMessage() *protocol.AgentCall_StatusUpdate {
	h := s.pending[0]
	latest := s.latest.GetState()
	return &protocol.AgentCall_StatusUpdate{
		FrameworkId: h.FrameworkId,
		Status:      h.Status,
		ExecutorId:  h.ExecutorId,
		LatestState: &latest,
	}
}
