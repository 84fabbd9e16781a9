package master

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"mezzo/api/protocol"
)

// scanDeadline is the naive oracle for the deadline heap: the earliest
// agent ping or offer expiry found by walking every agent and offer.
func scanDeadline(s *state) time.Time {
	var next time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, a := range s.agents {
		consider(a.nextPing)
	}
	for _, o := range s.offers {
		consider(o.expires)
	}
	return next
}

// checkDeadlines compares the heap against the oracle and checks that
// advance left nothing overdue and that stale entries stay bounded.
func checkDeadlines(t *rapid.T, h *harness, step string) {
	got, want := h.s.nextIndexedDeadline(), scanDeadline(h.s)
	if !got.Equal(want) {
		t.Fatalf("%s: heap next deadline %v, scan %v", step, got, want)
	}
	if !want.IsZero() && !h.now.Before(want) {
		t.Fatalf("%s: deadline %v overdue at %v after advance", step, want, h.now)
	}
	// Every live agent and offer has at most one live entry plus the
	// stale ones pushed since; a generous bound catches a leak.
	if n, live := len(h.s.deadlines), len(h.s.agents)+len(h.s.offers); n > 8*live+64 {
		t.Fatalf("%s: heap holds %d entries for %d agents and offers", step, n, live)
	}
}

// TestDeadlineHeapMatchesScan drives agents (registering, answering or
// missing pings, disconnecting, becoming unreachable) and expiring offers
// through random steps and checks after each that the heap agrees with a
// walk over all agents and offers, and the cached sorted agent IDs with a
// fresh sort.
func TestDeadlineHeapMatchesScan(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := newHarness(t, func(c *Config) { c.OfferTimeout = 10 * time.Second })
		f := h.subscribe(fwInfo("f"))
		var agents []*fakeAgent
		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			var step string
			switch op := rapid.IntRange(0, 5).Draw(rt, "op"); {
			case op == 0 || len(agents) == 0:
				a := h.addAgent(fmt.Sprintf("a%d", len(agents)), "cpus:4;mem:512")
				agents = append(agents, a)
				step = "add agent"
			case op == 1:
				a := agents[rapid.IntRange(0, len(agents)-1).Draw(rt, "agent")]
				if h.s.agents[a.id] != nil && h.s.agents[a.id].active() {
					h.offer(f, a, "*", "cpus:1")
					f.drain()
				}
				step = "offer"
			case op == 2:
				a := agents[rapid.IntRange(0, len(agents)-1).Draw(rt, "agent")]
				if h.s.agents[a.id] != nil {
					a.call(&protocol.AgentCall{Type: protocol.AgentCall_PONG.Enum()})
				}
				step = "pong"
			case op == 3:
				a := agents[rapid.IntRange(0, len(agents)-1).Draw(rt, "agent")]
				a.st.Close()
				h.settle()
				step = "disconnect"
			case op == 4:
				// Re-subscribe an agent under its ID (a reconnect).
				a := agents[rapid.IntRange(0, len(agents)-1).Draw(rt, "agent")]
				if h.s.agents[a.id] != nil {
					sub := agentSub(h.s.agents[a.id].info.GetHostname(), "cpus:4;mem:512")
					sub.AgentInfo.Id = agentID(a.id)
					st, err := h.s.agentSubscribe(sub, "", h.now)
					if err == nil {
						h.settle()
						a.st = st
					}
				}
				step = "resubscribe"
			default:
				d := time.Duration(rapid.IntRange(1, 40).Draw(rt, "seconds")) * time.Second
				h.advance(d)
				step = "advance " + d.String()
			}
			h.advance(0)
			for _, a := range agents {
				a.drain()
			}
			f.drain()
			checkDeadlines(rt, h, step)
			// The cached sorted agent IDs match a fresh sort.
			if got, want := h.s.agentIDs(), sortedKeys(h.s.agents); !slices.Equal(got, want) {
				rt.Fatalf("%s: cached agent IDs %v, fresh %v", step, got, want)
			}
		}
	})
}
