package master

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/master/registrar"
)

// Agent drain and deactivation (Mesos 1.9+: DRAIN_AGENT, DEACTIVATE_AGENT,
// REACTIVATE_AGENT).
//
//	           DEACTIVATE_AGENT               REACTIVATE_AGENT
//	active ──────────────────────► deactivated ─────────────────► active
//	   │                                 │
//	   │ DRAIN_AGENT                     │ DRAIN_AGENT
//	   ▼                                 ▼
//	DRAINING (deactivated; every task is sent KILL_TASK with a grace
//	   │      period of at most max_grace_period, again whenever the
//	   │      agent re-registers)
//	   │ every task terminal and its update acknowledged
//	   ▼
//	DRAINED ──mark_gone──► gone (as MARK_AGENT_GONE)
//	   │
//	   └── REACTIVATE_AGENT (from DRAINING too) ──► active
//
// Each change is written to the registry (registrar.UpdateDrain) before the
// master acts on it, so a new leader loads it (elect) and carries on: an
// agent that re-registers with it, after a failover or from unreachability,
// is deactivated again and its tasks killed. Writes for one agent are
// serialized: while one is in flight, later operator calls for the agent
// wait for it (queued), and the move to DRAINED is not attempted, so a
// REACTIVATE_AGENT can never be overtaken by a stale DRAINED.

// drainBook is the master's drain bookkeeping, created on first use.
type drainBook struct {
	// recs are the registry's drain entries by agent ID, for registered,
	// recovered and unreachable agents alike.
	recs map[string]registrar.Drain
	// pending marks agents with a drain write in flight; queued holds
	// the work waiting for it.
	pending map[string]bool
	queued  map[string][]func(s *state)
	// killed holds, by agent ID, the tasks ("framework/task") sent a
	// drain KILL_TASK on the agent's current connection.
	killed map[string]map[string]bool
}

func (s *state) drainState() *drainBook {
	if s.drains == nil {
		s.drains = &drainBook{
			recs:    map[string]registrar.Drain{},
			pending: map[string]bool{},
			queued:  map[string][]func(*state){},
			killed:  map[string]map[string]bool{},
		}
	}
	return s.drains
}

// drainOf is the agent's drain entry (zero if active).
func (s *state) drainOf(id string) registrar.Drain {
	if s.drains == nil {
		return registrar.Drain{}
	}
	return s.drains.recs[id]
}

// loadDrains installs the entries recovered from the registry (elect).
func (s *state) loadDrains(recs map[string]registrar.Drain) {
	for id, d := range recs {
		if !d.IsZero() {
			s.drainState().recs[id] = d
		}
	}
}

func draining(d registrar.Drain) bool {
	return d.Info != nil && d.Info.GetState() == mesos.DrainState_DRAINING
}

// drainable checks that an operator's drain call names an agent the master
// knows: registered (and not being removed), recovered from the registry
// and not yet re-registered, or unreachable.
func (s *state) drainable(id string) error {
	switch {
	case s.gone[id]:
		return &APIError{Status: http.StatusNotFound, Message: fmt.Sprintf("Agent %s was removed from the cluster", id)}
	case s.agents[id] != nil:
		if s.agents[id].leaving {
			return &APIError{Status: http.StatusConflict, Message: fmt.Sprintf("Agent %s is being removed", id)}
		}
		return nil
	case s.recovered[id], s.unreachable[id] != nil:
		return nil
	}
	return &APIError{Status: http.StatusNotFound, Message: fmt.Sprintf("Agent %s not found", id)}
}

// drainCall applies an operator's drain call: next computes the new entry
// from the current one (or refuses with an *APIError, changing nothing);
// the entry is written to the registry and then acted on. finish runs on
// the loop once the write is durable (nil) or failed.
func (s *state) drainCall(id string, next func(cur registrar.Drain) (registrar.Drain, error), finish func(error)) {
	b := s.drainState()
	if b.pending[id] {
		b.queued[id] = append(b.queued[id], func(s *state) { s.drainCall(id, next, finish) })
		return
	}
	if err := s.drainable(id); err != nil {
		finish(err)
		return
	}
	d, err := next(b.recs[id])
	if err != nil {
		finish(err)
		return
	}
	s.writeDrain(id, d, finish)
}

// writeDrain records d as the agent's entry, then applies it.
func (s *state) writeDrain(id string, d registrar.Drain, finish func(error)) {
	b := s.drainState()
	b.pending[id] = true
	s.reg.UpdateDrain(id, d, func(err error) {
		s.post(func(s *state, now time.Time) {
			b := s.drainState()
			delete(b.pending, id)
			switch {
			case errors.Is(err, ErrAgentGone):
				s.log.Warn("drain: agent was removed meanwhile", "agent", id)
				finish(&APIError{Status: http.StatusNotFound, Message: fmt.Sprintf("Agent %s was removed from the cluster", id)})
			case errors.Is(err, registrar.ErrUnknownAgent):
				// The registry no longer holds it (pruned while unreachable).
				s.log.Warn("drain: the registry does not know the agent", "agent", id, "err", err)
				finish(&APIError{Status: http.StatusNotFound, Message: fmt.Sprintf("Agent %s not found in the registry", id)})
			case err != nil:
				s.log.Error("drain: registrar write failed", "agent", id, "err", err)
				finish(registrarFailed(err))
			default:
				s.applyDrain(id, d, now)
				finish(nil)
			}
			s.checkDrained(id)
			s.runQueuedDrain(id)
		})
	})
}

// runQueuedDrain runs the calls that waited for the agent's write, until
// one of them starts another write.
func (s *state) runQueuedDrain(id string) {
	b := s.drainState()
	for len(b.queued[id]) > 0 && !b.pending[id] {
		fn := b.queued[id][0]
		b.queued[id] = b.queued[id][1:]
		if len(b.queued[id]) == 0 {
			delete(b.queued, id)
		}
		fn(s)
	}
}

// applyDrain makes a durable entry the agent's state.
func (s *state) applyDrain(id string, d registrar.Drain, now time.Time) {
	b := s.drainState()
	if prev := b.recs[id]; draining(d) && !proto.Equal(prev.Info, d.Info) {
		// A new drain (or a new config): its KILL_TASKs go out again
		// with the new grace period.
		delete(b.killed, id)
	}
	if d.IsZero() {
		delete(b.recs, id)
	} else {
		b.recs[id] = d
	}
	s.dirty = true
	if a := s.agents[id]; a != nil && !a.leaving {
		s.syncDrain(a)
	}
	s.log.Info("agent drain state changed", "agent", id, "deactivated", d.Deactivated,
		"drain_state", d.Info.GetState().String())
}

// syncDrain brings a registered agent in line with its entry: a
// deactivated agent's offers are rescinded and the allocator stops offering
// it; a reactivated one is offered again once connected; a draining one's
// tasks are killed.
func (s *state) syncDrain(a *agent) {
	d := s.drainOf(a.id)
	was := a.deactivated
	a.deactivated, a.drain = d.Deactivated, d.Info
	s.dirty = true
	switch {
	case a.deactivated && !was:
		s.rescindAgentOffers(a)
		s.alloc.DeactivateAgent(a.id)
	case !a.deactivated && was:
		delete(s.drainState().killed, a.id)
		if a.connected {
			s.alloc.ActivateAgent(a.id)
		}
	}
	if draining(d) {
		s.killForDrain(a)
	}
}

// drainAgentJoined runs when an agent registers or re-registers: a
// drained or deactivated agent (its entry survived a failover or its
// unreachability) stays out of the allocator, and a draining agent's tasks,
// reported anew, are killed again (the agent may have restarted and
// forgotten earlier kills). A draining agent without tasks is DRAINED.
func (s *state) drainAgentJoined(a *agent) {
	if s.drains == nil {
		return
	}
	delete(s.drains.killed, a.id)
	if s.drainOf(a.id).IsZero() && !a.deactivated {
		return
	}
	s.syncDrain(a)
	if a.deactivated {
		// The allocator may just have (re-)added the agent as active.
		s.alloc.DeactivateAgent(a.id)
	}
	s.checkDrained(a.id)
}

// drainTaskDone runs when a task leaves an agent's task list (its terminal
// update was acknowledged, or it needed none).
func (s *state) drainTaskDone(agentID string) {
	if s.drains != nil {
		s.checkDrained(agentID)
	}
}

// drainKillPolicy is the kill policy of a drain's KILL_TASK: the task's
// own grace period (its kill policy's, else the default), capped at
// max_grace_period when the drain has one.
func drainKillPolicy(t *task, cfg *mesos.DrainConfig) *mesos.KillPolicy {
	grace := mesos.KillGracePeriod(nil, &mesos.TaskInfo{KillPolicy: t.proto.GetKillPolicy()})
	if mg := cfg.GetMaxGracePeriod(); mg != nil {
		grace = min(grace, time.Duration(max(mg.GetNanoseconds(), 0)))
	}
	return &mesos.KillPolicy{GracePeriod: &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(grace))}}
}

// killForDrain sends KILL_TASK for every live task on a draining agent
// that was not yet sent one on this connection. The agent escalates to
// SIGKILL at the policy's grace period, so a task that ignores SIGTERM
// ends then.
func (s *state) killForDrain(a *agent) {
	cfg := s.drainOf(a.id).Info.GetConfig()
	b := s.drainState()
	for _, fwID := range sortedKeys(a.tasks) {
		for _, t := range sortedTasks(a.tasks[fwID]) {
			if mesos.IsTerminal(t.proto.GetState()) {
				continue
			}
			key := fwID + "/" + t.id()
			if b.killed[a.id][key] {
				continue
			}
			if b.killed[a.id] == nil {
				b.killed[a.id] = map[string]bool{}
			}
			b.killed[a.id][key] = true
			ev := s.agentEvent(protocol.AgentEvent_KILL_TASK)
			ev.KillTask = &protocol.AgentEvent_KillTask{FrameworkId: frameworkID(fwID), TaskId: t.proto.GetTaskId(),
				KillPolicy: drainKillPolicy(t, cfg)}
			s.sendAgent(a, ev)
			s.log.Info("drain: killing task", "agent", a.id, "framework", fwID, "task", t.id(),
				"grace", time.Duration(ev.KillTask.KillPolicy.GracePeriod.GetNanoseconds()))
		}
	}
}

// checkDrained moves a DRAINING agent to DRAINED once it is registered and
// has no task left: every task is terminal and its update acknowledged
// (the master keeps a task on its agent until then). With mark_gone the
// agent is then marked gone, as MARK_AGENT_GONE does.
func (s *state) checkDrained(id string) {
	d := s.drainOf(id)
	a := s.agents[id]
	if !draining(d) || a == nil || a.leaving || s.drainState().pending[id] || len(a.tasks) > 0 {
		return
	}
	info := proto.Clone(d.Info).(*mesos.DrainInfo)
	info.State = mesos.DrainState_DRAINED.Enum()
	s.writeDrain(id, registrar.Drain{Deactivated: true, Info: info}, func(err error) {
		if err != nil {
			return // logged by writeDrain; the next task change or re-registration retries
		}
		s.count("master/agents_drained")
		s.log.Info("agent drained", "agent", id)
		if info.GetConfig().GetMarkGone() {
			s.markAgentGone(id, func(err error) {
				if err != nil {
					s.log.Error("drain: marking the drained agent gone failed", "agent", id, "err", err)
					return
				}
				s.log.Info("drain: drained agent marked gone", "agent", id)
			})
		}
	})
}

// forgetDrain drops a removed agent's entry (the registry dropped it with
// the agent).
func (s *state) forgetDrain(id string) {
	if s.drains != nil {
		delete(s.drains.recs, id)
		delete(s.drains.killed, id)
	}
}

// drainAgent handles DRAIN_AGENT: the agent is deactivated and DRAINING
// with the given config (replacing any earlier drain's).
func (s *state) drainAgent(id string, cfg *mesos.DrainConfig, finish func(error)) {
	s.drainCall(id, func(registrar.Drain) (registrar.Drain, error) {
		return registrar.Drain{Deactivated: true, Info: &mesos.DrainInfo{
			State: mesos.DrainState_DRAINING.Enum(), Config: proto.Clone(cfg).(*mesos.DrainConfig)}}, nil
	}, finish)
}

// deactivateAgent handles DEACTIVATE_AGENT: no more offers from the
// agent; its tasks keep running. A drain in progress keeps going.
func (s *state) deactivateAgent(id string, finish func(error)) {
	s.drainCall(id, func(cur registrar.Drain) (registrar.Drain, error) {
		cur.Deactivated = true
		return cur, nil
	}, finish)
}

// reactivateAgent handles REACTIVATE_AGENT: the agent's drain (DRAINING or
// DRAINED) and deactivation end; it is offered again. 400 if the agent is
// not deactivated.
func (s *state) reactivateAgent(id string, finish func(error)) {
	s.drainCall(id, func(cur registrar.Drain) (registrar.Drain, error) {
		if !cur.Deactivated {
			return cur, badRequest("Agent %s is not deactivated", id)
		}
		return registrar.Drain{}, nil
	}, finish)
}
