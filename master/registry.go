package master

import (
	"context"
	"errors"
	"fmt"
	"time"

	"mezzo/api/mesos"
	"mezzo/api/quotapb"
	"mezzo/internal/clock"
	"mezzo/master/registrar"
)

// ReplicatedRegistrar is the master's Registrar over the registry of
// package master/registrar (and so, as cmd/ wires it, over the Raft
// replicated log): every operation is submitted to the batching
// registrar and completes once the batch holding it is durable on a
// quorum. It also implements Recoverer for a newly elected master.
//
// Errors: registrar.ErrGone becomes ErrAgentGone; a failed write or a
// registrar that is not recovered becomes ErrRegistryUnavailable (the
// master steps down and recovers); other refusals (an operation that does
// not apply to the registry) are returned as they are.
type ReplicatedRegistrar struct {
	r     *registrar.Registrar
	clock clock.Clock
}

var (
	_ Registrar = (*ReplicatedRegistrar)(nil)
	_ Recoverer = (*ReplicatedRegistrar)(nil)
)

// NewReplicatedRegistrar adapts r. clk timestamps removals (nil: real time).
func NewReplicatedRegistrar(r *registrar.Registrar, clk clock.Clock) *ReplicatedRegistrar {
	if clk == nil {
		clk = clock.Real
	}
	return &ReplicatedRegistrar{r: r, clock: clk}
}

// Registrar returns the underlying registrar (stats, registry view).
func (a *ReplicatedRegistrar) Registrar() *registrar.Registrar { return a.r }

func (a *ReplicatedRegistrar) submit(op registrar.Operation, done func(error)) {
	a.r.Submit(op, func(err error) { done(mapRegistrarError(err)) })
}

// mapRegistrarError turns the registrar's errors into the master's.
func mapRegistrarError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, registrar.ErrGone):
		return ErrAgentGone
	case errors.Is(err, registrar.ErrEmptyRegistry):
		return fmt.Errorf("%w: %v", ErrEmptyRegistry, err)
	case errors.Is(err, registrar.ErrAlreadyAdmitted), errors.Is(err, registrar.ErrUnknownAgent), errors.Is(err, registrar.ErrPrincipal),
		errors.Is(err, registrar.ErrAlreadyUnreachable), errors.Is(err, registrar.ErrInvalid),
		errors.Is(err, registrar.ErrMaintenance):
		return err
	}
	return fmt.Errorf("%w: %v", ErrRegistryUnavailable, err)
}

// Admit implements Registrar.
func (a *ReplicatedRegistrar) Admit(info *mesos.AgentInfo, principal string, done func(error)) {
	a.submit(registrar.Admit(info, principal), done)
}

// Readmit implements Registrar.
func (a *ReplicatedRegistrar) Readmit(info *mesos.AgentInfo, principal string, done func(error)) {
	a.submit(registrar.Readmit(info, principal), done)
}

// MarkUnreachable implements Registrar.
func (a *ReplicatedRegistrar) MarkUnreachable(agentID string, at time.Time, done func(error)) {
	a.submit(registrar.MarkUnreachable(agentID, at), done)
}

// MarkReachable implements Registrar.
func (a *ReplicatedRegistrar) MarkReachable(info *mesos.AgentInfo, principal string, done func(error)) {
	a.submit(registrar.MarkReachable(info, principal), done)
}

// Remove implements Registrar.
func (a *ReplicatedRegistrar) Remove(agentID string, done func(error)) {
	a.submit(registrar.Remove(agentID, a.clock.Now()), done)
}

// UpdateWeights implements Registrar.
func (a *ReplicatedRegistrar) UpdateWeights(weights []*mesos.WeightInfo, done func(error)) {
	a.submit(registrar.UpdateWeights(weights), done)
}

// UpdateQuota implements Registrar.
func (a *ReplicatedRegistrar) UpdateQuota(configs []*quotapb.QuotaConfig, done func(error)) {
	a.submit(registrar.UpdateQuota(configs), done)
}

// Recover implements Recoverer: registrar.Recover (a barrier, the strict
// check, info committed as the leading master), then the registry's
// content. Agent infos stay encoded in the registry; only IDs (and the
// principals they are bound to) are read.
func (a *ReplicatedRegistrar) Recover(ctx context.Context, info *mesos.MasterInfo) (*RecoveredRegistry, error) {
	reg, err := a.r.Recover(ctx, info)
	if err != nil {
		return nil, mapRegistrarError(err)
	}
	out := &RecoveredRegistry{
		Agents:      reg.AgentIDs(),
		Unreachable: map[string]time.Time{},
		Gone:        map[string]time.Time{},
		Weights:     reg.Weights(),
		Quotas:      reg.Quotas(),
	}
	for _, u := range reg.Unreachable() {
		out.Unreachable[u.ID] = u.At
	}
	for _, g := range reg.Gone() {
		out.Gone[g.ID] = g.At
	}
	out.Schedule = cloneSchedule(reg.Schedule())
	out.Down = reg.DownMachines()
	out.Drains = reg.Drains()
	out.Principals = reg.Principals()
	return out, nil
}
