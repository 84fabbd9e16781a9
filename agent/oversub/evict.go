package oversub

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"mezzo/resources"
)

// Eviction arithmetic for lending idle reservations (the
// oversubscription-for-reservation design, agent-side option: the agent
// itself works out how much to evict and whom).
//
// Terms, per scalar resource, on one agent:
//
//	total        the agent's regular resources (unreserved and reserved)
//	occupied     held by regular containers, the new launch included
//	occupiedRev  held by tenant containers on lent reservations, still running
//	evicting     held by containers already being evicted or ending, whose
//	             resources are on their way back
//
// A launch may start when total >= occupied + occupiedRev + evicting (the
// design's inequality). To get there the agent evicts tenants until, once
// everything already on its way back has returned, the launch fits:
// total >= occupied + occupiedRev. Counting evicting as returning is what
// keeps the agent from over-evicting when launches and evictions race (the
// design's cases 1 and 2): a second launch arriving while the first one's
// victims are still dying does not pick new victims for resources already
// freed, and a tenant that ends by itself is not replaced by a victim.

// Holder is one container on the agent as the eviction arithmetic sees it.
type Holder struct {
	ContainerID string
	FrameworkID string
	ExecutorID  string
	// Resources is what the container holds.
	Resources resources.Resources
	// Tenant marks a revocable container on a lent reservation: the only
	// kind PlanEviction may choose. Regular containers are never chosen.
	Tenant bool
	// Evicting marks a container already being evicted or ending.
	Evicting bool
	// Started is when the container was launched; newer tenants go first.
	Started time.Time
}

// EvictionRequest is what runs on the agent and what is about to.
type EvictionRequest struct {
	// Total is the agent's regular total resources.
	Total resources.Resources
	// Holders are the agent's live containers, regular and tenant.
	Holders []Holder
	// Launch is what the new regular task (and its executor, if new) needs.
	Launch resources.Resources
}

// Eviction is PlanEviction's answer.
type Eviction struct {
	// Evict are the tenants to kill now, newest first: the fewest that
	// make the launch fit once they are gone and, among sets that few,
	// the newest.
	Evict []Holder
	// StartNow reports whether the launch fits already, the design's
	// inequality holding with nothing left to return. When false the
	// launch waits for the evicting containers to end.
	StartNow bool
}

// ErrLaunchDoesNotFit means the regular containers and the launch alone
// exceed the agent's total: no eviction can make room, so none is made.
var ErrLaunchDoesNotFit = errors.New("the launch does not fit the agent's total even with every tenant evicted")

// searchBudget bounds the exact search; beyond it (dozens of tenants in
// several dimensions) PlanEviction falls back to a greedy choice that is
// still sufficient and never over-evicts by more than it must to stay
// sufficient, but may not be the smallest set.
const searchBudget = 200000

// PlanEviction chooses which tenants to evict so that req.Launch fits. It is
// pure: it reads only req.
func PlanEviction(req EvictionRequest) (Eviction, error) {
	names := dims(req)
	ids := map[string]bool{}
	occupied := quantities(req.Launch, names)
	var occupiedRev, evicting vec = make(vec, len(names)), make(vec, len(names))
	var cands []Holder
	for _, h := range req.Holders {
		if ids[h.ContainerID] {
			return Eviction{}, fmt.Errorf("container %q is listed twice", h.ContainerID)
		}
		ids[h.ContainerID] = true
		q := quantities(h.Resources, names)
		switch {
		case h.Evicting:
			evicting.add(q)
		case h.Tenant:
			occupiedRev.add(q)
			cands = append(cands, h)
		default:
			occupied.add(q)
		}
	}
	total := quantities(req.Total, names)
	if !total.covers(occupied) {
		return Eviction{}, ErrLaunchDoesNotFit
	}
	plan := Eviction{StartNow: total.covers(sum(occupied, occupiedRev, evicting))}
	// need is how much the chosen tenants must hold, dimension by dimension.
	need := sum(occupied, occupiedRev).minus(total).positive()
	if need.zero() {
		return plan, nil
	}
	sortNewestFirst(cands)
	vs := make([]vec, len(cands))
	for i, c := range cands {
		vs[i] = quantities(c.Resources, names)
	}
	idx, ok := minimalNewest(vs, need)
	if !ok {
		idx = greedy(vs, need)
	}
	for _, i := range idx {
		plan.Evict = append(plan.Evict, cands[i])
	}
	return plan, nil
}

// sortNewestFirst orders tenants by start time, newest first, then by
// container id so that the choice is deterministic.
func sortNewestFirst(hs []Holder) {
	sort.SliceStable(hs, func(i, j int) bool {
		if !hs[i].Started.Equal(hs[j].Started) {
			return hs[i].Started.After(hs[j].Started)
		}
		return hs[i].ContainerID < hs[j].ContainerID
	})
}

// minimalNewest returns, among the smallest sets of indexes whose vectors
// cover need, the lexicographically first (vs is sorted newest first, so
// that is the newest set). It reports false if the search budget ran out.
func minimalNewest(vs []vec, need vec) ([]int, bool) {
	n, d := len(vs), len(need)
	// top[i][k][r] is the sum of the r largest values of dimension k among
	// vs[i:]: a bound on what r more picks from i on can add.
	top := make([][][]int64, n+1)
	for i := n; i >= 0; i-- {
		top[i] = make([][]int64, d)
		for k := 0; k < d; k++ {
			col := make([]int64, 0, n-i)
			for _, v := range vs[i:] {
				col = append(col, v[k])
			}
			sort.Slice(col, func(a, b int) bool { return col[a] > col[b] })
			p := make([]int64, len(col)+1)
			for r, x := range col {
				p[r+1] = p[r] + x
			}
			top[i][k] = p
		}
	}
	reachable := func(i, left int, rem vec) bool {
		for k, x := range rem {
			if x > 0 && top[i][k][min(left, n-i)] < x {
				return false
			}
		}
		return true
	}
	budget := searchBudget
	var pick []int
	var rec func(start, left int, rem vec) bool
	rec = func(start, left int, rem vec) bool {
		if rem.positive().zero() {
			return true
		}
		if left == 0 || budget <= 0 {
			return false
		}
		budget--
		for i := start; i <= n-left; i++ {
			if !reachable(i, left, rem) {
				break // a shorter suffix cannot do better
			}
			pick = append(pick, i)
			if rec(i+1, left-1, rem.minus(vs[i])) {
				return true
			}
			pick = pick[:len(pick)-1]
		}
		return false
	}
	for k := 1; k <= n; k++ {
		if !reachable(0, k, need) {
			continue
		}
		pick = pick[:0]
		if rec(0, k, need) {
			return append([]int(nil), pick...), true
		}
		if budget <= 0 {
			return nil, false
		}
	}
	// Unreachable: the caller checked that all tenants together cover need.
	return nil, false
}

// greedy takes tenants newest first until need is covered, then drops, oldest
// first, any whose removal keeps it covered.
func greedy(vs []vec, need vec) []int {
	var idx []int
	got := make(vec, len(need))
	for i, v := range vs {
		if got.covers(need) {
			break
		}
		idx = append(idx, i)
		got.add(v)
	}
	for j := len(idx) - 1; j >= 0; j-- {
		if got.minus(vs[idx[j]]).covers(need) {
			got = got.minus(vs[idx[j]])
			idx = append(idx[:j], idx[j+1:]...)
		}
	}
	return idx
}

// vec is a vector of scalar quantities in thousandths (Mesos's fixed-point
// precision), one entry per dimension name.
type vec []int64

func dims(req EvictionRequest) []string {
	set := map[string]bool{}
	add := func(r resources.Resources) {
		for n := range r.Scalars().Quantities() {
			set[n] = true
		}
	}
	add(req.Total)
	add(req.Launch)
	for _, h := range req.Holders {
		add(h.Resources)
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func quantities(r resources.Resources, names []string) vec {
	q := r.Scalars().Quantities()
	v := make(vec, len(names))
	for i, n := range names {
		v[i] = int64(math.Round(q[n] * 1000))
	}
	return v
}

func (v vec) add(o vec) {
	for i := range v {
		v[i] += o[i]
	}
}

func (v vec) minus(o vec) vec {
	out := make(vec, len(v))
	for i := range v {
		out[i] = v[i] - o[i]
	}
	return out
}

func (v vec) positive() vec {
	out := make(vec, len(v))
	for i, x := range v {
		out[i] = max(x, 0)
	}
	return out
}

func (v vec) zero() bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// covers reports v >= o in every dimension.
func (v vec) covers(o vec) bool {
	for i := range v {
		if v[i] < o[i] {
			return false
		}
	}
	return true
}

func sum(vs ...vec) vec {
	out := make(vec, len(vs[0]))
	for _, v := range vs {
		out.add(v)
	}
	return out
}
