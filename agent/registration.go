package agent

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
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

// connState is the loop's view of the master connection.
type connState struct {
	id         uint64 // current attempt; events of other attempts are stale
	ctx        context.Context
	cancel     context.CancelFunc
	connecting bool
	registered bool
	master     string // host:port of the master the stream is open to
	leader     string // last master that accepted us
	backoff    time.Duration
	retry      *loopTimer
	// epoch is the highest master epoch accepted.
	epoch       uint64
	lastEvent   time.Time
	pingTimeout time.Duration
	pingTimer   *loopTimer
	masterInfo  *mesos.MasterInfo
	// unregisteredSince is when the agent last found itself without a
	// registered connection (its start, or the loss of its master); zero
	// while registered. It grades failed attempts (see onStreamClosed).
	unregisteredSince time.Time
}

// quietRegistration is how long failed registration attempts log at INFO
// before they become warnings: at start-up the master may not be up or
// have elected a leader yet (it answers "not the leader" until then), and
// after a failover the next leader takes a few Raft timeouts, so an agent
// that is told to retry for a while is healthy. One that is still
// unregistered after this long is not.
const quietRegistration = 30 * time.Second

func agentIDProto(id string) *mesos.AgentID { return &mesos.AgentID{Value: proto.String(id)} }

// connect starts a subscription attempt (loop).
func (a *Agent) connect() {
	a.conn.retry.Stop()
	if a.conn.cancel != nil {
		a.conn.cancel()
	}
	if a.rec != nil && a.conn.epoch < a.rec.epoch {
		a.conn.epoch = a.rec.epoch
	}
	a.conn.id++
	id := a.conn.id
	ctx, cancel := context.WithCancel(context.Background())
	a.conn.ctx, a.conn.cancel = ctx, cancel
	a.conn.connecting = true
	if !a.conn.registered && a.conn.unregisteredSince.IsZero() {
		a.conn.unregisteredSince = a.clock.Now()
	}
	call := &protocol.AgentCall{
		Type:      protocol.AgentCall_SUBSCRIBE.Enum(),
		Subscribe: a.subscribeMessage(),
	}
	if a.agentID != "" {
		call.AgentId = agentIDProto(a.agentID)
	}
	body, err := proto.Marshal(call)
	if err != nil {
		a.fail(fmt.Errorf("encoding SUBSCRIBE: %w", err))
		return
	}
	leader := a.conn.leader
	go func() {
		resp, master, err := a.dial(ctx, body, leader)
		if err != nil {
			a.post(func() { a.onStreamClosed(id, err) })
			return
		}
		if !a.post(func() { a.onStreamOpened(id, master) }) {
			resp.Body.Close()
			return
		}
		a.readStream(id, resp)
	}()
}

// subscribeMessage describes the agent and everything it runs.
func (a *Agent) subscribeMessage() *protocol.AgentCall_Subscribe {
	s := &protocol.AgentCall_Subscribe{
		AgentInfo:    a.agentInfo(),
		Version:      protocol.Version_VERSION_1.Enum(),
		AgentVersion: proto.String(a.cfg.Version),
		Endpoint:     proto.String(a.endpoint),
		Epoch:        proto.Uint64(a.conn.epoch),
		Capabilities: agentCapabilities(),
		// Reservations and volumes: a new leader learns them from here.
		CheckpointedResources: a.checkpointed.Proto(),
	}
	if a.bootID != "" {
		s.BootId = proto.String(a.bootID)
	}
	for _, fid := range a.fwOrder {
		fw := a.frameworks[fid]
		s.Frameworks = append(s.Frameworks, fw.info)
		for _, eid := range fw.order {
			e := fw.executors[eid]
			if e == nil {
				continue
			}
			// As Mesos: a terminated executor consumes nothing, and a
			// command executor is the agent's own (the master never
			// accounts it: its allowance is a small overcommit), so
			// neither is reported; their tasks are.
			if e.phase != phaseTerminated && e.kind != kindCommand {
				s.Executors = append(s.Executors, e.info)
			}
			// Every task the agent still holds: live ones, and terminal
			// ones whose update awaits acknowledgement (a terminated
			// executor has only those), so that a new master can forward
			// the pending updates instead of calling the task unknown.
			for _, tid := range e.taskOrder {
				s.Tasks = append(s.Tasks, a.reportedTask(fid, e.tasks[tid]))
			}
		}
	}
	for _, u := range a.sum.Unacknowledged() {
		s.Unacknowledged = append(s.Unacknowledged, u.GetStatus())
	}
	return s
}

// reportedTask is a task as re-registration describes it: its latest
// state, and the state and uuid of the oldest update the master has not
// seen acknowledged (Mesos's status_update_state and status_update_uuid).
func (a *Agent) reportedTask(fid string, t *task) *mesos.Task {
	if t.queued && len(t.t.Statuses) == 0 {
		return t.t
	}
	p := proto.Clone(t.t).(*mesos.Task)
	if pending := a.sum.Pending(fid, t.t.GetTaskId().GetValue()); len(pending) > 0 {
		head := pending[0].GetStatus()
		p.StatusUpdateState = head.State
		p.StatusUpdateUuid = head.GetUuid()
	}
	return p
}

func agentCapabilities() []*mesos.AgentInfo_Capability {
	var out []*mesos.AgentInfo_Capability
	for _, t := range []mesos.AgentInfo_Capability_Type{
		mesos.AgentInfo_Capability_MULTI_ROLE,
		mesos.AgentInfo_Capability_HIERARCHICAL_ROLE,
		mesos.AgentInfo_Capability_RESERVATION_REFINEMENT,
		mesos.AgentInfo_Capability_TASK_RESOURCE_LIMITS,
	} {
		out = append(out, &mesos.AgentInfo_Capability{Type: t.Enum()})
	}
	return out
}

func (a *Agent) onStreamOpened(id uint64, master string) {
	if id != a.conn.id {
		return
	}
	a.conn.master = master
	a.log.Debug("subscription stream open", "master", master)
}

func (a *Agent) onStreamClosed(id uint64, err error) {
	if id != a.conn.id {
		return
	}
	switch down := a.clock.Now().Sub(a.conn.unregisteredSince); {
	case a.conn.registered:
		a.log.Warn("master connection lost", "master", a.conn.master, "err", err)
		a.conn.unregisteredSince = a.clock.Now()
	case down < quietRegistration:
		a.log.Info("no registration with the master yet; retrying", "master", a.conn.master, "err", err)
	default:
		a.log.Warn("cannot register with the master", "master", a.conn.master, "for", down.Round(time.Second), "err", err)
	}
	a.disconnect(err)
	a.scheduleReconnect()
}

func (a *Agent) onCallRefused(id uint64, msg string) {
	if id != a.conn.id || !a.conn.registered {
		return
	}
	a.log.Warn("the master refused a call; re-registering", "master", a.conn.master, "reason", msg)
	a.disconnect(errors.New(msg))
	a.scheduleReconnect()
}

// disconnect tears the current connection down (loop).
func (a *Agent) disconnect(err error) {
	if a.conn.cancel != nil {
		a.conn.cancel()
		a.conn.cancel = nil
	}
	a.conn.id++ // whatever the old goroutines still report is stale
	a.conn.connecting = false
	a.conn.registered = false
	a.conn.pingTimer.Stop()
	a.conn.retry.Stop()
	a.sender.Store(nil)
	a.sum.Pause()
}

// scheduleReconnect arms the next attempt after a random delay in
// [0, backoff], doubling backoff up to MaxRegistrationBackoff, as Mesos's
// agent does.
func (a *Agent) scheduleReconnect() {
	b := a.conn.backoff
	if b <= 0 {
		b = a.cfg.RegistrationBackoff
	}
	d := time.Duration(rand.Int64N(int64(b) + 1))
	a.conn.backoff = min(2*b, MaxRegistrationBackoff)
	a.conn.retry = a.after(d, a.connect)
}

// onMasterEvent handles one event of the subscription stream (loop).
func (a *Agent) onMasterEvent(id uint64, ev *protocol.AgentEvent) {
	if id != a.conn.id {
		return
	}
	if e := ev.GetEpoch(); e < a.conn.epoch {
		a.log.Warn("dropping event from a stale master", "type", ev.GetType().String(), "epoch", e, "highest", a.conn.epoch)
		return
	} else if e > a.conn.epoch {
		a.conn.epoch = e
		if a.agentID != "" {
			if err := a.meta.checkpointEpoch(e); err != nil {
				a.log.Warn("checkpointing epoch", "err", err)
			}
		}
	}
	a.conn.lastEvent = a.clock.Now()
	switch ev.GetType() {
	case protocol.AgentEvent_SUBSCRIBED:
		a.onSubscribed(ev.GetSubscribed())
		return
	case protocol.AgentEvent_SHUTDOWN:
		a.onShutdown(ev.GetShutdown().GetMessage())
		return
	case protocol.AgentEvent_ERROR:
		err := fmt.Errorf("the master reported an error: %s", ev.GetError().GetMessage())
		a.log.Error("master error", "err", err)
		a.disconnect(err)
		a.scheduleReconnect()
		return
	}
	if !a.conn.registered {
		a.log.Warn("dropping event received before SUBSCRIBED", "type", ev.GetType().String())
		return
	}
	switch ev.GetType() {
	case protocol.AgentEvent_PING:
		a.sendCall(&protocol.AgentCall{
			Type: protocol.AgentCall_PONG.Enum(),
			Pong: &protocol.AgentCall_Pong{Sequence: proto.Uint64(ev.GetPing().GetSequence())},
		})
	case protocol.AgentEvent_RUN_TASK:
		a.runTask(ev.GetRunTask())
	case protocol.AgentEvent_RUN_TASK_GROUP:
		a.runTaskGroup(ev.GetRunTaskGroup())
	case protocol.AgentEvent_KILL_TASK:
		a.killTask(ev.GetKillTask())
	case protocol.AgentEvent_SHUTDOWN_EXECUTOR:
		m := ev.GetShutdownExecutor()
		if fw := a.frameworks[m.GetFrameworkId().GetValue()]; fw != nil {
			if e := fw.executors[m.GetExecutorId().GetValue()]; e != nil {
				a.shutdownExecutor(e)
			}
		}
	case protocol.AgentEvent_SHUTDOWN_FRAMEWORK:
		a.shutdownFramework(ev.GetShutdownFramework().GetFrameworkId().GetValue())
	case protocol.AgentEvent_ACKNOWLEDGE:
		a.acknowledge(ev.GetAcknowledge())
	case protocol.AgentEvent_FRAMEWORK_MESSAGE:
		a.frameworkMessage(ev.GetFrameworkMessage())
	case protocol.AgentEvent_UPDATE_FRAMEWORK:
		a.updateFramework(ev.GetUpdateFramework().GetFrameworkInfo())
	case protocol.AgentEvent_RECONCILE:
		a.reconcile(ev.GetReconcile())
	case protocol.AgentEvent_CHECKPOINT_RESOURCES:
		a.checkpointResources(ev.GetCheckpointResources()) // reservations.go
	default:
		a.log.Warn("ignoring unknown event from the master", "type", ev.GetType().String())
	}
}

// onSubscribed completes (re-)registration.
func (a *Agent) onSubscribed(s *protocol.AgentEvent_Subscribed) {
	id := s.GetAgentId().GetValue()
	if id == "" {
		a.log.Error("SUBSCRIBED without an agent id; reconnecting")
		a.disconnect(errors.New("SUBSCRIBED without agent_id"))
		a.scheduleReconnect()
		return
	}
	if a.agentID != "" && id != a.agentID {
		if len(a.frameworks) > 0 {
			a.fail(fmt.Errorf("the master assigned agent id %s, but this agent runs tasks as %s", id, a.agentID))
			return
		}
		a.log.Warn("the master assigned a new agent id", "old", a.agentID, "new", id)
	}
	a.agentID = id
	if err := a.meta.checkpointAgent(a.agentInfo(), a.bootID, a.conn.epoch); err != nil {
		a.log.Error("checkpointing the agent id", "err", err)
	}
	for _, fw := range a.frameworks {
		a.checkpointFramework(fw)
	}
	a.conn.connecting = false
	a.conn.registered = true
	a.conn.unregisteredSince = time.Time{}
	a.conn.leader = a.conn.master
	a.conn.masterInfo = s.GetMasterInfo()
	a.conn.backoff = 0
	interval := time.Duration(s.GetPingIntervalSeconds() * float64(time.Second))
	if interval <= 0 {
		interval = defaultPingInterval
	}
	missed := s.GetMaxMissed()
	if missed == 0 {
		missed = defaultMaxMissed
	}
	a.conn.pingTimeout = interval * time.Duration(missed)
	a.armPingCheck(a.conn.pingTimeout)
	sender := newCallSender(a, a.conn.ctx, a.conn.id, a.conn.master, id)
	go sender.run()
	a.sender.Store(sender)
	a.sum.Resume()
	a.log.Info("registered with the master", "agent_id", id, "master", a.conn.master, "epoch", a.conn.epoch)
}

// armPingCheck declares the master lost when no event arrived for the
// ping timeout.
func (a *Agent) armPingCheck(d time.Duration) {
	a.conn.pingTimer.Stop()
	a.conn.pingTimer = a.after(d, func() {
		if !a.conn.registered {
			return
		}
		silent := a.clock.Now().Sub(a.conn.lastEvent)
		if silent < a.conn.pingTimeout {
			a.armPingCheck(a.conn.pingTimeout - silent)
			return
		}
		a.log.Warn("no word from the master; reconnecting", "master", a.conn.master, "silent", silent)
		a.disconnect(errors.New("master ping timeout"))
		a.scheduleReconnect()
	})
}

// onShutdown: the master removed this agent. It stops, killing its
// executors, and forgets its identity so that a restart registers anew
// (as Mesos removes meta/slaves/latest).
func (a *Agent) onShutdown(msg string) {
	if err := os.Remove(a.meta.latestPath()); err != nil && !os.IsNotExist(err) {
		a.log.Warn("removing the agent checkpoint", "err", err)
	}
	if msg == "" {
		msg = "no reason given"
	}
	a.fail(fmt.Errorf("the master shut this agent down: %s", msg))
}

// sendCall posts a call to the master if registered (loop or any
// goroutine); false when there is no connection to send it on.
func (a *Agent) sendCall(c *protocol.AgentCall) bool {
	s := a.sender.Load()
	if s == nil {
		return false
	}
	s.send(c)
	return true
}

// forward is the status update manager's Forward: it runs on the
// manager's goroutine.
func (a *Agent) forward(u *protocol.AgentCall_StatusUpdate) bool {
	return a.sendCall(&protocol.AgentCall{Type: protocol.AgentCall_STATUS_UPDATE.Enum(), StatusUpdate: u})
}
