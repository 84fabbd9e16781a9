package master

import (
	"sort"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/protocol"
)

// afterBatch defers f to the end of the loop iteration, after the
// published snapshot is marked stale (replies to callers, so that a caller
// who got an answer sees its change in Snapshot()).
func (s *state) afterBatch(f func()) { s.after = append(s.after, f) }

func (s *state) runAfterBatch() {
	after := s.after
	s.after = nil
	for _, f := range after {
		f()
	}
}

// advance fires every deadline that is due at now: offer timeouts,
// framework failover timeouts and agent pings. Deadlines missed by more
// than one period (a stalled loop, a fake clock jumping) are all applied.
func (s *state) advance(now time.Time) {
	if !s.reregisterDeadline.IsZero() && !now.Before(s.reregisterDeadline) {
		s.expectedAgentsTimedOut(now)
	}
	s.maybeResumeAllocation(now)
	defer s.runRemovals(now)
	d := s.dueDeadlines(now)
	sort.Slice(d.tasks, func(i, j int) bool { return d.tasks[i].id() < d.tasks[j].id() })
	for _, t := range d.tasks {
		s.shortOverran(t)
	}
	sort.Slice(d.offers, func(i, j int) bool { return d.offers[i].id < d.offers[j].id })
	for _, o := range d.offers {
		// An earlier rescind in this pass may have removed it.
		if s.offers[o.id] == o {
			s.rescindOffer(o, true)
		}
	}

	sort.Slice(d.frameworks, func(i, j int) bool { return d.frameworks[i].id < d.frameworks[j].id })
	for _, fw := range d.frameworks {
		// An earlier removal in this pass may have removed it.
		if s.frameworks[fw.id] == fw && !fw.failoverAt.IsZero() {
			s.log.Info("framework failover timeout expired; removing", "framework", fw.id)
			s.removeFramework(fw, now)
		}
	}

	s.retryOperationStatuses(now)

	sort.Slice(d.agents, func(i, j int) bool { return d.agents[i].id < d.agents[j].id })
	for _, a := range d.agents {
		// Removing a framework above must not have removed the agent,
		// but check rather than ping a stale one.
		if s.agents[a.id] == a {
			s.pingAgent(a, now)
		}
	}
}

// pingAgent runs the ping rounds that are due. Each round first counts
// the previous ping as missed if no PONG came back (a disconnected agent
// cannot answer), then pings again. MaxAgentPingTimeouts consecutive misses
// make the agent unreachable.
func (s *state) pingAgent(a *agent, now time.Time) {
	for !a.nextPing.IsZero() && !now.Before(a.nextPing) {
		if a.pongPending || !a.connected {
			a.misses++
			if a.misses >= s.cfg.MaxAgentPingTimeouts {
				s.setNextPing(a, time.Time{})
				s.queueRemoval(a.id, func(now time.Time) {
					if s.agents[a.id] == a && a.misses >= s.cfg.MaxAgentPingTimeouts {
						s.markUnreachable(a, "health check timed out", now)
					}
				})
				return
			}
		}
		s.setNextPing(a, a.nextPing.Add(s.cfg.AgentPingTimeout))
		if a.connected {
			a.pingSeq++
			a.pongPending = true
			ev := s.agentEvent(protocol.AgentEvent_PING)
			ev.Ping = &protocol.AgentEvent_Ping{Sequence: proto.Uint64(a.pingSeq)}
			s.sendAgent(a, ev)
		}
	}
}

// nextDeadline is the earliest pending deadline, zero if none.
func (s *state) nextDeadline() time.Time {
	var next time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	// Agent pings, offer expiries, failover timeouts, short tasks
	// (deadlines.go).
	consider(s.nextIndexedDeadline())
	consider(s.reregisterDeadline)
	if s.allocPause != nil {
		consider(s.allocPause.until)
	}
	consider(s.removalDeadline())
	consider(s.nextOperationRetry())
	return next
}

// shutdown ends every subscription when the master stops.
func (s *state) shutdown() {
	for st := range s.admitting {
		st.q.close()
	}
	s.shutdownStreams()
	for _, f := range s.onDepose {
		f()
	}
	s.onDepose = nil
	s.runAfterBatch()
}
