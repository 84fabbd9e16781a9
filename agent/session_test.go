package agent

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"mezzo/api/mesos"
	"mezzo/api/protocol"

	"google.golang.org/protobuf/proto"
)

// recordingSession records what the session asks of the world, one line
// per effect, so that tests read as transcripts (STYLE.md item 12).
type recordingSession struct {
	log   []string
	tasks bool // holdsTasks
}

func (r *recordingSession) add(f string, args ...any) { r.log = append(r.log, fmt.Sprintf(f, args...)) }

func (r *recordingSession) dial(attempt uint64, leader string, epoch uint64) {
	r.add("dial attempt=%d leader=%q epoch=%d", attempt, leader, epoch)
}
func (r *recordingSession) hangUp() { r.add("hang-up") }
func (r *recordingSession) registered(attempt uint64, master, agentID string) {
	r.add("registered attempt=%d master=%s agent=%s", attempt, master, agentID)
}
func (r *recordingSession) send(c *protocol.AgentCall) {
	r.add("send %s %d", c.GetType(), c.GetPong().GetSequence())
}
func (r *recordingSession) checkpointEpoch(e uint64) { r.add("checkpoint-epoch %d", e) }
func (r *recordingSession) checkpointAgent(id string, e uint64) {
	r.add("checkpoint-agent %s epoch=%d", id, e)
}
func (r *recordingSession) forgetIdentity()              { r.add("forget-identity") }
func (r *recordingSession) fail(err error)               { r.add("fail %v", err) }
func (r *recordingSession) armRetry(d time.Duration)     { r.add("arm-retry %v", d) }
func (r *recordingSession) armPingCheck(d time.Duration) { r.add("arm-ping %v", d) }
func (r *recordingSession) disarm()                      { r.add("disarm") }

// take returns the effects recorded since the last take.
func (r *recordingSession) take() []string {
	out := r.log
	r.log = nil
	return out
}

// newTestSession is a session whose jitter always picks the whole backoff.
func newTestSession() (*session, *recordingSession) {
	r := &recordingSession{}
	s := &session{
		sink:           r,
		rand:           func(n int64) int64 { return n },
		initialBackoff: time.Second,
		maxBackoff:     4 * time.Second,
		holdsTasks:     func() bool { return r.tasks },
	}
	return s, r
}

func subscribedEv(epoch uint64, id string, interval float64, missed uint32) *protocol.AgentEvent {
	return &protocol.AgentEvent{
		Type:  protocol.AgentEvent_SUBSCRIBED.Enum(),
		Epoch: proto.Uint64(epoch),
		Subscribed: &protocol.AgentEvent_Subscribed{
			AgentId:             agentIDProto(id),
			PingIntervalSeconds: proto.Float64(interval),
			MaxMissed:           proto.Uint32(missed),
		},
	}
}

func workEv(t protocol.AgentEvent_Type, epoch uint64) *protocol.AgentEvent {
	return &protocol.AgentEvent{Type: t.Enum(), Epoch: proto.Uint64(epoch)}
}

func pingEv(epoch, seq uint64) *protocol.AgentEvent {
	return &protocol.AgentEvent{Type: protocol.AgentEvent_PING.Enum(), Epoch: proto.Uint64(epoch),
		Ping: &protocol.AgentEvent_Ping{Sequence: proto.Uint64(seq)}}
}

func wantEffects(t *testing.T, r *recordingSession, want ...string) {
	t.Helper()
	if got := r.take(); !slices.Equal(got, want) {
		t.Fatalf("effects:\n  got  %s\n  want %s", strings.Join(got, "\n       "), strings.Join(want, "\n       "))
	}
}

// A new agent registers: SUBSCRIBE without an ID, then SUBSCRIBED assigns
// one, which is checkpointed before the agent counts as registered; the
// failure detector is armed for interval × max missed.
func TestSessionRegisters(t *testing.T) {
	s, r := newTestSession()
	t0 := time.Unix(1000, 0)
	s.connect(0, t0)
	if s.phase != sessRegistering {
		t.Fatalf("phase %v, want REGISTERING", s.phase)
	}
	wantEffects(t, r, "disarm", "hang-up", `dial attempt=1 leader="" epoch=0`)
	s.streamOpened(1, "m1:5050")
	if v, why := s.event(1, workEv(protocol.AgentEvent_RUN_TASK, 1), t0); v != dropEvent || why != "received before SUBSCRIBED" {
		t.Fatalf("RUN_TASK before SUBSCRIBED: %v %q", v, why)
	}
	// The epoch is adopted but not checkpointed: there is no agent ID yet
	// to file it under.
	wantEffects(t, r)
	s.event(1, subscribedEv(1, "S1", 2, 3), t0)
	wantEffects(t, r, "checkpoint-agent S1 epoch=1", "arm-ping 6s", "registered attempt=1 master=m1:5050 agent=S1")
	if !s.registeredNow() || s.agentID != "S1" || s.leader != "m1:5050" {
		t.Fatalf("after SUBSCRIBED: phase %v id %q leader %q", s.phase, s.agentID, s.leader)
	}
	if v, _ := s.event(1, workEv(protocol.AgentEvent_RUN_TASK, 1), t0); v != dispatchEvent {
		t.Fatalf("RUN_TASK after SUBSCRIBED not dispatched")
	}
	// PING is the session's: PONG with the same sequence.
	if v, _ := s.event(1, pingEv(1, 7), t0); v != dropEvent {
		t.Fatal("PING dispatched")
	}
	wantEffects(t, r, "send PONG 7")
}

// A lost stream re-registers under the known ID, from the last leader,
// after a backoff that doubles up to the cap and resets once registered.
func TestSessionReregistersWithBackoff(t *testing.T) {
	s, r := newTestSession()
	t0 := time.Unix(1000, 0)
	s.connect(0, t0)
	s.streamOpened(1, "m1:5050")
	s.event(1, subscribedEv(3, "S1", 15, 5), t0)
	r.take()

	var retries []string
	for i := range 4 {
		attempt := s.attempt
		if g, _ := s.streamClosed(attempt, t0); g == closeIgnored {
			t.Fatalf("round %d: close of the current stream ignored", i)
		}
		if s.phase != sessDisconnected {
			t.Fatalf("phase %v after loss", s.phase)
		}
		got := r.take()
		retries = append(retries, got[len(got)-1])
		s.retry(t0)
		if s.phase != sessReregistering {
			t.Fatalf("phase %v after retry, want REREGISTERING", s.phase)
		}
		if got := r.take(); got[len(got)-1] != fmt.Sprintf(`dial attempt=%d leader="m1:5050" epoch=3`, s.attempt) {
			t.Fatalf("retry dialled %v", got)
		}
	}
	want := []string{"arm-retry 1s", "arm-retry 2s", "arm-retry 4s", "arm-retry 4s"}
	if !slices.Equal(retries, want) {
		t.Fatalf("backoffs %v, want %v", retries, want)
	}
	// A close reported by an abandoned attempt changes nothing.
	if g, _ := s.streamClosed(s.attempt-1, t0); g != closeIgnored {
		t.Fatal("stale close acted on")
	}
	s.streamOpened(s.attempt, "m2:5050")
	s.event(s.attempt, subscribedEv(3, "S1", 15, 5), t0)
	if s.leader != "m2:5050" || s.backoff != 0 {
		t.Fatalf("after re-registration: leader %q backoff %v", s.leader, s.backoff)
	}
	r.take()
	s.streamClosed(s.attempt, t0)
	if got := r.take(); got[len(got)-1] != "arm-retry 1s" {
		t.Fatalf("backoff not reset: %v", got)
	}
}

// Fencing (DESIGN.md): events from an older master epoch are dropped, a
// newer epoch is adopted and checkpointed once the agent has an ID, and
// events of an abandoned stream are dropped whatever their epoch.
func TestSessionEpochFencing(t *testing.T) {
	s, r := newTestSession()
	t0 := time.Unix(1000, 0)
	s.connect(4, t0) // recovered epoch 4
	wantEffects(t, r, "disarm", "hang-up", `dial attempt=1 leader="" epoch=4`)
	if v, why := s.event(1, subscribedEv(3, "S1", 15, 5), t0); v != dropEvent || !strings.Contains(why, "stale master epoch 3 < 4") {
		t.Fatalf("stale SUBSCRIBED: %v %q", v, why)
	}
	if s.registeredNow() {
		t.Fatal("registered by a stale master")
	}
	wantEffects(t, r)
	s.event(1, subscribedEv(4, "S1", 15, 5), t0)
	r.take()
	cases := []struct {
		name    string
		attempt uint64
		epoch   uint64
		want    eventVerdict
		effects []string
	}{
		{"same epoch", 1, 4, dispatchEvent, nil},
		{"older epoch", 1, 3, dropEvent, nil},
		{"newer epoch", 1, 6, dispatchEvent, []string{"checkpoint-epoch 6"}},
		{"the old epoch again", 1, 4, dropEvent, nil},
		{"abandoned stream", 0, 9, dropEvent, nil},
	}
	for _, c := range cases {
		v, _ := s.event(c.attempt, workEv(protocol.AgentEvent_KILL_TASK, c.epoch), t0)
		if v != c.want {
			t.Errorf("%s: verdict %v, want %v", c.name, v, c.want)
		}
		if got := r.take(); !slices.Equal(got, c.effects) {
			t.Errorf("%s: effects %v, want %v", c.name, got, c.effects)
		}
	}
	if s.epoch != 6 {
		t.Fatalf("epoch %d, want 6", s.epoch)
	}
	// The next SUBSCRIBE carries the highest epoch.
	s.streamClosed(1, t0)
	s.retry(t0)
	if got := r.take(); got[len(got)-1] != `dial attempt=3 leader="" epoch=6` {
		t.Fatalf("resubscribe: %v", got)
	}
}

// The failure detector: silence for the whole ping timeout reconnects;
// an event in between re-arms the check for the rest of the window.
func TestSessionPingTimeout(t *testing.T) {
	s, r := newTestSession()
	t0 := time.Unix(1000, 0)
	s.connect(0, t0)
	s.event(1, subscribedEv(1, "S1", 10, 3), t0)
	wantEffects(t, r, "disarm", "hang-up", `dial attempt=1 leader="" epoch=0`,
		"checkpoint-agent S1 epoch=1", "arm-ping 30s", "registered attempt=1 master= agent=S1")
	s.event(1, pingEv(1, 1), t0.Add(20*time.Second))
	r.take()
	if s.pingCheck(t0.Add(30 * time.Second)) {
		t.Fatal("gave up 10s after the last event")
	}
	wantEffects(t, r, "arm-ping 20s")
	if !s.pingCheck(t0.Add(50 * time.Second)) {
		t.Fatal("kept a master silent for 30s")
	}
	wantEffects(t, r, "disarm", "hang-up", "arm-retry 1s")
	if s.registeredNow() {
		t.Fatal("still registered")
	}
	// A check that fires after the loss is a no-op.
	if s.pingCheck(t0.Add(time.Hour)) {
		t.Fatal("ping check acted while disconnected")
	}
	wantEffects(t, r)
}

// SHUTDOWN, ERROR, a 403 on a call, and SUBSCRIBED with another ID.
func TestSessionEndings(t *testing.T) {
	t0 := time.Unix(1000, 0)
	registered := func(tasks bool) (*session, *recordingSession) {
		s, r := newTestSession()
		r.tasks = tasks
		s.connect(0, t0)
		s.event(1, subscribedEv(1, "S1", 15, 5), t0)
		r.take()
		return s, r
	}

	t.Run("shutdown forgets the identity and stops for good", func(t *testing.T) {
		s, r := registered(false)
		s.event(1, &protocol.AgentEvent{Type: protocol.AgentEvent_SHUTDOWN.Enum(), Epoch: proto.Uint64(1),
			Shutdown: &protocol.AgentEvent_Shutdown{Message: proto.String("removed")}}, t0)
		wantEffects(t, r, "forget-identity", "disarm", "hang-up", "fail the master shut this agent down: removed")
		s.retry(t0)
		s.scheduleReconnect()
		wantEffects(t, r) // a shut-down session never dials again
		if s.phase != sessShutDown {
			t.Fatalf("phase %v", s.phase)
		}
	})
	t.Run("error reconnects", func(t *testing.T) {
		s, r := registered(false)
		v, why := s.event(1, &protocol.AgentEvent{Type: protocol.AgentEvent_ERROR.Enum(), Epoch: proto.Uint64(1),
			Error: &protocol.AgentEvent_Error{Message: proto.String("boom")}}, t0)
		if v != dropEvent || !strings.Contains(why, "boom") {
			t.Fatalf("ERROR: %v %q", v, why)
		}
		wantEffects(t, r, "disarm", "hang-up", "arm-retry 1s")
	})
	t.Run("a refused call re-registers only when registered on that stream", func(t *testing.T) {
		s, r := registered(false)
		if s.callRefused(0) {
			t.Fatal("refusal on an old stream acted on")
		}
		if !s.callRefused(1) {
			t.Fatal("refusal ignored")
		}
		wantEffects(t, r, "disarm", "hang-up", "arm-retry 1s")
		if s.callRefused(s.attempt) {
			t.Fatal("refusal acted on while disconnected")
		}
	})
	t.Run("a new agent id without tasks is adopted", func(t *testing.T) {
		s, r := registered(false)
		s.streamClosed(1, t0)
		s.retry(t0)
		r.take()
		s.event(s.attempt, subscribedEv(1, "S2", 15, 5), t0)
		if s.agentID != "S2" || !s.registeredNow() {
			t.Fatalf("id %q phase %v", s.agentID, s.phase)
		}
	})
	t.Run("a new agent id with tasks is fatal", func(t *testing.T) {
		s, r := registered(true)
		s.streamClosed(1, t0)
		s.retry(t0)
		r.take()
		s.event(s.attempt, subscribedEv(1, "S2", 15, 5), t0)
		wantEffects(t, r, "disarm", "hang-up", "fail the master assigned agent id S2, but this agent runs tasks as S1")
		if s.agentID != "S1" {
			t.Fatalf("id %q", s.agentID)
		}
	})
	t.Run("SUBSCRIBED without an id reconnects", func(t *testing.T) {
		s, r := newTestSession()
		s.connect(0, t0)
		r.take()
		s.event(1, &protocol.AgentEvent{Type: protocol.AgentEvent_SUBSCRIBED.Enum(), Epoch: proto.Uint64(1),
			Subscribed: &protocol.AgentEvent_Subscribed{MasterInfo: &mesos.MasterInfo{}}}, t0)
		wantEffects(t, r, "disarm", "hang-up", "arm-retry 1s")
	})
}

// Failed attempts are graded for the log: quiet for quietRegistration
// after the agent found itself unregistered (start-up, a failover), then
// overdue; the loss of a registered stream is its own grade and restarts
// the quiet period.
func TestSessionGradesFailedAttempts(t *testing.T) {
	s, _ := newTestSession()
	t0 := time.Unix(1000, 0)
	s.connect(0, t0)
	if g, _ := s.streamClosed(s.attempt, t0.Add(10*time.Second)); g != closeStillQuiet {
		t.Fatalf("first failure: %v", g)
	}
	s.retry(t0.Add(20 * time.Second))
	if g, down := s.streamClosed(s.attempt, t0.Add(31*time.Second)); g != closeOverdue || down != 31*time.Second {
		t.Fatalf("after the quiet period: %v %v", g, down)
	}
	s.retry(t0.Add(40 * time.Second))
	s.event(s.attempt, subscribedEv(1, "S1", 15, 5), t0.Add(40*time.Second))
	t1 := t0.Add(time.Hour)
	if g, _ := s.streamClosed(s.attempt, t1); g != closeLostMaster {
		t.Fatalf("loss of the registered stream: %v", g)
	}
	s.retry(t1)
	if g, _ := s.streamClosed(s.attempt, t1.Add(29*time.Second)); g != closeStillQuiet {
		t.Fatalf("quiet period not restarted: %v", g)
	}
	if g, _ := s.streamClosed(s.attempt-1, t1.Add(time.Hour)); g != closeIgnored {
		t.Fatalf("stale stream graded %v", g)
	}
}
