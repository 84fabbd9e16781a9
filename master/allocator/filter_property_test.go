package allocator

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"mezzo/api/mesos"
	"mezzo/internal/clock"
	"mezzo/resources"
)

// TestPropertyFiltersAndSuppression is a state machine over the
// synchronous allocator (Sync, with a fake clock): agents and frameworks
// come and go, frameworks decline with filters of various lengths,
// accept part of an offer, finish tasks, suppress, revive, deactivate and
// reactivate, change roles, quotas come and go, revocable estimates grow
// and shrink, time advances, and allocation runs happen. A naive oracle
// keeps, with plain maps, every offer filter in force and which
// frameworks and roles may be offered; every offer of every run is
// checked against it:
//
//   - no offer to a framework that is removed, inactive, not subscribed
//     to the role, or suppressed in it;
//   - no offer to (framework, role) of an agent it holds a live filter on
//     when what is offered is covered by what it refused (Mesos filters
//     by quantities: an offer larger than the refusal gets through);
//     regular and revocable resources each against their own filter;
//   - revocable resources only to REVOCABLE_RESOURCES frameworks, and
//     nothing reserved to another role.
//
// After every step the allocator's books and cached summaries are
// checked too (checkInternal). Issue 11 §2 (filters lost after
// framework churn) failed here within seconds before the fix in
// addFilter; testdata/filters_churn.txt replays the issue's own steps.
func TestPropertyFiltersAndSuppression(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fm := newFilterMachine(t)
		actions := map[string]func(*rapid.T){
			"addAgent":        fm.addAgent,
			"removeAgent":     fm.removeAgent,
			"addFramework":    fm.addFramework,
			"removeFramework": fm.removeFramework,
			"deactivate":      fm.deactivate,
			"activate":        fm.activate,
			"updateRoles":     fm.updateRoles,
			"decline":         fm.decline,
			"accept":          fm.accept,
			"finish":          fm.finish,
			"suppress":        fm.suppress,
			"revive":          fm.revive,
			"advance":         fm.advance,
			"oversubscribe":   fm.oversubscribe,
			"quota":           fm.quota,
			"allocate":        fm.allocate,
		}
		names := sortedKeys(actions)
		// Longer runs than rapid's Repeat makes by default (30 steps on
		// average): churn needs frameworks to come, decline and go
		// before the one that shows the bug arrives.
		steps := rapid.IntRange(1, 200).Draw(t, "steps")
		for i := 0; i < steps; i++ {
			actions[rapid.SampledFrom(names).Draw(t, "action")](t)
			fm.check(t)
		}
	})
}

// fmFilter is the oracle's record of one offer filter.
type fmFilter struct {
	until   time.Time
	refused map[string]float64 // scalar quantities refused
}

type fmKey struct{ fw, role, agent string }

// fmFKey names a filter: regular and revocable resources are filtered
// separately (the framework's nodes in the role's two sorters).
type fmFKey struct {
	fmKey
	rev bool
}

type fmFramework struct {
	roles      []string
	revocable  bool // REVOCABLE_RESOURCES
	multi      bool // MULTI_ROLE: resources come back with allocation info
	active     bool
	suppressed map[string]bool
}

// filterMachine is the system under test and the oracle.
type filterMachine struct {
	s      *Sync
	clk    *clock.Fake
	offers map[string]Offers // delivered by the last Run

	nAgents, nFws int
	agents        map[string]resources.Resources
	fws           map[string]*fmFramework
	outstanding   map[fmKey]resources.Resources // offered, not yet answered
	used          map[fmKey]resources.Resources // in use by tasks
	filters       map[fmFKey]fmFilter
	rescinds      []request // asked by the last Run
}

var fmRoles = []string{"a", "b", "eng", "eng/web"}

func newFilterMachine(t *rapid.T) *filterMachine {
	fm := &filterMachine{
		clk:         clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		agents:      map[string]resources.Resources{},
		fws:         map[string]*fmFramework{},
		outstanding: map[fmKey]resources.Resources{},
		used:        map[fmKey]resources.Resources{},
		filters:     map[fmFKey]fmFilter{},
	}
	s, err := NewSync(Default, Options{
		Interval: time.Second,
		Clock:    fm.clk,
		Offer:    func(fw string, o Offers) { fm.offers[fw] = o },
		Rescind: func(fw, agent string, r resources.Resources) {
			fm.rescinds = append(fm.rescinds, request{framework: fw, agent: agent, res: r})
		},
		// Idle reservations lent as revocable resources (and rescinded
		// when their role wants them) in some runs.
		OfferIdleReservations: rapid.Bool().Draw(t, "idleReservations"),
	})
	if err != nil {
		t.Fatal(err)
	}
	// Agents in random order as in production, but reproducibly.
	s.c.rng.Seed(rapid.Int64().Draw(t, "seed"))
	fm.s = s
	return fm
}

func (fm *filterMachine) now() time.Time { return fm.clk.Now() }

func (fm *filterMachine) addAgent(t *rapid.T) {
	if len(fm.agents) >= 5 {
		return
	}
	id := fmt.Sprintf("a%d", fm.nAgents)
	fm.nAgents++
	text := fmt.Sprintf("cpus:%d;mem:%d;ports:[31000-31009]", rapid.IntRange(1, 4).Draw(t, "cpus"), 128*rapid.IntRange(1, 4).Draw(t, "mem"))
	if rapid.Bool().Draw(t, "reserved") {
		text += fmt.Sprintf(";cpus(%s):1", rapid.SampledFrom(fmRoles).Draw(t, "rrole"))
	}
	total := resources.MustParse(text)
	fm.s.AddAgent(id, &mesos.AgentInfo{Hostname: proto.String(id)}, total, nil)
	fm.agents[id] = total
}

func (fm *filterMachine) removeAgent(t *rapid.T) {
	id, ok := fm.pickAgent(t)
	if !ok {
		return
	}
	fm.s.RemoveAgent(id)
	delete(fm.agents, id)
	for _, m := range []map[fmKey]resources.Resources{fm.outstanding, fm.used} {
		for k := range m {
			if k.agent == id {
				delete(m, k)
			}
		}
	}
	for k := range fm.filters {
		if k.agent == id {
			delete(fm.filters, k)
		}
	}
}

func (fm *filterMachine) addFramework(t *rapid.T) {
	if len(fm.fws) >= 6 {
		return
	}
	id := fmt.Sprintf("f%d", fm.nFws)
	fm.nFws++
	info := &mesos.FrameworkInfo{User: proto.String("u"), Name: proto.String(id)}
	roles := []string{rapid.SampledFrom(fmRoles).Draw(t, "role")}
	if r2 := rapid.SampledFrom(fmRoles).Draw(t, "role2"); rapid.Bool().Draw(t, "multi") && r2 != roles[0] {
		roles = append(roles, r2)
		sort.Strings(roles)
		info.Roles = roles
		info.Capabilities = []*mesos.FrameworkInfo_Capability{{Type: mesos.FrameworkInfo_Capability_MULTI_ROLE.Enum()}}
	} else {
		info.Role = proto.String(roles[0])
	}
	rev := rapid.Bool().Draw(t, "revocable")
	if rev {
		info.Capabilities = append(info.Capabilities, &mesos.FrameworkInfo_Capability{Type: mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES.Enum()})
	}
	fm.s.AddFramework(id, info, nil, true, FrameworkOptions{})
	fm.fws[id] = &fmFramework{roles: roles, multi: len(roles) > 1, revocable: rev, active: true, suppressed: map[string]bool{}}
}

// removeFramework tears a framework down (the master recovers nothing
// itself: the allocator drops what the framework held).
func (fm *filterMachine) removeFramework(t *rapid.T) {
	id, ok := fm.pickFramework(t)
	if !ok {
		return
	}
	fm.s.RemoveFramework(id)
	delete(fm.fws, id)
	fm.forget(id, fm.outstanding, fm.used)
	for k := range fm.filters {
		if k.fw == id {
			delete(fm.filters, k)
		}
	}
}

// deactivate: the master rescinds the framework's offers (recovered
// without a filter); the allocator drops its filters, as Mesos does.
func (fm *filterMachine) deactivate(t *rapid.T) {
	id, ok := fm.pickFramework(t)
	if !ok {
		return
	}
	fm.s.DeactivateFramework(id)
	for _, k := range sortedFmKeys(fm.outstanding) {
		if k.fw == id {
			fm.s.RecoverResources(id, k.agent, fm.tag(k, fm.outstanding[k]), nil)
			delete(fm.outstanding, k)
		}
	}
	fm.fws[id].active = false
	fm.clearFilters(id, nil)
}

func (fm *filterMachine) activate(t *rapid.T) {
	id, ok := fm.pickFramework(t)
	if !ok {
		return
	}
	fm.s.ActivateFramework(id)
	fm.fws[id].active = true
}

// updateRoles changes a framework's roles (UPDATE_FRAMEWORK); its
// filters and suppression of roles it leaves are dropped.
func (fm *filterMachine) updateRoles(t *rapid.T) {
	id, ok := fm.pickFramework(t)
	if !ok {
		return
	}
	f := fm.fws[id]
	roles := []string{rapid.SampledFrom(fmRoles).Draw(t, "newRole")}
	if r2 := rapid.SampledFrom(fmRoles).Draw(t, "newRole2"); r2 != roles[0] {
		roles = append(roles, r2)
		sort.Strings(roles)
	}
	info := &mesos.FrameworkInfo{User: proto.String("u"), Name: proto.String(id), Roles: roles,
		Capabilities: []*mesos.FrameworkInfo_Capability{{Type: mesos.FrameworkInfo_Capability_MULTI_ROLE.Enum()}}}
	if f.revocable {
		info.Capabilities = append(info.Capabilities, &mesos.FrameworkInfo_Capability{Type: mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES.Enum()})
	}
	var suppressed []string
	for _, r := range roles {
		if f.suppressed[r] {
			suppressed = append(suppressed, r)
		}
	}
	// The master rescinds the offers of roles the framework leaves.
	for _, k := range sortedFmKeys(fm.outstanding) {
		if k.fw == id && !contains(roles, k.role) {
			fm.s.RecoverResources(id, k.agent, fm.tag(k, fm.outstanding[k]), nil)
			delete(fm.outstanding, k)
		}
	}
	fm.s.UpdateFramework(id, info, FrameworkOptions{SuppressedRoles: suppressed})
	var left []string
	for _, r := range f.roles {
		if !contains(roles, r) {
			left = append(left, r)
		}
	}
	if left != nil {
		fm.clearFilters(id, left)
	}
	f.roles, f.multi = roles, true
	f.suppressed = map[string]bool{}
	for _, r := range suppressed {
		f.suppressed[r] = true
	}
}

var fmRefuse = []float64{-1, 0, 0.2, 1, 2.5, 5, 30}

// refuse draws a decline's filter: none (-1 stands for nil) or
// refuse_seconds, some below the allocation interval.
func refuse(t *rapid.T) *mesos.Filters {
	x := rapid.SampledFrom(fmRefuse).Draw(t, "refuse")
	if x < 0 {
		return nil
	}
	return &mesos.Filters{RefuseSeconds: proto.Float64(x)}
}

// noteFilter records, in the oracle, the filters a decline of r with f
// sets: refuse_seconds stretched to at least the interval, replacing any
// filter the framework had there for the role; one for the regular
// resources declined, one for the revocable ones.
func (fm *filterMachine) noteFilter(k fmKey, r resources.Resources, f *mesos.Filters) {
	if f == nil || f.GetRefuseSeconds() <= 0 {
		return
	}
	d := time.Duration(f.GetRefuseSeconds() * float64(time.Second))
	if d < time.Second {
		d = time.Second
	}
	for _, rev := range []bool{false, true} {
		part := r.NonRevocable()
		if rev {
			part = r.Revocable()
		}
		if !part.IsEmpty() {
			fm.filters[fmFKey{k, rev}] = fmFilter{until: fm.now().Add(d), refused: scalarQuantities(part)}
		}
	}
}

// quota sets or clears a role's guarantee or limit, so that runs go
// through the quota stage (whose offers must respect filters and
// suppression too).
func (fm *filterMachine) quota(t *rapid.T) {
	role := rapid.SampledFrom(fmRoles).Draw(t, "quotaRole")
	var q Quota
	switch rapid.IntRange(0, 2).Draw(t, "quotaKind") {
	case 0:
		q.Guarantees = map[string]float64{"cpus": float64(rapid.IntRange(1, 4).Draw(t, "guarantee"))}
	case 1:
		q.Limits = map[string]float64{"cpus": float64(rapid.IntRange(0, 4).Draw(t, "limit"))}
	}
	fm.s.UpdateQuota(role, q)
}

// oversubscribe sets an agent's revocable estimate (UpdateOversubscribed),
// growing or shrinking it; a shrink makes the next run ask for rescinds.
func (fm *filterMachine) oversubscribe(t *rapid.T) {
	id, ok := fm.pickAgent(t)
	if !ok {
		return
	}
	n := rapid.IntRange(0, 2).Draw(t, "oversub")
	var est resources.Resources
	if n > 0 {
		ps := resources.MustParse(fmt.Sprintf("cpus:%d;mem:%d", n, 64*n)).Proto()
		for _, p := range ps {
			p.Revocable = &mesos.Resource_RevocableInfo{}
		}
		est, _ = resources.New(ps...)
	}
	fm.s.UpdateOversubscribed(id, est)
}

func (fm *filterMachine) decline(t *rapid.T) {
	k, ok := fm.pickOffer(t)
	if !ok {
		return
	}
	f := refuse(t)
	r := fm.outstanding[k]
	fm.s.RecoverResources(k.fw, k.agent, fm.tag(k, r), f)
	delete(fm.outstanding, k)
	fm.noteFilter(k, r, f)
}

// accept launches a task on part of an offer; the rest is declined with
// the ACCEPT's filters.
func (fm *filterMachine) accept(t *rapid.T) {
	k, ok := fm.pickOffer(t)
	if !ok {
		return
	}
	f := refuse(t)
	offer := fm.outstanding[k]
	task := intersect(offer, resources.MustParse("cpus:1;mem:128"))
	rest := offer.Subtract(task)
	fm.used[k] = fm.used[k].Add(task)
	delete(fm.outstanding, k)
	if !rest.IsEmpty() {
		fm.s.RecoverResources(k.fw, k.agent, fm.tag(k, rest), f)
		fm.noteFilter(k, rest, f)
	}
}

func (fm *filterMachine) finish(t *rapid.T) {
	keys := sortedFmKeys(fm.used)
	if len(keys) == 0 {
		return
	}
	k := rapid.SampledFrom(keys).Draw(t, "task")
	fm.s.RecoverResources(k.fw, k.agent, fm.tag(k, fm.used[k]), nil)
	delete(fm.used, k)
}

// someRoles draws the roles of a SUPPRESS or REVIVE: none (all the
// framework's roles) or one of them.
func someRoles(t *rapid.T, f *fmFramework) []string {
	if rapid.Bool().Draw(t, "allRoles") {
		return nil
	}
	return []string{rapid.SampledFrom(f.roles).Draw(t, "which")}
}

func (fm *filterMachine) suppress(t *rapid.T) {
	id, ok := fm.pickFramework(t)
	if !ok {
		return
	}
	f := fm.fws[id]
	roles := someRoles(t, f)
	fm.s.SuppressOffers(id, roles)
	if roles == nil {
		roles = f.roles
	}
	for _, r := range roles {
		f.suppressed[r] = true
	}
}

func (fm *filterMachine) revive(t *rapid.T) {
	id, ok := fm.pickFramework(t)
	if !ok {
		return
	}
	f := fm.fws[id]
	roles := someRoles(t, f)
	fm.s.ReviveOffers(id, roles)
	if roles == nil {
		roles = f.roles
	}
	for _, r := range roles {
		delete(f.suppressed, r)
	}
	fm.clearFilters(id, roles)
}

func (fm *filterMachine) advance(t *rapid.T) {
	ms := rapid.SampledFrom([]int{100, 500, 999, 1000, 1001, 2500, 5000, 30000}).Draw(t, "ms")
	fm.clk.Advance(time.Duration(ms) * time.Millisecond)
}

// allocate runs the allocator and checks every offer against the oracle.
func (fm *filterMachine) allocate(t *rapid.T) {
	fm.offers = map[string]Offers{}
	fm.rescinds = nil
	fm.s.Run(fm.now())
	now := fm.now()
	for _, fw := range sortedKeys(fm.offers) {
		for _, role := range sortedKeys(fm.offers[fw]) {
			for _, agent := range sortedKeys(fm.offers[fw][role]) {
				r := fm.offers[fw][role][agent]
				f := fm.fws[fw]
				switch {
				case f == nil:
					t.Fatalf("offer %s to removed framework %s", r, fw)
				case !f.active:
					t.Fatalf("offer %s to inactive framework %s", r, fw)
				case !contains(f.roles, role):
					t.Fatalf("offer %s to %s for role %s it is not subscribed to (%v)", r, fw, role, f.roles)
				case f.suppressed[role]:
					t.Fatalf("offer %s on %s to %s for suppressed role %s", r, agent, fw, role)
				}
				k := fmKey{fw, role, agent}
				if !r.Revocable().IsEmpty() && !f.revocable {
					t.Fatalf("revocable offer %s on %s to %s without REVOCABLE_RESOURCES", r, agent, fw)
				}
				for _, rev := range []bool{false, true} {
					part := r.NonRevocable()
					if rev {
						part = r.Revocable()
					}
					fl, ok := fm.filters[fmFKey{k, rev}]
					if !part.IsEmpty() && ok && now.Before(fl.until) && quantitiesLeq(scalarQuantities(part), fl.refused) {
						t.Fatalf("offer %s on %s to %s (role %s, revocable %v) at %v despite its filter refusing %v until %v",
							part, agent, fw, role, rev, now.Format("15:04:05.000"), fl.refused, fl.until.Format("15:04:05.000"))
					}
				}
				if !r.AllocatableTo(role).Equal(r) {
					t.Fatalf("offer %s to role %s holds resources reserved to another role", r, role)
				}
				fm.outstanding[k] = fm.outstanding[k].Add(r)
			}
		}
	}
	// The master rescinds the offers holding what the allocator asks
	// back (revocable resources whose estimate shrank, idle reservations
	// their role now uses): they come back without a filter.
	for _, rq := range fm.rescinds {
		for _, k := range sortedFmKeys(fm.outstanding) {
			if k.fw == rq.framework && k.agent == rq.agent && !fm.outstanding[k].Revocable().IsEmpty() {
				fm.s.RecoverResources(k.fw, k.agent, fm.tag(k, fm.outstanding[k]), nil)
				delete(fm.outstanding, k)
			}
		}
	}
}

// check runs after every action: the allocator's books balance, and
// offered plus used never exceeds an agent's total.
func (fm *filterMachine) check(t *rapid.T) {
	checkInternal(t, fm.s.c)
	held := map[string]resources.Resources{}
	for _, m := range []map[fmKey]resources.Resources{fm.outstanding, fm.used} {
		for k, r := range m {
			held[k.agent] = held[k.agent].Add(r.NonRevocable())
		}
	}
	for a, h := range held {
		if !fm.agents[a].Contains(h) {
			t.Fatalf("agent %s: offered plus used %s exceeds total %s", a, h, fm.agents[a])
		}
	}
}

// clearFilters drops the oracle's filters of fw for roles (nil: all).
func (fm *filterMachine) clearFilters(fw string, roles []string) {
	for k := range fm.filters {
		if k.fw == fw && (roles == nil || contains(roles, k.role)) {
			delete(fm.filters, k)
		}
	}
}

func (fm *filterMachine) forget(fw string, ms ...map[fmKey]resources.Resources) {
	for _, m := range ms {
		for k := range m {
			if k.fw == fw {
				delete(m, k)
			}
		}
	}
}

// tag gives r the allocation info the master adds for MULTI_ROLE
// frameworks.
func (fm *filterMachine) tag(k fmKey, r resources.Resources) resources.Resources {
	if fm.fws[k.fw].multi {
		return r.AllocatedTo(k.role)
	}
	return r
}

// pickAgent, pickFramework and pickOffer draw one (ok false: none).
func (fm *filterMachine) pickAgent(t *rapid.T) (string, bool) {
	ids := sortedKeys(fm.agents)
	if len(ids) == 0 {
		return "", false
	}
	return rapid.SampledFrom(ids).Draw(t, "agent"), true
}

func (fm *filterMachine) pickFramework(t *rapid.T) (string, bool) {
	ids := sortedKeys(fm.fws)
	if len(ids) == 0 {
		return "", false
	}
	return rapid.SampledFrom(ids).Draw(t, "framework"), true
}

func (fm *filterMachine) pickOffer(t *rapid.T) (fmKey, bool) {
	keys := sortedFmKeys(fm.outstanding)
	if len(keys) == 0 {
		return fmKey{}, false
	}
	return rapid.SampledFrom(keys).Draw(t, "offer"), true
}

func sortedFmKeys(m map[fmKey]resources.Resources) []fmKey {
	ks := make([]fmKey, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		a, b := ks[i], ks[j]
		if a.fw != b.fw {
			return a.fw < b.fw
		}
		if a.agent != b.agent {
			return a.agent < b.agent
		}
		return a.role < b.role
	})
	return ks
}

// scalarQuantities is r's scalar quantities by name, rounded as the
// allocator rounds them (thousandths).
func scalarQuantities(r resources.Resources) map[string]float64 {
	out := map[string]float64{}
	for name, x := range r.Quantities() {
		if x != 0 {
			out[name] = fromMilli(toMilli(x))
		}
	}
	return out
}

// quantitiesLeq reports whether every quantity of x is at most y's.
func quantitiesLeq(x, y map[string]float64) bool {
	for name, v := range x {
		if v > y[name]+1e-9 {
			return false
		}
	}
	return true
}
