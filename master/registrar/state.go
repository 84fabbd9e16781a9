package registrar

import (
	"fmt"
	"unique"

	"mezzo/api/maintenancepb"
	"mezzo/api/mesos"
	"mezzo/api/quotapb"
	pb "mezzo/api/registrypb"
)

// AgentStatus is where an agent ID stands in the registry.
type AgentStatus uint8

// Agent statuses.
const (
	AgentUnknown     AgentStatus = iota // not in the registry
	AgentAdmitted                       // admitted
	AgentUnreachable                    // marked unreachable
	AgentGone                           // removed for good
)

func (s AgentStatus) String() string {
	switch s {
	case AgentAdmitted:
		return "admitted"
	case AgentUnreachable:
		return "unreachable"
	case AgentGone:
		return "gone"
	}
	return "unknown"
}

// view is what validation reads: the registry, possibly with the
// not-yet-durable operations of the batch being formed layered on top.
type view interface {
	status(id string) AgentStatus
	// principal is the principal agent id is bound to ("": none).
	principal(id string) string
	// maintenance returns the schedule and the DOWN machines by machineKey.
	// Callers must not modify them.
	maintenance() (*maintenancepb.Schedule, map[string]*mesos.MachineID)
}

// check reports whether o (already shape-checked) applies to v. It is the
// single definition of validity: the registrar calls it before writing and
// the Machine again when applying, so every replica agrees.
func check(v view, o op) error {
	switch o.kind {
	case kAdmit:
		switch v.status(o.id) {
		case AgentAdmitted:
			return fmt.Errorf("admit agent %s: %w (admitted)", o.id, ErrAlreadyAdmitted)
		case AgentUnreachable:
			return fmt.Errorf("admit agent %s: %w (unreachable; it re-registers with MarkReachable)", o.id, ErrAlreadyAdmitted)
		case AgentGone:
			return fmt.Errorf("admit agent %s: %w", o.id, ErrGone)
		}
	case kReadmit:
		if v.status(o.id) == AgentGone {
			return fmt.Errorf("readmit agent %s: %w", o.id, ErrGone)
		}
		return checkPrincipal(v, o, "readmit agent %s")
	case kMarkReachable:
		if v.status(o.id) == AgentGone {
			return fmt.Errorf("mark agent %s reachable: %w", o.id, ErrGone)
		}
		return checkPrincipal(v, o, "mark agent %s reachable")
	case kMarkUnreachable:
		switch v.status(o.id) {
		case AgentUnknown:
			return fmt.Errorf("mark agent %s unreachable: %w", o.id, ErrUnknownAgent)
		case AgentUnreachable:
			return fmt.Errorf("mark agent %s unreachable: %w", o.id, ErrAlreadyUnreachable)
		case AgentGone:
			return fmt.Errorf("mark agent %s unreachable: %w", o.id, ErrGone)
		}
	case kRemove:
		if v.status(o.id) == AgentUnknown {
			return fmt.Errorf("remove agent %s: %w", o.id, ErrUnknownAgent)
		}
	case kSchedule, kStartMaintenance, kStopMaintenance:
		sched, down := v.maintenance()
		_, _, err := nextMaintenance(sched, down, o.pb)
		return err
	case kDrain:
		switch st := v.status(o.id); st {
		case AgentAdmitted, AgentUnreachable:
		case AgentGone:
			return fmt.Errorf("update drain of agent %s: %w", o.id, ErrGone)
		default:
			return fmt.Errorf("update drain of agent %s: %w", o.id, ErrUnknownAgent)
		}
	}
	return nil
}

// checkPrincipal refuses a re-registration of an agent bound to another
// principal than o's (what names the operation, with the agent ID's %s).
func checkPrincipal(v view, o op, what string) error {
	if bound := v.principal(o.id); bound != "" && bound != o.principal {
		return fmt.Errorf(what+" as principal '%s': %w ('%s')", o.id, o.principal, ErrPrincipal, bound)
	}
	return nil
}

// agentEntry is an admitted agent's record.
type agentEntry struct {
	info []byte // encoded AgentInfo
	// principal is the principal the agent is bound to: the one it
	// registered as; "" if it registered anonymously (or before the
	// registry recorded principals).
	principal string
}

// unreachableEntry is an unreachable agent's record.
type unreachableEntry struct {
	at        int64  // Unix nanoseconds
	info      []byte // encoded AgentInfo, nil if never known
	principal string // as agentEntry's
}

// state is the registry in memory. Agent infos are kept encoded (see
// wire.go). Stored messages and encodings are never modified after they
// are stored, so snapshots and Registry share them.
type state struct {
	master      *mesos.MasterInfo
	agents      map[string]agentEntry
	unreachable map[string]unreachableEntry
	gone        map[string]int64
	weights     map[string]float64
	quotas      map[string]*quotapb.QuotaConfig
	schedule    *maintenancepb.Schedule
	down        map[string]*mesos.MachineID
	// drains holds the admitted and unreachable agents' drain entries by
	// agent ID (state_drain.go).
	drains  map[string]*pb.AgentDrain
	version uint64
}

func newState() *state {
	return &state{
		agents:      map[string]agentEntry{},
		unreachable: map[string]unreachableEntry{},
		gone:        map[string]int64{},
		weights:     map[string]float64{},
		quotas:      map[string]*quotapb.QuotaConfig{},
		down:        map[string]*mesos.MachineID{},
		drains:      map[string]*pb.AgentDrain{},
	}
}

func (s *state) status(id string) AgentStatus {
	if _, ok := s.agents[id]; ok {
		return AgentAdmitted
	}
	if _, ok := s.unreachable[id]; ok {
		return AgentUnreachable
	}
	if _, ok := s.gone[id]; ok {
		return AgentGone
	}
	return AgentUnknown
}

func (s *state) principal(id string) string {
	if e, ok := s.agents[id]; ok {
		return e.principal
	}
	return s.unreachable[id].principal
}

// principalName interns a principal: a cluster's agents usually share one
// or a few principals, so that 50,000 bindings hold a few strings, not
// 50,000 copies.
func principalName(p string) string { return unique.Make(p).Value() }

func (s *state) maintenance() (*maintenancepb.Schedule, map[string]*mesos.MachineID) {
	return s.schedule, s.down
}

// apply validates o against s and, if it applies, mutates s. The messages
// in o and its raw agent info become part of s: they are decoded from a log
// entry and not shared.
func (s *state) apply(o op) error {
	if err := validateShape(o); err != nil {
		return err
	}
	if err := check(s, o); err != nil {
		return err
	}
	switch o.kind {
	case kSetMaster:
		s.master = o.pb.GetSetMaster().GetInfo()
	case kAdmit, kReadmit, kMarkReachable:
		// check refused another principal: the agent is unbound or bound
		// to o.principal (so unbound if o.principal is "").
		p := ""
		if o.principal != "" {
			p = principalName(o.principal)
		}
		delete(s.unreachable, o.id)
		s.agents[o.id] = agentEntry{info: o.raw, principal: p}
	case kMarkUnreachable:
		e := s.agents[o.id]
		s.unreachable[o.id] = unreachableEntry{at: o.at, info: e.info, principal: e.principal}
		delete(s.agents, o.id)
	case kRemove:
		if s.status(o.id) == AgentGone {
			return nil // already gone: keep the first removal time
		}
		delete(s.agents, o.id)
		delete(s.unreachable, o.id)
		delete(s.drains, o.id)
		s.gone[o.id] = o.at
	case kPrune:
		for _, id := range o.pb.GetPrune().GetUnreachable() {
			if s.status(id.GetValue()) == AgentUnreachable {
				delete(s.drains, id.GetValue())
			}
			delete(s.unreachable, id.GetValue())
		}
		for _, id := range o.pb.GetPrune().GetGone() {
			delete(s.gone, id.GetValue())
		}
	case kWeights:
		for _, w := range o.pb.GetUpdateWeights().GetWeights() {
			if w.GetWeight() == 1 {
				delete(s.weights, w.GetRole())
			} else {
				s.weights[w.GetRole()] = w.GetWeight()
			}
		}
	case kQuota:
		for _, c := range o.pb.GetUpdateQuota().GetConfigs() {
			if len(c.GetGuarantees()) == 0 && len(c.GetLimits()) == 0 {
				delete(s.quotas, c.GetRole())
			} else {
				s.quotas[c.GetRole()] = c
			}
		}
	case kSchedule, kStartMaintenance, kStopMaintenance:
		sched, down, err := nextMaintenance(s.schedule, s.down, o.pb)
		if err != nil {
			return err
		}
		s.schedule, s.down = sched, down
	case kDrain:
		s.applyDrain(o.pb.GetUpdateDrain().GetDrain())
	}
	return nil
}

// clone returns a copy of s whose maps are its own (the stored messages are
// shared, being immutable). Used for snapshots.
func (s *state) clone() *state {
	c := &state{
		master:      s.master,
		agents:      make(map[string]agentEntry, len(s.agents)),
		unreachable: make(map[string]unreachableEntry, len(s.unreachable)),
		gone:        make(map[string]int64, len(s.gone)),
		weights:     make(map[string]float64, len(s.weights)),
		quotas:      make(map[string]*quotapb.QuotaConfig, len(s.quotas)),
		schedule:    s.schedule,
		down:        s.down, // replaced, never modified, by apply
		drains:      make(map[string]*pb.AgentDrain, len(s.drains)),
		version:     s.version,
	}
	for k, v := range s.drains {
		c.drains[k] = v
	}
	for k, v := range s.agents {
		c.agents[k] = v
	}
	for k, v := range s.unreachable {
		c.unreachable[k] = v
	}
	for k, v := range s.gone {
		c.gone[k] = v
	}
	for k, v := range s.weights {
		c.weights[k] = v
	}
	for k, v := range s.quotas {
		c.quotas[k] = v
	}
	return c
}
