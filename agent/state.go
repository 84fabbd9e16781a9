package agent

import (
	"time"

	"mezzo/api/executorpb"
	"mezzo/api/mesos"
	"mezzo/executor/health"

	"google.golang.org/protobuf/proto"
)

// Bounds on what the agent remembers of finished work (Mesos's
// --max_completed_executors_per_framework and MAX_COMPLETED_* constants).
const (
	maxCompletedFrameworks            = 50
	maxCompletedExecutorsPerFramework = 150
	maxCompletedTasksPerExecutor      = 200
)

// framework is a framework with executors on this agent.
type framework struct {
	id        string
	info      *mesos.FrameworkInfo
	executors map[string]*executor
	order     []string // executor IDs in launch order
	completed []*executor
	// shuttingDown: SHUTDOWN_FRAMEWORK arrived; its executors are being
	// killed and its tasks get no further updates from the agent.
	shuttingDown bool
}

func (f *framework) checkpoint() bool { return f.info.GetCheckpoint() }

func (f *framework) hasCapability(c mesos.FrameworkInfo_Capability_Type) bool {
	for _, x := range f.info.GetCapabilities() {
		if x.GetType() == c {
			return true
		}
	}
	return false
}

func (f *framework) executorFor(taskID string) *executor {
	for _, id := range f.order {
		if e := f.executors[id]; e != nil && e.tasks[taskID] != nil {
			return e
		}
	}
	return nil
}

// executorKind says what program runs an executor.
type executorKind int

const (
	kindCustom  executorKind = iota // the framework's ExecutorInfo.command
	kindCommand                     // `mezzo executor` for a command task
	kindDefault                     // `mezzo default-executor` for task groups
)

// executorPhase is Mesos's Executor::State.
type executorPhase int

const (
	phaseRegistering executorPhase = iota // launched, not subscribed yet
	phaseRunning                          // subscribed
	phaseTerminating                      // being shut down or killed
	phaseTerminated                       // its container has ended
)

func (p executorPhase) String() string {
	return [...]string{"REGISTERING", "RUNNING", "TERMINATING", "TERMINATED"}[p]
}

// executorConn is the event stream of a subscribed executor
// (*httpapi.ExecutorStream).
type executorConn interface {
	Send(*executorpb.Event) error
	Close()
	Done() <-chan struct{}
}

// termination is why the agent ended an executor; it decides the terminal
// updates of the tasks still running when the container ends.
type termination struct {
	state   mesos.TaskState
	reason  mesos.TaskStatus_Reason
	message string
}

// executor is one executor (container) of a framework.
type executor struct {
	fw          *framework
	id          string
	info        *mesos.ExecutorInfo
	kind        executorKind
	containerID string
	directory   string
	phase       executorPhase
	conn        executorConn
	pid         int
	// launching: the fetch and process start are in flight.
	launching bool
	launchErr error
	// sized is what the container's limits were last set for (at launch,
	// then by resize); launchedWith are the tasks it was launched for.
	sized        []*mesos.Resource
	launchedWith []string

	queue     []launchItem // awaiting subscription
	tasks     map[string]*task
	taskOrder []string
	completed []*mesos.Task

	// killsSent: KILL was sent (or is due) for these tasks.
	killsSent map[string]bool
	// pending is set when the agent decided to end the executor.
	pending *termination
	// recovered: re-attached after an agent restart (its process is not
	// a child of this agent process).
	recovered bool

	// direct: a command task the agent runs with no executor process
	// (directtask.go); docker: directly in a Docker container
	// (dockertask.go); killing: its kill has begun; healthKilled: for
	// failing its health check; health: its checker.
	direct       bool
	docker       bool
	killing      bool
	healthKilled bool
	health       *health.Checker
	// healthRecovered: health checking restarted after an agent restart.
	healthRecovered bool

	// started is when the agent created the executor (zero for one
	// recovered after a restart): newer tenants are evicted first.
	started time.Time

	regTimer      *loopTimer
	shutdownTimer *loopTimer
	virtualPaths  []string // /files attachments to detach
}

// launchItem is a queued LAUNCH (task) or LAUNCH_GROUP (group).
type launchItem struct {
	task  *mesos.TaskInfo
	group *mesos.TaskGroupInfo
}

func (l launchItem) taskIDs() []string {
	if l.task != nil {
		return []string{l.task.GetTaskId().GetValue()}
	}
	var out []string
	for _, t := range l.group.GetTasks() {
		out = append(out, t.GetTaskId().GetValue())
	}
	return out
}

// task is a task the agent knows, queued or launched.
type task struct {
	t      *mesos.Task
	info   *mesos.TaskInfo
	queued bool // not yet delivered to the executor
	// terminal: a terminal update was received (from executor or agent);
	// the task stays until that update is acknowledged.
	terminal bool
}

func (e *executor) addTask(info *mesos.TaskInfo, fwID, agentID string) *task {
	t := &task{info: info, queued: true, t: &mesos.Task{
		Name:        proto.String(info.GetName()),
		TaskId:      info.GetTaskId(),
		FrameworkId: &mesos.FrameworkID{Value: proto.String(fwID)},
		AgentId:     &mesos.AgentID{Value: proto.String(agentID)},
		State:       mesos.TaskState_TASK_STAGING.Enum(),
		Resources:   info.GetResources(),
		Labels:      info.GetLabels(),
		Discovery:   info.GetDiscovery(),
		Container:   info.GetContainer(),
		HealthCheck: info.GetHealthCheck(),
		KillPolicy:  info.GetKillPolicy(),
		Limits:      info.GetLimits(),
	}}
	if info.Executor != nil || e.kind == kindDefault {
		t.t.ExecutorId = &mesos.ExecutorID{Value: proto.String(e.id)}
	}
	if c := info.GetCommand(); c != nil && c.User != nil {
		t.t.User = proto.String(c.GetUser())
	}
	e.tasks[info.GetTaskId().GetValue()] = t
	e.taskOrder = append(e.taskOrder, info.GetTaskId().GetValue())
	return t
}

// updateTaskState applies a status to the task it is about; it reports
// false for an unknown task, a task already terminal, or a status already
// applied (same uuid).
func (e *executor) updateTaskState(st *mesos.TaskStatus) bool {
	t := e.tasks[st.GetTaskId().GetValue()]
	if t == nil || t.terminal {
		return false
	}
	for _, old := range t.t.Statuses {
		if len(st.Uuid) > 0 && string(old.Uuid) == string(st.Uuid) {
			return false
		}
	}
	t.t.State = st.State
	// The data field can be large; Mesos keeps statuses without it.
	kept := proto.Clone(st).(*mesos.TaskStatus)
	kept.Data = nil
	t.t.Statuses = append(t.t.Statuses, kept)
	if mesos.IsTerminal(st.GetState()) {
		t.terminal = true
	}
	return true
}

// completeTask forgets a task whose terminal update was acknowledged.
func (e *executor) completeTask(id string) {
	t := e.tasks[id]
	if t == nil {
		return
	}
	delete(e.tasks, id)
	for i, x := range e.taskOrder {
		if x == id {
			e.taskOrder = append(e.taskOrder[:i], e.taskOrder[i+1:]...)
			break
		}
	}
	delete(e.killsSent, id)
	e.completed = append(e.completed, t.t)
	if n := len(e.completed); n > maxCompletedTasksPerExecutor {
		e.completed = e.completed[n-maxCompletedTasksPerExecutor:]
	}
}

// liveTasks returns the tasks without a terminal update, in launch order.
func (e *executor) liveTasks() []*task {
	var out []*task
	for _, id := range e.taskOrder {
		if t := e.tasks[id]; t != nil && !t.terminal {
			out = append(out, t)
		}
	}
	return out
}

func (e *executor) shutdownGrace(def int64) int64 {
	if g := e.info.GetShutdownGracePeriod(); g != nil && g.GetNanoseconds() > 0 {
		return g.GetNanoseconds()
	}
	return def
}
