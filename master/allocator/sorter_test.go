package allocator

import (
	"fmt"
	"sort"
	"testing"

	"pgregory.net/rapid"
)

// TestPropertySorterOrder drives both sorter forms (heap and sorted
// slice) with random inserts, removals, allocation changes, weight
// changes and total changes, and checks against a naive oracle (sort all
// children by less) that kidIter, ordered and the first child give the DRF
// order, and that the inline keys and ranks match the nodes.
func TestPropertySorterOrder(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		sortedKids := rapid.Bool().Draw(t, "sortedKids")
		root := &drfNode{weight: 1, sortedKids: sortedKids}
		total := qv{100000, 100000, 100000}
		var in []*drfNode // children currently in root
		var out []*drfNode
		for i := 0; i < 12; i++ {
			out = append(out, &drfNode{name: fmt.Sprintf("n%02d", i), weight: 1})
		}
		steps := rapid.IntRange(1, 80).Draw(t, "steps")
		for s := 0; s < steps; s++ {
			switch op := rapid.IntRange(0, 5).Draw(t, "op"); {
			case op == 0 && len(out) > 0:
				i := rapid.IntRange(0, len(out)-1).Draw(t, "insert")
				k := out[i]
				out = append(out[:i], out[i+1:]...)
				k.share = dominant(k.alloc, total) / k.weight
				root.insertKid(k)
				in = append(in, k)
			case op == 1 && len(in) > 0:
				i := rapid.IntRange(0, len(in)-1).Draw(t, "remove")
				k := in[i]
				in = append(in[:i], in[i+1:]...)
				root.removeKid(k)
				out = append(out, k)
			case op == 2 && len(in) > 0:
				k := in[rapid.IntRange(0, len(in)-1).Draw(t, "grow")]
				// Few distinct amounts, so ties on share and count occur.
				k.change(qv{int64(rapid.IntRange(0, 3).Draw(t, "cpus")) * 100, 0, 50}, +1, total)
			case op == 3 && len(in) > 0:
				k := in[rapid.IntRange(0, len(in)-1).Draw(t, "shrink")]
				if k.alloc.at(2) >= 50 {
					k.change(qv{0, 0, 50}, -1, total)
				}
			case op == 4 && len(in) > 0:
				k := in[rapid.IntRange(0, len(in)-1).Draw(t, "weigh")]
				k.setWeight(float64(rapid.IntRange(1, 3).Draw(t, "weight")), total)
			case op == 5:
				total = qv{int64(rapid.IntRange(1, 4).Draw(t, "total")) * 50000, 100000, 100000}
				root.resort(total)
			}
			checkSorter(t, root, in)
		}
	})
}

func checkSorter(t *rapid.T, root *drfNode, in []*drfNode) {
	want := append([]*drfNode(nil), in...)
	sort.Slice(want, func(i, j int) bool { return want[i].less(want[j]) })
	var it kidIter
	it.start(root)
	var got []*drfNode
	for n := it.next(); n != nil; n = it.next() {
		got = append(got, n)
	}
	names := func(ns []*drfNode) []string {
		var s []string
		for _, n := range ns {
			s = append(s, fmt.Sprintf("%s(%.4f,%d)", n.name, n.share, n.count))
		}
		return s
	}
	if fmt.Sprint(names(got)) != fmt.Sprint(names(want)) {
		t.Fatalf("kidIter order %v, want %v", names(got), names(want))
	}
	if o := root.ordered(nil); fmt.Sprint(names(o)) != fmt.Sprint(names(want)) {
		t.Fatalf("ordered %v, want %v", names(o), names(want))
	}
	if len(want) > 0 && root.kids[0] != want[0] {
		t.Fatalf("first child %s, want %s", root.kids[0].name, want[0].name)
	}
	if root.sortedKids {
		return
	}
	for i, k := range root.kids {
		if k.hidx != i || root.keys[i] != k.key() {
			t.Fatalf("child %s at %d: hidx %d, inline key %+v, key %+v", k.name, i, k.hidx, root.keys[i], k.key())
		}
	}
	for i, k := range root.byName {
		if int(k.rank) != i || (i > 0 && root.byName[i-1].name >= k.name) {
			t.Fatalf("byName[%d] = %s with rank %d", i, k.name, k.rank)
		}
	}
}
