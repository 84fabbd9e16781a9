package master

import (
	"context"
	"time"

	"mezzo/api/protocol"
)

// The agent protocol's entry points: what master/httpapi calls for the
// agents' SUBSCRIBE and their other calls. Each runs on the loop as a
// leader call.

// SubscribeAgent handles an agent-protocol SUBSCRIBE. The returned stream
// carries SUBSCRIBED once the registrar has admitted the agent, or
// SHUTDOWN / ERROR followed by the end of the stream.
func (m *Master) SubscribeAgent(ctx context.Context, p Principal, call *protocol.AgentCall) (*AgentStream, error) {
	return openStream(ctx, m, func(s *state, now time.Time) (*AgentStream, error) {
		return s.agentSubscribe(call.GetSubscribe(), now)
	})
}

// AgentCall applies a non-SUBSCRIBE agent-protocol call.
func (m *Master) AgentCall(ctx context.Context, p Principal, call *protocol.AgentCall) error {
	return m.leaderCall(ctx, func(s *state, now time.Time) error { return s.agentCallNotingPreemption(call, now) })
}
