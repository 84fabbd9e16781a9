package agent

import (
	"context"
	"fmt"
	"os"
	"time"

	"mezzo/api/mesos"
	"mezzo/api/protocol"

	"google.golang.org/protobuf/proto"
)

// masterIO is the session's sink: the Agent's real I/O towards the master
// (session.go documents each effect). Its fields are loop-owned.
type masterIO struct {
	a      *Agent
	cancel context.CancelFunc // the current stream's context
	ctx    context.Context
	retry  *loopTimer
	ping   *loopTimer
}

var _ sessionSink = (*masterIO)(nil)

func agentIDProto(id string) *mesos.AgentID { return &mesos.AgentID{Value: proto.String(id)} }

// connect starts a subscription attempt (loop).
func (a *Agent) connect() {
	var minEpoch uint64
	if a.rec != nil {
		minEpoch = a.rec.epoch
	}
	a.sess.connect(minEpoch, a.clock.Now())
}

func (m *masterIO) dial(attempt uint64, leader string, epoch uint64) {
	a := m.a
	ctx, cancel := context.WithCancel(context.Background())
	m.ctx, m.cancel = ctx, cancel
	call := &protocol.AgentCall{
		Type:      protocol.AgentCall_SUBSCRIBE.Enum(),
		Subscribe: a.subscribeMessage(),
	}
	if a.sess.agentID != "" {
		call.AgentId = agentIDProto(a.sess.agentID)
	}
	body, err := proto.Marshal(call)
	if err != nil {
		a.fail(fmt.Errorf("encoding SUBSCRIBE: %w", err))
		return
	}
	go func() {
		resp, master, err := a.dial(ctx, body, leader)
		if err != nil {
			a.post(func() { a.onStreamClosed(attempt, err) })
			return
		}
		if !a.post(func() { a.onStreamOpened(attempt, master) }) {
			resp.Body.Close()
			return
		}
		a.readStream(attempt, resp)
	}()
}

func (m *masterIO) hangUp() {
	if m.cancel != nil {
		m.cancel()
		m.cancel = nil
	}
	m.a.sender.Store(nil)
	m.a.sum.Pause()
}

func (m *masterIO) registered(attempt uint64, master, agentID string) {
	a := m.a
	sender := newCallSender(a, m.ctx, attempt, master, agentID)
	go sender.run()
	a.sender.Store(sender)
	a.sum.Resume()
	a.log.Info("registered with the master", "agent_id", agentID, "master", master, "epoch", a.sess.epoch)
	a.oversubRegistered()
}

func (m *masterIO) send(c *protocol.AgentCall) { m.a.sendCall(c) }

func (m *masterIO) checkpointEpoch(epoch uint64) {
	if err := m.a.meta.checkpointEpoch(epoch); err != nil {
		m.a.log.Warn("checkpointing epoch", "err", err)
	}
}

func (m *masterIO) checkpointAgent(agentID string, epoch uint64) {
	a := m.a
	if err := a.meta.checkpointAgent(a.agentInfo(), a.bootID, epoch); err != nil {
		a.log.Error("checkpointing the agent id", "err", err)
	}
	for _, fw := range a.frameworks {
		a.checkpointFramework(fw)
	}
}

func (m *masterIO) forgetIdentity() {
	if err := os.Remove(m.a.meta.latestPath()); err != nil && !os.IsNotExist(err) {
		m.a.log.Warn("removing the agent checkpoint", "err", err)
	}
}

func (m *masterIO) fail(err error) { m.a.fail(err) }

func (m *masterIO) armRetry(d time.Duration) {
	m.retry.Stop()
	a := m.a
	m.retry = a.after(d, func() { a.sess.retry(a.clock.Now()) })
}

func (m *masterIO) armPingCheck(d time.Duration) {
	m.ping.Stop()
	a := m.a
	m.ping = a.after(d, func() {
		if a.sess.pingCheck(a.clock.Now()) {
			a.log.Warn("no word from the master; reconnecting", "master", a.sess.master)
		}
	})
}

func (m *masterIO) disarm() {
	m.retry.Stop()
	m.ping.Stop()
}

// subscribeMessage describes the agent and everything it runs.
func (a *Agent) subscribeMessage() *protocol.AgentCall_Subscribe {
	s := &protocol.AgentCall_Subscribe{
		AgentInfo:    a.agentInfo(),
		Version:      protocol.Version_VERSION_1.Enum(),
		AgentVersion: proto.String(a.cfg.Version),
		Endpoint:     proto.String(a.endpoint),
		Epoch:        proto.Uint64(a.sess.epoch),
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
	a.sess.streamOpened(id, master)
	a.log.Debug("subscription stream open", "master", master)
}

func (a *Agent) onStreamClosed(id uint64, err error) {
	master := a.sess.master
	switch grade, down := a.sess.streamClosed(id, a.clock.Now()); grade {
	case closeLostMaster:
		a.log.Warn("master connection lost", "master", master, "err", err)
	case closeStillQuiet:
		a.log.Info("no registration with the master yet; retrying", "master", master, "err", err)
	case closeOverdue:
		a.log.Warn("cannot register with the master", "master", master, "for", down.Round(time.Second), "err", err)
	}
}

func (a *Agent) onCallRefused(id uint64, msg string) {
	if a.sess.callRefused(id) {
		a.log.Warn("the master refused a call; re-registering", "master", a.sess.master, "reason", msg)
	}
}

// onMasterEvent handles one event of the subscription stream (loop): the
// session fences it and keeps the registration events; the work events go
// to their handlers.
func (a *Agent) onMasterEvent(id uint64, ev *protocol.AgentEvent) {
	verdict, why := a.sess.event(id, ev, a.clock.Now())
	if verdict == dropEvent {
		if why != "" && why != "stale stream" {
			a.log.Warn("master event not dispatched", "type", ev.GetType().String(), "why", why)
		}
		return
	}
	switch ev.GetType() {
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

// sendCall posts a call to the master if registered (loop or any
// goroutine); false when there is no connection to send it on.
func (a *core) sendCall(c *protocol.AgentCall) bool { return a.calls.send(c) }

// forward is the status update manager's Forward: it runs on the
// manager's goroutine.
func (a *Agent) forward(u *protocol.AgentCall_StatusUpdate) bool {
	return a.sendCall(&protocol.AgentCall{Type: protocol.AgentCall_STATUS_UPDATE.Enum(), StatusUpdate: u})
}
