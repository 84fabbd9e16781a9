package master

import (
	"fmt"
	"net/http"
	"time"

	"mezzo/api/mesos"
	"mezzo/master/allocator"
)

// Leadership, as the state sees it (the goroutine that follows the
// Election is in leader.go).
//
// A master that leads holds the soft state (frameworks, agents, offers,
// tasks) and the replicated part it loaded from the registry when it was
// elected. When it loses leadership, Master replaces the whole state with
// a fresh, non-leading one (successor): everything soft is dropped, every
// stream closed, and events posted by the old state's pending work
// (registrar completions, stream closes) are discarded, because they
// belong to a leadership that ended. Only the ID counters carry over, so
// a master elected again never reissues an ID.

// elect makes a non-leading state lead with epoch and the recovered
// registry: unreachable and gone agents, the agents' principal bindings,
// weights and quota are loaded;
// admitted agents are expected to re-register within
// AgentReregisterTimeout, after which they are marked unreachable.
func (s *state) elect(rec *RecoveredRegistry, epoch uint64, now time.Time) {
	s.leading = true
	s.epoch = epoch
	s.leader = s.info
	s.electedTime = now
	s.dirty = true
	if rec == nil {
		rec = &RecoveredRegistry{}
	}
	for _, id := range rec.Agents {
		s.recovered[id] = true
	}
	for id, at := range rec.Unreachable {
		s.unreachable[id] = &unreachableAgent{at: at}
	}
	for id := range rec.Gone {
		s.gone[id] = true
	}
	for id, p := range rec.Principals {
		s.agentPrincipals[id] = p
	}
	s.loadDrains(rec.Drains)
	if len(s.recovered) > 0 {
		s.reregisterDeadline = now.Add(s.cfg.AgentReregisterTimeout)
	}

	// The registry's weights win over --weights (as Mesos: the flag only
	// seeds a registry that has none).
	r := s.rolesState()
	if len(rec.Weights) > 0 {
		for role := range r.weights {
			if _, ok := rec.Weights[role]; !ok {
				r.weights[role] = 1
			}
		}
		for role, w := range rec.Weights {
			r.weights[role] = w
		}
	}
	if len(r.weights) > 0 {
		ws := make(map[string]float64, len(r.weights))
		for role, w := range r.weights {
			ws[role] = w
		}
		s.alloc.UpdateWeights(ws)
	}
	for role, w := range r.weights {
		if w == 1 {
			delete(r.weights, role)
		}
	}
	for _, c := range rec.Quotas {
		if emptyQuota(c) {
			continue
		}
		r.quotas[c.GetRole()] = c
		s.alloc.UpdateQuota(c.GetRole(), quotaOf(c))
	}
	s.recoverMaintenance(rec)
	s.pauseAllocation(len(r.quotas) > 0, now)
	s.count("master/elections")
	s.log.Info("elected leading master", "epoch", epoch, "expected_agents", len(s.recovered),
		"unreachable_agents", len(s.unreachable), "gone_agents", len(s.gone))
}

// allocPause is a pause of allocation after an election (allocator
// recovery).
type allocPause struct {
	agents int       // resume once this many agents are registered
	until  time.Time // or at this time
}

// pauseAllocation pauses the allocator while the agents recovered from
// the registry re-register: offers made from a partial view of the
// cluster would mislead quota (Mesos's reason, and why it pauses only
// with quota) and frameworks, and making, declining and recovering them
// for every returning agent took a fifth of a new leader's CPU during a
// large cluster's re-registration storm.
func (s *state) pauseAllocation(quota bool, now time.Time) {
	hold := s.cfg.AllocatorRecoveryTimeout
	if !quota {
		if s.cfg.AllocatorRecoveryHold < 0 {
			return
		}
		hold = min(hold, s.cfg.AllocatorRecoveryHold)
	}
	agents := int(float64(len(s.recovered)) * s.cfg.AllocatorAgentRecoveryFactor)
	if agents == 0 {
		return
	}
	s.allocPause = &allocPause{agents: agents, until: now.Add(hold)}
	s.alloc.Pause()
	s.log.Info("allocation paused until agents re-register", "agents", agents, "timeout", hold)
}

// maybeResumeAllocation ends the pause once enough agents are back or
// its time is up.
func (s *state) maybeResumeAllocation(now time.Time) {
	p := s.allocPause
	if p == nil {
		return
	}
	switch {
	case len(s.agents) >= p.agents:
		s.log.Info("allocation resumed: agents re-registered", "agents", len(s.agents))
	case !now.Before(p.until):
		s.log.Warn("allocation resumed: too few agents re-registered in time", "agents", len(s.agents), "expected", p.agents)
	default:
		return
	}
	s.allocPause = nil
	s.alloc.Resume()
}

// depose ends this state's leadership: every subscriber stream and
// operator watcher is closed (schedulers and agents reconnect and are
// redirected to the new leader), callers waiting on registrar writes are
// answered, and the allocator forgets every agent, framework, weight and
// quota this state gave it, so it makes no more offers. The state must
// not be used afterwards; Master installs s.successor.
func (s *state) depose(now time.Time) {
	for st := range s.admitting {
		st.q.close()
	}
	s.admitting = map[*AgentStream]bool{}
	s.shutdownStreams()
	for _, id := range sortedKeys(s.frameworks) {
		s.alloc.RemoveFramework(id)
	}
	for _, id := range s.agentIDs() {
		s.alloc.RemoveAgent(id)
	}
	if s.roles != nil {
		if len(s.roles.weights) > 0 {
			reset := make(map[string]float64, len(s.roles.weights))
			for role := range s.roles.weights {
				reset[role] = 1
			}
			s.alloc.UpdateWeights(reset)
		}
		for role := range s.roles.quotas {
			s.alloc.UpdateQuota(role, allocator.Quota{})
		}
	}
	if s.allocPause != nil {
		s.allocPause = nil
		s.alloc.Resume()
	}
	for _, f := range s.onDepose {
		f()
	}
	s.onDepose = nil
	if s.leading {
		s.log.Warn("lost leadership; dropping frameworks, agents and offers", "epoch", s.epoch)
	}
	s.leading = false
}

// successor is the fresh, non-leading state that replaces a deposed one:
// the same configuration, allocator and counters, no soft state. The
// caller sets its post function (Master.postFor).
func (s *state) successor(leader *mesos.MasterInfo, now time.Time) *state {
	n := newState(s.cfg, s.alloc, nil, s.startTime)
	n.leading = false
	n.leader = leader
	n.epoch = s.epoch
	n.nextFramework, n.nextAgent, n.nextOffer = s.nextFramework, s.nextAgent, s.nextOffer
	for k, v := range s.counters {
		n.counters[k] = v
	}
	// Replies to callers of this batch still go out after the next publish.
	n.after = s.after
	s.after = nil
	return n
}

// setLeader records the leading master as this follower knows it.
func (s *state) setLeader(info *mesos.MasterInfo) {
	if s.leading {
		return
	}
	s.leader = info
	s.dirty = true
}

// expectedAgentsTimedOut marks the agents recovered from the registry that
// did not re-register within AgentReregisterTimeout unreachable, through
// the registrar (subject to the removal rate limit), as Mesos's
// recoveredSlavesTimeout does.
func (s *state) expectedAgentsTimedOut(now time.Time) {
	s.reregisterDeadline = time.Time{}
	ids := sortedKeys(s.recovered)
	if len(ids) == 0 {
		return
	}
	s.log.Warn("agents did not re-register after the master failover; marking them unreachable",
		"agents", len(ids), "timeout", s.cfg.AgentReregisterTimeout)
	for _, id := range ids {
		s.queueRemoval(id, func(now time.Time) { s.markExpectedUnreachable(id, now) })
	}
}

// markExpectedUnreachable marks a recovered agent that never re-registered
// unreachable once the registrar write is durable.
func (s *state) markExpectedUnreachable(id string, now time.Time) {
	if !s.recovered[id] {
		return // it re-registered meanwhile
	}
	at := now
	s.reg.MarkUnreachable(id, at, func(err error) {
		s.post(func(s *state, now time.Time) {
			if !s.recovered[id] {
				return
			}
			if err != nil {
				s.log.Error("registrar failed to mark an expected agent unreachable", "agent", id, "err", err)
				return
			}
			delete(s.recovered, id)
			s.unreachable[id] = &unreachableAgent{at: at}
			s.dirty = true
			s.count("master/recovery_slave_removals")
			s.count("master/slave_unreachable_completed")
		})
	})
}

// pendingRemoval is an agent removal waiting for the rate limit.
type pendingRemoval struct {
	agentID string
	run     func(now time.Time)
}

// queueRemoval runs an agent removal (marking it unreachable) now or, with
// --agent_removal_rate_limit, once the limit allows, in arrival order.
func (s *state) queueRemoval(agentID string, run func(now time.Time)) {
	s.removals = append(s.removals, pendingRemoval{agentID: agentID, run: run})
}

// runRemovals runs the queued removals the rate limit allows at now.
func (s *state) runRemovals(now time.Time) {
	for len(s.removals) > 0 {
		if s.cfg.AgentRemovalInterval > 0 && now.Before(s.nextRemoval) {
			return
		}
		r := s.removals[0]
		s.removals = s.removals[1:]
		if s.cfg.AgentRemovalInterval > 0 {
			s.nextRemoval = now.Add(s.cfg.AgentRemovalInterval)
		}
		r.run(now)
	}
}

// removalDeadline is when the next queued removal may run (zero if none).
func (s *state) removalDeadline() time.Time {
	if len(s.removals) == 0 {
		return time.Time{}
	}
	if s.nextRemoval.IsZero() {
		return time.Unix(0, 1)
	}
	return s.nextRemoval
}

// markAgentGone handles the operator's MARK_AGENT_GONE: a registered
// agent is removed (its tasks TASK_GONE_BY_OPERATOR, its stream told to
// shut down), an unreachable one moves to the gone list; either way it may
// never come back under its ID. finish gets the outcome once durable.
func (s *state) markAgentGone(id string, finish func(error)) {
	switch {
	case s.gone[id]:
		finish(nil)
	case s.agents[id] != nil:
		a := s.agents[id]
		if a.leaving {
			finish(&APIError{Status: http.StatusConflict, Message: fmt.Sprintf("Agent %s is already being removed", id)})
			return
		}
		a.leaving = true
		s.rescindAgentOffers(a)
		s.alloc.DeactivateAgent(a.id)
		s.reg.Remove(id, func(err error) {
			s.post(func(s *state, now time.Time) {
				if s.agents[id] != a {
					finish(nil)
					return
				}
				if err != nil {
					a.leaving = false
					finish(registrarFailed(err))
					return
				}
				if a.stream != nil {
					st := a.stream
					a.stream = nil
					s.endStream(st, s.shutdownEvent(fmt.Sprintf("Agent %s was marked gone by the operator; it must register anew with a new agent ID", id)))
				}
				s.dropAgent(a, func(fw *framework) mesos.TaskState {
					if fw.partitionAware() {
						return mesos.TaskState_TASK_GONE_BY_OPERATOR
					}
					return mesos.TaskState_TASK_LOST
				},
					fmt.Sprintf("Agent %s (%s) was marked gone by the operator", id, a.info.GetHostname()), now, now)
				s.markGone(id)
				s.dirty = true
				finish(nil)
			})
		})
	case s.unreachable[id] != nil || s.recovered[id]:
		s.reg.Remove(id, func(err error) {
			s.post(func(s *state, now time.Time) {
				if err != nil {
					finish(registrarFailed(err))
					return
				}
				delete(s.unreachable, id)
				delete(s.recovered, id)
				for _, fw := range s.frameworks {
					for _, tid := range sortedKeys(fw.unreachableTasks) {
						if p := fw.unreachableTasks[tid]; p.GetAgentId().GetValue() == id {
							delete(fw.unreachableTasks, tid)
							fw.completedTasks = append(fw.completedTasks, p)
							s.trimCompleted(fw)
						}
					}
				}
				s.markGone(id)
				s.dirty = true
				finish(nil)
			})
		})
	default:
		finish(&APIError{Status: http.StatusNotFound, Message: fmt.Sprintf("Agent %s not found", id)})
	}
}

// shutdownStreams closes every subscriber stream and operator watcher.
func (s *state) shutdownStreams() {
	for _, fw := range s.frameworks {
		if fw.stream != nil {
			fw.stream.q.close()
			fw.stream = nil
		}
	}
	for _, a := range s.agents {
		if a.stream != nil {
			a.stream.q.close()
			a.stream = nil
		}
	}
	ws := make([]*watcher, 0, len(s.watchers))
	for w := range s.watchers {
		ws = append(ws, w)
	}
	for _, w := range ws {
		s.dropWatcher(w)
	}
}
