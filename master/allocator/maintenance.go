package allocator

import (
	"sort"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
)

// Maintenance in the allocator, as Mesos's hierarchical allocator keeps it:
// an agent on a machine in the maintenance schedule carries the window's
// unavailability (UpdateUnavailability). Every allocation run then sends
// each active framework that holds resources there (offered or in use) one
// inverse offer for the agent, unless one is outstanding or the framework
// refused inverse offers for the agent recently. The master answers for
// the framework with UpdateInverseOffer: the outstanding inverse offer is
// gone (accepted, declined, rescinded) and, for an answer, a filter keeps
// the next one back for refuse_seconds.
//
//	UpdateUnavailability(a, u) ──► next run: INVERSE_OFFER(f, a, u) ──► outstanding
//	        ▲                                                        │
//	        │                   UpdateInverseOffer(a, f, filters) ◄──┘
//	        └── u changes: outstanding forgotten (the master rescinds)

// agentMaint is one agent's maintenance state.
type agentMaint struct {
	// agent is the agent this state was set for: an agent removed and
	// added again under the same ID starts without maintenance.
	agent          *agent
	unavailability *mesos.Unavailability
	// outstanding holds the frameworks with an inverse offer for the agent
	// that they have not answered.
	outstanding map[string]bool
	// refused maps frameworks to when their inverse-offer filter for the
	// agent expires.
	refused map[string]time.Time
}

// maintFor returns the agent's maintenance state, creating it.
func (c *core) maintFor(id string) *agentMaint {
	if c.maint == nil {
		c.maint = map[string]*agentMaint{}
	}
	m := c.maint[id]
	if m == nil {
		m = &agentMaint{}
		c.maint[id] = m
	}
	return m
}

// updateUnavailability sets (u != nil) or clears the agent's
// unavailability. Outstanding inverse offers are forgotten (the master
// rescinds them) and so are the frameworks' refusals for the agent: as in
// Mesos, a new unavailability makes every framework reassess.
func (c *core) updateUnavailability(id string, u *mesos.Unavailability) bool {
	if u == nil {
		delete(c.maint, id)
		return false
	}
	m := c.maintFor(id)
	*m = agentMaint{agent: c.agents[id], unavailability: proto.Clone(u).(*mesos.Unavailability),
		outstanding: map[string]bool{}, refused: map[string]time.Time{}}
	return true
}

// clearInverseFilters drops the framework's inverse-offer refusals on
// every agent, as Mesos does when a framework is deactivated or revives.
func (c *core) clearInverseFilters(fid string) {
	for _, m := range c.maint {
		delete(m.refused, fid)
	}
}

// updateInverseOffer records that the framework's inverse offer for the
// agent is no longer outstanding; a non-nil filters with positive
// refuse_seconds (capped at a year, as offers' filters) holds the next one
// back.
func (c *core) updateInverseOffer(agentID, frameworkID string, filters *mesos.Filters, now time.Time) bool {
	m := c.maint[agentID]
	if m == nil {
		return false
	}
	delete(m.outstanding, frameworkID)
	if filters == nil {
		return false
	}
	secs := filters.GetRefuseSeconds()
	if !(secs > 0) {
		delete(m.refused, frameworkID)
		return false
	}
	d := maxRefuse
	if secs < maxRefuse.Seconds() {
		d = time.Duration(secs * float64(time.Second))
	}
	m.refused[frameworkID] = now.Add(d)
	return false
}

// maxRefuse caps a refusal filter's duration (Mesos: 365 days).
const maxRefuse = 365 * 24 * time.Hour

// inverseOffers returns the inverse offers of a run at now, by framework
// then agent, and marks them outstanding. Agents no longer known lose
// their maintenance state; frameworks no longer known are skipped.
func (c *core) inverseOffers(now time.Time) map[string]map[string]*mesos.Unavailability {
	var out map[string]map[string]*mesos.Unavailability
	for _, aid := range sortedMaintKeys(c.maint) {
		m := c.maint[aid]
		a := c.agents[aid]
		if a == nil || a != m.agent {
			delete(c.maint, aid)
			continue
		}
		if m.unavailability == nil {
			continue
		}
		for _, fid := range a.alloc.frameworks() {
			f := c.frameworks[fid]
			if f == nil || !f.active || m.outstanding[fid] {
				continue
			}
			if until, ok := m.refused[fid]; ok {
				if now.Before(until) {
					continue
				}
				delete(m.refused, fid)
			}
			if out == nil {
				out = map[string]map[string]*mesos.Unavailability{}
			}
			if out[fid] == nil {
				out[fid] = map[string]*mesos.Unavailability{}
			}
			out[fid][aid] = proto.Clone(m.unavailability).(*mesos.Unavailability)
			m.outstanding[fid] = true
		}
	}
	return out
}

func sortedMaintKeys(m map[string]*agentMaint) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
