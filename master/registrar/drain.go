package registrar

import (
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	pb "mezzo/api/registrypb"
)

// Drain is an agent's operator state as the registry keeps it: whether it
// is deactivated (DEACTIVATE_AGENT or DRAIN_AGENT: no offers) and, for a
// drained agent, its DrainInfo (DRAINING, then DRAINED). The zero Drain is
// an active agent: it has no entry.
type Drain struct {
	Deactivated bool
	// Info is DRAIN_AGENT's state and config; nil if the agent was only
	// deactivated. Shared: do not modify it.
	Info *mesos.DrainInfo
}

// IsZero reports whether d is an active agent's (no entry).
func (d Drain) IsZero() bool { return !d.Deactivated && d.Info == nil }

// UpdateDrain replaces the drain entry of an admitted or unreachable agent
// (ErrUnknownAgent, ErrGone otherwise); the zero Drain removes it. A
// draining agent must be deactivated and its info must name a state
// (DRAINING or DRAINED) and a non-negative max_grace_period if any
// (ErrInvalid naming the field). Removing the agent (Remove, or pruning it
// while unreachable) drops its entry.
func UpdateDrain(id string, d Drain) Operation {
	e := &pb.AgentDrain{Id: agentID(id)}
	if d.Deactivated {
		e.Deactivated = proto.Bool(true)
	}
	if d.Info != nil {
		e.DrainInfo = proto.Clone(d.Info).(*mesos.DrainInfo)
	}
	return newOp(&pb.Operation{Op: &pb.Operation_UpdateDrain_{UpdateDrain: &pb.Operation_UpdateDrain{Drain: e}}})
}

// Drains returns the agents' drain entries by agent ID (admitted and
// unreachable agents only).
func (r *Registry) Drains() map[string]Drain {
	out := make(map[string]Drain, len(r.s.drains))
	for id, e := range r.s.drains {
		out[id] = Drain{Deactivated: e.GetDeactivated(), Info: e.GetDrainInfo()}
	}
	return out
}

// checkDrainShape validates an UpdateDrain entry without the registry.
func checkDrainShape(e *pb.AgentDrain) error {
	switch {
	case e == nil:
		return invalid("update_drain.drain is missing")
	case e.GetId().GetValue() == "":
		return invalid("update_drain.drain.id is missing")
	}
	info := e.GetDrainInfo()
	if info == nil {
		return nil
	}
	switch {
	case !e.GetDeactivated():
		return invalid("update_drain.drain.deactivated must be set for a draining agent (agent %s)", e.GetId().GetValue())
	case info.State == nil || info.GetState() == mesos.DrainState_UNKNOWN:
		return invalid("update_drain.drain.drain_info.state must be DRAINING or DRAINED (agent %s)", e.GetId().GetValue())
	case info.GetConfig() == nil:
		return invalid("update_drain.drain.drain_info.config is missing (agent %s)", e.GetId().GetValue())
	case info.GetConfig().GetMaxGracePeriod().GetNanoseconds() < 0:
		return invalid("update_drain.drain.drain_info.config.max_grace_period %v is negative (agent %s)",
			time.Duration(info.GetConfig().GetMaxGracePeriod().GetNanoseconds()), e.GetId().GetValue())
	}
	return nil
}

// applyDrain stores (or, for the zero entry, removes) a checked entry.
func (s *state) applyDrain(e *pb.AgentDrain) {
	id := e.GetId().GetValue()
	if !e.GetDeactivated() && e.GetDrainInfo() == nil {
		delete(s.drains, id)
		return
	}
	s.drains[id] = e
}
