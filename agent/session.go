package agent

import (
	"errors"
	"fmt"
	"time"

	"mezzo/api/mesos"
	"mezzo/api/protocol"

	"google.golang.org/protobuf/proto"
)

// Mesos's defaults for master failure detection, used when SUBSCRIBED does
// not say (--agent_ping_timeout, --max_agent_ping_timeouts).
const (
	defaultPingInterval = 15 * time.Second
	defaultMaxMissed    = 5
)

// sessionPhase is where the agent stands with the master (doc.go draws
// the transitions).
type sessionPhase int

const (
	// sessDisconnected: no subscription attempt in flight; a retry may be
	// armed.
	sessDisconnected sessionPhase = iota
	// sessRegistering: SUBSCRIBE sent without an agent ID.
	sessRegistering
	// sessReregistering: SUBSCRIBE sent under the agent's known ID.
	sessReregistering
	// sessRegistered: SUBSCRIBED received on the current stream.
	sessRegistered
	// sessShutDown: the master removed the agent (SHUTDOWN) or it failed;
	// terminal.
	sessShutDown
)

func (p sessionPhase) String() string {
	return [...]string{"DISCONNECTED", "REGISTERING", "REREGISTERING", "REGISTERED", "SHUT_DOWN"}[p]
}

// sessionSink is how the session acts on the world. The Agent implements it
// with real I/O (masterIO in session_io.go); tests record the calls. All
// methods are called on the loop goroutine and must not block: dialling,
// posting calls and disk writes that may be slow run off the loop.
type sessionSink interface {
	// dial starts subscription attempt `attempt` (SUBSCRIBE carrying
	// epoch), trying leader first; the loop later reports the stream's
	// opening, events and end under the same attempt number.
	dial(attempt uint64, leader string, epoch uint64)
	// hangUp ends the current stream and its call sender, and pauses the
	// status update manager.
	hangUp()
	// registered starts the call sender of attempt's stream (to master, as
	// agentID) and resumes the status update manager.
	registered(attempt uint64, master, agentID string)
	// send posts a call on the registered stream's sender.
	send(c *protocol.AgentCall)
	// checkpointEpoch records the highest master epoch seen.
	checkpointEpoch(epoch uint64)
	// checkpointAgent records the agent's identity and its frameworks once
	// a master accepted it.
	checkpointAgent(agentID string, epoch uint64)
	// forgetIdentity removes the agent's checkpointed identity so that a
	// restart registers anew (as Mesos removes meta/slaves/latest).
	forgetIdentity()
	// fail stops the agent for good.
	fail(err error)
	// armRetry (re)arms the reconnect timer: it calls session.retry on the
	// loop after d. armPingCheck does the same for session.pingCheck.
	// Arming one replaces its previous timer; disarm cancels both.
	armRetry(d time.Duration)
	armPingCheck(d time.Duration)
	disarm()
}

// session is the agent's registration state machine and master fencing:
// who the agent is (agentID), which subscription attempt is current, the
// highest master epoch accepted, the registration backoff and the master
// failure detector. It is plain synchronous code owned by the agent's loop:
// every method takes `now` where time matters and acts only through sink,
// so it runs in tests without goroutines, sockets or clocks.
type session struct {
	sink sessionSink
	// rand returns a uniform integer in [0, n]; the backoff's jitter.
	rand func(n int64) int64
	// initialBackoff is --registration_backoff_factor; maxBackoff caps it.
	initialBackoff, maxBackoff time.Duration
	// holdsTasks says whether the agent runs anything: a master that hands
	// out a different agent ID is then fatal (the tasks would be orphaned).
	holdsTasks func() bool

	phase       sessionPhase
	agentID     string
	attempt     uint64 // current attempt; events of other attempts are stale
	master      string // host:port of the master the current stream is open to
	leader      string // last master that accepted us
	backoff     time.Duration
	epoch       uint64 // the highest master epoch accepted
	lastEvent   time.Time
	pingTimeout time.Duration
	masterInfo  *mesos.MasterInfo
	// unregisteredSince is when the agent last found itself without a
	// registered connection (its start, or the loss of its master); zero
	// while registered. It grades failed attempts (streamClosed).
	unregisteredSince time.Time
}

// quietRegistration is how long failed registration attempts log at INFO
// before they become warnings: at start-up the master may not be up or
// have elected a leader yet (it answers "not the leader" until then), and
// after a failover the next leader takes a few Raft timeouts, so an agent
// that is told to retry for a while is healthy. One that is still
// unregistered after this long is not.
const quietRegistration = 30 * time.Second

// closeGrade says how loudly a closed stream deserves to be reported.
type closeGrade int

const (
	closeIgnored    closeGrade = iota // a stale attempt's stream
	closeLostMaster                   // the registered stream broke
	closeStillQuiet                   // unregistered for less than quietRegistration
	closeOverdue                      // unregistered for longer
)

// registeredNow says whether the agent holds a live registration.
func (s *session) registeredNow() bool { return s.phase == sessRegistered }

// connect starts a new subscription attempt, abandoning any other;
// minEpoch is the highest epoch recovered from the checkpoint.
func (s *session) connect(minEpoch uint64, now time.Time) {
	if s.phase == sessShutDown {
		return
	}
	if s.phase != sessRegistered && s.unregisteredSince.IsZero() {
		s.unregisteredSince = now
	}
	s.sink.disarm()
	s.sink.hangUp()
	if s.epoch < minEpoch {
		s.epoch = minEpoch
	}
	s.attempt++
	s.phase = sessRegistering
	if s.agentID != "" {
		s.phase = sessReregistering
	}
	s.sink.dial(s.attempt, s.leader, s.epoch)
}

// retry is the reconnect timer's expiry.
func (s *session) retry(now time.Time) { s.connect(0, now) }

// streamOpened: attempt's stream reached master (307s followed).
func (s *session) streamOpened(attempt uint64, master string) {
	if attempt == s.attempt {
		s.master = master
	}
}

// streamClosed: attempt's stream ended or could not be opened. It grades
// the loss for the log, with how long the agent has been unregistered.
func (s *session) streamClosed(attempt uint64, now time.Time) (closeGrade, time.Duration) {
	if attempt != s.attempt || s.phase == sessShutDown {
		return closeIgnored, 0
	}
	grade, down := closeLostMaster, now.Sub(s.unregisteredSince)
	switch {
	case s.phase == sessRegistered:
		s.unregisteredSince = now
		down = 0
	case down < quietRegistration:
		grade = closeStillQuiet
	default:
		grade = closeOverdue
	}
	s.lost()
	return grade, down
}

// callRefused: the master answered a call of attempt with 403 (it does not
// know this agent any more); re-register.
func (s *session) callRefused(attempt uint64) bool {
	if attempt != s.attempt || s.phase != sessRegistered {
		return false
	}
	s.lost()
	return true
}

// lost tears the connection down and schedules the next attempt.
func (s *session) lost() {
	s.disconnect()
	s.scheduleReconnect()
}

// disconnect tears the current connection down without retrying (the agent
// stops, or lost retries next).
func (s *session) disconnect() {
	s.attempt++ // whatever the old stream still reports is stale
	if s.phase != sessShutDown {
		s.phase = sessDisconnected
	}
	s.sink.disarm()
	s.sink.hangUp()
}

// scheduleReconnect arms the next attempt after a random delay in
// [0, backoff], doubling backoff up to maxBackoff, as Mesos's agent does.
func (s *session) scheduleReconnect() {
	if s.phase == sessShutDown {
		return
	}
	b := s.backoff
	if b <= 0 {
		b = s.initialBackoff
	}
	d := time.Duration(s.rand(int64(b)))
	s.backoff = min(2*b, s.maxBackoff)
	s.sink.armRetry(d)
}

// eventVerdict says what the loop does with a master event after the
// session saw it.
type eventVerdict int

const (
	// dropEvent: stale (another attempt, an older master epoch), before
	// SUBSCRIBED, or consumed by the session itself.
	dropEvent eventVerdict = iota
	// dispatchEvent: a registered agent's work event (RUN_TASK, KILL_TASK, …)
	// for the rest of the agent.
	dispatchEvent
)

// event fences and handles one event of attempt's stream: a stream other
// than the current one, or an epoch below the highest seen, is dropped (DESIGN.md "Fencing"); a higher
// epoch is adopted and checkpointed. SUBSCRIBED, SHUTDOWN, ERROR and PING
// are the session's own; the rest are dispatched once registered.
func (s *session) event(attempt uint64, ev *protocol.AgentEvent, now time.Time) (eventVerdict, string) {
	if attempt != s.attempt || s.phase == sessShutDown {
		return dropEvent, "stale stream"
	}
	if e := ev.GetEpoch(); e < s.epoch {
		return dropEvent, fmt.Sprintf("stale master epoch %d < %d", e, s.epoch)
	} else if e > s.epoch {
		s.epoch = e
		if s.agentID != "" {
			s.sink.checkpointEpoch(e)
		}
	}
	s.lastEvent = now
	switch ev.GetType() {
	case protocol.AgentEvent_SUBSCRIBED:
		return s.subscribed(ev.GetSubscribed())
	case protocol.AgentEvent_SHUTDOWN:
		msg := ev.GetShutdown().GetMessage()
		if msg == "" {
			msg = "no reason given"
		}
		s.sink.forgetIdentity()
		s.shutDown(fmt.Errorf("the master shut this agent down: %s", msg))
		return dropEvent, "shut down"
	case protocol.AgentEvent_ERROR:
		s.lost()
		return dropEvent, "the master reported an error: " + ev.GetError().GetMessage()
	}
	if s.phase != sessRegistered {
		return dropEvent, "received before SUBSCRIBED"
	}
	if ev.GetType() == protocol.AgentEvent_PING {
		s.sink.send(&protocol.AgentCall{
			Type: protocol.AgentCall_PONG.Enum(),
			Pong: &protocol.AgentCall_Pong{Sequence: proto.Uint64(ev.GetPing().GetSequence())},
		})
		return dropEvent, ""
	}
	return dispatchEvent, ""
}

// shutDown ends the session for good and stops the agent.
func (s *session) shutDown(err error) {
	s.disconnect()
	s.phase = sessShutDown
	s.sink.fail(err)
}

// subscribed completes (re-)registration.
func (s *session) subscribed(m *protocol.AgentEvent_Subscribed) (eventVerdict, string) {
	id := m.GetAgentId().GetValue()
	if id == "" {
		s.lost()
		return dropEvent, "SUBSCRIBED without agent_id"
	}
	if s.agentID != "" && id != s.agentID {
		if s.holdsTasks() {
			s.shutDown(fmt.Errorf("the master assigned agent id %s, but this agent runs tasks as %s", id, s.agentID))
			return dropEvent, "agent id changed"
		}
	}
	s.agentID = id
	s.sink.checkpointAgent(id, s.epoch)
	s.phase = sessRegistered
	s.leader = s.master
	s.masterInfo = m.GetMasterInfo()
	s.backoff = 0
	s.unregisteredSince = time.Time{}
	interval := time.Duration(m.GetPingIntervalSeconds() * float64(time.Second))
	if interval <= 0 {
		interval = defaultPingInterval
	}
	missed := m.GetMaxMissed()
	if missed == 0 {
		missed = defaultMaxMissed
	}
	s.pingTimeout = interval * time.Duration(missed)
	s.sink.armPingCheck(s.pingTimeout)
	s.sink.registered(s.attempt, s.master, id)
	return dropEvent, ""
}

// errPingTimeout is why a silent master is abandoned.
var errPingTimeout = errors.New("master ping timeout")

// pingCheck is the failure detector's timer: a registered agent that heard
// nothing from the master for the ping timeout reconnects; otherwise the
// check is re-armed for the rest of the window. It reports whether the
// master was given up.
func (s *session) pingCheck(now time.Time) bool {
	if s.phase != sessRegistered {
		return false
	}
	silent := now.Sub(s.lastEvent)
	if silent < s.pingTimeout {
		s.sink.armPingCheck(s.pingTimeout - silent)
		return false
	}
	s.lost()
	return true
}
