package endpoints

import (
	"context"

	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/api/quotapb"
	"mezzo/internal/timerstat"
	"mezzo/master"
	"mezzo/master/allocator"
)

// Source is everything the endpoints may ask of the master: a
// consumer-side interface, the only way in. The master's HTTP wiring
// passes the *master.Master itself (master/httpapi checks at compile time
// that it satisfies Source); tests pass fakes.
//
// Reads (Snapshot, Explain, AllocatorMetrics) never block on the master's
// loop for long. Writes take the caller's master.Principal and return an
// error that carries its HTTP status (*master.APIError: HTTPStatus) when
// the master refuses the call; an error without one (a context that ended)
// is answered 503.
type Source interface {
	// Snapshot returns the latest published state; never nil once the
	// master runs.
	Snapshot() *master.Snapshot
	// Watch returns the snapshot at subscription and the operator events
	// after it; the channel closes when ctx ends or the master stops.
	Watch(ctx context.Context) (*master.Snapshot, <-chan *masterpb.Event, error)
	// Explain says why a framework is or is not offered resources; ok is
	// false if the allocator cannot explain (/master/allocator/explain
	// then answers 501).
	Explain(frameworkID string) (ex allocator.Explanation, ok bool)
	// AllocatorMetrics returns the allocator's metrics under Mesos's key
	// names (allocator/mesos/...), merged into /metrics/snapshot, /metrics
	// and GET_METRICS; nil if the allocator reports none.
	AllocatorMetrics() map[string]float64
	// AllocatorTimers returns the allocator's timers under their Mesos
	// names for the Prometheus summaries at /metrics; nil if none.
	AllocatorTimers() map[string]timerstat.Stats

	// Teardown removes a framework as the operator TEARDOWN call does.
	Teardown(ctx context.Context, p master.Principal, frameworkID string) error
	// KillTask kills one task of a framework (mezzo's POST
	// /master/kill-task; see master.Master.KillTask).
	KillTask(ctx context.Context, p master.Principal, frameworkID, taskID string) error
	// MarkAgentGone applies MARK_AGENT_GONE.
	MarkAgentGone(ctx context.Context, p master.Principal, agentID string) error
	// UpdateWeights applies UPDATE_WEIGHTS / PUT /master/weights.
	UpdateWeights(ctx context.Context, p master.Principal, infos []*mesos.WeightInfo) error
	// UpdateQuota applies UPDATE_QUOTA.
	UpdateQuota(ctx context.Context, p master.Principal, force bool, configs []*quotapb.QuotaConfig) error
	// SetQuota applies the deprecated SET_QUOTA / POST /master/quota.
	SetQuota(ctx context.Context, p master.Principal, req *quotapb.QuotaRequest) error
	// RemoveQuota applies the deprecated REMOVE_QUOTA / DELETE /master/quota/<role>.
	RemoveQuota(ctx context.Context, p master.Principal, role string) error
	// ApplyOperation applies an operator's RESERVE, UNRESERVE, CREATE,
	// DESTROY, GROW_VOLUME or SHRINK_VOLUME on an agent's unallocated
	// resources: nil, or 400 naming the problem, or 409 when the resources
	// are not available (see master.Master.ApplyOperation).
	ApplyOperation(ctx context.Context, p master.Principal, agentID string, op *mesos.Offer_Operation) error
	// Maintenance writes (source_maintenance.go).
	MaintenanceWriter
	// DrainSource drains, deactivates and reactivates agents (drain.go).
	DrainSource
}
