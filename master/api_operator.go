package master

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/api/quotapb"
	"mezzo/api/schedulerpb"
	"mezzo/internal/authorizer"
	"mezzo/internal/timerstat"
	"mezzo/master/allocator"
)

// The operator API's entry points: what master/endpoints calls (through
// its consumer-side interface endpoints.Source) for the v1 operator API
// and the classic endpoints. Writes take the caller's Principal.

// MarkAgentGone handles the operator's MARK_AGENT_GONE: the agent is
// recorded as gone in the registry, then removed (tasks
// TASK_GONE_BY_OPERATOR, or TASK_LOST for frameworks that are not
// partition-aware; the agent is told to shut down). It may never
// re-register under its ID. 404 *APIError for an unknown agent.
func (m *Master) MarkAgentGone(ctx context.Context, p Principal, agentID string) error {
	return m.authorizedAsync(ctx, p, authorizer.MarkAgentGone, nil, func(s *state, now time.Time, finish func(error)) {
		s.markAgentGone(agentID, finish)
	})
}

// UpdateWeights handles UPDATE_WEIGHTS and PUT /master/weights: validated
// (400 *APIError naming the entry), recorded by the registrar, then applied
// and passed to the allocator.
func (m *Master) UpdateWeights(ctx context.Context, p Principal, infos []*mesos.WeightInfo) error {
	valid, err := ValidateWeightInfos(infos)
	if err != nil {
		return err
	}
	roles := make([]string, len(valid))
	for i, w := range valid {
		roles[i] = w.GetRole()
	}
	return m.authorizedAsync(ctx, p, authorizer.UpdateWeight, roleObjects(roles), func(s *state, now time.Time, finish func(error)) {
		s.updateWeights(valid, finish)
	})
}

// UpdateQuota handles UPDATE_QUOTA (all configs or none). Errors are
// *APIError 400 naming the config; force skips the capacity and
// consumption checks, as in Mesos.
func (m *Master) UpdateQuota(ctx context.Context, p Principal, force bool, configs []*quotapb.QuotaConfig) error {
	cs := make([]*quotapb.QuotaConfig, len(configs))
	roles := make([]string, len(configs))
	for i, c := range configs {
		if err := ValidateQuotaConfig(c, fmt.Sprintf("update_quota.quota_configs[%d]", i)); err != nil {
			return err
		}
		cs[i] = proto.Clone(c).(*quotapb.QuotaConfig)
		roles[i] = c.GetRole()
	}
	return m.authorizedAsync(ctx, p, authorizer.UpdateQuota, roleObjects(roles), func(s *state, now time.Time, finish func(error)) {
		s.updateQuota(cs, force, finish)
	})
}

// SetQuota handles the deprecated SET_QUOTA and POST /master/quota: 400
// for an invalid request or a role that already has quota, 409 when the
// guarantees would exceed the cluster (unless req.force).
func (m *Master) SetQuota(ctx context.Context, p Principal, req *quotapb.QuotaRequest) error {
	cfg, err := ValidateQuotaRequest(req)
	if err != nil {
		return err
	}
	force := req.GetForce()
	return m.authorizedAsync(ctx, p, authorizer.UpdateQuota, roleObjects([]string{cfg.GetRole()}), func(s *state, now time.Time, finish func(error)) {
		s.setQuota(cfg, force, finish)
	})
}

// RemoveQuota handles the deprecated REMOVE_QUOTA and
// DELETE /master/quota/<role>: 400 if the role has no quota.
func (m *Master) RemoveQuota(ctx context.Context, p Principal, role string) error {
	return m.authorizedAsync(ctx, p, authorizer.UpdateQuota, roleObjects([]string{role}), func(s *state, now time.Time, finish func(error)) {
		s.removeQuota(role, finish)
	})
}

// Explain asks the allocator why a framework is or is not offered
// resources; false if the allocator cannot explain (not an
// allocator.Introspector).
func (m *Master) Explain(frameworkID string) (allocator.Explanation, bool) {
	in, ok := m.alloc.(allocator.Introspector)
	if !ok {
		return allocator.Explanation{}, false
	}
	return in.Explain(frameworkID), true
}

// AllocatorMetrics returns the allocator's metrics under Mesos's key names
// (allocator/mesos/...), or nil if the allocator does not report any.
func (m *Master) AllocatorMetrics() map[string]float64 {
	if in, ok := m.alloc.(allocator.Introspector); ok {
		return in.Metrics()
	}
	return nil
}

// AllocatorTimers returns the allocator's timers (allocation runs) for the
// Prometheus summaries, or nil if the allocator reports none.
func (m *Master) AllocatorTimers() map[string]timerstat.Stats {
	if in, ok := m.alloc.(allocator.Introspector); ok {
		return in.Timers()
	}
	return nil
}

// Teardown removes a framework as the operator TEARDOWN call and
// /master/teardown do. Unknown IDs give an *APIError (400).
func (m *Master) Teardown(ctx context.Context, p Principal, frameworkID string) error {
	return m.leaderCall(ctx, func(s *state, now time.Time) error {
		fw := s.frameworks[frameworkID]
		if fw == nil {
			return badRequest("No framework found with specified ID")
		}
		if err := s.authorize(p, authorizer.TeardownFramework, authorizer.TeardownObject(fw.info)); err != nil {
			return err
		}
		s.removeFramework(fw, now)
		return nil
	})
}

// KillTask kills a task on the operator's behalf, as its framework's KILL
// call would: the agent gets KILL_TASK with the task's own kill policy and
// the framework sees the usual TASK_KILLING/TASK_KILLED updates. Mesos's
// operator API has no such call (mezzo's `POST /master/kill-task` is an
// extension). An unknown framework or task is a 404; a task that already
// ended, or whose agent is gone, a 409.
func (m *Master) KillTask(ctx context.Context, p Principal, frameworkID, taskID string) error {
	return m.leaderCall(ctx, func(s *state, now time.Time) error {
		fw := s.frameworks[frameworkID]
		if fw == nil {
			return &APIError{Status: http.StatusNotFound, Message: fmt.Sprintf("No framework %s is registered", frameworkID)}
		}
		// Mesos has no operator kill: whoever may tear the framework
		// down may kill one of its tasks.
		if err := s.authorize(p, authorizer.TeardownFramework, authorizer.TeardownObject(fw.info)); err != nil {
			return err
		}
		t := fw.tasks[taskID]
		if t == nil {
			if fw.unreachableTasks[taskID] != nil {
				return &APIError{Status: http.StatusConflict, Message: fmt.Sprintf("Task %s is on an unreachable agent", taskID)}
			}
			return &APIError{Status: http.StatusNotFound, Message: fmt.Sprintf("Framework %s has no live task %s", frameworkID, taskID)}
		}
		if mesos.IsTerminal(t.proto.GetState()) {
			return &APIError{Status: http.StatusConflict, Message: fmt.Sprintf("Task %s already ended (%s)", taskID, t.proto.GetState())}
		}
		if a := s.agents[t.agentID]; a == nil {
			return &APIError{Status: http.StatusConflict, Message: fmt.Sprintf("Task %s's agent %s is not registered", taskID, t.agentID)}
		}
		s.kill(fw, &schedulerpb.Call_Kill{TaskId: t.proto.GetTaskId(), AgentId: t.proto.GetAgentId()}, now)
		return nil
	})
}

// Watch subscribes to operator events: it returns the snapshot at the time
// of subscription and a channel of every later TASK_ADDED, TASK_UPDATED,
// AGENT_ADDED, AGENT_REMOVED and FRAMEWORK_* event. The channel is closed
// when ctx ends, the master stops, or the subscriber falls too far behind.
func (m *Master) Watch(ctx context.Context) (*Snapshot, <-chan *masterpb.Event, error) {
	w := newWatcher()
	var snap *Snapshot
	err := m.leaderCall(ctx, func(s *state, now time.Time) error {
		// The snapshot at this instant, before any later event of this
		// batch reaches the watcher: the subscriber sees every change
		// exactly once, either in the snapshot or as an event.
		snap = s.snapshot(now)
		s.watchers[w] = struct{}{}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	go func() {
		select {
		case <-ctx.Done():
			m.post(func(s *state, now time.Time) { s.dropWatcher(w) })
		case <-w.gone():
		}
	}()
	return snap, w.ch, nil
}

// ApplyOperation applies an operator's operation on an agent's resources:
// RESERVE (RESERVE_RESOURCES, /master/reserve), UNRESERVE
// (UNRESERVE_RESOURCES, /master/unreserve), CREATE (CREATE_VOLUMES,
// /master/create-volumes), DESTROY (DESTROY_VOLUMES,
// /master/destroy-volumes), GROW_VOLUME and SHRINK_VOLUME. op is an
// Offer.Operation of that type without an id; its resources may be in
// either reservation format and must not carry allocation info.
//
// As in Mesos the operation applies to the agent's unallocated resources:
// if it needs resources that are offered out, the agent's outstanding
// offers are rescinded and the operation is tried again against what is
// then free (the rescinded offers' resources stay with the allocator even
// if the operation then fails); resources used by tasks are never taken.
// On success (nil)
// the agent's total holds the result (GET_AGENTS, /master/state and the
// snapshot show it once ApplyOperation returns), the allocator offers it
// from its next run, and the agent is sent its new set of checkpointed
// resources. Errors are *APIError and change nothing:
//
//   - 400 (Bad Request) for invalid input, naming the field: an unknown
//     or missing agent ID, an operation type an operator cannot apply,
//     malformed resources, a reservation whose principal is not p's (when
//     p has a Name), a volume on unreserved disk, a persistence ID already
//     in use for the role on the agent, a volume to destroy or resize that
//     does not exist or that a task uses;
//   - 409 (Conflict) when the resources are not available (not on the
//     agent, or in use by tasks), or the agent is being removed;
//   - 307/503 from a master that does not lead, as every write.
//
// The HTTP layer answers 202 Accepted on success, as Mesos does for both
// the classic endpoints and the v1 operator calls.
func (m *Master) ApplyOperation(ctx context.Context, p Principal, agentID string, op *mesos.Offer_Operation) error {
	return m.leaderCall(ctx, func(s *state, now time.Time) error {
		return s.operatorOperation(p, agentID, op, now)
	})
}
