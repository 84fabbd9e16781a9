package endpoints

import (
	"net/http"

	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/internal/authn"
	"mezzo/internal/authorizer"
	"mezzo/master"
)

// What each caller may see. The master's HTTP layer authenticated the
// request and put the principal in its context (master/httpapi auth.go);
// the read endpoints render from the snapshot as the caller may view it
// (master.Viewer.Filter: frameworks by view_frameworks, their tasks by
// view_tasks, executors by view_executors, roles by view_roles, quotas by
// get_quotas, flags by view_flags) and refuse, with a 403 naming the
// action, the reads that are all or nothing (get_endpoints for the
// metrics, the maintenance reads, set_log_level). Writes are authorized
// by the master on its loop; principal(r) tells it who asks.

// principal is the caller of a request, as authenticated ("" anonymous).
func principal(r *http.Request) master.Principal {
	return master.Principal{Name: authn.PrincipalOf(r.Context())}
}

func (h *handlers) viewer(r *http.Request) master.Viewer {
	return master.Viewer{Authorizer: h.authz, Subject: principal(r).Name}
}

// snapshotFor is the snapshot as r's caller may see it.
func (h *handlers) snapshotFor(r *http.Request) *master.Snapshot {
	return h.viewer(r).Filter(h.snapshot())
}

// allow answers 403 naming action and returns false unless r's caller may
// perform action on o.
func (h *handlers) allow(w http.ResponseWriter, r *http.Request, action authorizer.Action, o authorizer.Object) bool {
	v := h.viewer(r)
	if v.May(action, o) {
		return true
	}
	h.log.Warn("read refused", "principal", v.Subject, "action", string(action), "path", r.URL.Path)
	writeText(w, http.StatusForbidden, "Forbidden: "+v.Who()+" is not authorized to "+string(action)+" (object "+o.String()+")")
	return false
}

// eventFilter decides which operator events one SUBSCRIBE stream may
// carry: framework events by view_frameworks, task events by view_tasks
// (a TASK_UPDATED by the task's TASK_ADDED, or the subscription's
// snapshot, which told it the task's user). Agent and heartbeat events
// pass. Used by one stream's goroutine only.
type eventFilter struct {
	v          master.Viewer
	frameworks map[string]*mesos.FrameworkInfo
	taskUsers  map[[2]string]*mesos.Task
}

func newEventFilter(v master.Viewer, snap *master.Snapshot) *eventFilter {
	f := &eventFilter{v: v, frameworks: map[string]*mesos.FrameworkInfo{}, taskUsers: map[[2]string]*mesos.Task{}}
	for _, group := range [][]*master.FrameworkView{snap.Frameworks, snap.CompletedFrameworks} {
		for _, fw := range group {
			id := fw.Info.GetId().GetValue()
			f.frameworks[id] = fw.Info
			for _, ts := range [][]*mesos.Task{fw.Tasks, fw.UnreachableTasks} {
				for _, t := range ts {
					f.taskUsers[[2]string{id, t.GetTaskId().GetValue()}] = t
				}
			}
		}
	}
	return f
}

// pass reports whether ev may be sent, learning from it what later events
// need.
func (f *eventFilter) pass(ev *masterpb.Event) bool {
	if f.v.Authorizer == nil {
		return true
	}
	switch ev.GetType() {
	case masterpb.Event_FRAMEWORK_ADDED:
		info := ev.GetFrameworkAdded().GetFramework().GetFrameworkInfo()
		f.frameworks[info.GetId().GetValue()] = info
		return f.v.May(authorizer.ViewFramework, authorizer.ViewFrameworkObject(info))
	case masterpb.Event_FRAMEWORK_UPDATED:
		info := ev.GetFrameworkUpdated().GetFramework().GetFrameworkInfo()
		f.frameworks[info.GetId().GetValue()] = info
		return f.v.May(authorizer.ViewFramework, authorizer.ViewFrameworkObject(info))
	case masterpb.Event_FRAMEWORK_REMOVED:
		info := ev.GetFrameworkRemoved().GetFrameworkInfo()
		return f.v.May(authorizer.ViewFramework, authorizer.ViewFrameworkObject(info))
	case masterpb.Event_TASK_ADDED:
		t := ev.GetTaskAdded().GetTask()
		fid := t.GetFrameworkId().GetValue()
		f.taskUsers[[2]string{fid, t.GetTaskId().GetValue()}] = t
		return f.mayViewTask(fid, t)
	case masterpb.Event_TASK_UPDATED:
		u := ev.GetTaskUpdated()
		fid := u.GetFrameworkId().GetValue()
		t := f.taskUsers[[2]string{fid, u.GetStatus().GetTaskId().GetValue()}]
		if t == nil {
			return false // a task this stream never learnt of: nothing says it may be seen
		}
		return f.mayViewTask(fid, t)
	}
	return true
}

func (f *eventFilter) mayViewTask(fid string, t *mesos.Task) bool {
	info := f.frameworks[fid]
	if info == nil {
		return f.v.May(authorizer.ViewTask, authorizer.Value(t.GetUser()))
	}
	return f.v.May(authorizer.ViewTask, authorizer.ViewTaskObject(t, info))
}
