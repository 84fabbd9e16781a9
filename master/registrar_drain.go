package master

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/master/registrar"
)

// DrainRecorder records an agent's drain and deactivation (DRAIN_AGENT,
// DEACTIVATE_AGENT, REACTIVATE_AGENT and the move to DRAINED) in the
// registry, so that a new leader drains what the old one was draining.
// Called from the master's loop; done runs once, from any goroutine, when
// the write is durable or failed.
type DrainRecorder interface {
	// UpdateDrain replaces the drain entry of an admitted or unreachable
	// agent; the zero registrar.Drain removes it. ErrAgentGone for a
	// removed agent.
	UpdateDrain(agentID string, d registrar.Drain, done func(error))
}

// UpdateDrain implements DrainRecorder.
func (r *MemoryRegistrar) UpdateDrain(agentID string, d registrar.Drain, done func(error)) {
	if d.Info != nil {
		d.Info = proto.Clone(d.Info).(*mesos.DrainInfo)
	}
	r.apply(done, func() error {
		if r.gone[agentID] {
			return ErrAgentGone
		}
		_, admitted := r.admitted[agentID]
		_, unreachable := r.unreachable[agentID]
		if !admitted && !unreachable {
			return fmt.Errorf("registrar: update drain: agent %s is not in the registry", agentID)
		}
		if d.IsZero() {
			delete(r.drains, agentID)
		} else {
			r.drains[agentID] = d
		}
		return nil
	})
}

// Drain returns the agent's recorded drain entry (for tests).
func (r *MemoryRegistrar) Drain(agentID string) registrar.Drain {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.drains[agentID]
}

// UpdateDrain implements DrainRecorder.
func (a *ReplicatedRegistrar) UpdateDrain(agentID string, d registrar.Drain, done func(error)) {
	a.submit(registrar.UpdateDrain(agentID, d), done)
}

// UpdateDrain implements DrainRecorder.
func (w *failureWatch) UpdateDrain(agentID string, d registrar.Drain, done func(error)) {
	w.Registrar.UpdateDrain(agentID, d, w.wrap(done))
}
