package statusupdate

import (
	"fmt"
	"os"
	"sync"
	"time"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/internal/clock"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
)

// Options configures a Manager.
type Options struct {
	// Forward sends the head update of a stream to the master; called from
	// the manager's goroutine; must not block long. A false return means
	// "not sent": the head is offered again after NotSentRetryInterval,
	// without counting as a retry. The message is shared with the manager
	// and must not be modified.
	Forward func(u *protocol.AgentCall_StatusUpdate) bool
	// Clock drives retries; nil means clock.Real.
	Clock clock.Clock
	// MetaDir is where checkpointed streams live; the manager owns this
	// directory's contents (layout <MetaDir>/<framework>/<task>/task.updates).
	// "" disables checkpointing.
	MetaDir string
}

// Manager holds the status update streams of one agent. Its methods are
// safe for concurrent use; Forward is only ever called from the goroutine
// started by Start.
type Manager struct {
	opts  Options
	clock clock.Clock

	mu      sync.Mutex
	streams map[streamKey]*stream
	paused  bool

	kick     chan struct{} // wakes the loop; buffered, never blocks
	stop     chan struct{}
	done     chan struct{}
	started  bool
	stopOnce sync.Once
}

// New returns a Manager; call Recover (if checkpointing) and then Start.
func New(opts Options) *Manager {
	c := opts.Clock
	if c == nil {
		c = clock.Real
	}
	return &Manager{
		opts:    opts,
		clock:   c,
		streams: map[streamKey]*stream{},
		kick:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
}

// Start launches the goroutine that forwards stream heads and retries them.
// It may be called once.
func (m *Manager) Start() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started {
		return
	}
	m.started = true
	go m.run()
}

// Stop ends the forwarding goroutine and waits for it. Streams and their
// checkpoints are kept; Update and Acknowledge keep working (nothing is
// forwarded any more).
func (m *Manager) Stop() {
	m.stopOnce.Do(func() { close(m.stop) })
	m.mu.Lock()
	started := m.started
	m.mu.Unlock()
	if started {
		<-m.done
	}
}

// Update appends u (u.Status.Uuid must be a 16-byte UUID) to its task's
// stream; if it becomes the head it is forwarded now. A duplicate (uuid
// already received or acknowledged) is ignored and returns nil. checkpoint
// applies when the stream is created (the framework's checkpoint flag) and
// needs Options.MetaDir; a checkpointed update is durable on disk before
// Update returns. Update does not retain u: it stores a copy.
func (m *Manager) Update(u *protocol.AgentCall_StatusUpdate, checkpoint bool) error {
	key, id, err := validate(u)
	if err != nil {
		return err
	}
	u = proto.Clone(u).(*protocol.AgentCall_StatusUpdate)

	m.mu.Lock()
	defer m.mu.Unlock()
	s, existed := m.streams[key]
	if !existed {
		s = newStream(key)
		if checkpoint && m.opts.MetaDir != "" {
			s.checkpoint = true
			s.path = m.streamPath(key)
		}
	}
	ok, err := s.check(u, id)
	if !ok || err != nil {
		return err
	}
	if s.checkpoint {
		rec, err := encodeUpdate(u)
		if err != nil {
			return err
		}
		if err := appendRecord(s.path, rec); err != nil {
			return fmt.Errorf("status update %s for %s: %w", id, key, err)
		}
	}
	if !existed {
		m.streams[key] = s
	}
	if s.apply(u, id) {
		m.wakeLocked()
	}
	return nil
}

// Acknowledge matches the head of the task's stream; it returns
// terminal=true when the acked update was terminal (stream closed). An
// acknowledgement that is not for the head returns an error (ErrUnexpectedAck,
// ErrDuplicateAck or ErrUnknownStream) and changes nothing.
func (m *Manager) Acknowledge(frameworkID, taskID string, uuidBytes []byte) (terminal bool, err error) {
	key := streamKey{frameworkID, taskID}
	id, err := uuid.FromBytes(uuidBytes)
	if err != nil {
		return false, fmt.Errorf("acknowledgement for %s: 'uuid' must be 16 bytes, got %d", key, len(uuidBytes))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.streams[key]
	if s == nil {
		return false, fmt.Errorf("%w: %s (acknowledgement uuid %s)", ErrUnknownStream, key, id)
	}
	if err := s.checkAck(id); err != nil {
		return false, err
	}
	if s.checkpoint {
		if err := appendRecord(s.path, encodeAck(id)); err != nil {
			return false, fmt.Errorf("acknowledgement %s for %s: %w", id, key, err)
		}
	}
	terminal = s.applyAck(id)
	if terminal {
		m.closeStreamLocked(s)
		return true, nil
	}
	if len(s.pending) > 0 {
		m.wakeLocked()
	}
	return false, nil
}

// closeStreamLocked forgets a stream whose terminal update was acknowledged
// and removes its checkpoint. Removal is best effort: a leftover file ends
// with the terminal acknowledgement, and Recover removes it.
func (m *Manager) closeStreamLocked(s *stream) {
	delete(m.streams, s.key)
	if s.checkpoint {
		_ = os.RemoveAll(dirOf(s.path))
	}
}

// Pause stops forwarding (the agent is disconnected from the master).
func (m *Manager) Pause() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.paused = true
}

// Resume restarts forwarding after (re)connecting: every stream's head is
// forwarded now, with its backoff reset.
func (m *Manager) Resume() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.paused = false
	for _, s := range m.streams {
		s.next, s.interval = time.Time{}, RetryIntervalMin
	}
	m.wakeLocked()
}

// RetryFramework forwards the heads of the framework's streams now, with
// their backoff reset (Mesos's agent does so when the master tells it the
// framework re-subscribed: the updates it retried into the void while the
// framework was away reach it at once). It does not undo Pause.
func (m *Manager) RetryFramework(frameworkID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	woke := false
	for k, s := range m.streams {
		if k.framework == frameworkID && len(s.pending) > 0 {
			s.next, s.interval = time.Time{}, RetryIntervalMin
			woke = true
		}
	}
	if woke {
		m.wakeLocked()
	}
}

// Pending returns copies of the task's unacknowledged updates, oldest first
// (nil if there is no stream).
func (m *Manager) Pending(frameworkID, taskID string) []*protocol.AgentCall_StatusUpdate {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.streams[streamKey{frameworkID, taskID}]
	if s == nil {
		return nil
	}
	out := make([]*protocol.AgentCall_StatusUpdate, len(s.pending))
	for i, u := range s.pending {
		out[i] = proto.Clone(u).(*protocol.AgentCall_StatusUpdate)
	}
	return out
}

// Latest returns a copy of the latest status received for the task while
// its stream is open (false once the terminal update was acknowledged, or
// if no update was ever received).
func (m *Manager) Latest(frameworkID, taskID string) (*mesos.TaskStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.streams[streamKey{frameworkID, taskID}]
	if s == nil || s.latest == nil {
		return nil, false
	}
	return proto.Clone(s.latest).(*mesos.TaskStatus), true
}

// Unacknowledged returns the head (oldest unacknowledged) status of every
// open stream, e.g. for re-registration with the master.
func (m *Manager) Unacknowledged() []*protocol.AgentCall_StatusUpdate {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*protocol.AgentCall_StatusUpdate
	for _, s := range m.streams {
		for _, u := range s.pending {
			out = append(out, proto.Clone(u).(*protocol.AgentCall_StatusUpdate))
		}
	}
	return out
}

// CleanupFramework forgets every stream of the framework and deletes its
// checkpoints (the framework is gone from this agent).
func (m *Manager) CleanupFramework(frameworkID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.streams {
		if k.framework == frameworkID {
			delete(m.streams, k)
		}
	}
	if m.opts.MetaDir != "" {
		_ = os.RemoveAll(m.frameworkDir(frameworkID))
	}
}

// wakeLocked nudges the loop to forward due heads now.
func (m *Manager) wakeLocked() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}
