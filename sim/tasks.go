package sim

import (
	"bytes"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
)

// fwState is what an agent runs for one framework.
type fwState struct {
	id    string
	info  *mesos.FrameworkInfo
	tasks map[string]*simTask
	execs map[string]*execState
}

// execState is an executor (custom, or the default executor of a task
// group): it "exits" once none of its tasks is live.
type execState struct {
	info *mesos.ExecutorInfo
	live int // non-terminal tasks
}

// simTask is a fake task and its status update stream. A task the agent
// never ran (an answer to KILL or RECONCILE for an unknown task) has no
// Task proto and exists only until its update is acknowledged.
type simTask struct {
	fw      *fwState
	id      string
	task    *mesos.Task // reported on re-registration; nil if never run
	exec    string      // executor ID, "" for command tasks
	state   mesos.TaskState
	finish  *loopTimer
	pending []*mesos.TaskStatus // unacknowledged updates; the head is in flight
	retry   *loopTimer
	retryIn time.Duration // the head's next resend interval
}

// isTerminal: an emulated agent treats TASK_UNREACHABLE as final too.
func isTerminal(s mesos.TaskState) bool {
	return mesos.IsTerminal(s) || s == mesos.TaskState_TASK_UNREACHABLE
}

// framework returns (creating) the state of a framework (loop).
func (a *Agent) framework(info *mesos.FrameworkInfo, id string) *fwState {
	if a.fws == nil {
		a.fws = map[string]*fwState{}
	}
	fw := a.fws[id]
	if fw == nil {
		fw = &fwState{id: id, tasks: map[string]*simTask{}, execs: map[string]*execState{}}
		a.fws[id] = fw
	}
	if info != nil {
		fw.info = info
	}
	return fw
}

func (a *Agent) runTask(m *protocol.AgentEvent_RunTask) {
	ti := m.GetTask()
	fid := m.GetFrameworkInfo().GetId().GetValue()
	if fid == "" || ti.GetTaskId().GetValue() == "" {
		return
	}
	fw := a.framework(m.GetFrameworkInfo(), fid)
	ex := m.GetExecutorInfo()
	if ex == nil {
		ex = ti.GetExecutor()
	}
	a.launch(fw, ti, ex)
}

func (a *Agent) runTaskGroup(m *protocol.AgentEvent_RunTaskGroup) {
	fid := m.GetFrameworkInfo().GetId().GetValue()
	if fid == "" {
		return
	}
	fw := a.framework(m.GetFrameworkInfo(), fid)
	for _, ti := range m.GetTaskGroup().GetTasks() {
		if ti.GetTaskId().GetValue() != "" {
			a.launch(fw, ti, m.GetExecutorInfo())
		}
	}
}

// launch starts one fake task: STARTING and RUNNING now, FINISHED after
// its duration.
func (a *Agent) launch(fw *fwState, ti *mesos.TaskInfo, ex *mesos.ExecutorInfo) {
	id := ti.GetTaskId().GetValue()
	if old := fw.tasks[id]; old != nil && old.task != nil {
		return // a duplicate RUN_TASK
	}
	t := fw.tasks[id]
	if t == nil {
		t = &simTask{fw: fw, id: id}
		fw.tasks[id] = t
	}
	t.task = &mesos.Task{
		Name:        ti.Name,
		TaskId:      ti.GetTaskId(),
		FrameworkId: &mesos.FrameworkID{Value: proto.String(fw.id)},
		AgentId:     agentIDProto(a.agentID),
		State:       mesos.TaskState_TASK_STAGING.Enum(),
		Resources:   ti.GetResources(),
		Labels:      ti.GetLabels(),
	}
	t.state = mesos.TaskState_TASK_STAGING
	if eid := ex.GetExecutorId().GetValue(); eid != "" {
		t.exec = eid
		t.task.ExecutorId = ex.GetExecutorId()
		e := fw.execs[eid]
		if e == nil {
			info := ex
			if info.FrameworkId == nil {
				info = proto.CloneOf(ex)
				info.FrameworkId = t.task.FrameworkId
			}
			e = &execState{info: info}
			fw.execs[eid] = e
		}
		e.live++
	}
	a.rt.counters.tasksLaunched.Add(1)
	// Both queued before the first is sent, so that it carries
	// latest_state RUNNING as the real agent's would.
	a.enqueue(t, mesos.TaskState_TASK_STARTING, mesos.TaskStatus_SOURCE_EXECUTOR, nil, "")
	a.enqueue(t, mesos.TaskState_TASK_RUNNING, mesos.TaskStatus_SOURCE_EXECUTOR, nil, "")
	if len(t.pending) == 2 {
		a.sendHead(t)
	}
	a.finishAfter(t, taskDuration(ti, a.rt.cfg.TaskDuration))
}

// finishAfter ends a task with TASK_FINISHED after d (never if d < 0).
func (a *Agent) finishAfter(t *simTask, d time.Duration) {
	if d < 0 {
		return
	}
	t.finish = a.sh.after(d, func() {
		if !isTerminal(t.state) {
			a.rt.counters.tasksFinished.Add(1)
			a.update(t, mesos.TaskState_TASK_FINISHED, mesos.TaskStatus_SOURCE_EXECUTOR, nil, "Command exited with status 0")
		}
	})
}

// adoptPreload makes the agent's preloaded tasks its own, running, before
// its first SUBSCRIBE reports them (loop); their ends are armed when it
// registers.
func (a *Agent) adoptPreload() {
	for _, p := range a.preload {
		fw := a.framework(p.Framework, p.Framework.GetId().GetValue())
		t := &simTask{fw: fw, id: p.TaskID, state: mesos.TaskState_TASK_RUNNING}
		t.task = &mesos.Task{
			Name:        proto.String(p.TaskID),
			TaskId:      &mesos.TaskID{Value: proto.String(p.TaskID)},
			FrameworkId: &mesos.FrameworkID{Value: proto.String(fw.id)},
			// Required on the wire, unknown until the master assigns the
			// agent its ID (it sets the task's from the agent's).
			AgentId:   agentIDProto(""),
			State:     mesos.TaskState_TASK_RUNNING.Enum(),
			Resources: p.Resources,
		}
		fw.tasks[p.TaskID] = t
		a.rt.counters.tasksLaunched.Add(1)
		a.warm = append(a.warm, warmTask{t: t, d: p.Duration})
	}
	a.preload = nil
}

// taskDuration is the task's DurationLabel, or else its command's
// DurationEnv, if it has a valid one, else def; negative means never.
func taskDuration(ti *mesos.TaskInfo, def time.Duration) time.Duration {
	var vals []string
	for _, l := range ti.GetLabels().GetLabels() {
		if l.GetKey() == DurationLabel {
			vals = append(vals, l.GetValue())
		}
	}
	for _, v := range ti.GetCommand().GetEnvironment().GetVariables() {
		if v.GetName() == DurationEnv {
			vals = append(vals, v.GetValue())
		}
	}
	for _, v := range vals {
		v = strings.TrimSpace(v)
		if strings.EqualFold(v, "never") {
			return Never
		}
		if d, err := time.ParseDuration(v); err == nil {
			return d
		}
	}
	if def < 0 {
		return Never
	}
	return def
}

// killTask kills a live task; an unknown one gets TASK_LOST (or
// TASK_DROPPED for a partition-aware framework) so the master and the
// scheduler learn it is not running.
func (a *Agent) killTask(fid, tid string) {
	if fid == "" || tid == "" {
		return
	}
	fw := a.fws[fid]
	var t *simTask
	if fw != nil {
		t = fw.tasks[tid]
	}
	if t == nil || t.task == nil {
		a.lost(fid, tid, mesos.TaskStatus_REASON_TASK_UNKNOWN, "Cannot find the task on the agent")
		return
	}
	a.kill(t, "Task killed")
}

// kill ends a live task with TASK_KILLED (loop).
func (a *Agent) kill(t *simTask, msg string) {
	if isTerminal(t.state) {
		return
	}
	t.finish.Stop()
	a.rt.counters.tasksKilled.Add(1)
	a.update(t, mesos.TaskState_TASK_KILLED, mesos.TaskStatus_SOURCE_EXECUTOR, nil, msg)
}

func (a *Agent) shutdownExecutor(fid, eid string) {
	fw := a.fws[fid]
	if fw == nil || fw.execs[eid] == nil {
		return
	}
	for _, t := range fw.tasks {
		if t.exec == eid {
			a.kill(t, "Executor shut down")
		}
	}
}

// shutdownFramework kills every task of a framework the master removed.
// The master acknowledges their updates itself (nobody else will).
func (a *Agent) shutdownFramework(fid string) {
	fw := a.fws[fid]
	if fw == nil {
		return
	}
	for _, t := range fw.tasks {
		a.kill(t, "Framework shut down")
	}
}

func (a *Agent) updateFramework(info *mesos.FrameworkInfo) {
	if fw := a.fws[info.GetId().GetValue()]; fw != nil {
		fw.info = info
	}
}

// reconcile answers the master's view of this agent's tasks: a task the
// agent does not run gets TASK_LOST / TASK_DROPPED.
func (a *Agent) reconcile(tasks []*mesos.Task) {
	for _, p := range tasks {
		fid, tid := p.GetFrameworkId().GetValue(), p.GetTaskId().GetValue()
		if fid == "" || tid == "" {
			continue
		}
		if fw := a.fws[fid]; fw != nil {
			if t := fw.tasks[tid]; t != nil && t.task != nil {
				continue
			}
		}
		a.lost(fid, tid, mesos.TaskStatus_REASON_RECONCILIATION, "Reconciliation: task unknown to the agent")
	}
}

// lost sends an agent-generated TASK_LOST / TASK_DROPPED for a task the
// agent does not run.
func (a *Agent) lost(fid, tid string, reason mesos.TaskStatus_Reason, msg string) {
	fw := a.framework(nil, fid)
	t := fw.tasks[tid]
	if t == nil {
		t = &simTask{fw: fw, id: tid}
		fw.tasks[tid] = t
	} else if len(t.pending) > 0 {
		return // already answered; the answer is awaiting its ack
	}
	state := mesos.TaskState_TASK_LOST
	for _, c := range fw.info.GetCapabilities() {
		if c.GetType() == mesos.FrameworkInfo_Capability_PARTITION_AWARE {
			state = mesos.TaskState_TASK_DROPPED
		}
	}
	a.rt.counters.tasksLost.Add(1)
	a.update(t, state, mesos.TaskStatus_SOURCE_AGENT, reason.Enum(), msg)
}

// update appends a status to the task's update stream; it is sent at once
// if nothing else is in flight (loop).
func (a *Agent) update(t *simTask, state mesos.TaskState, src mesos.TaskStatus_Source, reason *mesos.TaskStatus_Reason, msg string) {
	a.enqueue(t, state, src, reason, msg)
	if len(t.pending) == 1 {
		a.sendHead(t)
	}
}

// enqueue appends a status to the task's update stream and applies its
// state to the task (loop).
func (a *Agent) enqueue(t *simTask, state mesos.TaskState, src mesos.TaskStatus_Source, reason *mesos.TaskStatus_Reason, msg string) {
	id := uuid.New()
	st := &mesos.TaskStatus{
		TaskId:    &mesos.TaskID{Value: proto.String(t.id)},
		State:     state.Enum(),
		Source:    src.Enum(),
		Reason:    reason,
		AgentId:   agentIDProto(a.agentID),
		Timestamp: proto.Float64(float64(a.rt.clk.Now().UnixNano()) / 1e9),
		Uuid:      id[:],
	}
	if msg != "" {
		st.Message = proto.String(msg)
	}
	if t.task != nil {
		st.ExecutorId = t.task.ExecutorId
		t.task.State = state.Enum()
	}
	wasLive := !isTerminal(t.state) && t.task != nil
	t.state = state
	if wasLive && isTerminal(state) && t.exec != "" {
		a.executorTaskEnded(t.fw, t.exec)
	}
	t.pending = append(t.pending, st)
}

// executorTaskEnded: an executor whose last live task ended exits, and
// the master hears of it (it frees the executor's resources).
func (a *Agent) executorTaskEnded(fw *fwState, eid string) {
	e := fw.execs[eid]
	if e == nil {
		return
	}
	if e.live--; e.live > 0 {
		return
	}
	delete(fw.execs, eid)
	a.send(&protocol.AgentCall{
		Type: protocol.AgentCall_EXECUTOR_EXITED.Enum(),
		ExecutorExited: &protocol.AgentCall_ExecutorExited{
			FrameworkId: &mesos.FrameworkID{Value: proto.String(fw.id)},
			ExecutorId:  e.info.GetExecutorId(),
			Status:      proto.Int32(0),
		},
	})
}

// sendHead sends the oldest unacknowledged update of a task (a new head,
// or the head again after a re-registration) and arms its retry (loop).
func (a *Agent) sendHead(t *simTask) {
	t.retryIn = a.rt.cfg.StatusRetry
	a.forwardHead(t)
}

// forwardHead (re)sends the head and arms its retry, the interval doubling
// up to MaxStatusRetry as the real agent's: at a fixed interval, an
// overloaded cluster's retries added to the load that delayed the
// acknowledgements (a launch of 200,000 tasks sent 3.5 updates per update
// and never finished).
func (a *Agent) forwardHead(t *simTask) {
	t.retry.Stop()
	if len(t.pending) == 0 {
		return
	}
	head := t.pending[0]
	if t.task != nil {
		t.task.StatusUpdateState = head.State
		t.task.StatusUpdateUuid = head.Uuid
	}
	if a.send(&protocol.AgentCall{
		Type: protocol.AgentCall_STATUS_UPDATE.Enum(),
		StatusUpdate: &protocol.AgentCall_StatusUpdate{
			FrameworkId: &mesos.FrameworkID{Value: proto.String(t.fw.id)},
			Status:      head,
			ExecutorId:  head.ExecutorId,
			LatestState: t.state.Enum(),
		},
	}) {
		a.rt.counters.updatesSent.Add(1)
	}
	t.retry = a.sh.after(t.retryIn, func() {
		t.retryIn = min(2*t.retryIn, MaxStatusRetry)
		a.forwardHead(t)
	})
}

// acknowledge moves a task's update stream on when the master forwards
// the scheduler's acknowledgement of its head; other uuids are duplicates
// and ignored.
func (a *Agent) acknowledge(fid, tid string, id []byte) {
	fw := a.fws[fid]
	if fw == nil {
		return
	}
	t := fw.tasks[tid]
	if t == nil || len(t.pending) == 0 || !bytes.Equal(t.pending[0].GetUuid(), id) {
		return
	}
	a.rt.counters.updatesAcked.Add(1)
	t.pending[0] = nil
	t.pending = t.pending[1:]
	if len(t.pending) > 0 {
		a.sendHead(t)
		return
	}
	t.retry.Stop()
	t.pending = nil
	if isTerminal(t.state) {
		delete(fw.tasks, tid)
		if len(fw.tasks) == 0 && len(fw.execs) == 0 {
			delete(a.fws, fid)
		}
	}
}

// resumeUpdates resends every stream's head after (re-)registration.
func (a *Agent) resumeUpdates() {
	for _, fw := range a.fws {
		for _, t := range fw.tasks {
			if len(t.pending) > 0 {
				a.sendHead(t)
			}
		}
	}
}

// forgetTasks drops everything (loop): the agent got a new identity.
func (a *Agent) forgetTasks() {
	for _, fw := range a.fws {
		for _, t := range fw.tasks {
			t.finish.Stop()
			t.retry.Stop()
		}
	}
	a.fws = nil
}

// report adds the agent's frameworks, executors, tasks and unacknowledged
// updates to a SUBSCRIBE, so that a new leader can rebuild its view.
func (a *Agent) report(s *protocol.AgentCall_Subscribe) {
	for _, fid := range sortedKeys(a.fws) {
		fw := a.fws[fid]
		if fw.info != nil {
			s.Frameworks = append(s.Frameworks, fw.info)
		}
		for _, eid := range sortedKeys(fw.execs) {
			s.Executors = append(s.Executors, fw.execs[eid].info)
		}
		for _, tid := range sortedKeys(fw.tasks) {
			t := fw.tasks[tid]
			if t.task != nil {
				s.Tasks = append(s.Tasks, t.task)
			}
			s.Unacknowledged = append(s.Unacknowledged, t.pending...)
		}
	}
}
