package allocator

import (
	"fmt"
	"sort"
	"time"

	"mezzo/internal/timerstat"
)

// Reason says why a framework gets no offers for a role.
type Reason string

// Reasons, most specific first. ReasonEligible means some agent could be
// offered to the framework now: it is waiting for its DRF turn (or will be
// offered at the next run).
const (
	ReasonUnknownFramework    Reason = "UNKNOWN_FRAMEWORK"
	ReasonInactive            Reason = "FRAMEWORK_INACTIVE"
	ReasonSuppressed          Reason = "SUPPRESSED"
	ReasonPaused              Reason = "ALLOCATION_PAUSED"
	ReasonNoAgents            Reason = "NO_ACTIVE_AGENTS"
	ReasonNothingFree         Reason = "NOTHING_FREE_IN_ROLE"
	ReasonOverQuotaLimit      Reason = "OVER_QUOTA_LIMIT"
	ReasonBelowMinAllocatable Reason = "BELOW_MIN_ALLOCATABLE"
	ReasonGPUAgentsOnly       Reason = "GPU_AGENTS_ONLY"
	ReasonFiltered            Reason = "FILTERED"
	// ReasonOfferConstraints: the framework's offer constraints exclude
	// the agents that have something free.
	ReasonOfferConstraints Reason = "EXCLUDED_BY_OFFER_CONSTRAINTS"
	// ReasonNoAgentFits: the framework declined offers holding the whole
	// of every agent it may use, so what it waits for fits none of them;
	// only a larger agent (or a smaller demand) changes that.
	ReasonNoAgentFits Reason = "NO_AGENT_FITS"
	ReasonEligible    Reason = "ELIGIBLE"
)

// AgentCounts classifies the active agents for one framework and role by
// the first reason each cannot be offered to it.
type AgentCounts struct {
	Eligible            int `json:"eligible"`
	NothingFree         int `json:"nothing_free"`
	OverQuotaLimit      int `json:"over_quota_limit"`
	BelowMinAllocatable int `json:"below_min_allocatable"`
	GPUAgent            int `json:"gpu_agent"`
	Filtered            int `json:"filtered"`
	OfferConstraints    int `json:"offer_constraints"`
}

// RoleExplanation is the answer for one of the framework's roles.
type RoleExplanation struct {
	Role    string      `json:"role"`
	Reason  Reason      `json:"reason"`
	Message string      `json:"message"`
	Agents  AgentCounts `json:"agents"`
}

// Explanation says, per role, why a framework is or is not being offered
// resources.
type Explanation struct {
	FrameworkID string            `json:"framework_id"`
	Active      bool              `json:"active"`
	LastOffer   time.Time         `json:"last_offer,omitempty"`
	Roles       []RoleExplanation `json:"roles"`
}

// Introspector is implemented by this package's allocators: the master
// type-asserts its Allocator to it to serve explanations and metrics.
type Introspector interface {
	// Explain says why the framework does or does not get offers.
	Explain(frameworkID string) Explanation
	// Metrics returns the allocator metrics under Mesos's key names
	// (allocator/mesos/...).
	Metrics() map[string]float64
	// Timers returns the allocation run timer's statistics under its Mesos
	// name (allocator/mesos/allocation_run_ms) for the Prometheus summary.
	Timers() map[string]timerstat.Stats
}

func (c *core) explain(fid string, now time.Time) Explanation {
	f := c.frameworks[fid]
	ex := Explanation{FrameworkID: fid}
	if f == nil || !f.known {
		ex.Roles = append(ex.Roles, RoleExplanation{Reason: ReasonUnknownFramework, Message: "the allocator does not know this framework"})
		return ex
	}
	ex.Active = f.active
	ex.LastOffer = f.lastOffer
	var qr *quotaRun
	if len(c.quotas) > 0 {
		qr = c.newQuotaRun(nil)
	}
	for _, rn := range f.roles {
		re := RoleExplanation{Role: rn}
		switch {
		case !f.active:
			re.Reason, re.Message = ReasonInactive, "the framework is not connected (inactive)"
		case f.suppressed[rn]:
			re.Reason, re.Message = ReasonSuppressed, "the framework suppressed offers for this role; REVIVE to resume"
		case c.paused:
			re.Reason, re.Message = ReasonPaused, "allocation is paused while the agents re-register with a newly elected master (--allocator_agent_recovery_factor, --allocator_recovery_timeout)"
		default:
			c.explainRole(f, rn, qr, now, &re)
		}
		ex.Roles = append(ex.Roles, re)
	}
	return ex
}

func (c *core) explainRole(f *framework, rn string, qr *quotaRun, now time.Time, re *RoleExplanation) {
	cnt := &re.Agents
	active := 0
	n := f.nodes[rn]
	for _, a := range c.agentList {
		if !a.active {
			continue
		}
		active++
		if n != nil && n.opts != nil && n.opts.groups != nil && !groupsAdmit(n.opts.groups, a.info) {
			cnt.OfferConstraints++
			continue
		}
		res, q, uq, whole := c.allocatable(a, rn, nil)
		if !q.positive() {
			cnt.NothingFree++
			continue
		}
		if qr != nil {
			if room := qr.limitRoom(rn); room != nil {
				_, q, _, _ = c.chop(res, q, uq, room, whole)
				if !q.positive() {
					cnt.OverQuotaLimit++
					continue
				}
			}
		}
		minOK := c.minAllocatableOK(q)
		if n != nil {
			minOK = admits(n, a, q, minOK)
		}
		if !minOK {
			cnt.BelowMinAllocatable++
			continue
		}
		if a.gpu && !f.gpu {
			cnt.GPUAgent++
			continue
		}
		if n != nil && filtered(n, a, q, now) {
			cnt.Filtered++
			continue
		}
		cnt.Eligible++
	}
	type cand struct {
		r     Reason
		count int
		msg   string
	}
	cands := []cand{
		{ReasonFiltered, cnt.Filtered, "the framework declined these resources with a filter (refuse_seconds) that has not expired; REVIVE clears it"},
		{ReasonOverQuotaLimit, cnt.OverQuotaLimit, "the role has reached its quota limit"},
		{ReasonBelowMinAllocatable, cnt.BelowMinAllocatable, "what is free is less than the minimum allocatable resources (--min_allocatable_resources, or the framework's offer_filters)"},
		{ReasonGPUAgentsOnly, cnt.GPUAgent, "only agents with GPUs have free resources and the framework lacks the GPU_RESOURCES capability"},
		{ReasonOfferConstraints, cnt.OfferConstraints, "the framework's offer constraints exclude these agents (SUBSCRIBE or UPDATE_FRAMEWORK offer_constraints)"},
	}
	switch {
	case active == 0:
		re.Reason, re.Message = ReasonNoAgents, "no active agents"
		return
	case c.requestFitsNoAgent(f, rn, re), c.noAgentFits(f, rn, re):
		return
	case cnt.Eligible > 0:
		re.Reason = ReasonEligible
		re.Message = fmt.Sprintf("%d agent(s) can be offered to this framework; it is offered them when its role and it come first in fair-share order", cnt.Eligible)
		return
	}
	// Agents with nothing free explain nothing if others have something
	// free that is kept from the framework for a reason.
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].count > cands[j].count })
	if cands[0].count == 0 {
		cands[0] = cand{ReasonNothingFree, cnt.NothingFree, "nothing is free for this role: everything is offered or allocated"}
	}
	re.Reason = cands[0].r
	re.Message = fmt.Sprintf("%s (%d of %d active agents)", cands[0].msg, cands[0].count, active)
}

// requestFitsNoAgent fills re and reports true when one of the
// framework's REQUESTs for role rn asks for more than any active agent it
// may use (the named agent, if the request names one) could ever offer
// the role: the framework asked for what the cluster cannot give, which
// is known before it has declined a single offer.
func (c *core) requestFitsNoAgent(f *framework, rn string, re *RoleExplanation) bool {
	for _, r := range f.requested[rn] {
		var largest qv
		fits := false
		for _, a := range c.agentList {
			if !a.active || (a.gpu && !f.gpu) || (r.agent != "" && a.id != r.agent) {
				continue
			}
			total := c.totalFor(a, rn)
			if r.q.leq(total) {
				fits = true
				break
			}
			largest = largest.max(total)
		}
		if fits {
			continue
		}
		re.Reason = ReasonNoAgentFits
		where := "no agent it may use"
		if r.agent != "" {
			where = "agent " + r.agent
		}
		re.Message = fmt.Sprintf("the framework asked (REQUEST) for %s on one agent, which %s could ever offer this role (largest: %s); add a larger agent or ask for less",
			c.names.format(r.q), where, c.names.format(largest))
		if largest == nil {
			re.Message = fmt.Sprintf("the framework asked (REQUEST) for %s on one agent, but %s is active", c.names.format(r.q), where)
		}
		return true
	}
	return false
}

// totalFor is everything agent a could ever offer role rn: its unreserved
// resources and those reserved to rn (or above it).
func (c *core) totalFor(a *agent, rn string) qv {
	if !a.reserved {
		return a.totalQ
	}
	return c.names.vecOf(a.total.AllocatableTo(rn))
}

// maxDeclinedWhole bounds a framework's declinedWhole per role: a
// cluster has few agent shapes, and the bound keeps memory flat however
// many agents a framework declines.
const maxDeclinedWhole = 8

// noteDeclinedWhole records that the framework declined q for role rn, q
// being everything its agent could offer the role. Only maximal entries
// are kept: one below another says nothing more.
func (f *framework) noteDeclinedWhole(rn string, q qv) {
	list := f.declinedWhole[rn]
	for _, e := range list {
		if q.leq(e) {
			return
		}
	}
	kept := list[:0]
	for _, e := range list {
		if !e.leq(q) {
			kept = append(kept, e)
		}
	}
	if len(kept) == maxDeclinedWhole {
		kept = append(kept[:0], kept[1:]...) // the oldest goes
	}
	if f.declinedWhole == nil {
		f.declinedWhole = map[string][]qv{}
	}
	f.declinedWhole[rn] = append(kept, q.clone())
}

// noAgentFits fills re and reports true when every active agent the
// framework may use for role rn has a total no larger than an offer of a
// whole agent it declined: then what it waits for fits no agent of the
// cluster, whatever the filters say now (a filter expires, the answer
// does not). Filters alone cannot tell this: FILTERED and ELIGIBLE
// alternate as 5-second filters come and go while the task waits forever.
// It reasons on quantities only: a framework that declines agents for
// their attributes is told the same, which the message allows for.
func (c *core) noAgentFits(f *framework, rn string, re *RoleExplanation) bool {
	declined := f.declinedWhole[rn]
	if len(declined) == 0 {
		return false
	}
	var largest qv
	usable := 0
	for _, a := range c.agentList {
		if !a.active || (a.gpu && !f.gpu) {
			continue
		}
		usable++
		total := c.totalFor(a, rn)
		covered := false
		for _, e := range declined {
			if total.leq(e) {
				covered = true
				break
			}
		}
		if !covered {
			return false // a larger (or other-shaped) agent may fit it
		}
		largest = largest.max(total)
	}
	if usable == 0 {
		return false
	}
	re.Reason = ReasonNoAgentFits
	re.Message = fmt.Sprintf("the framework declined offers holding everything of agents at least as large as each of the %d it may use: "+
		"if it waits for resources, what it needs fits no agent of the cluster, whose largest totals are %s; add a larger agent or ask for less "+
		"(a framework with nothing to launch should SUPPRESS)", usable, c.names.format(largest))
	return true
}
