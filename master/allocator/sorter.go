package allocator

import "sort"

// A drfNode is a client of a DRF sorter: a role (or a path component of
// hierarchical roles) in the role tree, or a framework in a role's
// framework sorter. Every parent keeps its children ordered by
// (weighted dominant share, allocation count, name), Mesos's DRF order, and
// an allocation change repositions only the nodes on the changed path, so
// sorting is incremental rather than a full sort per decision.
//
// A parent keeps its children in one of two forms:
//
//   - a binary min-heap (the default): repositioning a child after its
//     share changed is O(log n) whatever the sorter's size, and the
//     children are read in order lazily (kidIter), which suits framework
//     sorters with thousands of clients where a run only looks at the first
//     few (the first eligible framework takes the agent);
//   - a sorted slice (sortedKids): repositioning is a binary search plus a
//     copy, and the full order is a plain read, which suits the role tree
//     and the per-run quota sorter, whose whole order is snapshotted.
type drfNode struct {
	name   string
	weight float64
	alloc  qv      // allocation of this node's subtree
	share  float64 // dominant(alloc, total) / weight
	count  uint64  // allocations made to the subtree (DRF tie-break)
	parent *drfNode
	kids   []*drfNode // a heap, or sorted if sortedKids; see less
	keys   []sortKey  // for a heap: kids[i]'s sort key, inline (see lessAt)
	hidx   int        // index in parent.kids when the parent is a heap
	// For a heap: the children by name, and each child's rank in it (the
	// name tie-break as an integer, kept in the inline keys).
	byName []*drfNode
	rank   uint32

	// sortedKids keeps kids as a sorted slice instead of a heap.
	sortedKids bool

	// Exactly one of these is set on a leaf.
	role *role      // the "self" leaf of a role in the role tree
	fw   *framework // a framework in a role's framework sorter

	// For framework nodes, kept here so the hot loop does no map lookups
	// by role: whether the framework subscribes to the role and has not
	// suppressed it, and its offer filters for the role.
	offerable bool  // subscribed, not suppressed, framework active
	owner     *role // the role whose sorter holds this framework node
	// Its offer filters are kept on the agents (filters.go): nfilters
	// counts the live ones, filterGen invalidates them all at once.
	nfilters  int
	filterGen uint32
	fbit      uint64 // this node's bit in agent.filterMask (one of 64)
	// opts are the framework's own offer filters and constraints for the
	// role (nil: none, the common case).
	opts *nodeOptions
}

// sortKey is a node's sort key as a heap keeps it inline, next to the
// child pointers: sifting compares these without visiting the children
// (scattered in memory). The name tie-break is the name's rank among the
// siblings, which orders as the names do.
type sortKey struct {
	share float64
	count uint64
	rank  uint32 // order of the name among the siblings
}

func (n *drfNode) key() sortKey { return sortKey{n.share, n.count, n.rank} }

// lessAt is less for heap children i and j.
func (p *drfNode) lessAt(i, j int) bool { return keyLess(&p.keys[i], &p.keys[j]) }

// keyLess is less on inline keys.
func keyLess(a, b *sortKey) bool {
	if a.share != b.share {
		return a.share < b.share
	}
	if a.count != b.count {
		return a.count < b.count
	}
	return a.rank < b.rank
}

// rankFrom renumbers the name ranks of p's heap children from position i
// of byName (after an insertion or removal there), keeping the inline keys
// in step. Ranks keep the name order, so the heap stays valid.
func (p *drfNode) rankFrom(i int) {
	for ; i < len(p.byName); i++ {
		k := p.byName[i]
		k.rank = uint32(i)
		if k.parent == p && k.hidx < len(p.keys) && p.kids[k.hidx] == k {
			p.keys[k.hidx].rank = k.rank
		}
	}
}

// set places k at heap position i.
func (p *drfNode) set(i int, k *drfNode, key sortKey) {
	p.kids[i] = k
	p.keys[i] = key
	k.hidx = i
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

// indexOf finds the position of k among p's children; in a sorted slice,
// k's sort key must be the one it was inserted (or last repositioned) with.
func (p *drfNode) indexOf(k *drfNode) int {
	if !p.sortedKids {
		if k.hidx < len(p.kids) && p.kids[k.hidx] == k {
			return k.hidx
		}
		return len(p.kids)
	}
	i := sort.Search(len(p.kids), func(i int) bool { return !p.kids[i].less(k) })
	for i < len(p.kids) && p.kids[i] != k {
		i++ // not reached when keys are unique; defensive
	}
	return i
}

func (p *drfNode) insertKid(k *drfNode) {
	k.parent = p
	if !p.sortedKids {
		j := sort.Search(len(p.byName), func(j int) bool { return p.byName[j].name >= k.name })
		p.byName = append(p.byName, nil)
		copy(p.byName[j+1:], p.byName[j:])
		p.byName[j] = k
		p.rankFrom(j)
		k.hidx = len(p.kids)
		p.kids = append(p.kids, k)
		p.keys = append(p.keys, k.key())
		p.up(k.hidx)
		return
	}
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
	k.parent = nil
	last := len(p.kids) - 1
	if !p.sortedKids {
		if j := int(k.rank); j < len(p.byName) && p.byName[j] == k {
			copy(p.byName[j:], p.byName[j+1:])
			p.byName[len(p.byName)-1] = nil
			p.byName = p.byName[:len(p.byName)-1]
			p.rankFrom(j)
		}
		if i != last {
			p.set(i, p.kids[last], p.keys[last])
		}
		p.kids[last] = nil
		p.kids = p.kids[:last]
		p.keys = p.keys[:last]
		if i != last {
			p.reposition(i)
		}
		return
	}
	copy(p.kids[i:], p.kids[i+1:])
	p.kids[last] = nil
	p.kids = p.kids[:last]
}

// change applies delta (with sign) to n and its ancestors, recomputing
// their shares against total and moving each to its new place among its
// siblings. count is bumped on allocation (sign > 0).
func (n *drfNode) change(delta qv, sign int, total qv) {
	n.move(delta, sign, sign > 0, total)
}

// adjust adds delta (whose components may be negative) to n's and its
// ancestors' allocations without counting an allocation: a correction of
// how shared resources are counted (chargeShared), not a new allocation.
func (n *drfNode) adjust(delta qv, total qv) {
	n.move(delta, +1, false, total)
}

func (n *drfNode) move(delta qv, sign int, count bool, total qv) {
	for x := n; x != nil; x = x.parent {
		p := x.parent
		i := -1
		if p != nil {
			i = p.indexOf(x)
		}
		if sign > 0 {
			x.alloc = x.alloc.add(delta)
			if count {
				x.count++
			}
		} else {
			x.alloc = x.alloc.sub(delta)
		}
		if p == nil {
			break // a sorter's root: its share orders nothing
		}
		x.share = dominant(x.alloc, total) / x.weight
		if i < len(p.kids) {
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
	if !p.sortedKids {
		p.keys[i] = p.kids[i].key()
		if !p.up(i) {
			p.down(i)
		}
		return
	}
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

// up sifts the heap child at i towards the root; it reports whether it
// moved.
func (p *drfNode) up(i int) bool {
	k, key := p.kids[i], p.keys[i]
	moved := false
	for i > 0 {
		par := (i - 1) / 2
		if !keyLess(&key, &p.keys[par]) {
			break
		}
		p.set(i, p.kids[par], p.keys[par])
		i = par
		moved = true
	}
	p.set(i, k, key)
	return moved
}

// down sifts the heap child at i towards the leaves.
func (p *drfNode) down(i int) {
	n := len(p.kids)
	k, key := p.kids[i], p.keys[i]
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && p.lessAt(r, l) {
			m = r
		}
		if !keyLess(&p.keys[m], &key) {
			break
		}
		p.set(i, p.kids[m], p.keys[m])
		i = m
	}
	p.set(i, k, key)
}

// resort recomputes every share below n against total and re-sorts all
// children lists (after the cluster total changed, which moves every
// share at once). A sorted slice is also a valid heap.
func (n *drfNode) resort(total qv) {
	for _, k := range n.kids {
		k.share = dominant(k.alloc, total) / k.weight
		k.resort(total)
	}
	sort.Slice(n.kids, func(i, j int) bool { return n.kids[i].less(n.kids[j]) })
	if !n.sortedKids {
		n.keys = n.keys[:0]
		for i, k := range n.kids {
			k.hidx = i
			n.keys = append(n.keys, k.key())
		}
	}
}

// ordered appends n's children in sorter order.
func (n *drfNode) ordered(out []*drfNode) []*drfNode {
	start := len(out)
	out = append(out, n.kids...)
	if !n.sortedKids {
		s := out[start:]
		sort.Slice(s, func(i, j int) bool { return s[i].less(s[j]) })
	}
	return out
}

// kidIter yields a sorter's children in sorter order. On a heap it
// visits lazily, keeping a frontier (a small heap of positions whose
// parents were already yielded), so reading the first k of n children
// costs O(k log k), not a sort of all n. The sorter must not change while
// an iteration is under way.
type kidIter struct {
	p      *drfNode
	kids   []*drfNode
	list   bool // kids is already in order
	pos    int
	front  []int32
	sorted []*drfNode // scratch for list iterations that need a copy
}

// start begins an iteration over p's children.
func (it *kidIter) start(p *drfNode) {
	it.p = p
	it.kids = p.kids
	it.list = p.sortedKids
	it.pos = 0
	it.front = it.front[:0]
	if !it.list && len(it.kids) > 0 {
		it.front = append(it.front, 0)
	}
}

// startList begins an iteration over an explicit ordered list.
func (it *kidIter) startList(l []*drfNode) {
	it.kids = l
	it.list = true
	it.pos = 0
}

// next returns the next child, or nil at the end.
func (it *kidIter) next() *drfNode {
	if it.list {
		if it.pos >= len(it.kids) {
			return nil
		}
		it.pos++
		return it.kids[it.pos-1]
	}
	f := it.front
	if len(f) == 0 {
		return nil
	}
	h, p := it.kids, it.p
	top := f[0]
	// Pop the frontier's minimum: move the last entry to the root and
	// sift it down.
	last := len(f) - 1
	x := f[last]
	f = f[:last]
	if last > 0 {
		i := 0
		for {
			l := 2*i + 1
			if l >= last {
				break
			}
			m := l
			if r := l + 1; r < last && p.lessAt(int(f[r]), int(f[l])) {
				m = r
			}
			if !p.lessAt(int(f[m]), int(x)) {
				break
			}
			f[i] = f[m]
			i = m
		}
		f[i] = x
	}
	// Push the heap children of what is yielded.
	for c := 2*top + 1; c <= 2*top+2 && int(c) < len(h); c++ {
		f = append(f, c)
		i := len(f) - 1
		for i > 0 {
			par := (i - 1) / 2
			if !p.lessAt(int(f[i]), int(f[par])) {
				break
			}
			f[i], f[par] = f[par], f[i]
			i = par
		}
	}
	it.front = f
	return h[top]
}
