package allocator

import (
	"math"
	"sort"
	"strconv"

	"mezzo/resources"
)

// The hot allocation loop never does resources.Resources arithmetic to
// decide who gets what: it works on quantity vectors. A qv holds scalar
// quantities in thousandths (Mesos scalars are fixed point with three
// decimals, so milli-units are exact and allocate/recover cancel exactly),
// indexed by a per-allocator table of resource names. A vector shorter
// than the table reads as zero beyond its length.
type qv []int64

// nameTable interns scalar resource names to vector indices.
type nameTable struct {
	idx  map[string]int
	list []string
}

func newNameTable() *nameTable {
	t := &nameTable{idx: map[string]int{}}
	// The common names first, so their vectors stay short and cheap.
	for _, n := range []string{"cpus", "mem", "disk", "gpus"} {
		t.index(n)
	}
	return t
}

func (t *nameTable) index(name string) int {
	if i, ok := t.idx[name]; ok {
		return i
	}
	t.idx[name] = len(t.list)
	t.list = append(t.list, name)
	return len(t.list) - 1
}

func toMilli(x float64) int64 { return int64(math.Round(x * 1000)) }

func fromMilli(m int64) float64 { return float64(m) / 1000 }

// vecOf converts the scalar quantities of r to a vector. It goes by name
// (Names, then Scalar per name) rather than through Quantities, which
// builds two maps per call.
func (t *nameTable) vecOf(r resources.Resources) qv {
	if r.IsEmpty() {
		return nil
	}
	var v qv
	for _, name := range r.Names() {
		x := r.Scalar(name) // 0 for non-scalar resources
		if x == 0 {
			continue
		}
		i := t.index(name)
		v = v.grow(i + 1)
		v[i] += toMilli(x)
	}
	return v
}

// vecOfMap converts quantities by name to a vector.
func (t *nameTable) vecOfMap(m map[string]float64) qv {
	if len(m) == 0 {
		return nil
	}
	var v qv
	for name, x := range m {
		i := t.index(name)
		v = v.grow(i + 1)
		v[i] += toMilli(x)
	}
	return v
}

// mapOf converts a vector back to quantities by name (zeros omitted).
func (t *nameTable) mapOf(v qv) map[string]float64 {
	m := map[string]float64{}
	for i, x := range v {
		if x != 0 {
			m[t.list[i]] = fromMilli(x)
		}
	}
	return m
}

// String renders a vector as "cpus:1;mem:32" in name order, for tests and
// explanations.
func (t *nameTable) format(v qv) string {
	m := t.mapOf(v)
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ";"
		}
		s += n + ":" + trimFloat(m[n])
	}
	return s
}

func trimFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// grow returns v extended with zeros to length n (at least), reusing
// v's storage when it has room. The room may hold what an earlier, longer
// vector left there (vectors are recycled: allocation entries, spare
// slots), so it is cleared: reading it as zeros once counted an agent's
// memory twice after a small allocation entry grew into its old storage.
func (v qv) grow(n int) qv {
	if len(v) >= n {
		return v
	}
	if cap(v) >= n {
		w := v[:n]
		clear(w[len(v):])
		return w
	}
	w := make(qv, n, n+2)
	copy(w, v)
	return w
}

func (v qv) clone() qv {
	if v == nil {
		return nil
	}
	w := make(qv, len(v))
	copy(w, v)
	return w
}

func (v qv) at(i int) int64 {
	if i < len(v) {
		return v[i]
	}
	return 0
}

// add returns v+o, reusing v's storage.
func (v qv) add(o qv) qv {
	v = v.grow(len(o))
	for i, x := range o {
		v[i] += x
	}
	return v
}

// sub returns v-o, reusing v's storage.
func (v qv) sub(o qv) qv {
	v = v.grow(len(o))
	for i, x := range o {
		v[i] -= x
	}
	return v
}

func (v qv) isZero() bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// positive reports whether some quantity is above zero.
func (v qv) positive() bool {
	for _, x := range v {
		if x > 0 {
			return true
		}
	}
	return false
}

// leq reports v ≤ o in every component.
func (v qv) leq(o qv) bool {
	for i, x := range v {
		if x > o.at(i) {
			return false
		}
	}
	return true
}

// min returns the componentwise minimum of v and o in a new vector.
func (v qv) min(o qv) qv {
	n := len(v)
	if len(o) < n {
		n = len(o)
	}
	w := make(qv, n)
	for i := 0; i < n; i++ {
		w[i] = v[i]
		if o[i] < w[i] {
			w[i] = o[i]
		}
	}
	return w
}

// clampZero raises negative components to zero, in place.
func (v qv) clampZero() qv {
	for i, x := range v {
		if x < 0 {
			v[i] = 0
		}
	}
	return v
}

// dominant is max over resources of alloc/total: the DRF dominant share.
func dominant(alloc, total qv) float64 {
	s := 0.0
	for i, x := range alloc {
		if x <= 0 {
			continue
		}
		t := total.at(i)
		if t <= 0 {
			continue
		}
		if f := float64(x) / float64(t); f > s {
			s = f
		}
	}
	return s
}

// max returns the componentwise maximum of v and o in a new vector.
func (v qv) max(o qv) qv {
	n := max(len(v), len(o))
	w := make(qv, n)
	for i := range w {
		w[i] = max(v.at(i), o.at(i))
	}
	return w
}
