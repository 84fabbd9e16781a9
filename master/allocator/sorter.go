package allocator

import "sort"

// A drfNode is a client of a DRF sorter: a role (or a path component of
// hierarchical roles) in the role tree, or a framework in a role's
// framework sorter. Every parent keeps its children sorted by
// (weighted dominant share, allocation count, name), Mesos's DRF order, and
// an allocation change repositions only the nodes on the changed path
// (binary search plus one copy), so sorting is incremental rather than a
// full sort per decision.
type drfNode struct {
	name   string
	weight float64
	alloc  qv      // allocation of this node's subtree
	share  float64 // dominant(alloc, total) / weight
	count  uint64  // allocations made to the subtree (DRF tie-break)
	parent *drfNode
	kids   []*drfNode // sorted, see less

	// Exactly one of these is set on a leaf.
	role *role      // the "self" leaf of a role in the role tree
	fw   *framework // a framework in a role's framework sorter

	// For framework nodes, kept here so the hot loop does no map lookups
	// by role: whether the framework subscribes to the role and has not
	// suppressed it, and its offer filters for the role.
	offerable bool  // subscribed, not suppressed, framework active
	owner     *role // the role whose sorter holds this framework node
	filters   map[*agent]offerFilter
}

func (n *drfNode) less(o *drfNode) bool {
	if n.share != o.share {
		return n.share < o.share
	}
	if n.count != o.count {
		return n.count < o.count
	}
	return n.name < o.name
}

// indexOf finds the position of k among p's children; k's sort key must be
// the one it was inserted (or last repositioned) with.
func (p *drfNode) indexOf(k *drfNode) int {
	i := sort.Search(len(p.kids), func(i int) bool { return !p.kids[i].less(k) })
	for i < len(p.kids) && p.kids[i] != k {
		i++ // not reached when keys are unique; defensive
	}
	return i
}

func (p *drfNode) insertKid(k *drfNode) {
	k.parent = p
	i := sort.Search(len(p.kids), func(i int) bool { return !p.kids[i].less(k) })
	p.kids = append(p.kids, nil)
	copy(p.kids[i+1:], p.kids[i:])
	p.kids[i] = k
}

func (p *drfNode) removeKid(k *drfNode) {
	i := p.indexOf(k)
	if i == len(p.kids) {
		return
	}
	copy(p.kids[i:], p.kids[i+1:])
	p.kids[len(p.kids)-1] = nil
	p.kids = p.kids[:len(p.kids)-1]
	k.parent = nil
}

// change applies delta (with sign) to n and its ancestors, recomputing
// their shares against total and moving each to its new place among its
// siblings. count is bumped on allocation (sign > 0).
func (n *drfNode) change(delta qv, sign int, total qv) {
	for x := n; x != nil; x = x.parent {
		p := x.parent
		i := -1
		if p != nil {
			i = p.indexOf(x)
		}
		if sign > 0 {
			x.alloc = x.alloc.add(delta)
			x.count++
		} else {
			x.alloc = x.alloc.sub(delta)
		}
		x.share = dominant(x.alloc, total) / x.weight
		if p != nil && i < len(p.kids) {
			p.reposition(i)
		}
	}
}

// setWeight changes n's weight and repositions it.
func (n *drfNode) setWeight(w float64, total qv) {
	if w <= 0 {
		w = 1
	}
	p := n.parent
	i := -1
	if p != nil {
		i = p.indexOf(n)
	}
	n.weight = w
	n.share = dominant(n.alloc, total) / w
	if p != nil && i < len(p.kids) {
		p.reposition(i)
	}
}

// reposition moves the child at index i, whose key changed, to its place.
func (p *drfNode) reposition(i int) {
	k := p.kids[i]
	// Moving right?
	if i+1 < len(p.kids) && p.kids[i+1].less(k) {
		rest := p.kids[i+1:]
		j := sort.Search(len(rest), func(j int) bool { return !rest[j].less(k) }) // first not less than k
		copy(p.kids[i:i+j], p.kids[i+1:i+1+j])
		p.kids[i+j] = k
		return
	}
	if i > 0 && k.less(p.kids[i-1]) {
		head := p.kids[:i]
		j := sort.Search(len(head), func(j int) bool { return !head[j].less(k) })
		copy(p.kids[j+1:i+1], p.kids[j:i])
		p.kids[j] = k
	}
}

// resort recomputes every share below n against total and re-sorts all
// children lists (after the cluster total changed, which moves every
// share at once).
func (n *drfNode) resort(total qv) {
	for _, k := range n.kids {
		k.share = dominant(k.alloc, total) / k.weight
		k.resort(total)
	}
	sort.Slice(n.kids, func(i, j int) bool { return n.kids[i].less(n.kids[j]) })
}

// leaves appends the leaves under n in sorter order (depth first, children
// in order): the order in which roles, or frameworks, are offered to.
func (n *drfNode) leaves(out []*drfNode) []*drfNode {
	for _, k := range n.kids {
		if len(k.kids) == 0 {
			if k.role != nil || k.fw != nil {
				out = append(out, k)
			}
			continue
		}
		out = k.leaves(out)
	}
	return out
}
