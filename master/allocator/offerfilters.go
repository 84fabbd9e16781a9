package allocator

import "mezzo/api/mesos"

// A framework's own offer filters (FrameworkInfo.offer_filters: the
// paper's §3.5 "only offer nodes with at least R free") and offer
// constraints ("only offer nodes from list L") sit on its sorter nodes, one
// per role, where the allocation loop reads them with the node: nil for
// the frameworks that set neither, so those pay one pointer test.

// nodeOptions are a framework node's own offer filters and constraints.
type nodeOptions struct {
	// groups are the role's offer constraint groups (nil: unconstrained).
	groups []constraintGroup
	// minSet: min replaces --min_allocatable_resources for the role (an
	// empty min then admits any non-empty resources, as in Mesos).
	minSet bool
	min    []qv
}

// optionsFor is f's options for role rn (nil: none).
func (f *framework) optionsFor(rn string) *nodeOptions {
	var o nodeOptions
	if f.constraints != nil {
		o.groups = f.constraints.roles[rn]
	}
	o.min, o.minSet = f.minAlloc[rn]
	if o.groups == nil && !o.minSet {
		return nil
	}
	return &o
}

// setNodeOptions sets n's options (nil: none), keeping c.ownMin.
func (c *core) setNodeOptions(n *drfNode, o *nodeOptions) {
	if n.opts != nil && n.opts.minSet {
		c.ownMin--
	}
	n.opts = o
	if o != nil && o.minSet {
		c.ownMin++
	}
}

// frameworkMinAllocatable converts info.offer_filters' minimum allocatable
// quantities to vectors, by role (roles without min_allocatable_resources
// are absent: the cluster's minimum applies to them).
func (c *core) frameworkMinAllocatable(info *mesos.FrameworkInfo) map[string][]qv {
	var out map[string][]qv
	for rn, of := range info.GetOfferFilters() {
		mar := of.GetMinAllocatableResources()
		if mar == nil {
			continue
		}
		if out == nil {
			out = map[string][]qv{}
		}
		list := []qv{}
		for _, rq := range mar.GetQuantities() {
			m := map[string]float64{}
			for name, x := range rq.GetQuantities() {
				m[name] = x.GetValue()
			}
			list = append(list, c.names.vecOfMap(m))
		}
		out[rn] = list
	}
	return out
}

// minQuantitiesOK reports whether q holds at least one of the quantity
// sets in min (any positive q when min is empty).
func minQuantitiesOK(min []qv, q qv) bool {
	if len(min) == 0 {
		return q.positive()
	}
	for _, m := range min {
		if m.leq(q) {
			return true
		}
	}
	return false
}

// admits reports whether framework node n's own offer filters and
// constraints let it be offered q on agent a; minOK says whether q passes
// the cluster's --min_allocatable_resources.
func admits(n *drfNode, a *agent, q qv, minOK bool) bool {
	o := n.opts
	if o == nil {
		return minOK
	}
	if o.groups != nil && !groupsAdmit(o.groups, a.info) {
		return false
	}
	if o.minSet {
		return minQuantitiesOK(o.min, q)
	}
	return minOK
}

// skipBelowMin reports whether free resources for a role that
// fail the cluster's minimum (minOK false) can be passed over without asking the
// frameworks (none has a minimum of its own).
func (c *core) skipBelowMin(minOK bool) bool { return !minOK && c.ownMin == 0 }
