package master

import (
	"fmt"
	"sort"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/resources"
)

// Revocation: the allocator asks the master to free resources held above
// a fair share so that a role below its quota guarantee can get them.

// revoke is the allocator's Revoke request on the loop: the framework
// holds r on the agent in a role above its fair share while a role below
// its guarantee waits. Its outstanding offers there (in that role) are
// rescinded first; then its tasks there are killed until their resources
// cover the rest of r: short tasks that outlived their declaration first
// (tech report §3.3.2, with long-task bounds on), then the most recently
// launched. Kills go to the
// agent as KILL_TASK with the task's kill policy (its grace period
// applies); the statuses flow back as usual and are reported with
// REASON_CONTAINER_PREEMPTED.
func (s *state) revoke(fwID, agentID string, r resources.Resources, now time.Time) {
	fw, a := s.frameworks[fwID], s.agents[agentID]
	if fw == nil || a == nil {
		return
	}
	role := allocationRole(r, "")
	need := r.Quantities()
	covered := func() bool {
		for _, x := range need {
			if x > 1e-9 {
				return false
			}
		}
		return true
	}
	take := func(x resources.Resources) {
		for name, q := range x.Quantities() {
			need[name] -= q
		}
	}
	for _, o := range sortedOffers(fw.offers) {
		if o.agentID == agentID && (role == "" || o.role == role) {
			take(o.res)
			s.rescindOffer(o, true)
		}
	}
	rs := s.rolesState()
	s.prunePreempting()
	var victims []*task
	for _, t := range a.tasks[fwID] {
		if t.recovered || mesos.IsTerminal(t.proto.GetState()) || rs.preempting[fwID][t.id()] != "" {
			continue
		}
		if role != "" && t.role(defaultRole(fw)) != role {
			continue
		}
		victims = append(victims, t)
	}
	sort.Slice(victims, func(i, j int) bool {
		if victims[i].overran != victims[j].overran {
			return victims[i].overran
		}
		ti, tj := launchTime(victims[i]), launchTime(victims[j])
		if ti != tj {
			return ti > tj
		}
		return victims[i].id() > victims[j].id()
	})
	for _, t := range victims {
		if covered() {
			break
		}
		take(t.res)
		if rs.preempting[fwID] == nil {
			rs.preempting[fwID] = map[string]string{}
		}
		rs.preempting[fwID][t.id()] = role
		ev := s.agentEvent(protocol.AgentEvent_KILL_TASK)
		ev.KillTask = &protocol.AgentEvent_KillTask{FrameworkId: frameworkID(fwID), TaskId: t.proto.GetTaskId(),
			KillPolicy: t.proto.GetKillPolicy()}
		s.sendAgent(a, ev)
		s.log.Info("revocation: killing task to satisfy a quota guarantee",
			"framework", fwID, "task", t.id(), "agent", agentID, "role", role)
	}
}

// launchTime orders tasks by their first status (STAGING), seconds.
func launchTime(t *task) float64 {
	if st := t.proto.GetStatuses(); len(st) > 0 {
		return st[0].GetTimestamp()
	}
	return 0
}

// prunePreempting forgets kills whose task the master no longer tracks.
func (s *state) prunePreempting() {
	rs := s.rolesState()
	for fwID, ts := range rs.preempting {
		fw := s.frameworks[fwID]
		for id := range ts {
			if fw == nil || fw.tasks[id] == nil {
				delete(ts, id)
			}
		}
		if len(ts) == 0 {
			delete(rs.preempting, fwID)
		}
	}
}

// notePreemption marks the KILLING/KILLED updates of tasks killed by
// revocation with Mesos's preemption reason before the update is applied:
// the agent protocol's KILL_TASK carries no reason, so the master, which
// knows why it killed the task, supplies it.
func (s *state) notePreemption(call *protocol.AgentCall) {
	if s.roles == nil || len(s.roles.preempting) == 0 || call.GetType() != protocol.AgentCall_STATUS_UPDATE {
		return
	}
	su := call.GetStatusUpdate()
	st := su.GetStatus()
	fwID, taskID := su.GetFrameworkId().GetValue(), st.GetTaskId().GetValue()
	role, ok := s.roles.preempting[fwID][taskID]
	if !ok {
		return
	}
	switch st.GetState() {
	case mesos.TaskState_TASK_KILLING, mesos.TaskState_TASK_KILLED:
		st.Reason = mesos.TaskStatus_REASON_CONTAINER_PREEMPTED.Enum()
		if st.GetMessage() == "" {
			st.Message = proto.String(fmt.Sprintf("Task preempted by the master to meet the quota guarantee of a role (revocation; victim role '%s')", role))
		}
	}
	if mesos.IsTerminal(st.GetState()) {
		delete(s.roles.preempting[fwID], taskID)
		if len(s.roles.preempting[fwID]) == 0 {
			delete(s.roles.preempting, fwID)
		}
	}
}

// agentCallNotingPreemption is agentCall for the loop: it first marks
// status updates of tasks killed by revocation.
func (s *state) agentCallNotingPreemption(call *protocol.AgentCall, now time.Time) error {
	s.notePreemption(call)
	return s.agentCall(call, now)
}
