package agent

import (
	"errors"
	"time"

	"mezzo/agent/oversub"
	"mezzo/api/mesos"
	"mezzo/resources"
)

// Lending idle reservations, the agent's side (the
// oversubscription-for-reservation design, "Option 1: Agent calculates how
// many resources to evict, chooses which executor to evict and then does
// eviction"). The master may lend reserved-but-unallocated resources as
// revocable resources without throttle_info (resources.Lent); when a
// regular launch arrives and tenants on lent resources hold what it needs,
// the agent evicts tenants itself, by oversub.PlanEviction:
//
//   - total is the agent's regular resources; occupied what regular
//     containers and the launch hold; occupiedRev what live tenants hold;
//     evicting what containers already ending still hold (all as the master
//     accounts them: the command executor's own small allowance is left
//     out, as the master leaves it out);
//   - the fewest, newest tenants are evicted, until total >= occupied +
//     occupiedRev holds; regular containers are never chosen, nor are
//     containers of estimator slack (throttle-able: the QoS controller's
//     business);
//   - the launch starts at once if total >= occupied + occupiedRev +
//     evicting, else it waits (deferred) until enough evicting containers
//     have ended, or at most lendingWaitLimit;
//   - counting what is evicting as returning keeps the agent from evicting
//     twice for the same resources when launches, evictions and ends race
//     (the design's cases 1 and 2).
//
// An evicted tenant's tasks end as a QoS correction's do (TASK_LOST or
// TASK_GONE, REASON_CONTAINER_PREEMPTED) with a message saying the
// reservation's owner reclaimed it.
//
// Nothing of this runs while no container holds lent resources: an agent
// that was never lent anything launches exactly as before.

// lendingWaitLimit bounds how long a deferred launch waits for evicted
// containers to end; past it the launch starts anyway (a container that
// does not die must not hold the owner's task back for ever).
const lendingWaitLimit = 10 * time.Second

// reclaimMessage is the message of an evicted tenant's tasks.
const reclaimMessage = "Container preempted: the owner of the lent reservation it ran on reclaimed it"

// deferredLaunch is a regular launch waiting for evicted tenants to end.
type deferredLaunch struct {
	fw    *framework
	info  *mesos.ExecutorInfo
	kind  executorKind
	item  launchItem
	timer *loopTimer
}

// lendingHolds reports whether a launch must wait for tenants of lent
// reservations to be evicted; it evicts the tenants the launch needs gone.
// False means launch now.
func (a *Agent) lendingHolds(fw *framework, info *mesos.ExecutorInfo, kind executorKind, item launchItem) bool {
	if fw.shuttingDown {
		return false // launch refuses it
	}
	for _, id := range item.taskIDs() {
		if fw.executorFor(id) != nil || a.deferredTask(fw.id, id) != nil {
			return false // a duplicate: launch drops it
		}
	}
	e := fw.executors[info.GetExecutorId().GetValue()]
	if e != nil && (e.phase == phaseTerminating || e.phase == phaseTerminated) {
		return false // launch refuses it
	}
	need, ok := launchResources(info, kind, e == nil, item)
	if !ok || !need.Revocable().IsEmpty() {
		return false // a revocable launch evicts nobody
	}
	if !a.lentHeld() {
		return false
	}
	if !a.planLentEviction(need) {
		return false // fits now (launches already waiting counted as occupied)
	}
	d := &deferredLaunch{fw: fw, info: info, kind: kind, item: item}
	d.timer = a.after(lendingWaitLimit, func() {
		a.log.Warn("evicted tenants did not end in time; launching anyway", "framework", fw.id,
			"tasks", item.taskIDs(), "waited", lendingWaitLimit)
		a.startDeferred(d)
	})
	a.deferred = append(a.deferred, d)
	return true
}

// planLentEviction runs PlanEviction for a launch needing need, evicts the
// tenants it names and reports whether the launch must wait.
func (a *core) planLentEviction(need resources.Resources) bool {
	holders := a.evictionHolders()
	for _, d := range a.deferred {
		// Launches already waiting count as occupied: their resources are
		// promised.
		r, _ := launchResources(d.info, d.kind, d.fw.executors[d.info.GetExecutorId().GetValue()] == nil, d.item)
		holders = append(holders, oversub.Holder{ContainerID: "deferred:" + d.item.taskIDs()[0], Resources: r.NonRevocable()})
	}
	plan, err := oversub.PlanEviction(oversub.EvictionRequest{Total: a.total.NonRevocable(), Holders: holders, Launch: need})
	if errors.Is(err, oversub.ErrLaunchDoesNotFit) {
		// The master thought it fits; evicting cannot make it. Launch as
		// the agent always has, and say so.
		a.log.Warn("a regular launch does not fit the agent even with every tenant evicted; launching without evictions",
			"needs", need.String(), "total", a.total.NonRevocable().String())
		return false
	}
	if err != nil {
		a.log.Error("planning evictions of lent reservations' tenants", "err", err)
		return false
	}
	for _, h := range plan.Evict {
		e := a.executorByContainer(h.ContainerID)
		if e == nil || e.phase == phaseTerminating || e.phase == phaseTerminated || !e.holdsLent() {
			continue // PlanEviction only names live tenants; checked again
		}
		a.log.Warn("evicting a tenant of a lent reservation", "framework", e.fw.id, "executor", e.id, "container", e.containerID)
		a.ovs.lentEvicted++
		a.preempt(e, reclaimMessage)
	}
	return !plan.StartNow
}

// lentHeld reports whether any container holds lent resources (live or
// ending). It runs on every launch, so it reads the protos rather than
// building Resources.
func (a *core) lentHeld() bool {
	for e := range a.liveExecutors() {
		if e.holdsLent() {
			return true
		}
	}
	return false
}

// holdsLent reports whether the executor or a live task holds a revocable
// resource without throttle_info (a lent reservation).
func (e *executor) holdsLent() bool {
	for _, r := range e.allocation() {
		if r.Revocable != nil && r.Revocable.ThrottleInfo == nil {
			return true
		}
	}
	return false
}

// evictionHolders is every container as PlanEviction sees it.
func (a *core) evictionHolders() []oversub.Holder {
	var out []oversub.Holder
	for e := range a.liveExecutors() {
		all := e.accounted()
		h := oversub.Holder{ContainerID: e.containerID, FrameworkID: e.fw.id, ExecutorID: e.id, Started: e.started}
		switch {
		case e.phase == phaseTerminating:
			h.Evicting = true
			h.Resources = all.NonRevocable().Add(all.Lent())
		case !all.Lent().IsEmpty():
			h.Tenant = true
			h.Resources = all.NonRevocable().Add(all.Lent())
		default:
			// Regular, or estimator slack whose regular part counts
			// (its slack is not part of the total).
			h.Resources = all.NonRevocable()
		}
		out = append(out, h)
	}
	return out
}

// accounted is what the master accounts to the executor and its live
// tasks: the command executor's own allowance is the agent's overcommit,
// left out as the master leaves it out.
func (e *executor) accounted() resources.Resources {
	var rs []*mesos.Resource
	if e.kind != kindCommand {
		rs = append(rs, e.info.GetResources()...)
	}
	for _, t := range e.liveTasks() {
		rs = append(rs, t.t.GetResources()...)
	}
	r, err := resources.FromProto(rs)
	if err != nil {
		return resources.Resources{}
	}
	return r.WithoutAllocationInfo()
}

// launchResources is what a launch needs as the master accounts it: its
// tasks, and a new executor's resources (but a command executor's).
func launchResources(info *mesos.ExecutorInfo, kind executorKind, newExecutor bool, item launchItem) (resources.Resources, bool) {
	var rs []*mesos.Resource
	if newExecutor && kind != kindCommand {
		rs = append(rs, info.GetResources()...)
	}
	tasks := []*mesos.TaskInfo{item.task}
	if item.group != nil {
		tasks = item.group.GetTasks()
	}
	for _, t := range tasks {
		rs = append(rs, t.GetResources()...)
	}
	r, err := resources.FromProto(rs)
	if err != nil {
		return resources.Resources{}, false
	}
	return r.WithoutAllocationInfo(), true
}

// retryDeferred starts the deferred launches that fit now, in order, after
// a container ended (loop).
func (a *Agent) retryDeferred() {
	for len(a.deferred) > 0 {
		d := a.deferred[0]
		a.deferred = a.deferred[1:]
		need, _ := launchResources(d.info, d.kind, d.fw.executors[d.info.GetExecutorId().GetValue()] == nil, d.item)
		if a.planLentEviction(need) {
			a.deferred = append([]*deferredLaunch{d}, a.deferred...)
			return
		}
		d.timer.Stop()
		a.launchNow(d.fw, d.info, d.kind, d.item)
	}
}

// startDeferred starts one deferred launch now (its wait ran out).
func (a *Agent) startDeferred(d *deferredLaunch) {
	for i, x := range a.deferred {
		if x == d {
			a.deferred = append(a.deferred[:i], a.deferred[i+1:]...)
			d.timer.Stop()
			a.launchNow(d.fw, d.info, d.kind, d.item)
			return
		}
	}
}

// deferredTask finds the deferred launch holding a task.
func (a *core) deferredTask(fid, tid string) *deferredLaunch {
	for _, d := range a.deferred {
		if d.fw.id == fid && contains(d.item.taskIDs(), tid) {
			return d
		}
	}
	return nil
}

// killDeferred handles KILL_TASK for a task whose launch waits: the whole
// launch (its task group) ends TASK_KILLED before delivery; it reports
// whether the task was one.
func (a *core) killDeferred(fid, tid string) bool {
	d := a.deferredTask(fid, tid)
	if d == nil {
		return false
	}
	a.dropDeferred(d)
	for _, id := range d.item.taskIDs() {
		a.agentUpdate(d.fw, nil, id, mesos.TaskState_TASK_KILLED, mesos.TaskStatus_REASON_TASK_KILLED_DURING_LAUNCH,
			"Killed before delivery to the executor")
	}
	a.maybeRemoveFramework(d.fw)
	return true
}

// hasDeferred reports whether a launch of the framework waits (its record
// must stay).
func (a *core) hasDeferred(fw *framework) bool {
	for _, d := range a.deferred {
		if d.fw == fw {
			return true
		}
	}
	return false
}

// dropDeferredFramework forgets a framework's waiting launches (it is
// shutting down: its tasks get no further updates).
func (a *core) dropDeferredFramework(fid string) {
	for _, d := range append([]*deferredLaunch(nil), a.deferred...) {
		if d.fw.id == fid {
			a.dropDeferred(d)
		}
	}
}

func (a *core) dropDeferred(d *deferredLaunch) {
	for i, x := range a.deferred {
		if x == d {
			a.deferred = append(a.deferred[:i], a.deferred[i+1:]...)
			break
		}
	}
	d.timer.Stop()
}
