package allocator

import "time"

// Offer filters live on the agent they filter, not on the framework: the
// hot loop visits one agent at a time and asks, for a few framework
// nodes, whether they filtered it. A short slice on the agent (few
// frameworks decline a given agent at once) answers that from memory the
// loop already touches, where a map per framework node would cost a
// random access into a large table per question. Each framework node
// counts its live filters (metrics) and carries a generation: clearing a
// node's filters (revive, deactivation, node removal) bumps it, which
// makes the node's entries on every agent stale at once; stale entries
// are dropped when next seen.

// offerFilter keeps resources from being offered to a framework (the
// sorter node of one of its roles) on the agent holding the filter until
// expiry, as long as what would be offered is no more than what was
// refused.
type offerFilter struct {
	node    *drfNode
	gen     uint32 // node.filterGen when set; stale once it differs
	until   time.Time
	refused qv
}

func (fl *offerFilter) live() bool { return fl.gen == fl.node.filterGen }

// addFilter sets (or replaces) n's filter on a.
//
// n's bit goes into a's mask only once its entry is in a.filters: the
// loop below drops stale entries, and each drop rebuilds the mask from
// the entries present, which would erase a bit set beforehand and leave
// the new filter invisible to filtered's fast path (issue 11: filters
// lost after another framework's filters went stale on the agent).
func addFilter(n *drfNode, a *agent, refused qv, until time.Time) {
	for i := 0; i < len(a.filters); i++ {
		fl := &a.filters[i]
		if fl.node == n {
			if !fl.live() {
				fl.gen = n.filterGen
				n.nfilters++
			}
			fl.until = until
			fl.refused = append(fl.refused[:0], refused...)
			a.filterMask |= n.fbit
			return
		}
		if !fl.live() {
			a.dropFilter(i)
			i--
		}
	}
	k := len(a.filters)
	if k < cap(a.filters) {
		// Reuse the refused vector dropFilter left in the spare slot.
		a.filters = a.filters[:k+1]
		fl := &a.filters[k]
		fl.node, fl.gen, fl.until = n, n.filterGen, until
		fl.refused = append(fl.refused[:0], refused...)
	} else {
		a.filters = append(a.filters, offerFilter{node: n, gen: n.filterGen, until: until, refused: refused.clone()})
	}
	a.filterMask |= n.fbit
	n.nfilters++
}

// dropFilter removes entry i (live or stale) from a's filters.
func (a *agent) dropFilter(i int) {
	fl := &a.filters[i]
	if fl.live() {
		fl.node.nfilters--
	}
	last := len(a.filters) - 1
	refused := fl.refused
	a.filters[i] = a.filters[last]
	a.filters[last] = offerFilter{refused: refused[:0]}
	a.filters = a.filters[:last]
	a.filterMask = 0
	for i := range a.filters {
		a.filterMask |= a.filters[i].node.fbit
	}
}

// dropFilters removes all of a's filters (the agent is removed).
func (a *agent) dropFilters() {
	for i := range a.filters {
		if fl := &a.filters[i]; fl.live() {
			fl.node.nfilters--
		}
	}
	a.filters = nil
	a.filterMask = 0
}

// clearNodeFilters drops every filter of framework node n, on all agents.
func clearNodeFilters(n *drfNode) {
	n.filterGen++
	n.nfilters = 0
}

// filtered reports whether the framework of sorter node n refused at
// least q on a and the filter is still in force; expired filters are
// dropped here.
func filtered(n *drfNode, a *agent, q qv, now time.Time) bool {
	if a.filterMask&n.fbit == 0 && n.fbit != 0 {
		return false
	}
	for i := range a.filters {
		fl := &a.filters[i]
		if fl.node != n || !fl.live() {
			continue
		}
		if !now.Before(fl.until) {
			a.dropFilter(i)
			return false
		}
		return q.leq(fl.refused)
	}
	return false
}
