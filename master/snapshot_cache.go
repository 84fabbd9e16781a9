package master

import (
	"time"

	"mezzo/api/mesos"
	"mezzo/resources"
)

// Values derived from state that never changes once set, cached so that
// building a Snapshot (publish.go) does not recompute them for every agent
// and task on every publish: converting resources to protos dominated the
// build with thousands of agents or tasks.

// setTotal sets the agent's total resources and the views derived from
// them. It is the only way total changes.
func (a *agent) setTotal(total resources.Resources) {
	a.total = total
	a.totalProto = total.Proto()
	a.reserved = nil
	for _, r := range a.totalProto {
		if n := len(r.GetReservations()); n > 0 {
			role := r.GetReservations()[n-1].GetRole()
			if x, err := resources.FromProto([]*mesos.Resource{r}); err == nil {
				if a.reserved == nil {
					a.reserved = map[string]resources.Resources{}
				}
				a.reserved[role] = a.reserved[role].Add(x)
			}
		}
	}
}

// role is the role the task's resources are allocated to (fallback if
// they carry no allocation info).
func (t *task) role(fallback string) string {
	return cachedRole(&t.allocRole, t.res, fallback)
}

// role is the role the executor's resources are allocated to (fallback if
// they carry no allocation info).
func (e *executor) role(fallback string) string {
	return cachedRole(&e.allocRole, e.res, fallback)
}

func cachedRole(cache **string, res resources.Resources, fallback string) string {
	if *cache == nil {
		role := allocationRole(res, "")
		*cache = &role
	}
	if **cache == "" {
		return fallback
	}
	return **cache
}

// agentViewCache is the AgentView last built for an agent and what it was
// built from. A Snapshot reuses the view (views are immutable) while
// nothing it shows has changed; the check compares everything agentView
// reads, so no mutation site has to remember to invalidate it: task protos
// are replaced on every change and task, executor and offer resources
// never change, so pointer identity is content identity. The cache holds
// the pointers it compares, so their addresses cannot be reused by new
// objects while it does.
type agentViewCache struct {
	view *AgentView
	key  agentViewKey
	// tasks maps each task to its proto and recovered flag at build time.
	tasks     map[*task]taskMark
	executors map[*executor]string // executor -> framework ID (map key)
	offers    map[*offer]struct{}
	// execFws is len(a.executors) at build time; emptyExecs says an
	// executor map of a framework was empty (its ID still counted in
	// FrameworkIDs), which the check does not track: never reused.
	execFws    int
	emptyExecs bool
}

type taskMark struct {
	proto     *mesos.Task
	recovered bool
}

// agentViewKey is the agent's own fields that agentView reads.
type agentViewKey struct {
	info                           *mesos.AgentInfo
	endpoint, version              string
	caps                           **mesos.AgentInfo_Capability
	ncaps                          int
	total                          **mesos.Resource
	ntotal                         int
	oversubGen                     uint64
	connected, deactivated, active bool
	drain                          *mesos.DrainInfo
	registered, reregistered       time.Time
}

func (a *agent) viewKey() agentViewKey {
	return agentViewKey{
		info: a.info, endpoint: a.endpoint, version: a.version,
		caps: first(a.caps), ncaps: len(a.caps),
		total: first(a.totalProto), ntotal: len(a.totalProto),
		oversubGen: a.oversubGen,
		connected:  a.connected, deactivated: a.deactivated, active: a.active(),
		drain:      a.drain,
		registered: a.registeredTime, reregistered: a.reregisteredTime,
	}
}

// first identifies a slice's backing array (nil if empty).
func first[T any](s []T) *T {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}

// cachedAgentView returns the agent's view, rebuilding it only if
// something it shows changed since the last build.
func (s *state) cachedAgentView(a *agent) *AgentView {
	if c := a.view; c != nil && c.valid(a) {
		return c.view
	}
	c := &agentViewCache{view: s.agentView(a), key: a.viewKey(), execFws: len(a.executors),
		tasks: map[*task]taskMark{}, executors: map[*executor]string{}, offers: map[*offer]struct{}{}}
	for _, ts := range a.tasks {
		for _, t := range ts {
			c.tasks[t] = taskMark{t.proto, t.recovered}
		}
	}
	for fwID, es := range a.executors {
		if len(es) == 0 {
			c.emptyExecs = true
		}
		for _, e := range es {
			c.executors[e] = fwID
		}
	}
	for _, o := range a.offers {
		c.offers[o] = struct{}{}
	}
	a.view = c
	return c.view
}

// valid reports whether the cached view still shows agent a exactly.
func (c *agentViewCache) valid(a *agent) bool {
	if c.emptyExecs || c.key != a.viewKey() || len(a.offers) != len(c.offers) || len(a.executors) != c.execFws {
		return false
	}
	n := 0
	for _, ts := range a.tasks {
		for _, t := range ts {
			if m, ok := c.tasks[t]; !ok || m != (taskMark{t.proto, t.recovered}) {
				return false
			}
			n++
		}
	}
	if n != len(c.tasks) {
		return false
	}
	n = 0
	for fwID, es := range a.executors {
		if len(es) == 0 {
			return false
		}
		for _, e := range es {
			if id, ok := c.executors[e]; !ok || id != fwID {
				return false
			}
			n++
		}
	}
	if n != len(c.executors) {
		return false
	}
	for _, o := range a.offers {
		if _, ok := c.offers[o]; !ok {
			return false
		}
	}
	return true
}
