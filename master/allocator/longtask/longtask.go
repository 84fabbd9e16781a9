// Package longtask is the allocation policy for long tasks of the Mesos
// tech report (§3.3.2): each agent's resources that may run long tasks are
// bounded (a fraction of its total), so that long tasks cannot fill a node
// and keep the frameworks of short tasks from it; what is still available
// for long tasks on the agent is reported in each offer, and a long task
// may use no more than its offers' long part. Short tasks may use
// anything.
//
// A Ledger keeps, per agent, the bound, the resources held by running
// long tasks, and those set aside as the long part of outstanding offers.
// It is plain synchronous state: the master calls it from its loop when it
// turns allocations into offers, launches tasks, and sees them end. Only
// scalar, non-revocable resources are bounded.
package longtask

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"mezzo/api/mesos"
	"mezzo/resources"
)

// Quantities are scalar quantities by resource name, in thousandths (Mesos
// scalars have three decimals, so sums and differences are exact).
type Quantities map[string]int64

// Of returns the non-revocable scalar quantities of r.
func Of(r resources.Resources) Quantities {
	q := Quantities{}
	for name, x := range r.NonRevocable().Scalars().Quantities() {
		if m := milli(x); m != 0 {
			q[name] += m
		}
	}
	return q
}

func milli(x float64) int64 { return int64(math.Round(x * 1000)) }

// Value is the quantity of name in natural units.
func (q Quantities) Value(name string) float64 { return float64(q[name]) / 1000 }

// Names lists the names present, sorted.
func (q Quantities) Names() []string {
	out := make([]string, 0, len(q))
	for n := range q {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Covers reports whether q holds at least the non-revocable scalars of r.
func (q Quantities) Covers(r resources.Resources) bool {
	for name, x := range Of(r) {
		if q[name] < x {
			return false
		}
	}
	return true
}

// Add returns q + o (a new map).
func (q Quantities) Add(o Quantities) Quantities {
	out := Quantities{}
	for n, x := range q {
		out[n] = x
	}
	for n, x := range o {
		out[n] += x
	}
	return out
}

// sub returns q - o (a new map), names of q only.
func (q Quantities) sub(o Quantities) Quantities {
	out := Quantities{}
	for n, x := range q {
		out[n] = x - o[n]
	}
	return out
}

// String renders "cpus:2;mem:1024" in name order (zeros included).
func (q Quantities) String() string {
	var b strings.Builder
	for i, n := range q.Names() {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(n)
		b.WriteByte(':')
		b.WriteString(strconv.FormatFloat(q.Value(n), 'f', -1, 64))
	}
	return b.String()
}

// Ledger is the long-task books of every agent.
type Ledger struct {
	fraction float64
	agents   map[string]*book
}

// book is one agent's: bound is fraction × its total; used is held by
// long tasks (and short tasks that outlived their declaration); offered
// is the long part of its outstanding offers. used + offered stays within
// bound, except that tasks the master learns of from the agent (after a
// failover, or a short task overrunning) count whatever they hold.
type book struct {
	bound, used, offered Quantities
}

// New returns a ledger bounding each agent's long tasks to fraction of its
// total (0 < fraction ≤ 1).
func New(fraction float64) (*Ledger, error) {
	if !(fraction > 0 && fraction <= 1) {
		return nil, errors.New("longtask: the fraction must be in (0, 1]")
	}
	return &Ledger{fraction: fraction, agents: map[string]*book{}}, nil
}

// SetAgent sets (or resets, after its total changed) an agent's bound to
// the fraction of total's scalars, keeping what it holds.
func (l *Ledger) SetAgent(id string, total resources.Resources) {
	b := l.agents[id]
	if b == nil {
		b = &book{used: Quantities{}, offered: Quantities{}}
		l.agents[id] = b
	}
	b.bound = Quantities{}
	for n, x := range Of(total) {
		b.bound[n] = int64(math.Floor(float64(x) * l.fraction))
	}
}

// RemoveAgent forgets an agent.
func (l *Ledger) RemoveAgent(id string) { delete(l.agents, id) }

// Headroom is what may still be set aside for long tasks on the agent:
// bound − used − offered, never negative (nil for an unknown agent).
func (l *Ledger) Headroom(id string) Quantities {
	b := l.agents[id]
	if b == nil {
		return nil
	}
	h := b.bound.sub(b.used).sub(b.offered)
	for n, x := range h {
		if x < 0 {
			h[n] = 0
		}
	}
	return h
}

// Bound, Used and Offered are the agent's books (nil for an unknown
// agent), for reports.
func (l *Ledger) Bound(id string) Quantities {
	return l.get(id, func(b *book) Quantities { return b.bound })
}

// Used is what long tasks hold on the agent.
func (l *Ledger) Used(id string) Quantities {
	return l.get(id, func(b *book) Quantities { return b.used })
}

// Offered is the long part of the agent's outstanding offers.
func (l *Ledger) Offered(id string) Quantities {
	return l.get(id, func(b *book) Quantities { return b.offered })
}

func (l *Ledger) get(id string, f func(*book) Quantities) Quantities {
	b := l.agents[id]
	if b == nil {
		return nil
	}
	return Quantities{}.Add(f(b))
}

// Offer sets aside the long part of an offer of r on the agent: per
// bounded name, the least of what is offered and the headroom. Every
// bounded name is present (0: no room). Give it back with Unoffer when
// the offer goes (declined, rescinded, accepted).
func (l *Ledger) Offer(id string, r resources.Resources) Quantities {
	b := l.agents[id]
	if b == nil {
		return Quantities{}
	}
	h, off := l.Headroom(id), Of(r)
	part := Quantities{}
	for n := range b.bound {
		part[n] = min(h[n], off[n])
		b.offered[n] += part[n]
	}
	return part
}

// Unoffer gives back an offer's long part.
func (l *Ledger) Unoffer(id string, part Quantities) {
	if b := l.agents[id]; b != nil {
		for n, x := range part {
			b.offered[n] -= x
		}
	}
}

// Hold counts r as held by a long task on the agent (launched on an
// offer's long part, reported by the agent, or a short task outliving its
// declaration); Release gives it back when the task ends.
func (l *Ledger) Hold(id string, r resources.Resources) {
	if b := l.agents[id]; b != nil {
		for n, x := range Of(r) {
			if _, bounded := b.bound[n]; bounded {
				b.used[n] += x
			}
		}
	}
}

// Release gives back what Hold counted.
func (l *Ledger) Release(id string, r resources.Resources) {
	if b := l.agents[id]; b != nil {
		for n, x := range Of(r) {
			if _, bounded := b.bound[n]; bounded {
				b.used[n] -= x
			}
		}
	}
}

// Budget is what the long tasks of one ACCEPT may use: the long parts of
// its offers.
type Budget struct {
	l     *Ledger
	agent string
	left  Quantities
}

// Accept starts an ACCEPT of offers on the agent whose long parts are
// parts: they stop being set aside (the offers are gone) and become the
// budget of the ACCEPT's long tasks.
func (l *Ledger) Accept(agent string, parts ...Quantities) *Budget {
	b := &Budget{l: l, agent: agent, left: Quantities{}}
	for _, p := range parts {
		l.Unoffer(agent, p)
		b.left = b.left.Add(p)
	}
	return b
}

// Launch admits a long task of r: if the budget covers it, the task holds
// r on the agent; otherwise an error says why (the task must not run).
func (b *Budget) Launch(r resources.Resources) error {
	if !b.left.Covers(r) {
		return fmt.Errorf("Long task uses %s, more than the %s its offers leave for long tasks (agent %s bounds long tasks to %s)",
			Of(r), b.left, b.agent, b.l.Bound(b.agent))
	}
	b.left = b.left.sub(Of(r))
	b.l.Hold(b.agent, r)
	return nil
}

// Label is the TaskInfo label that declares a task "long" or "short".
const Label = "mezzo.task_length"

// Declare reads a task's declaration: the label says "long" or "short";
// without it, a task with max_completion_time is short and any other is
// long (so a framework that knows nothing of the distinction is bounded,
// never revoked for it). A short task is declared to end within
// max_completion_time, or defaultShort when it has none. An unknown label
// value is an error.
func Declare(labels *mesos.Labels, maxCompletion *mesos.DurationInfo, defaultShort time.Duration) (long bool, within time.Duration, err error) {
	short := maxCompletion.GetNanoseconds() > 0
	for _, l := range labels.GetLabels() {
		if l.GetKey() != Label {
			continue
		}
		switch l.GetValue() {
		case "long":
			return true, 0, nil
		case "short":
			short = true
		default:
			return false, 0, fmt.Errorf("Label '%s' must be 'long' or 'short', not '%s'", Label, l.GetValue())
		}
	}
	if !short {
		return true, 0, nil
	}
	if ns := maxCompletion.GetNanoseconds(); ns > 0 {
		return false, time.Duration(ns), nil
	}
	return false, defaultShort, nil
}
