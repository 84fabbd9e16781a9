package longtask

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"mezzo/resources"
)

// The ledger against a naive oracle: random offers, ACCEPTs launching
// long and short tasks, declines and task ends. An oracle keeps the long
// tasks and the outstanding offers' parts as plain lists; after every step
// the ledger's books equal the oracle's sums, and what long tasks hold plus
// what offers set aside never exceeds the bound (no overruns here).
func TestPropertyLedgerNeverExceedsBound(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		fraction := rapid.SampledFrom([]float64{0.25, 0.5, 0.8, 1}).Draw(t, "fraction")
		l, err := New(fraction)
		if err != nil {
			t.Fatal(err)
		}
		total := resources.MustParse(fmt.Sprintf("cpus:%d;mem:%d", rapid.IntRange(1, 16).Draw(t, "cpus"), 256*rapid.IntRange(1, 16).Draw(t, "mem")))
		l.SetAgent("a", total)
		bound := l.Bound("a")
		free := total                    // not offered, not used
		offers := map[int]offerState{}   // outstanding
		var tasks []resources.Resources  // long tasks running
		var shorts []resources.Resources // short tasks running
		next := 0
		for range rapid.IntRange(1, 40).Draw(t, "steps") {
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0: // offer part of what is free
				if free.IsEmpty() {
					continue
				}
				r := pick(t, free)
				if r.IsEmpty() {
					continue
				}
				free = free.Subtract(r)
				offers[next] = offerState{r, l.Offer("a", r)}
				next++
			case 1: // decline an offer
				if id, ok := drawOffer(t, offers); ok {
					o := offers[id]
					l.Unoffer("a", o.part)
					free = free.Add(o.res)
					delete(offers, id)
				}
			case 2: // accept an offer: launch tasks in it
				if id, ok := drawOffer(t, offers); ok {
					o := offers[id]
					delete(offers, id)
					b := l.Accept("a", o.part)
					left, budget := o.res, o.part
					for range rapid.IntRange(0, 3).Draw(t, "tasks") {
						r := pick(t, left)
						if r.IsEmpty() {
							break
						}
						left = left.Subtract(r)
						if rapid.Bool().Draw(t, "long") {
							err := b.Launch(r)
							if fits := budget.Covers(r); fits != (err == nil) {
								t.Fatalf("long task %s on budget %s: launched=%v", r, budget, err == nil)
							}
							if err == nil {
								budget = budget.sub(Of(r))
								tasks = append(tasks, r)
							} else {
								left = left.Add(r)
							}
						} else {
							shorts = append(shorts, r)
						}
					}
					free = free.Add(left)
				}
			case 3: // a task ends
				if len(tasks) > 0 && rapid.Bool().Draw(t, "longEnds") {
					i := rapid.IntRange(0, len(tasks)-1).Draw(t, "which")
					l.Release("a", tasks[i])
					free = free.Add(tasks[i])
					tasks = append(tasks[:i], tasks[i+1:]...)
				} else if len(shorts) > 0 {
					free = free.Add(shorts[0])
					shorts = shorts[1:]
				}
			}
			var used, offered Quantities = Quantities{}, Quantities{}
			for _, r := range tasks {
				used = used.Add(Of(r))
			}
			for _, o := range offers {
				offered = offered.Add(o.part)
			}
			for _, n := range bound.Names() {
				if l.Used("a")[n] != used[n] || l.Offered("a")[n] != offered[n] {
					t.Fatalf("%s: books used %d offered %d, oracle %d %d", n, l.Used("a")[n], l.Offered("a")[n], used[n], offered[n])
				}
				if used[n]+offered[n] > bound[n] {
					t.Fatalf("%s: long tasks %d + offered %d over the bound %d", n, used[n], offered[n], bound[n])
				}
				if l.Headroom("a")[n] != bound[n]-used[n]-offered[n] {
					t.Fatalf("%s: headroom %d", n, l.Headroom("a")[n])
				}
			}
		}
	})
}

// drawOffer picks an outstanding offer (in a reproducible way).
func drawOffer(t *rapid.T, offers map[int]offerState) (int, bool) {
	if len(offers) == 0 {
		return 0, false
	}
	ids := make([]int, 0, len(offers))
	for id := range offers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return rapid.SampledFrom(ids).Draw(t, "offer"), true
}

type offerState struct {
	res  resources.Resources
	part Quantities
}

// pick draws a part of r: a whole or half of some cpus and mem.
func pick(t *rapid.T, r resources.Resources) resources.Resources {
	cpus, mem := r.Scalar("cpus"), r.Scalar("mem")
	c := float64(rapid.IntRange(0, int(cpus*2)).Draw(t, "halfcpus")) / 2
	m := float64(rapid.IntRange(0, int(mem/64)).Draw(t, "mem64")) * 64
	text := ""
	if c > 0 {
		text = fmt.Sprintf("cpus:%g", c)
	}
	if m > 0 {
		if text != "" {
			text += ";"
		}
		text += fmt.Sprintf("mem:%g", m)
	}
	if text == "" {
		return resources.Resources{}
	}
	return resources.MustParse(text)
}
