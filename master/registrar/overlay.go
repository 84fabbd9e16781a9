package registrar

import (
	"bytes"

	"mezzo/api/maintenancepb"
	"mezzo/api/mesos"
)

// overlay is a view of base plus the operations accepted into the batch
// being formed; discarding it undoes them.
type overlay struct {
	base   *state
	agents map[string]AgentStatus
	// principals holds the bindings this batch changed ("": dropped).
	principals map[string]string
	sched      *maintenancepb.Schedule
	down       map[string]*mesos.MachineID
	touched    bool // sched/down replaced
}

func newOverlay(base *state) *overlay {
	return &overlay{base: base, agents: map[string]AgentStatus{}, principals: map[string]string{}}
}

func (v *overlay) status(id string) AgentStatus {
	if st, ok := v.agents[id]; ok {
		return st
	}
	return v.base.status(id)
}

func (v *overlay) principal(id string) string {
	if p, ok := v.principals[id]; ok {
		return p
	}
	return v.base.principal(id)
}

func (v *overlay) maintenance() (*maintenancepb.Schedule, map[string]*mesos.MachineID) {
	if v.touched {
		return v.sched, v.down
	}
	return v.base.maintenance()
}

// holds reports whether a Readmit of info would change nothing: the agent
// is admitted in the durable registry with exactly this info and bound to
// the same principal, and no operation of this batch touched it.
func (v *overlay) holds(o op, info []byte) bool {
	if o.kind != kReadmit || info == nil {
		return false
	}
	if _, touched := v.agents[o.id]; touched {
		return false
	}
	e, admitted := v.base.agents[o.id]
	return admitted && bytes.Equal(e.info, info) && e.principal == o.principal
}

// record layers an operation that passed check onto the overlay.
func (v *overlay) record(o op) {
	switch o.kind {
	case kAdmit, kReadmit, kMarkReachable:
		v.agents[o.id] = AgentAdmitted
		if o.principal != "" {
			v.principals[o.id] = o.principal
		}
	case kMarkUnreachable:
		v.agents[o.id] = AgentUnreachable
	case kRemove:
		v.agents[o.id] = AgentGone
		v.principals[o.id] = ""
	case kPrune:
		for _, id := range o.pb.GetPrune().GetUnreachable() {
			if v.status(id.GetValue()) == AgentUnreachable {
				v.agents[id.GetValue()] = AgentUnknown
				v.principals[id.GetValue()] = ""
			}
		}
		for _, id := range o.pb.GetPrune().GetGone() {
			if v.status(id.GetValue()) == AgentGone {
				v.agents[id.GetValue()] = AgentUnknown
			}
		}
	case kSchedule, kStartMaintenance, kStopMaintenance:
		sched, down := v.maintenance()
		if ns, nd, err := nextMaintenance(sched, down, o.pb); err == nil {
			v.sched, v.down, v.touched = ns, nd, true
		}
	}
}
