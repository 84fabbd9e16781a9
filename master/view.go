package master

import (
	"mezzo/api/mesos"
	"mezzo/internal/authorizer"
)

// Viewer is one caller's right to see the master's state: what the read
// endpoints render (master/endpoints) and what the agent proxy forwards
// (master/agentproxy) go through Filter, so that both show a principal
// the same things: frameworks by view_frameworks, their tasks by
// view_tasks, executors by view_executors, roles by view_roles, quotas by
// get_quotas, flags by view_flags. Safe for concurrent use.
type Viewer struct {
	// Authorizer decides; nil: everything is visible.
	Authorizer authorizer.Authorizer
	// Subject is the caller's principal ("" anonymous).
	Subject string
}

// May reports whether the caller may perform action on o.
func (v Viewer) May(action authorizer.Action, o authorizer.Object) bool {
	return v.Authorizer == nil || authorizer.Allowed(v.Authorizer, authorizer.Request{Subject: v.Subject, Action: action, Object: o})
}

// Who names the caller in refusals.
func (v Viewer) Who() string {
	if v.Subject == "" {
		return "an unauthenticated caller"
	}
	return "principal '" + v.Subject + "'"
}

// Filter returns s with only what the caller may view; s itself when no
// authorizer is configured. The copy shares everything it keeps with s
// (nothing reachable from a snapshot is ever modified).
func (v Viewer) Filter(s *Snapshot) *Snapshot {
	if v.Authorizer == nil {
		return s
	}
	out := *s
	out.Frameworks = v.frameworks(s.Frameworks)
	out.CompletedFrameworks = v.frameworks(s.CompletedFrameworks)
	out.OrphanTasks = nil
	for _, t := range s.OrphanTasks {
		// No framework is known: the task's own user decides.
		if v.May(authorizer.ViewTask, authorizer.Value(t.GetUser())) {
			out.OrphanTasks = append(out.OrphanTasks, t)
		}
	}
	visible := map[string]bool{}
	for _, group := range [][]*FrameworkView{out.Frameworks, out.CompletedFrameworks} {
		for _, f := range group {
			visible[f.Info.GetId().GetValue()] = true
		}
	}
	out.Operations = nil
	for _, op := range s.Operations {
		if id := op.GetFrameworkId().GetValue(); id == "" || visible[id] {
			out.Operations = append(out.Operations, op)
		}
	}
	out.Roles = nil
	for _, r := range s.Roles {
		if !v.May(authorizer.ViewRole, authorizer.Value(r.Name)) {
			continue
		}
		if r.Quota.HasQuota() && !v.May(authorizer.GetQuota, authorizer.Value(r.Name)) {
			c := *r
			c.Quota = &RoleQuota{}
			r = &c
		}
		out.Roles = append(out.Roles, r)
	}
	out.Weights = map[string]float64{}
	for role, w := range s.Weights {
		if v.May(authorizer.ViewRole, authorizer.Value(role)) {
			out.Weights[role] = w
		}
	}
	if !v.May(authorizer.ViewFlags, authorizer.AnyObject) {
		out.Flags = nil
	}
	if s.Maintenance != nil && len(s.Maintenance.InverseOffers) > 0 {
		m := *s.Maintenance
		m.InverseOffers = map[string][]*mesos.InverseOffer{}
		for id, offers := range s.Maintenance.InverseOffers {
			if visible[id] {
				m.InverseOffers[id] = offers
			}
		}
		out.Maintenance = &m
	}
	return &out
}

// frameworks keeps the frameworks the caller may view, each with only the
// tasks and executors it may view.
func (v Viewer) frameworks(fs []*FrameworkView) []*FrameworkView {
	out := make([]*FrameworkView, 0, len(fs))
	for _, f := range fs {
		if !v.May(authorizer.ViewFramework, authorizer.ViewFrameworkObject(f.Info)) {
			continue
		}
		c := *f
		c.Tasks = v.tasks(f.Tasks, f.Info)
		c.UnreachableTasks = v.tasks(f.UnreachableTasks, f.Info)
		c.CompletedTasks = v.tasks(f.CompletedTasks, f.Info)
		c.Executors = nil
		for _, e := range f.Executors {
			if v.May(authorizer.ViewExecutor, authorizer.ViewExecutorObject(e.Info, f.Info)) {
				c.Executors = append(c.Executors, e)
			}
		}
		out = append(out, &c)
	}
	return out
}

func (v Viewer) tasks(ts []*mesos.Task, fw *mesos.FrameworkInfo) []*mesos.Task {
	out := make([]*mesos.Task, 0, len(ts))
	for _, t := range ts {
		if v.May(authorizer.ViewTask, authorizer.ViewTaskObject(t, fw)) {
			out = append(out, t)
		}
	}
	return out
}
