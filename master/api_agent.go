package master

import (
	"context"
	"time"

	"mezzo/api/protocol"
	"mezzo/internal/authorizer"
)

// The agent protocol's entry points: what master/httpapi calls for the
// agents' SUBSCRIBE and their other calls. Each runs on the loop as a
// leader call.

// SubscribeAgent handles an agent-protocol SUBSCRIBE. The returned stream
// carries SUBSCRIBED once the registrar has admitted the agent, or
// SHUTDOWN / ERROR followed by the end of the stream.
//
// p must be authorized to register_agents, and an agent presenting an ID
// must be the principal that registered under it: 403 otherwise, before
// anything changes. The registry records that principal with the agent,
// so every later leader enforces it too.
func (m *Master) SubscribeAgent(ctx context.Context, p Principal, call *protocol.AgentCall) (*AgentStream, error) {
	return openStream(ctx, m, func(s *state, now time.Time) (*AgentStream, error) {
		if err := s.authorize(p, authorizer.RegisterAgent); err != nil {
			return nil, err
		}
		if err := s.checkAgentPrincipal(p, call.GetSubscribe().GetAgentInfo().GetId().GetValue()); err != nil {
			return nil, err
		}
		st, err := s.agentSubscribe(call.GetSubscribe(), p.Name, now)
		if err == nil && st.agentID != "" {
			s.agentPrincipals[st.agentID] = p.Name
		}
		return st, err
	})
}

// AgentCall applies a non-SUBSCRIBE agent-protocol call: 403 unless p is
// the principal the agent registered as.
func (m *Master) AgentCall(ctx context.Context, p Principal, call *protocol.AgentCall) error {
	return m.leaderCall(ctx, func(s *state, now time.Time) error {
		if err := s.checkAgentPrincipal(p, call.GetAgentId().GetValue()); err != nil {
			return err
		}
		return s.agentCallNotingPreemption(call, now)
	})
}

// checkAgentPrincipal refuses p acting for agent id when the agent
// registered as another principal. With per-agent credentials this keeps
// one agent from impersonating another (taking its tasks, forging its
// status updates); agents sharing a principal are not told apart.
func (s *state) checkAgentPrincipal(p Principal, id string) error {
	if id == "" {
		return nil
	}
	if bound, ok := s.agentPrincipals[id]; ok && bound != p.Name {
		s.count("master/authorization_denials")
		s.log.Warn("agent impersonation refused", "agent", id, "registered_principal", bound, "principal", p.Name)
		return forbidden("Agent %s registered as principal '%s'; principal '%s' may not act for it", id, bound, p.Name)
	}
	return nil
}
