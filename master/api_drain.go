package master

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/internal/authorizer"
)

// The operator's drain calls (state_drain.go has the lifecycle). Each
// answers once the registry holds the change and the master acted on it:
// GET_AGENTS and /master/slaves show it when the call returns.

// DrainAgent handles DRAIN_AGENT: the agent is deactivated (its offers
// rescinded, no more offers) and DRAINING; every task on it is killed with
// a grace period of at most maxGrace (nil: the task's own); once every
// task is terminal and its update acknowledged it is DRAINED and, with
// markGone, marked gone. An unreachable agent, or one not yet
// re-registered after a failover, drains when it comes back. Draining a
// drained or draining agent again replaces the config. Errors (*APIError,
// nothing changed): 400 for a negative maxGrace, 404 for an agent the
// master does not know or that was removed, 409 for one being removed.
func (m *Master) DrainAgent(ctx context.Context, p Principal, agentID string, maxGrace *time.Duration, markGone bool) error {
	if agentID == "" {
		return badRequest("Expecting 'drain_agent.agent_id' to be present")
	}
	cfg := &mesos.DrainConfig{MarkGone: proto.Bool(markGone)}
	if maxGrace != nil {
		if *maxGrace < 0 {
			return badRequest("'drain_agent.max_grace_period' must be non-negative, got %v", *maxGrace)
		}
		cfg.MaxGracePeriod = &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(*maxGrace))}
	}
	return m.authorizedAsync(ctx, p, authorizer.DrainAgent, nil, func(s *state, now time.Time, finish func(error)) { s.drainAgent(agentID, cfg, finish) })
}

// DeactivateAgent handles DEACTIVATE_AGENT: no more offers from the agent
// (outstanding ones are rescinded); its tasks keep running. Deactivating a
// deactivated agent succeeds. Errors as DrainAgent's.
func (m *Master) DeactivateAgent(ctx context.Context, p Principal, agentID string) error {
	if agentID == "" {
		return badRequest("Expecting 'deactivate_agent.agent_id' to be present")
	}
	return m.authorizedAsync(ctx, p, authorizer.DeactivateAgent, nil, func(s *state, now time.Time, finish func(error)) { s.deactivateAgent(agentID, finish) })
}

// ReactivateAgent handles REACTIVATE_AGENT: a deactivated, draining or
// drained agent is offered again and its drain info cleared. 400 if the
// agent is not deactivated; otherwise errors as DrainAgent's.
func (m *Master) ReactivateAgent(ctx context.Context, p Principal, agentID string) error {
	if agentID == "" {
		return badRequest("Expecting 'reactivate_agent.agent_id' to be present")
	}
	return m.authorizedAsync(ctx, p, authorizer.ReactivateAgent, nil, func(s *state, now time.Time, finish func(error)) { s.reactivateAgent(agentID, finish) })
}
