package agent

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mezzo/agent/containerizer"
	"mezzo/agent/oversub"
	"mezzo/api/mesos"
	"mezzo/resources"

	"google.golang.org/protobuf/proto"
)

// Pure tests of oversubscription on the agent's loop (oversubscription.go):
// recording sinks, a fake clock, the real estimators and controllers of
// agent/oversub run synchronously when the test says (ovsRun), measuring
// a scripted meter. Seeds: oversubscription ("(3) The agent will send the
// total amount of oversubscribed resources to the master when the latest
// estimate is different from the previous estimate"; "the QoS controller
// needs to be able to kill ... running revocable tasks") and
// oversubscription-for-reservation (eviction, cases 1 and 2).

// scripted is an estimator and a controller whose answers the test sets
// (registered once under "test-script").
var scripted struct {
	sync.Mutex
	estimate    resources.Resources
	estimateErr error
	corrections func(oversub.Snapshot) []oversub.Correction
}

var registerScripted sync.Once

type scriptedEstimator struct{ usage oversub.UsageSource }

func (s scriptedEstimator) Oversubscribable(ctx context.Context, _ time.Time) (resources.Resources, error) {
	if _, err := s.usage.Usage(ctx); err != nil {
		return resources.Resources{}, err
	}
	scripted.Lock()
	defer scripted.Unlock()
	return scripted.estimate, scripted.estimateErr
}

type scriptedController struct{ usage oversub.UsageSource }

func (s scriptedController) Corrections(ctx context.Context, _ time.Time) ([]oversub.Correction, error) {
	snap, err := s.usage.Usage(ctx)
	if err != nil {
		return nil, err
	}
	scripted.Lock()
	defer scripted.Unlock()
	if scripted.corrections == nil {
		return nil, nil
	}
	return scripted.corrections(snap), nil
}

func useScripted(t *testing.T) {
	registerScripted.Do(func() {
		oversub.RegisterEstimator("test-script", func(_ oversub.Config, u oversub.UsageSource) (oversub.ResourceEstimator, error) {
			return scriptedEstimator{u}, nil
		})
		oversub.RegisterController("test-script", func(_ oversub.Config, u oversub.UsageSource) (oversub.QoSController, error) {
			return scriptedController{u}, nil
		})
	})
	t.Cleanup(func() {
		scripted.Lock()
		scripted.estimate, scripted.estimateErr, scripted.corrections = resources.Resources{}, nil, nil
		scripted.Unlock()
	})
}

func setEstimate(r resources.Resources, err error) {
	scripted.Lock()
	scripted.estimate, scripted.estimateErr = r, err
	scripted.Unlock()
}

// syncOversub is the oversubSink of pure tests: it records each request
// and runs it when the test calls ovsRun.
type syncOversub struct {
	p    *pureAgent
	r    *oversubRunner
	jobs []func()
}

func (s *syncOversub) estimate(snap oversub.Snapshot, now time.Time, done func(resources.Resources, error)) {
	s.p.fx.add("estimate over %d container(s)", len(snap.Containers))
	s.jobs = append(s.jobs, func() { done(s.r.estimate(context.Background(), snap, now)) })
}

func (s *syncOversub) correct(snap oversub.Snapshot, now time.Time, done func([]oversub.Correction, error)) {
	s.p.fx.add("qos look over %d container(s)", len(snap.Containers))
	s.jobs = append(s.jobs, func() { done(s.r.correct(context.Background(), snap, now)) })
}

// fakeMeter returns what the test set per container.
type fakeMeter struct {
	stats map[string]*mesos.ResourceStatistics
}

func (m *fakeMeter) Usage(_ context.Context, id string) (*mesos.ResourceStatistics, error) {
	if st := m.stats[id]; st != nil {
		return proto.Clone(st).(*mesos.ResourceStatistics), nil
	}
	return nil, errors.New("not measured")
}

// ovsAgent is a pure agent with oversubscription configured.
type ovsAgent struct {
	*pureAgent
	sink  *syncOversub
	meter *fakeMeter
}

func newOvsAgent(t *testing.T, total string, cfg oversub.Config) *ovsAgent {
	t.Helper()
	useScripted(t)
	p := newPureAgent(t)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	p.cfg.Oversubscription = cfg
	p.total = resources.MustParse(total)
	meter := &fakeMeter{stats: map[string]*mesos.ResourceStatistics{}}
	r, err := newOversubRunner(cfg, meter)
	if err != nil {
		t.Fatal(err)
	}
	p.authFailures = &atomic.Int64{}
	o := &ovsAgent{pureAgent: p, meter: meter}
	o.sink = &syncOversub{p: p, r: r}
	p.ovsSink = o.sink
	return o
}

// ovsRun answers the pending estimator and controller requests.
func (o *ovsAgent) ovsRun() {
	jobs := o.sink.jobs
	o.sink.jobs = nil
	for _, j := range jobs {
		j()
	}
}

// withResources gives a task resources; kind "regular", "slack"
// (its cpus throttle-able revocable) or "lent" (its cpus revocable without
// throttle_info); other resources stay regular, as the estimators lend cpus
// only.
func withResources(t *mesos.TaskInfo, text, kind string) *mesos.TaskInfo {
	rs := resources.MustParse(text).Proto()
	for _, r := range rs {
		if r.GetName() != "cpus" {
			continue
		}
		switch kind {
		case "slack":
			r.Revocable = &mesos.Resource_RevocableInfo{ThrottleInfo: &mesos.Resource_RevocableInfo_ThrottleInfo{}}
		case "lent":
			r.Revocable = &mesos.Resource_RevocableInfo{}
		}
	}
	t.Resources = rs
	return t
}

// slack is revocable throttle-able text.
func slack(text string) resources.Resources {
	rs := resources.MustParse(text).Proto()
	for _, r := range rs {
		r.Revocable = &mesos.Resource_RevocableInfo{ThrottleInfo: &mesos.Resource_RevocableInfo_ThrottleInfo{}}
	}
	r, err := resources.FromProto(rs)
	if err != nil {
		panic(err)
	}
	return r
}

// running launches a custom-executor task and has its container started
// and its executor subscribed and the task running.
func (o *ovsAgent) running(fw *mesos.FrameworkInfo, task *mesos.TaskInfo) *executor {
	o.t.Helper()
	o.runTask(runTaskEv(fw, task))
	eid := task.GetExecutor().GetExecutorId().GetValue()
	e := o.executor(fw.GetId().GetValue(), eid)
	o.launched(e, containerizer.Container{ID: e.containerID, Pid: 100})
	o.subscribe(fw.GetId().GetValue(), eid)
	o.executorSays(fw.GetId().GetValue(), eid, task.GetTaskId().GetValue(), mesos.TaskState_TASK_RUNNING)
	o.take()
	return e
}

func (o *ovsAgent) status(fid, tid string) *mesos.TaskStatus {
	o.t.Helper()
	st, ok := o.upd.Latest(fid, tid)
	if !ok {
		o.t.Fatalf("no update of %s/%s", fid, tid)
	}
	return st
}

// The estimate loop: the first estimate is asked for when the loop starts
// and sent; the next one an interval after each answer; an unchanged total
// is not resent; revocable resources a container holds are added back (the
// estimator leaves them out); a (re-)registration resends the latest total;
// a total that could not be sent is sent at the next answer.
func TestPureEstimateLoop(t *testing.T) {
	o := newOvsAgent(t, "cpus:4;mem:4096", oversub.Config{ResourceEstimator: "test-script"})
	setEstimate(slack("cpus:2"), nil)
	o.startOversubscription()
	o.want("estimate over 0 container(s)")
	o.advance(time.Hour) // nothing is asked while an estimate is in flight
	o.want()
	o.ovsRun()
	o.want("master UPDATE_RESOURCES " + slack("cpus:2").String() + " throttle-able")

	o.advance(15*time.Second - time.Millisecond)
	o.want()
	o.advance(time.Millisecond)
	o.want("estimate over 0 container(s)")
	o.ovsRun()
	o.want() // unchanged: not resent

	// A revocable task takes 1 of the 2 cpus; the estimator now says 1
	// more, and the total (2) is unchanged.
	o.running(fwInfo("F1", mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES),
		withResources(pureCustomTask("T1", "E1"), "cpus:1;mem:64", "slack"))
	setEstimate(slack("cpus:1"), nil)
	o.advance(15 * time.Second)
	o.want("estimate over 1 container(s)")
	o.ovsRun()
	o.want()

	// Usage rose: the estimate falls to 0.5; the total is 1.5.
	setEstimate(slack("cpus:0.5"), nil)
	o.advance(15 * time.Second)
	o.ovsRun()
	o.want("estimate over 1 container(s)", "master UPDATE_RESOURCES "+slack("cpus:1.5").String()+" throttle-able")

	// Re-registration: the latest total goes to the master at once.
	o.oversubRegistered()
	o.want("master UPDATE_RESOURCES " + slack("cpus:1.5").String() + " throttle-able")

	// Disconnected: the changed total cannot be sent, and is sent at the
	// next answer although the estimate did not change again.
	o.calls.down = true
	setEstimate(slack("cpus:3"), nil)
	o.advance(15 * time.Second)
	o.ovsRun()
	o.want("estimate over 1 container(s)", "master UPDATE_RESOURCES not sent: not registered")
	o.calls.down = false
	o.advance(15 * time.Second)
	o.ovsRun()
	o.want("estimate over 1 container(s)", "master UPDATE_RESOURCES "+slack("cpus:4").String()+" throttle-able")

	// A failing estimator keeps the last estimate and sends nothing.
	setEstimate(resources.Resources{}, errors.New("cgroups unreadable"))
	o.advance(15 * time.Second)
	o.ovsRun()
	o.want("estimate over 1 container(s)")
	if o.ovs.estimateErrors != 1 || !o.ovs.total.Equal(slack("cpus:4")) {
		t.Fatalf("errors %d total %v", o.ovs.estimateErrors, o.ovs.total)
	}
	m := o.metricsSnapshot()
	if m["slave/cpus_revocable_total"] != 4 || m["slave/cpus_revocable_used"] != 1 || m["slave/cpus_revocable_percent"] != 0.25 {
		t.Fatalf("revocable metrics: total %v used %v percent %v", m["slave/cpus_revocable_total"],
			m["slave/cpus_revocable_used"], m["slave/cpus_revocable_percent"])
	}
}

// The fixed estimator through the loop: what it lends carries
// throttle_info, and what revocable containers hold counts against it.
func TestPureFixedEstimatorThroughTheLoop(t *testing.T) {
	o := newOvsAgent(t, "cpus:4;mem:4096", oversub.Config{ResourceEstimator: "fixed", FixedResources: "cpus:3"})
	o.running(fwInfo("F1", mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES),
		withResources(pureCustomTask("T1", "E1"), "cpus:1", "slack"))
	o.startOversubscription()
	o.ovsRun()
	o.want("estimate over 1 container(s)", "master UPDATE_RESOURCES "+slack("cpus:3").String()+" throttle-able")
	if !o.ovs.estimate.Equal(slack("cpus:2")) {
		t.Fatalf("estimate %v, want 2 throttle-able cpus (3 less the 1 held)", o.ovs.estimate)
	}
}

// A noop estimator and controller run no loop: nothing is measured, no
// UPDATE_RESOURCES is sent.
func TestPureNoopRunsNothing(t *testing.T) {
	p := newPureAgent(t)
	p.startOversubscription() // no sink: New builds none for noop/noop
	p.advance(time.Hour)
	p.want()
}

// QoS corrections: the controller looks every qosSamplePeriod while a
// revocable container lives; each correction destroys the whole container
// at once; its tasks end TASK_LOST (TASK_GONE for partition-aware
// frameworks), REASON_CONTAINER_PREEMPTED (Mesos's REASON_EXECUTOR_PREEMPTED,
// number 17), with a message naming the controller; regular containers are
// never touched; the next look waits --qos_correction_interval_min.
func TestPureQoSCorrections(t *testing.T) {
	load := 1.0
	o := newOvsAgent(t, "cpus:4;mem:4096", oversub.Config{
		QoSController:            "load",
		LoadThreshold5Min:        proto.Float64(3),
		LoadAverage:              func() (oversub.LoadAverage, error) { return oversub.LoadAverage{Five: load}, nil },
		QoSCorrectionIntervalMin: 5 * time.Second,
	})
	o.startOversubscription()
	o.advance(qosSamplePeriod)
	o.want() // no revocable container: the controller is not asked

	o.running(fwInfo("F1"), withResources(pureCustomTask("R1", "ER1"), "cpus:2;mem:512", "regular"))
	o.running(fwInfo("F2", mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES),
		withResources(pureCustomTask("B1", "EB1"), "cpus:1;mem:64", "slack"))
	o.running(fwInfo("F3", mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES, mesos.FrameworkInfo_Capability_PARTITION_AWARE),
		withResources(pureCustomTask("B2", "EB2"), "cpus:1;mem:64", "slack"))
	o.advance(qosSamplePeriod)
	o.want("qos look over 3 container(s)")
	o.ovsRun()
	o.want() // load below the threshold
	o.advance(qosSamplePeriod)
	o.want("qos look over 3 container(s)")
	load = 7
	o.ovsRun()
	o.want("destroy EB1 grace=0s", "destroy EB2 grace=0s")
	// The next look waits qos_correction_interval_min.
	o.advance(5*time.Second - time.Millisecond)
	o.want()
	o.exited("F2", "EB1", &containerizer.Termination{Status: 9, Destroyed: true})
	o.exited("F3", "EB2", &containerizer.Termination{Status: 9, Destroyed: true})
	o.want(
		"update B1 TASK_LOST SOURCE_AGENT REASON_CONTAINER_PREEMPTED",
		"master EXECUTOR_EXITED EB1 status=9",
		"update B2 TASK_GONE SOURCE_AGENT REASON_CONTAINER_PREEMPTED",
		"master EXECUTOR_EXITED EB2 status=9",
	)
	for _, tid := range [][2]string{{"F2", "B1"}, {"F3", "B2"}} {
		if msg := o.status(tid[0], tid[1]).GetMessage(); !strings.Contains(msg, "load QoS controller") || !strings.Contains(msg, "preempted") {
			t.Errorf("%s: message %q does not name the controller", tid[1], msg)
		}
	}
	if st := o.status("F1", "R1").GetState(); st != mesos.TaskState_TASK_RUNNING {
		t.Fatalf("the regular task is %v", st)
	}
	// No revocable container is left: no more looks, still no kill.
	o.advance(time.Hour)
	o.want()
	m := o.metricsSnapshot()
	if m["slave/executors_preempted"] != 2 || m["slave/qos_corrections"] != 2 || m["slave/tasks_lost"] != 1 || m["slave/tasks_gone"] != 1 {
		t.Fatalf("metrics: preempted %v corrections %v lost %v gone %v", m["slave/executors_preempted"],
			m["slave/qos_corrections"], m["slave/tasks_lost"], m["slave/tasks_gone"])
	}
}

// The loop checks what a controller names: a regular container is never
// killed (refused and counted), a container already ending or unknown is
// ignored, and a container named twice is killed once.
func TestPureCorrectionsOnlyRevocable(t *testing.T) {
	o := newOvsAgent(t, "cpus:4;mem:4096", oversub.Config{QoSController: "test-script"})
	scripted.Lock()
	scripted.corrections = func(s oversub.Snapshot) []oversub.Correction {
		var out []oversub.Correction
		for _, c := range s.Containers {
			k := oversub.Correction{Type: oversub.Kill, FrameworkID: c.FrameworkID, ExecutorID: c.ExecutorID,
				ContainerID: c.ContainerID, Controller: "test-script", Message: "test-script says so"}
			out = append(out, k, k) // everyone, twice, regular ones too
		}
		return append(out, oversub.Correction{Type: oversub.Kill, ContainerID: "no-such-container"})
	}
	scripted.Unlock()
	o.startOversubscription()
	o.running(fwInfo("F1"), withResources(pureCustomTask("R1", "ER1"), "cpus:2", "regular"))
	o.running(fwInfo("F2"), withResources(pureCustomTask("B1", "EB1"), "cpus:1", "slack"))
	o.advance(qosSamplePeriod)
	o.ovsRun()
	o.want("qos look over 2 container(s)", "destroy EB1 grace=0s")
	if o.ovs.correctionsRefused != 2 || o.ovs.correctionsIgnored != 2 || o.ovs.qosPreempted != 1 {
		t.Fatalf("refused %d ignored %d preempted %d", o.ovs.correctionsRefused, o.ovs.correctionsIgnored, o.ovs.qosPreempted)
	}
	if e := o.executor("F1", "ER1"); e.phase != phaseRunning {
		t.Fatalf("regular executor %v", e.phase)
	}
	// The preempted one is ending: the next round ignores it.
	o.advance(qosSamplePeriod)
	o.ovsRun()
	o.want("qos look over 2 container(s)")
}

// A revocable container killed while its process is still starting is
// destroyed once it has started, and its tasks are reported preempted.
func TestPurePreemptWhileLaunching(t *testing.T) {
	o := newOvsAgent(t, "cpus:4;mem:4096", oversub.Config{QoSController: "test-script"})
	o.runTask(runTaskEv(fwInfo("F2"), withResources(pureCustomTask("B1", "EB1"), "cpus:1", "slack")))
	o.take()
	e := o.executor("F2", "EB1")
	o.preempt(e, "Container preempted by QoS correction: test")
	o.want()
	o.launched(e, containerizer.Container{ID: e.containerID, Pid: 7})
	o.want("destroy EB1 grace=0s")
	o.exited("F2", "EB1", &containerizer.Termination{Status: 9, Destroyed: true})
	o.want("update B1 TASK_LOST SOURCE_AGENT REASON_CONTAINER_PREEMPTED", "master EXECUTOR_EXITED EB1 status=9")
}

// The agent's /state shows the oversubscribed total (mezzo only) and /flags
// the oversubscription flags.
func TestPureStateShowsEstimate(t *testing.T) {
	o := newOvsAgent(t, "cpus:4;mem:4096", oversub.Config{ResourceEstimator: "test-script"})
	setEstimate(slack("cpus:1.5"), nil)
	o.startOversubscription()
	o.ovsRun()
	v := o.stateView()
	got, err := resources.FromProto(v.Oversubscribed)
	if err != nil || !got.Equal(slack("cpus:1.5")) {
		t.Fatalf("state's oversubscribed %v (%v), want 1.5 throttle-able cpus", got, err)
	}
	if f := o.flags(); f["resource_estimator"] != "test-script" || f["oversubscribed_resources_interval"] != "15secs" {
		t.Fatalf("flags: estimator %q interval %q", f["resource_estimator"], f["oversubscribed_resources_interval"])
	}
}

// A direct command task (no executor process) on revocable cpus is
// preempted the same way: its container is destroyed at once and the task
// ends TASK_LOST with REASON_CONTAINER_PREEMPTED, not as a kill.
func TestPurePreemptDirectTask(t *testing.T) {
	o := newOvsAgent(t, "cpus:4;mem:4096", oversub.Config{QoSController: "test-script"})
	o.cfg.DirectCommandTasks = true
	task := withResources(pureCommandTask("B1"), "cpus:1;mem:32", "slack")
	o.runTask(runTaskEv(fwInfo("F2", mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES), task))
	e := o.executor("F2", "B1")
	if !e.direct {
		t.Fatal("not a direct task")
	}
	o.directStarting(e)
	o.launched(e, containerizer.Container{ID: e.containerID, Pid: 42})
	o.take()
	scripted.Lock()
	scripted.corrections = func(s oversub.Snapshot) []oversub.Correction {
		return []oversub.Correction{{Type: oversub.Kill, ContainerID: s.Containers[0].ContainerID, Controller: "test-script", Message: "test-script: interference"}}
	}
	scripted.Unlock()
	o.startOversubscription()
	o.advance(qosSamplePeriod)
	o.ovsRun()
	o.want("qos look over 1 container(s)", "destroy B1 grace=0s")
	o.exited("F2", "B1", &containerizer.Termination{Status: 9, Destroyed: true})
	o.want("update B1 TASK_LOST SOURCE_AGENT REASON_CONTAINER_PREEMPTED", "master EXECUTOR_EXITED B1 status=9")
}

// With --qos_correction_interval_min, a round that killed nothing is
// followed by the next look one sample period later, a round that killed
// by the next look no sooner than the interval.
func TestPureQoSCorrectionInterval(t *testing.T) {
	o := newOvsAgent(t, "cpus:4;mem:4096", oversub.Config{QoSController: "test-script", QoSCorrectionIntervalMin: 3 * time.Second})
	kill := false
	scripted.Lock()
	scripted.corrections = func(s oversub.Snapshot) []oversub.Correction {
		if !kill {
			return nil
		}
		var out []oversub.Correction
		for _, c := range s.Containers {
			out = append(out, oversub.Correction{Type: oversub.Kill, ContainerID: c.ContainerID, Controller: "test-script", Message: "x"})
		}
		return out
	}
	scripted.Unlock()
	o.startOversubscription()
	o.running(fwInfo("F2"), withResources(pureCustomTask("B1", "EB1"), "cpus:1", "slack"))
	o.advance(qosSamplePeriod)
	o.ovsRun()
	o.want("qos look over 1 container(s)")
	o.advance(qosSamplePeriod)
	kill = true
	o.ovsRun()
	o.want("qos look over 1 container(s)", "destroy EB1 grace=0s")
	o.running(fwInfo("F3"), withResources(pureCustomTask("B2", "EB2"), "cpus:1", "slack"))
	o.advance(3*time.Second - time.Millisecond)
	o.want()
	o.advance(time.Millisecond)
	o.ovsRun()
	o.want("qos look over 2 container(s)", "destroy EB2 grace=0s")
}

// A QoS correction lowers the total sent to the master at once, before the
// killed container's tasks end: otherwise the master, getting their
// resources back with the old total, offers them again at once and the
// tenant is relaunched only to be evicted (the bench's churn).
func TestPureCorrectionLowersTheTotalAtOnce(t *testing.T) {
	load := 1.0
	o := newOvsAgent(t, "cpus:4;mem:4096", oversub.Config{
		ResourceEstimator: "fixed", FixedResources: "cpus:3",
		QoSController:     "load",
		LoadThreshold5Min: proto.Float64(3),
		LoadAverage:       func() (oversub.LoadAverage, error) { return oversub.LoadAverage{Five: load}, nil },
	})
	o.running(fwInfo("F1", mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES),
		withResources(pureCustomTask("B1", "EB1"), "cpus:1;mem:64", "slack"))
	o.startOversubscription()
	o.ovsRun()
	o.want("estimate over 1 container(s)", "master UPDATE_RESOURCES "+slack("cpus:3").String()+" throttle-able")
	load = 7
	o.advance(qosSamplePeriod)
	o.want("qos look over 1 container(s)")
	o.ovsRun()
	o.want("destroy EB1 grace=0s", "master UPDATE_RESOURCES "+slack("cpus:2").String()+" throttle-able")
}
