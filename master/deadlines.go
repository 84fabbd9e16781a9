package master

import (
	"container/heap"
	"hash/fnv"
	"time"
)

// Agent ping, offer expiry, framework failover and short-task deadlines
// are kept in a min-heap so that a loop pass finds the due ones and the
// next one without walking every agent, offer and framework: with 10,000
// agents, the two walks per pass (advance, nextDeadline) were a fifth of
// the new leader's loop during a failover's re-registration storm, and the
// walk over frameworks a few percent of a loaded master's (a pass per
// event when events come one at a time).
//
// The heap is lazy: setting a deadline pushes an entry and never removes
// the old one. An entry is live only while its agent (offer) is still the
// one registered under its ID and its deadline still equals the entry's;
// stale entries are dropped when they reach the top. Each deadline change
// pushes one entry, and stale entries leave the heap no later than their
// own time, so the heap holds at most the changes made within one ping
// (offer) timeout.

// deadline is one heap entry: an agent's next ping, an offer's expiry, a
// disconnected framework's failover timeout, or the end of a short task's
// declaration (longtasks.go).
type deadline struct {
	at        time.Time
	agent     *agent // exactly one of agent, offer, framework and task is set
	offer     *offer
	framework *framework
	task      *task
}

// due are the deadlines that came due in one pass.
type due struct {
	agents     []*agent     // to ping
	offers     []*offer     // expired
	frameworks []*framework // failover timeout expired
	tasks      []*task      // short tasks that overran
}

type deadlineHeap []deadline

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h deadlineHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *deadlineHeap) Push(x any)        { *h = append(*h, x.(deadline)) }
func (h *deadlineHeap) Pop() any {
	old := *h
	d := old[len(old)-1]
	old[len(old)-1] = deadline{} // drop the pointers for the GC
	*h = old[:len(old)-1]
	return d
}

// setNextPing sets when the agent is next pinged (zero: never) and
// indexes it. It is the only way nextPing changes.
func (s *state) setNextPing(a *agent, at time.Time) {
	a.nextPing = at
	if !at.IsZero() {
		heap.Push(&s.deadlines, deadline{at: at, agent: a})
	}
}

// firstPing is when a newly (re)subscribed agent is first pinged: within
// one ping timeout, at a point fixed by its ID. Agents subscribe in
// bursts (a new leader's whole cluster re-registers within seconds), and
// pinging each one a full timeout later kept them in step: every 15 s the
// loop sent a burst of pings and took the burst of PONGs, tens of
// thousands at 50,000 agents, and the calls queued behind them (an ACCEPT,
// a status update) waited up to a second. Spread over the timeout, the
// pings come at the cluster's steady rate. An unresponsive agent is still
// given MaxAgentPingTimeouts full timeouts after its first ping; only that
// first ping moves earlier.
func (s *state) firstPing(a *agent, now time.Time) time.Time {
	h := fnv.New32a()
	h.Write([]byte(a.id))
	const steps = 1024
	frac := time.Duration(h.Sum32()%steps + 1)
	return now.Add(s.cfg.AgentPingTimeout * frac / steps)
}

// setOfferExpiry sets when the offer expires and indexes it. It is the
// only way expires changes.
func (s *state) setOfferExpiry(o *offer, at time.Time) {
	o.expires = at
	if !at.IsZero() {
		heap.Push(&s.deadlines, deadline{at: at, offer: o})
	}
}

// setFailoverAt sets when a disconnected framework is removed (zero:
// never) and indexes it. It is the only way failoverAt changes.
func (s *state) setFailoverAt(fw *framework, at time.Time) {
	fw.failoverAt = at
	if !at.IsZero() {
		heap.Push(&s.deadlines, deadline{at: at, framework: fw})
	}
}

// live says whether the entry still stands for a pending deadline.
func (s *state) live(d deadline) bool {
	switch {
	case d.agent != nil:
		return s.agents[d.agent.id] == d.agent && d.agent.nextPing.Equal(d.at)
	case d.framework != nil:
		return s.frameworks[d.framework.id] == d.framework && d.framework.failoverAt.Equal(d.at)
	case d.task != nil:
		t := d.task
		return !t.recovered && t.shortUntil.Equal(d.at) && s.frameworks[t.fwID] != nil && s.frameworks[t.fwID].tasks[t.id()] == t
	}
	return s.offers[d.offer.id] == d.offer && d.offer.expires.Equal(d.at)
}

// dropStaleDeadlines pops stale entries off the top of the heap.
func (s *state) dropStaleDeadlines() {
	for len(s.deadlines) > 0 && !s.live(s.deadlines[0]) {
		heap.Pop(&s.deadlines)
	}
}

// dueDeadlines pops every live entry due at now and returns what came due
// (each once, in no order).
func (s *state) dueDeadlines(now time.Time) due {
	var out due
	if len(s.deadlines) == 0 || now.Before(s.deadlines[0].at) {
		return out
	}
	seenAgent := map[*agent]bool{}
	seenOffer := map[*offer]bool{}
	seenFramework := map[*framework]bool{}
	for len(s.deadlines) > 0 && !now.Before(s.deadlines[0].at) {
		d := heap.Pop(&s.deadlines).(deadline)
		if !s.live(d) {
			continue
		}
		switch {
		case d.agent != nil && !seenAgent[d.agent]:
			seenAgent[d.agent] = true
			out.agents = append(out.agents, d.agent)
		case d.offer != nil && !seenOffer[d.offer]:
			seenOffer[d.offer] = true
			out.offers = append(out.offers, d.offer)
		case d.framework != nil && !seenFramework[d.framework]:
			seenFramework[d.framework] = true
			out.frameworks = append(out.frameworks, d.framework)
		case d.task != nil:
			// Live at most once: a task's deadline is set once.
			out.tasks = append(out.tasks, d.task)
		}
	}
	return out
}

// nextIndexedDeadline is the earliest live deadline of the heap, zero if
// none.
func (s *state) nextIndexedDeadline() time.Time {
	s.dropStaleDeadlines()
	if len(s.deadlines) == 0 {
		return time.Time{}
	}
	return s.deadlines[0].at
}
