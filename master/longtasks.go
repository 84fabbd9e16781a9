package master

import (
	"container/heap"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/master/allocator/longtask"
	"mezzo/resources"
)

// Long and short tasks (tech report §3.3.2, Config.LongTaskFraction): the
// master keeps the allocator's long-task books (longtask.Ledger) as it
// turns allocations into offers, launches tasks and sees them end. An
// offer carries its long part as scalar attributes named
// LongTaskAttributePrefix + resource name; a long task whose resources
// exceed the long part of the offers it is launched on gets TASK_ERROR.
// A short task that outlives its declaration counts as long from then on
// (master/tasks_short_overrun) and is the first a revocation kills.

// LongTaskAttributePrefix names the offer attributes that carry an offer's
// long part: "mezzo_long_task_cpus", "mezzo_long_task_mem", ... (SCALAR),
// one per scalar resource the agent has, 0 when there is no room.
const LongTaskAttributePrefix = "mezzo_long_task_"

// longSetAgent (re)sets the agent's long-task bound from its total.
func (s *state) longSetAgent(a *agent) {
	if s.long != nil {
		s.long.SetAgent(a.id, a.total)
	}
}

// longRemoveAgent forgets the agent's books (its tasks were completed
// first, releasing what they held).
func (s *state) longRemoveAgent(id string) {
	if s.long != nil {
		s.long.RemoveAgent(id)
	}
}

// longOffer sets aside the long part of a new offer.
func (s *state) longOffer(o *offer) {
	if s.long != nil {
		o.long = s.long.Offer(o.agentID, o.res)
	}
}

// longUnoffer gives back a dropped offer's long part (once).
func (s *state) longUnoffer(o *offer) {
	if s.long != nil && o.long != nil {
		s.long.Unoffer(o.agentID, o.long)
		o.long = nil
	}
}

// longAttributes returns the agent's attributes followed by the offer's
// long part, or the agent's alone when long tasks are not bounded.
func longAttributes(agentAttrs []*mesos.Attribute, part longtask.Quantities) []*mesos.Attribute {
	if part == nil {
		return agentAttrs
	}
	out := slices.Clip(agentAttrs)
	for _, name := range part.Names() {
		out = append(out, &mesos.Attribute{
			Name:   proto.String(LongTaskAttributePrefix + name),
			Type:   mesos.Value_SCALAR.Enum(),
			Scalar: &mesos.Value_Scalar{Value: proto.Float64(part.Value(name))},
		})
	}
	return out
}

// declare reads a task's declaration for the launcher (long-task bounds
// on): long, or short with the deadline of its declaration.
func (l *launcher) declare(ti *mesos.TaskInfo) (long bool, until time.Time, err error) {
	if l.s.long == nil {
		return false, time.Time{}, nil
	}
	long, within, err := longtask.Declare(ti.GetLabels(), ti.GetMaxCompletionTime(), l.s.cfg.ShortTaskDuration)
	if err != nil || long {
		return long, time.Time{}, err
	}
	return false, l.now.Add(within), nil
}

// holdLong counts r on the launcher's long-task budget; the error says
// why a long task does not fit.
func (l *launcher) holdLong(r resources.Resources) error {
	return l.longBudget.Launch(r)
}

// markLong records how task t is declared: a long task holds its
// resources on the agent's books (the launcher's budget or, for a task the
// agent reported, whatever it holds); a short one gets a deadline.
func (s *state) markLong(t *task, long bool, shortUntil time.Time) {
	switch {
	case s.long == nil:
	case long:
		t.longHeld = true
	default:
		t.shortUntil = shortUntil
		heap.Push(&s.deadlines, deadline{at: shortUntil, task: t})
	}
}

// adoptLong accounts a task the agent reported (re-registration after a
// failover): declared long (or not declared) it holds its resources,
// whatever the bound; declared short, the master gives it a full short
// duration from now, not knowing when it started.
func (s *state) adoptLong(t *task, now time.Time) {
	if s.long == nil || t.recovered {
		return
	}
	long, within, err := longtask.Declare(t.proto.GetLabels(), nil, s.cfg.ShortTaskDuration)
	if err != nil || long {
		s.long.Hold(t.agentID, t.res)
		s.markLong(t, true, time.Time{})
		return
	}
	s.markLong(t, false, now.Add(within))
}

// releaseLong gives back what a long (or overrun) task held, once.
func (s *state) releaseLong(t *task) {
	if t.longHeld {
		t.longHeld = false
		s.long.Release(t.agentID, t.res)
	}
}

// shortOverran handles a short task whose declaration expired while it
// runs: it counts as long from now on.
func (s *state) shortOverran(t *task) {
	t.shortUntil = time.Time{}
	t.overran = true
	s.long.Hold(t.agentID, t.res)
	t.longHeld = true
	s.count("master/tasks_short_overrun")
	s.log.Info("short task outlived its declaration; it now counts as long and is revoked first",
		"framework", t.fwID, "task", t.id(), "agent", t.agentID)
}
