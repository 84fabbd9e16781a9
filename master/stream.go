package master

import (
	"mezzo/api/protocol"
	"mezzo/api/schedulerpb"
)

// maxStreamBacklog bounds the events queued for one subscriber that is not
// reading. Past it the subscriber is disconnected: the loop never blocks on
// a slow peer and memory stays bounded.
const maxStreamBacklog = 1 << 16

// FrameworkStream is the outbound side of one scheduler subscription. The
// event loop queues events on it without blocking; the HTTP handler that
// holds the SUBSCRIBE request drains them (Ready, Drain) onto the wire and
// calls Close when the connection ends.
type FrameworkStream struct {
	id          string
	frameworkID string
	q           *queue[*schedulerpb.Event]
	closed      func(*FrameworkStream)
}

// ID is the Mesos-Stream-Id of this subscription.
func (s *FrameworkStream) ID() string { return s.id }

// FrameworkID is the subscribed framework's ID.
func (s *FrameworkStream) FrameworkID() string { return s.frameworkID }

// Ready has a token whenever events are pending or the stream has ended.
func (s *FrameworkStream) Ready() <-chan struct{} { return s.q.ready }

// Drain returns the pending events and whether the master ended the stream
// (after a failover to a new subscription, removal, or master shutdown).
// Events returned together with ended=true must still be written.
func (s *FrameworkStream) Drain() (events []*schedulerpb.Event, ended bool) {
	return s.q.drain()
}

// Close tells the master that the subscriber went away (the HTTP request
// ended). The framework becomes disconnected unless a newer subscription
// already replaced this one. Safe to call more than once.
func (s *FrameworkStream) Close() {
	if !s.q.isClosed() {
		s.q.close()
	}
	if s.closed != nil {
		s.closed(s)
	}
}

func (s *FrameworkStream) send(ev *schedulerpb.Event) bool { return s.q.push(ev) }

// AgentStream is the outbound side of one agent subscription on the agent
// protocol; the HTTP handler drains it like a FrameworkStream.
type AgentStream struct {
	agentID string
	q       *queue[*protocol.AgentEvent]
	closed  func(*AgentStream)
}

// AgentID is the agent's ID once assigned (empty until SUBSCRIBED is queued).
func (s *AgentStream) AgentID() string { return s.agentID }

// Ready has a token whenever events are pending or the stream has ended.
func (s *AgentStream) Ready() <-chan struct{} { return s.q.ready }

// Drain returns pending events and whether the master ended the stream.
func (s *AgentStream) Drain() (events []*protocol.AgentEvent, ended bool) { return s.q.drain() }

// Close tells the master that the agent's connection ended.
func (s *AgentStream) Close() {
	if !s.q.isClosed() {
		s.q.close()
	}
	if s.closed != nil {
		s.closed(s)
	}
}

func (s *AgentStream) send(ev *protocol.AgentEvent) bool { return s.q.push(ev) }
