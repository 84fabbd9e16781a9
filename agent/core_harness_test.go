package agent

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"mezzo/agent/containerizer"
	"mezzo/agent/fetcher"
	"mezzo/agent/files"
	"mezzo/api/executorpb"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/internal/clock"
	"mezzo/resources"

	"google.golang.org/protobuf/proto"
)

// pureAgent is an Agent whose every sink records instead of acting: no
// processes, no sockets, no goroutines, a fake clock (STYLE.md items 11
// and 12). Tests call the loop's handlers directly, as the loop would,
// and read the effects as one transcript.
type pureAgent struct {
	*Agent
	t     *testing.T
	fx    *effectLog
	clk   *clock.Fake
	tm    *fakeTimers
	upd   *recUpdates
	calls *recCalls
	names map[string]string // container ID → executor ID, for readable transcripts
	// updateErr, when set, is what container updates fail with.
	updateErr error
}

// effectLog is the shared transcript of every sink.
type effectLog struct{ lines []string }

func (l *effectLog) add(f string, args ...any) { l.lines = append(l.lines, fmt.Sprintf(f, args...)) }

func newPureAgent(t *testing.T) *pureAgent {
	t.Helper()
	fx := &effectLog{}
	clk := clock.NewFake(time.Unix(1_000_000, 0))
	p := &pureAgent{t: t, fx: fx, clk: clk, names: map[string]string{}}
	p.tm = &fakeTimers{clk: clk}
	p.upd = &recUpdates{fx: fx}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	cfg := Config{
		WorkDir:                     t.TempDir(),
		ExecutorRegistrationTimeout: time.Minute,
		ExecutorShutdownGracePeriod: 5 * time.Second,
		LauncherPath:                "/usr/bin/mezzo",
		Logger:                      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Clock:                       clk,
	}
	a := &Agent{
		files: files.New(),
		stop:  stop,
		core:  newCore(cfg, resources.Resources{}),
	}
	a.sum = p.upd
	a.containers = recContainers{p}
	p.calls = &recCalls{fx: fx}
	a.calls = p.calls
	a.timers = p.tm
	a.cp = recCheckpoints{fx}
	a.sess.agentID = "S1"
	a.sess.phase = sessRegistered
	p.Agent = a
	return p
}

// take returns the transcript since the last take.
func (p *pureAgent) take() []string {
	out := p.fx.lines
	p.fx.lines = nil
	return out
}

// want checks the transcript since the last take.
func (p *pureAgent) want(want ...string) {
	p.t.Helper()
	if got := p.take(); !slices.Equal(got, want) {
		p.t.Fatalf("effects:\n  got  %s\n  want %s", strings.Join(got, "\n       "), strings.Join(want, "\n       "))
	}
}

// advance moves the fake clock and fires the timers that fall due, in
// order, on the calling goroutine (the loop's stand-in).
func (p *pureAgent) advance(d time.Duration) {
	p.clk.Advance(d)
	p.tm.fireDue()
}

// executor returns the framework's executor.
func (p *pureAgent) executor(fid, eid string) *executor {
	p.t.Helper()
	fw := p.frameworks[fid]
	if fw == nil || fw.executors[eid] == nil {
		p.t.Fatalf("no executor %s/%s", fid, eid)
	}
	return fw.executors[eid]
}

// subscribe attaches a recording executor stream, as the executor API
// would on SUBSCRIBE.
func (p *pureAgent) subscribe(fid, eid string) *recConn {
	p.t.Helper()
	c := &recConn{fx: p.fx, id: eid, done: make(chan struct{})}
	p.t.Cleanup(func() { close(c.done) })
	call := &executorpb.Call{
		Type:        executorpb.Call_SUBSCRIBE.Enum(),
		FrameworkId: &mesos.FrameworkID{Value: proto.String(fid)},
		ExecutorId:  &mesos.ExecutorID{Value: proto.String(eid)},
		Subscribe:   &executorpb.Call_Subscribe{},
	}
	if err := p.subscribeExecutor(call, c); err != nil {
		p.t.Fatalf("subscribe %s: %v", eid, err)
	}
	return c
}

// executorSays delivers an executor's status update.
func (p *pureAgent) executorSays(fid, eid, tid string, state mesos.TaskState) {
	p.t.Helper()
	err := p.executorCall(&executorpb.Call{
		Type:        executorpb.Call_UPDATE.Enum(),
		FrameworkId: &mesos.FrameworkID{Value: proto.String(fid)},
		ExecutorId:  &mesos.ExecutorID{Value: proto.String(eid)},
		Update: &executorpb.Call_Update{Status: &mesos.TaskStatus{
			TaskId: &mesos.TaskID{Value: proto.String(tid)},
			State:  state.Enum(),
			Source: mesos.TaskStatus_SOURCE_EXECUTOR.Enum(),
			Uuid:   []byte("u-" + tid + "-" + state.String()),
		}},
	})
	if err != nil {
		p.t.Fatalf("executor update: %v", err)
	}
}

// exited ends the executor's container as the containerizer's wait would.
func (p *pureAgent) exited(fid, eid string, term *containerizer.Termination) {
	p.executorExited(p.executor(fid, eid), term)
}

// recContainers records container starts and kills.
type recContainers struct{ p *pureAgent }

func (c recContainers) start(e *executor, cfg containerizer.ContainerConfig, uris []*mesos.CommandInfo_URI, _ fetcher.Options, direct *mesos.TaskInfo) {
	c.p.names[e.containerID] = e.id
	c.p.fx.add("start %s path=%s args=%v direct=%v uris=%d", e.id, cfg.Path, cfg.Args[1:], direct != nil, len(uris))
}

func (c recContainers) destroy(id string, grace time.Duration) {
	c.p.fx.add("destroy %s grace=%v", c.p.names[id], grace)
}

func (c recContainers) update(id string, rs []*mesos.Resource) error {
	r, err := resources.FromProto(rs)
	if err != nil {
		c.p.fx.add("resize %s invalid: %v", c.p.names[id], err)
		return err
	}
	c.p.fx.add("resize %s %s", c.p.names[id], r.WithoutAllocationInfo())
	return c.p.updateErr
}

// recCalls records calls to the master; with down set it refuses them, as
// an agent that is not registered does.
type recCalls struct {
	fx   *effectLog
	down bool
}

func (c *recCalls) send(call *protocol.AgentCall) bool {
	if c.down {
		c.fx.add("master %s not sent: not registered", call.GetType())
		return false
	}
	switch call.GetType() {
	case protocol.AgentCall_UPDATE_RESOURCES:
		r, err := resources.FromProto(call.GetUpdateResources().GetOversubscribed())
		if err != nil {
			c.fx.add("master UPDATE_RESOURCES invalid: %v", err)
			break
		}
		kind := "throttle-able"
		if !r.Throttleable().Equal(r) {
			kind = "NOT ALL THROTTLE-ABLE"
		}
		c.fx.add("master UPDATE_RESOURCES %s %s", r.WithoutAllocationInfo(), kind)
	case protocol.AgentCall_EXECUTOR_EXITED:
		x := call.GetExecutorExited()
		c.fx.add("master EXECUTOR_EXITED %s status=%d", x.GetExecutorId().GetValue(), x.GetStatus())
	default:
		c.fx.add("master %s", call.GetType())
	}
	return true
}

// recCheckpoints records checkpoint writes and removals.
type recCheckpoints struct{ fx *effectLog }

func (c recCheckpoints) framework(agentID string, fw *framework) error {
	c.fx.add("checkpoint framework %s", fw.id)
	return nil
}
func (c recCheckpoints) executor(agentID string, fw *framework, e *executor) error {
	c.fx.add("checkpoint executor %s", e.id)
	return nil
}
func (c recCheckpoints) task(agentID string, fw *framework, e *executor, t *mesos.TaskInfo) error {
	c.fx.add("checkpoint task %s", t.GetTaskId().GetValue())
	return nil
}
func (c recCheckpoints) forgetTask(agentID string, e *executor, taskID string) error {
	c.fx.add("forget task %s", taskID)
	return nil
}
func (c recCheckpoints) forgetExecutor(agentID string, fw *framework, e *executor) error {
	c.fx.add("forget executor %s", e.id)
	return nil
}
func (c recCheckpoints) forgetFramework(agentID string, fw *framework) error {
	c.fx.add("forget framework %s", fw.id)
	return nil
}

// recUpdates is a status update manager that keeps every update until it
// is acknowledged and records what it was given.
type recUpdates struct {
	fx    *effectLog
	all   []*protocol.AgentCall_StatusUpdate
	acked map[string]bool
}

func (u *recUpdates) Update(x *protocol.AgentCall_StatusUpdate, checkpoint bool) error {
	st := x.GetStatus()
	line := fmt.Sprintf("update %s %s %s", st.GetTaskId().GetValue(), st.GetState(), st.GetSource())
	if st.Reason != nil {
		line += " " + st.GetReason().String()
	}
	if checkpoint {
		line += " checkpointed"
	}
	u.fx.add("%s", line)
	u.all = append(u.all, x)
	return nil
}

func (u *recUpdates) Acknowledge(fid, tid string, id []byte) (bool, error) {
	for _, x := range u.all {
		if x.GetFrameworkId().GetValue() == fid && x.GetStatus().GetTaskId().GetValue() == tid && string(x.GetStatus().GetUuid()) == string(id) {
			if u.acked == nil {
				u.acked = map[string]bool{}
			}
			u.acked[string(id)] = true
			return mesos.IsTerminal(x.GetStatus().GetState()), nil
		}
	}
	return false, fmt.Errorf("unknown update")
}

func (u *recUpdates) Pending(fid, tid string) []*protocol.AgentCall_StatusUpdate {
	var out []*protocol.AgentCall_StatusUpdate
	for _, x := range u.all {
		if x.GetFrameworkId().GetValue() == fid && x.GetStatus().GetTaskId().GetValue() == tid && !u.acked[string(x.GetStatus().GetUuid())] {
			out = append(out, x)
		}
	}
	return out
}

func (u *recUpdates) Latest(fid, tid string) (*mesos.TaskStatus, bool) {
	var last *mesos.TaskStatus
	for _, x := range u.all {
		if x.GetFrameworkId().GetValue() == fid && x.GetStatus().GetTaskId().GetValue() == tid {
			last = x.GetStatus()
		}
	}
	return last, last != nil
}

func (u *recUpdates) Unacknowledged() []*protocol.AgentCall_StatusUpdate {
	var out []*protocol.AgentCall_StatusUpdate
	for _, x := range u.all {
		if !u.acked[string(x.GetStatus().GetUuid())] {
			out = append(out, x)
		}
	}
	return out
}

func (u *recUpdates) RetryFramework(fid string)   { u.fx.add("retry-updates %s", fid) }
func (u *recUpdates) CleanupFramework(fid string) { u.fx.add("cleanup-updates %s", fid) }
func (u *recUpdates) Pause()                      { u.fx.add("pause-updates") }
func (u *recUpdates) Resume()                     { u.fx.add("resume-updates") }

// lastUUID is the uuid of the latest update of a task.
func (u *recUpdates) lastUUID(fid, tid string) []byte {
	st, _ := u.Latest(fid, tid)
	return st.GetUuid()
}

// fakeTimers holds armed timers until the test's clock reaches them.
type fakeTimers struct {
	clk    *clock.Fake
	timers []fakeTimer
}

type fakeTimer struct {
	at time.Time
	f  func()
	lt *loopTimer
}

func (ft *fakeTimers) after(d time.Duration, f func()) *loopTimer {
	lt := &loopTimer{cancel: make(chan struct{})}
	ft.timers = append(ft.timers, fakeTimer{at: ft.clk.Now().Add(d), f: f, lt: lt})
	return lt
}

// fireDue runs, in deadline order, every live timer whose time has come,
// including timers armed by the ones that fire.
func (ft *fakeTimers) fireDue() {
	for {
		i := -1
		for j, t := range ft.timers {
			if !t.lt.stopped && !t.at.After(ft.clk.Now()) && (i < 0 || t.at.Before(ft.timers[i].at)) {
				i = j
			}
		}
		if i < 0 {
			return
		}
		t := ft.timers[i]
		ft.timers = append(ft.timers[:i], ft.timers[i+1:]...)
		t.lt.stopped = true
		t.f()
	}
}

// recConn is an executor's event stream that records what it is sent.
type recConn struct {
	fx     *effectLog
	id     string
	done   chan struct{}
	closed bool
}

func (c *recConn) Send(ev *executorpb.Event) error {
	line := fmt.Sprintf("to %s %s", c.id, ev.GetType())
	switch ev.GetType() {
	case executorpb.Event_LAUNCH:
		line += " " + ev.GetLaunch().GetTask().GetTaskId().GetValue()
	case executorpb.Event_LAUNCH_GROUP:
		for _, t := range ev.GetLaunchGroup().GetTaskGroup().GetTasks() {
			line += " " + t.GetTaskId().GetValue()
		}
	case executorpb.Event_KILL:
		line += " " + ev.GetKill().GetTaskId().GetValue()
		if g := ev.GetKill().GetKillPolicy().GetGracePeriod(); g != nil {
			line += fmt.Sprintf(" grace=%v", time.Duration(g.GetNanoseconds()))
		}
	case executorpb.Event_ACKNOWLEDGED:
		line += " " + ev.GetAcknowledged().GetTaskId().GetValue()
	}
	c.fx.add("%s", line)
	return nil
}

func (c *recConn) Close()                { c.closed = true }
func (c *recConn) Done() <-chan struct{} { return c.done }

// Builders of master events.

func fwInfo(id string, caps ...mesos.FrameworkInfo_Capability_Type) *mesos.FrameworkInfo {
	info := &mesos.FrameworkInfo{Id: &mesos.FrameworkID{Value: proto.String(id)}, Name: proto.String(id), User: proto.String("nobody")}
	for _, c := range caps {
		info.Capabilities = append(info.Capabilities, &mesos.FrameworkInfo_Capability{Type: c.Enum()})
	}
	return info
}

func pureCommandTask(id string) *mesos.TaskInfo {
	return &mesos.TaskInfo{
		Name:    proto.String(id),
		TaskId:  &mesos.TaskID{Value: proto.String(id)},
		AgentId: agentIDProto("S1"),
		Command: &mesos.CommandInfo{Value: proto.String("sleep 1000")},
	}
}

func pureCustomTask(id, executorID string) *mesos.TaskInfo {
	return &mesos.TaskInfo{
		Name:    proto.String(id),
		TaskId:  &mesos.TaskID{Value: proto.String(id)},
		AgentId: agentIDProto("S1"),
		Executor: &mesos.ExecutorInfo{
			ExecutorId: &mesos.ExecutorID{Value: proto.String(executorID)},
			Command:    &mesos.CommandInfo{Value: proto.String("./my-executor"), Shell: proto.Bool(true)},
		},
	}
}

func runTaskEv(fw *mesos.FrameworkInfo, t *mesos.TaskInfo) *protocol.AgentEvent_RunTask {
	return &protocol.AgentEvent_RunTask{FrameworkInfo: fw, Task: t}
}

func killTaskEv(fid, tid string, grace time.Duration) *protocol.AgentEvent_KillTask {
	k := &protocol.AgentEvent_KillTask{
		FrameworkId: &mesos.FrameworkID{Value: proto.String(fid)},
		TaskId:      &mesos.TaskID{Value: proto.String(tid)},
	}
	if grace > 0 {
		k.KillPolicy = &mesos.KillPolicy{GracePeriod: &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(grace))}}
	}
	return k
}

func ackEv(fid, tid string, id []byte) *protocol.AgentEvent_Acknowledge {
	return &protocol.AgentEvent_Acknowledge{
		FrameworkId: &mesos.FrameworkID{Value: proto.String(fid)},
		TaskId:      &mesos.TaskID{Value: proto.String(tid)},
		Uuid:        id,
	}
}
