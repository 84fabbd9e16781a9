package master

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/quotapb"
	"mezzo/master/registrar"
)

// ErrAgentGone is returned by Registrar.Readmit and MarkReachable for an
// agent that was removed: it may never come back under the same ID
// (registrar-design: a removed agent may not re-register).
var ErrAgentGone = errors.New("agent was removed from the registry")

// Registrar records agent admission, unreachability and removal durably
// before the master acts on them. The master calls every method from its
// event loop; each returns at once and calls done exactly once, from any
// goroutine, when the write is durable (or failed). The master applies the
// change only inside done, so a crash between the call and the completion
// leaves the registry and the master's actions consistent.
//
// A later issue backs this with the Raft-replicated registry
// (master/registrar); MemoryRegistrar is the in-process implementation.
//
// Admit, Readmit and MarkReachable take the principal the agent
// authenticated as ("" if anonymous) and bind the agent ID to it in the
// registry, so that every later leader refuses the ID to another
// principal (api_agent.go). Readmit and MarkReachable of an ID bound to
// another principal fail with registrar.ErrPrincipal; an unbound ID (an
// anonymous registration, or an entry from before the registry recorded
// principals) binds to the principal of its next registration.
type Registrar interface {
	// Admit records a newly registered agent (info.id set by the master)
	// bound to principal.
	Admit(info *mesos.AgentInfo, principal string, done func(error))
	// Readmit records an agent re-registering with an ID this master did
	// not know (after a master failover). ErrAgentGone if it was removed.
	Readmit(info *mesos.AgentInfo, principal string, done func(error))
	// MarkUnreachable moves an admitted agent to the unreachable list; it
	// stays bound to its principal.
	MarkUnreachable(agentID string, at time.Time, done func(error))
	// MarkReachable moves an unreachable agent back to the admitted list
	// when it re-registers. ErrAgentGone if it was removed meanwhile.
	MarkReachable(info *mesos.AgentInfo, principal string, done func(error))
	// Remove marks the agent gone: it is never readmitted, so its binding
	// goes.
	Remove(agentID string, done func(error))
	// UpdateWeights records the listed roles' weights (other roles keep
	// theirs). The master validated them; the registrar may still refuse.
	UpdateWeights(weights []*mesos.WeightInfo, done func(error))
	// UpdateQuota records each config's role's quota; a config with
	// neither guarantees nor limits removes the role's quota.
	UpdateQuota(configs []*quotapb.QuotaConfig, done func(error))
	// Maintenance schedule and DOWN machines (registrar_maintenance.go).
	MaintenanceRegistrar
	// DrainRecorder records agents' drain and deactivation (registrar_drain.go).
	DrainRecorder
}

// MemoryRegistrar is a Registrar that keeps the registry in memory. Its
// writes complete on a separate goroutine, like a real store's would, so the
// master never sees a completion before the call returns.
type MemoryRegistrar struct {
	mu          sync.Mutex
	admitted    map[string]*mesos.AgentInfo
	unreachable map[string]time.Time
	gone        map[string]bool
	weights     map[string]float64
	quotas      map[string]*quotapb.QuotaConfig
	master      *mesos.MasterInfo
	maint       memoryMaintenance
	drains      map[string]registrar.Drain
	principals  map[string]string
}

var (
	_ Registrar = (*MemoryRegistrar)(nil)
	_ Recoverer = (*MemoryRegistrar)(nil)
)

// NewMemoryRegistrar returns an empty in-memory registry.
func NewMemoryRegistrar() *MemoryRegistrar {
	return &MemoryRegistrar{
		admitted:    map[string]*mesos.AgentInfo{},
		unreachable: map[string]time.Time{},
		gone:        map[string]bool{},
		weights:     map[string]float64{},
		quotas:      map[string]*quotapb.QuotaConfig{},
		drains:      map[string]registrar.Drain{},
		principals:  map[string]string{},
	}
}

func (r *MemoryRegistrar) apply(done func(error), op func() error) {
	r.mu.Lock()
	err := op()
	r.mu.Unlock()
	go done(err)
}

// Admit implements Registrar.
func (r *MemoryRegistrar) Admit(info *mesos.AgentInfo, principal string, done func(error)) {
	id := info.GetId().GetValue()
	info = proto.Clone(info).(*mesos.AgentInfo)
	r.apply(done, func() error {
		if id == "" {
			return errors.New("registrar: admit needs an agent id")
		}
		if r.gone[id] {
			return ErrAgentGone
		}
		if _, dup := r.admitted[id]; dup {
			return fmt.Errorf("registrar: agent %s already admitted", id)
		}
		r.admit(info, principal)
		return nil
	})
}

// admit records info bound to principal (if any).
func (r *MemoryRegistrar) admit(info *mesos.AgentInfo, principal string) {
	id := info.GetId().GetValue()
	delete(r.unreachable, id)
	r.admitted[id] = info
	if principal != "" {
		r.principals[id] = principal
	}
}

// Readmit implements Registrar.
func (r *MemoryRegistrar) Readmit(info *mesos.AgentInfo, principal string, done func(error)) {
	id := info.GetId().GetValue()
	info = proto.Clone(info).(*mesos.AgentInfo)
	r.apply(done, func() error {
		if r.gone[id] {
			return ErrAgentGone
		}
		if bound := r.principals[id]; bound != "" && bound != principal {
			return fmt.Errorf("registrar: readmit agent %s as principal '%s': %w ('%s')", id, principal, registrar.ErrPrincipal, bound)
		}
		r.admit(info, principal)
		return nil
	})
}

// MarkUnreachable implements Registrar.
func (r *MemoryRegistrar) MarkUnreachable(agentID string, at time.Time, done func(error)) {
	r.apply(done, func() error {
		if r.gone[agentID] {
			return ErrAgentGone
		}
		delete(r.admitted, agentID)
		r.unreachable[agentID] = at
		return nil
	})
}

// MarkReachable implements Registrar. In memory it is a readmission: the
// agent leaves the unreachable set and is admitted again.
func (r *MemoryRegistrar) MarkReachable(info *mesos.AgentInfo, principal string, done func(error)) {
	r.Readmit(info, principal, done)
}

// Remove implements Registrar.
func (r *MemoryRegistrar) Remove(agentID string, done func(error)) {
	r.apply(done, func() error {
		delete(r.admitted, agentID)
		delete(r.unreachable, agentID)
		delete(r.drains, agentID)
		delete(r.principals, agentID)
		r.gone[agentID] = true
		return nil
	})
}

// Gone reports whether the agent was removed (for tests and diagnostics).
func (r *MemoryRegistrar) Gone(agentID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gone[agentID]
}

// Unreachable reports when the agent was marked unreachable, if it is.
func (r *MemoryRegistrar) Unreachable(agentID string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.unreachable[agentID]
	return t, ok
}

// UpdateWeights implements Registrar.
func (r *MemoryRegistrar) UpdateWeights(weights []*mesos.WeightInfo, done func(error)) {
	ws := make([]*mesos.WeightInfo, len(weights))
	for i, w := range weights {
		ws[i] = proto.Clone(w).(*mesos.WeightInfo)
	}
	r.apply(done, func() error {
		for i, w := range ws {
			if w.GetRole() == "" || !(w.GetWeight() > 0) {
				return fmt.Errorf("registrar: weights[%d]: role %q weight %v: a role and a positive weight are required", i, w.GetRole(), w.GetWeight())
			}
		}
		for _, w := range ws {
			r.weights[w.GetRole()] = w.GetWeight()
		}
		return nil
	})
}

// UpdateQuota implements Registrar.
func (r *MemoryRegistrar) UpdateQuota(configs []*quotapb.QuotaConfig, done func(error)) {
	cs := make([]*quotapb.QuotaConfig, len(configs))
	for i, c := range configs {
		cs[i] = proto.Clone(c).(*quotapb.QuotaConfig)
	}
	r.apply(done, func() error {
		for i, c := range cs {
			if c.GetRole() == "" {
				return fmt.Errorf("registrar: quota configs[%d]: role is required", i)
			}
		}
		for _, c := range cs {
			if len(c.GetGuarantees()) == 0 && len(c.GetLimits()) == 0 {
				delete(r.quotas, c.GetRole())
			} else {
				r.quotas[c.GetRole()] = c
			}
		}
		return nil
	})
}

// Weights returns the recorded role weights (for recovery and tests).
func (r *MemoryRegistrar) Weights() map[string]float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]float64, len(r.weights))
	for k, v := range r.weights {
		out[k] = v
	}
	return out
}

// Quotas returns copies of the recorded quota configs by role.
func (r *MemoryRegistrar) Quotas() map[string]*quotapb.QuotaConfig {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]*quotapb.QuotaConfig, len(r.quotas))
	for k, v := range r.quotas {
		out[k] = proto.Clone(v).(*quotapb.QuotaConfig)
	}
	return out
}

// Recover implements Recoverer: it records info as the leading master and
// returns the registry's content. Masters sharing one MemoryRegistrar
// behave like masters sharing a replicated registry (in-process failover
// tests).
func (r *MemoryRegistrar) Recover(ctx context.Context, info *mesos.MasterInfo) (*RecoveredRegistry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.master = proto.Clone(info).(*mesos.MasterInfo)
	out := &RecoveredRegistry{
		Unreachable: make(map[string]time.Time, len(r.unreachable)),
		Gone:        make(map[string]time.Time, len(r.gone)),
		Weights:     make(map[string]float64, len(r.weights)),
	}
	for id := range r.admitted {
		out.Agents = append(out.Agents, id)
	}
	sort.Strings(out.Agents)
	for id, at := range r.unreachable {
		out.Unreachable[id] = at
	}
	for id := range r.gone {
		out.Gone[id] = time.Time{}
	}
	for role, w := range r.weights {
		out.Weights[role] = w
	}
	for _, role := range sortedKeys(r.quotas) {
		out.Quotas = append(out.Quotas, proto.Clone(r.quotas[role]).(*quotapb.QuotaConfig))
	}
	out.Schedule, out.Down = r.maint.recovered()
	out.Drains = make(map[string]registrar.Drain, len(r.drains))
	for id, d := range r.drains {
		out.Drains[id] = d
	}
	out.Principals = maps.Clone(r.principals)
	return out, nil
}

// Master is the leading master recorded by the last Recover (nil if none).
func (r *MemoryRegistrar) Master() *mesos.MasterInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.master
}

// Admitted reports whether the agent is admitted (for tests).
func (r *MemoryRegistrar) Admitted(agentID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.admitted[agentID]
	return ok
}
