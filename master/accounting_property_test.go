package master

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/schedulerpb"
	"mezzo/resources"
)

// §3 "Accounting drift", as a property: after any sequence of launches
// (command tasks and tasks of custom executors), finishes (acknowledged at
// once or later), executor exits, agent reconnections, agent restarts (a
// framework that does not checkpoint loses its executors, tasks and held
// updates) and master failovers, for every agent
//   - what the allocator counts as used equals the master's outstanding
//     offers plus its live tasks and executors there,
//   - the master lists exactly the executors and live tasks the agent
//     runs (no phantom executor survives a restart), and
//   - used resources never exceed the agent's total, and
//   - a task that finished while its update awaits acknowledgement is
//     known to the master as TASK_FINISHED (through failovers too), the
//     held update is neither acknowledged nor dropped before its framework
//     is back, and the agent is told when it is.
// The allocator here is a ledger (acctAllocator); the agents are a naive
// model of what each one runs and reports.

// acctAllocator is the recording allocator plus a per-agent ledger of
// what is allocated (offered or used), kept from the master's calls.
type acctAllocator struct {
	*recordingAllocator
	used map[string]resources.Resources
}

func newAcct() *acctAllocator {
	return &acctAllocator{recordingAllocator: &recordingAllocator{}, used: map[string]resources.Resources{}}
}

func (a *acctAllocator) AddAgent(id string, info *mesos.AgentInfo, total resources.Resources, used map[string]resources.Resources) {
	var sum resources.Resources
	for _, u := range used {
		sum = sum.Add(u.WithoutAllocationInfo())
	}
	a.used[id] = sum
	a.recordingAllocator.AddAgent(id, info, total, used)
}

func (a *acctAllocator) RemoveAgent(id string) {
	delete(a.used, id)
	a.recordingAllocator.RemoveAgent(id)
}

func (a *acctAllocator) RecoverResources(fw, agent string, res resources.Resources, f *mesos.Filters) {
	if _, ok := a.used[agent]; ok {
		a.used[agent] = a.used[agent].Subtract(res.WithoutAllocationInfo())
	}
	a.recordingAllocator.RecoverResources(fw, agent, res, f)
}

// modelTask and modelAgent are what an agent really runs.
type modelTask struct {
	id, fw, exec string // exec "" for a command task
	res          string
}

type modelAgent struct {
	host  string
	fa    *fakeAgent
	tasks map[string]*modelTask      // live tasks by ID
	execs map[string]map[string]bool // framework -> custom executor IDs
	// unacked holds tasks that ended whose TASK_FINISHED the framework
	// has not acknowledged: the agent holds the update (uuid) and keeps
	// retrying it.
	unacked map[string]*unackedTask
}

type unackedTask struct {
	*modelTask
	uuid []byte
}

const (
	propTotal   = "cpus:4;mem:1024"
	propTaskRes = "cpus:0.5;mem:32"
	propExecRes = "cpus:0.25;mem:16"
	propEpsilon = 1e-9
)

type accountingModel struct {
	t      *testing.T
	h      *harness
	acct   *acctAllocator
	agents []*modelAgent
	fws    []*fakeFramework
	infos  []*mesos.FrameworkInfo // with their IDs, checkpoint flag
	next   int
}

func newAccountingModel(t *testing.T) *accountingModel {
	m := &accountingModel{t: t}
	m.h = newHarness(t)
	m.acct = newAcct()
	m.h.s.alloc = m.acct
	for i := range 2 {
		host := fmt.Sprintf("agent%d", i)
		ma := &modelAgent{host: host, tasks: map[string]*modelTask{}, execs: map[string]map[string]bool{},
			unacked: map[string]*unackedTask{}}
		ma.fa = m.h.addAgent(host, propTotal)
		m.agents = append(m.agents, ma)
	}
	for i, checkpoint := range []bool{true, false} {
		info := fwInfo(fmt.Sprintf("fw%d", i))
		info.Checkpoint = proto.Bool(checkpoint)
		f := m.h.subscribe(info)
		info.Id = frameworkID(f.id)
		m.fws = append(m.fws, f)
		m.infos = append(m.infos, info)
	}
	return m
}

func (m *accountingModel) fwIndex(id string) int {
	for i, info := range m.infos {
		if info.GetId().GetValue() == id {
			return i
		}
	}
	return -1
}

// launch offers an agent's free resources to a framework and launches one
// task on them, with a custom executor or as a command task.
func (m *accountingModel) launch(rt *rapid.T) {
	ma := m.agents[rapid.IntRange(0, len(m.agents)-1).Draw(rt, "agent")]
	fi := rapid.IntRange(0, len(m.fws)-1).Draw(rt, "framework")
	custom := rapid.Bool().Draw(rt, "custom")
	exID := fmt.Sprintf("ex%d", rapid.IntRange(0, 1).Draw(rt, "executor"))
	free := resources.MustParse(propTotal).Subtract(m.acct.used[ma.fa.id])
	if free.Scalar("cpus") < 0.75 || free.Scalar("mem") < 48 {
		return
	}
	f := m.fws[fi]
	m.acct.used[ma.fa.id] = m.acct.used[ma.fa.id].Add(free)
	o := m.h.offer(f, ma.fa, "*", free.String())
	m.next++
	id := fmt.Sprintf("t%d", m.next)
	ti := cmdTask(id, ma.fa.id, propTaskRes)
	mt := &modelTask{id: id, fw: f.id, res: propTaskRes}
	if custom {
		ti.Command = nil
		ti.Executor = &mesos.ExecutorInfo{ExecutorId: &mesos.ExecutorID{Value: proto.String(exID)},
			Command: &mesos.CommandInfo{Value: proto.String("exec")}, Resources: resources.ToPreRefinement(resources.MustParse(propExecRes).Proto())}
		mt.exec = exID
	}
	f.mustCall(acceptCall([]*mesos.Offer{o}, launch(ti)))
	for _, ev := range ma.fa.drain() {
		if ev.GetType() != protocol.AgentEvent_RUN_TASK {
			continue
		}
		// The agent runs what it is told.
		ma.tasks[id] = mt
		if custom {
			if ma.execs[f.id] == nil {
				ma.execs[f.id] = map[string]bool{}
			}
			ma.execs[f.id][exID] = true
		}
	}
	f.updates()
}

// offerOnly offers an agent's free resources to a framework and leaves
// the offer outstanding (agent restarts and failovers must rescind it).
func (m *accountingModel) offerOnly(rt *rapid.T) {
	ma := m.agents[rapid.IntRange(0, len(m.agents)-1).Draw(rt, "agent")]
	f := m.fws[rapid.IntRange(0, len(m.fws)-1).Draw(rt, "framework")]
	free := resources.MustParse(propTotal).Subtract(m.acct.used[ma.fa.id])
	if free.Scalar("cpus") < 0.5 || free.Scalar("mem") < 32 {
		return
	}
	m.acct.used[ma.fa.id] = m.acct.used[ma.fa.id].Add(free)
	m.h.offer(f, ma.fa, "*", free.String())
}

// decline declines one outstanding offer.
func (m *accountingModel) decline(rt *rapid.T) {
	ids := sortedKeys(m.h.s.offers)
	if len(ids) == 0 {
		return
	}
	o := m.h.s.offers[ids[rapid.IntRange(0, len(ids)-1).Draw(rt, "offer")]]
	f := m.fws[m.fwIndex(o.fwID)]
	f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_DECLINE.Enum(), Decline: &schedulerpb.Call_Decline{
		OfferIds: []*mesos.OfferID{offerID(o.id)}}})
	f.drain()
}

// finish ends a live task: TASK_FINISHED, acknowledged.
func (m *accountingModel) finish(rt *rapid.T) {
	ma, mt := m.pickTask(rt)
	if mt == nil {
		return
	}
	m.terminal(ma, mt.fw, mt.id, mesos.TaskState_TASK_FINISHED)
	delete(ma.tasks, mt.id)
}

// finishUnacked ends a live task whose TASK_FINISHED the framework does
// not acknowledge (yet): the outcome must survive whatever follows.
func (m *accountingModel) finishUnacked(rt *rapid.T) {
	ma, mt := m.pickTask(rt)
	if mt == nil {
		return
	}
	id := ma.fa.update(mt.fw, mt.id, mesos.TaskState_TASK_FINISHED, true)
	ma.fa.drain()
	delete(ma.tasks, mt.id)
	ma.unacked[mt.id] = &unackedTask{modelTask: mt, uuid: id}
}

// ackLater has the framework acknowledge a held TASK_FINISHED (the agent
// retries it first, as it would after a failover).
func (m *accountingModel) ackLater(rt *rapid.T) {
	var ids []string
	var owners []*modelAgent
	for _, ma := range m.agents {
		for _, id := range sortedKeys(ma.unacked) {
			ids = append(ids, id)
			owners = append(owners, ma)
		}
	}
	if len(ids) == 0 {
		return
	}
	i := rapid.IntRange(0, len(ids)-1).Draw(rt, "unacked task")
	ma, u := owners[i], owners[i].unacked[ids[i]]
	m.retry(ma, u)
	f := m.fws[m.fwIndex(u.fw)]
	ups := f.updates()
	if len(ups) == 0 || ups[len(ups)-1].GetState() != mesos.TaskState_TASK_FINISHED || string(ups[len(ups)-1].GetUuid()) != string(u.uuid) {
		rt.Fatalf("the framework did not get %s's held TASK_FINISHED: %v", u.id, ups)
	}
	f.mustCall(ack(ma.fa.id, u.id, u.uuid))
	acks := agentEventsOf(ma.fa.drain(), protocol.AgentEvent_ACKNOWLEDGE)
	if len(acks) != 1 {
		rt.Fatalf("the acknowledgement of %s did not reach the agent", u.id)
	}
	delete(ma.unacked, u.id)
}

// retry resends a held update as the agent's status update manager does.
func (m *accountingModel) retry(ma *modelAgent, u *unackedTask) {
	ma.fa.updateWith(u.fw, u.id, mesos.TaskState_TASK_FINISHED, mesos.TaskState_TASK_FINISHED, u.uuid)
}

// terminal sends a terminal update from the agent and the framework's
// acknowledgement.
func (m *accountingModel) terminal(ma *modelAgent, fwID, taskID string, st mesos.TaskState) {
	id := ma.fa.update(fwID, taskID, st, true)
	if i := m.fwIndex(fwID); i >= 0 {
		m.fws[i].updates()
		m.fws[i].mustCall(ack(ma.fa.id, taskID, id))
	}
	ma.fa.drain()
}

func (m *accountingModel) pickTask(rt *rapid.T) (*modelAgent, *modelTask) {
	var all []*modelTask
	var owners []*modelAgent
	for _, ma := range m.agents {
		for _, id := range sortedKeys(ma.tasks) {
			all = append(all, ma.tasks[id])
			owners = append(owners, ma)
		}
	}
	if len(all) == 0 {
		return nil, nil
	}
	i := rapid.IntRange(0, len(all)-1).Draw(rt, "task")
	return owners[i], all[i]
}

// executorExit ends a custom executor that has no live task.
func (m *accountingModel) executorExit(rt *rapid.T) {
	type ex struct {
		ma     *modelAgent
		fw, id string
	}
	var idle []ex
	for _, ma := range m.agents {
		for _, fw := range sortedKeys(ma.execs) {
			for _, id := range sortedKeys(ma.execs[fw]) {
				busy := false
				for _, t := range ma.tasks {
					busy = busy || (t.fw == fw && t.exec == id)
				}
				if !busy {
					idle = append(idle, ex{ma, fw, id})
				}
			}
		}
	}
	if len(idle) == 0 {
		return
	}
	e := idle[rapid.IntRange(0, len(idle)-1).Draw(rt, "idle executor")]
	err := e.ma.fa.call(&protocol.AgentCall{Type: protocol.AgentCall_EXECUTOR_EXITED.Enum(),
		ExecutorExited: &protocol.AgentCall_ExecutorExited{FrameworkId: frameworkID(e.fw),
			ExecutorId: &mesos.ExecutorID{Value: proto.String(e.id)}, Status: proto.Int32(0)}})
	if err != nil {
		m.t.Fatalf("EXECUTOR_EXITED: %v", err)
	}
	delete(e.ma.execs[e.fw], e.id)
	if len(e.ma.execs[e.fw]) == 0 {
		delete(e.ma.execs, e.fw)
	}
	for _, f := range m.fws {
		f.drain()
	}
}

// report is the SUBSCRIBE an agent sends: what it runs (never its
// command executors).
func (m *accountingModel) report(ma *modelAgent) *protocol.AgentCall_Subscribe {
	sub := agentSub(ma.host, propTotal)
	sub.AgentInfo.Id = agentID(ma.fa.id)
	fws := map[string]bool{}
	for _, fw := range sortedKeys(ma.execs) {
		fws[fw] = true
		for _, id := range sortedKeys(ma.execs[fw]) {
			sub.Executors = append(sub.Executors, &mesos.ExecutorInfo{ExecutorId: &mesos.ExecutorID{Value: proto.String(id)},
				FrameworkId: frameworkID(fw), Command: &mesos.CommandInfo{Value: proto.String("exec")},
				Resources: resources.MustParse(propExecRes).AllocatedTo("*").Proto()})
		}
	}
	for _, id := range sortedKeys(ma.tasks) {
		t := ma.tasks[id]
		fws[t.fw] = true
		tp := &mesos.Task{Name: proto.String(id), TaskId: &mesos.TaskID{Value: proto.String(id)}, FrameworkId: frameworkID(t.fw),
			AgentId: agentID(ma.fa.id), State: mesos.TaskState_TASK_RUNNING.Enum(),
			Resources: resources.MustParse(t.res).AllocatedTo("*").Proto()}
		if t.exec != "" {
			tp.ExecutorId = &mesos.ExecutorID{Value: proto.String(t.exec)}
		}
		sub.Tasks = append(sub.Tasks, tp)
	}
	for _, id := range sortedKeys(ma.unacked) {
		u := ma.unacked[id]
		fws[u.fw] = true
		tp := &mesos.Task{Name: proto.String(id), TaskId: &mesos.TaskID{Value: proto.String(id)}, FrameworkId: frameworkID(u.fw),
			AgentId: agentID(ma.fa.id), State: mesos.TaskState_TASK_FINISHED.Enum(),
			StatusUpdateState: mesos.TaskState_TASK_FINISHED.Enum(), StatusUpdateUuid: u.uuid,
			Resources: resources.MustParse(u.res).AllocatedTo("*").Proto()}
		if u.exec != "" {
			tp.ExecutorId = &mesos.ExecutorID{Value: proto.String(u.exec)}
		}
		sub.Tasks = append(sub.Tasks, tp)
	}
	for _, id := range sortedKeys(fws) {
		sub.Frameworks = append(sub.Frameworks, m.infos[m.fwIndex(id)])
	}
	return sub
}

// reregister re-subscribes an agent with its report and answers the
// master's RECONCILE as an agent does: TASK_LOST for tasks it lacks.
func (m *accountingModel) reregister(ma *modelAgent) {
	ma.fa = m.h.agentSubscribe(m.report(ma))
	if ma.fa.id == "" {
		m.t.Fatalf("agent %s not re-registered: %v", ma.host, eventTypes(ma.fa.events))
	}
	for _, ev := range ma.fa.events {
		for _, t := range ev.GetReconcile().GetTasks() {
			if ma.tasks[t.GetTaskId().GetValue()] == nil {
				m.terminal(ma, t.GetFrameworkId().GetValue(), t.GetTaskId().GetValue(), mesos.TaskState_TASK_LOST)
			}
		}
	}
}

// restart drops an agent's connection and re-registers it; when lose is
// set the agent process restarted, so what belongs to the framework that
// does not checkpoint is gone.
func (m *accountingModel) restart(rt *rapid.T) {
	ma := m.agents[rapid.IntRange(0, len(m.agents)-1).Draw(rt, "agent")]
	lose := rapid.Bool().Draw(rt, "restart")
	ma.fa.st.Close()
	m.h.settle()
	if lose {
		for i, info := range m.infos {
			if info.GetCheckpoint() {
				continue
			}
			fw := m.fws[i].id
			delete(ma.execs, fw)
			for id, t := range ma.tasks {
				if t.fw == fw {
					delete(ma.tasks, id)
				}
			}
			for id, u := range ma.unacked {
				if u.fw == fw {
					delete(ma.unacked, id) // its stream was not checkpointed
				}
			}
		}
	}
	m.reregister(ma)
	for _, f := range m.fws {
		f.drain()
	}
}

// failover replaces the master: a new one on the same registry, to which
// every agent re-registers and every framework re-subscribes.
func (m *accountingModel) failover(rt *rapid.T) {
	old := m.h
	for _, ma := range m.agents {
		ma.fa.st.Close()
	}
	m.h = newHarness(m.t)
	m.h.reg = &heldRegistrar{inner: old.reg.inner}
	m.h.s.reg = m.h.reg
	m.acct = newAcct()
	m.h.s.alloc = m.acct
	for _, ma := range m.agents {
		m.reregister(ma)
		// The agent forwards what it holds at once; no framework is
		// subscribed yet: nothing may be acknowledged or dropped.
		for _, id := range sortedKeys(ma.unacked) {
			m.retry(ma, ma.unacked[id])
		}
		if acks := agentEventsOf(ma.fa.drain(), protocol.AgentEvent_ACKNOWLEDGE); len(acks) > 0 {
			rt.Fatalf("%s: the new master acknowledged an update no framework received", ma.host)
		}
	}
	for i, info := range m.infos {
		m.fws[i] = m.h.subscribe(info)
	}
	for _, ma := range m.agents {
		told := map[string]bool{}
		for _, ev := range agentEventsOf(ma.fa.drain(), protocol.AgentEvent_UPDATE_FRAMEWORK) {
			told[ev.GetUpdateFramework().GetFrameworkInfo().GetId().GetValue()] = true
		}
		for _, id := range sortedKeys(ma.unacked) {
			if fw := ma.unacked[id].fw; !told[fw] {
				rt.Fatalf("%s holds %s's update for %s, but was not told the framework re-subscribed", ma.host, id, fw)
			}
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < propEpsilon }

// check verifies the properties for every agent.
func (m *accountingModel) check(rt *rapid.T) {
	total := resources.MustParse(propTotal)
	for _, ma := range m.agents {
		a := m.h.s.agents[ma.fa.id]
		if a == nil {
			rt.Fatalf("agent %s not registered", ma.host)
		}
		var want resources.Resources
		for _, o := range m.h.s.offers {
			if o.agentID == a.id {
				want = want.Add(o.res.WithoutAllocationInfo())
			}
		}
		var live []string
		for _, ts := range a.tasks {
			for id, t := range ts {
				if !t.recovered {
					want = want.Add(t.res.WithoutAllocationInfo())
				}
				if !mesos.IsTerminal(t.proto.GetState()) {
					live = append(live, id)
				}
			}
		}
		var execs []string
		for fw, es := range a.executors {
			for id, e := range es {
				want = want.Add(e.res.WithoutAllocationInfo())
				execs = append(execs, fw+"/"+id)
			}
		}
		got := m.acct.used[a.id]
		for _, name := range []string{"cpus", "mem"} {
			if !near(got.Scalar(name), want.Scalar(name)) {
				rt.Fatalf("%s: the allocator counts %s %g used, the master's offers, tasks and executors hold %g",
					ma.host, name, got.Scalar(name), want.Scalar(name))
			}
			if want.Scalar(name) > total.Scalar(name)+propEpsilon {
				rt.Fatalf("%s: %s %g used of %g", ma.host, name, want.Scalar(name), total.Scalar(name))
			}
		}
		var modelExecs, modelLive []string
		for fw, es := range ma.execs {
			for id := range es {
				modelExecs = append(modelExecs, fw+"/"+id)
			}
		}
		for id := range ma.tasks {
			modelLive = append(modelLive, id)
		}
		if s1, s2 := sortedJoin(execs), sortedJoin(modelExecs); s1 != s2 {
			rt.Fatalf("%s: the master lists executors [%s], the agent runs [%s]", ma.host, s1, s2)
		}
		if s1, s2 := sortedJoin(live), sortedJoin(modelLive); s1 != s2 {
			rt.Fatalf("%s: the master lists live tasks [%s], the agent runs [%s]", ma.host, s1, s2)
		}
		for _, id := range sortedKeys(ma.unacked) {
			u := ma.unacked[id]
			t := a.tasks[u.fw][id]
			if t == nil || t.proto.GetState() != mesos.TaskState_TASK_FINISHED {
				rt.Fatalf("%s: %s finished (update unacknowledged) but the master has %v", ma.host, id, t)
			}
		}
	}
}

func sortedJoin(s []string) string {
	sort.Strings(s)
	return strings.Join(s, " ")
}

func TestAccountingProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := newAccountingModel(t)
		rt.Repeat(map[string]func(*rapid.T){
			"launch":         m.launch,
			"finish":         m.finish,
			"finish, no ack": m.finishUnacked,
			"ack later":      m.ackLater,
			"offer only":     m.offerOnly,
			"decline":        m.decline,
			"executor exit":  m.executorExit,
			"agent restart":  m.restart,
			"failover":       m.failover,
			"":               m.check,
		})
	})
}
