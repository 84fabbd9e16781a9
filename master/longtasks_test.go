package master

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/master/allocator/longtask"
	"mezzo/resources"
	"mezzo/scheduler"
)

func withLongTasks(fraction float64) func(*Config) {
	return func(c *Config) { c.LongTaskFraction = fraction }
}

// longPart reads an offer's long part as the SDK does (nil: none).
func longPart(o *mesos.Offer) map[string]float64 {
	part, _ := scheduler.LongTaskPart(o)
	return part
}

// The SDK's copies of the wire names are the master's.
func TestLongTaskNamesInSDK(t *testing.T) {
	if scheduler.LongTaskAttributePrefix != LongTaskAttributePrefix || scheduler.TaskLengthLabel != longtask.Label {
		t.Fatal("the scheduler SDK's long-task names differ from the master's")
	}
	ti := scheduler.DeclareTaskLength(cmdTask("t", "a", "cpus:1"), true)
	scheduler.DeclareTaskLength(ti, false)
	if long, _, err := longtask.Declare(ti.GetLabels(), nil, time.Minute); err != nil || long || len(ti.GetLabels().GetLabels()) != 1 {
		t.Fatalf("DeclareTaskLength: %v, %v, %v", ti.GetLabels(), long, err)
	}
}

func declared(t *mesos.TaskInfo, v string) *mesos.TaskInfo {
	t.Labels = &mesos.Labels{Labels: []*mesos.Label{{Key: proto.String(longtask.Label), Value: proto.String(v)}}}
	return t
}

// statusOf returns the status the framework got for the task (nil: none).
func statusOf(ups []*mesos.TaskStatus, id string) *mesos.TaskStatus {
	for _, u := range ups {
		if u.GetTaskId().GetValue() == id {
			return u
		}
	}
	return nil
}

// With --long_task_fraction, offers carry their long part; long tasks fit
// in it or get TASK_ERROR naming why; short ones use the whole offer; the
// bound comes back when a long task ends.
func TestLongTasksBoundedAtAccept(t *testing.T) {
	h := newHarness(t, withLongTasks(0.5))
	a := h.addAgent("a", "cpus:4;mem:1024;ports:[31000-32000]")
	a.drain()
	f := h.subscribe(fwInfo("fw"))
	o := h.offer(f, a, "*", "cpus:4;mem:1024;ports:[31000-32000]")
	if got := longPart(o); got["cpus"] != 2 || got["mem"] != 512 || len(got) != 2 {
		t.Fatalf("long part %v, want cpus:2 mem:512", got)
	}
	if len(o.GetAttributes()) != 2 {
		t.Fatalf("offer attributes %v", o.GetAttributes())
	}
	f.mustCall(acceptCall([]*mesos.Offer{o}, launch(
		declared(cmdTask("long1", a.id, "cpus:1.5;mem:256"), "long"),
		cmdTask("undeclared", a.id, "cpus:1;mem:128"), // long: over the rest of the part
		declared(cmdTask("short1", a.id, "cpus:1;mem:512"), "short"),
		declared(cmdTask("typo", a.id, "cpus:0.1;mem:32"), "shortish"),
	)))
	ups := f.updates()
	if st := statusOf(ups, "undeclared"); st.GetState() != mesos.TaskState_TASK_ERROR || st.GetReason() != mesos.TaskStatus_REASON_TASK_INVALID ||
		!strings.Contains(st.GetMessage(), "Long task uses cpus:1;mem:128, more than the cpus:0.5;mem:256 its offers leave for long tasks") {
		t.Fatalf("undeclared (long) task beyond the long part: %v", st)
	}
	if st := statusOf(ups, "typo"); st.GetState() != mesos.TaskState_TASK_ERROR || !strings.Contains(st.GetMessage(), "must be 'long' or 'short'") {
		t.Fatalf("unknown declaration: %v", st)
	}
	if statusOf(ups, "long1") != nil || statusOf(ups, "short1") != nil {
		t.Fatalf("valid tasks refused: %v", ups)
	}
	if n := len(a.drain()); n != 2 {
		t.Fatalf("agent got %d RUN_TASKs, want 2", n)
	}
	// The next offer of what is left carries what remains of the bound.
	o2 := h.offer(f, a, "*", "cpus:1.5;mem:256")
	if got := longPart(o2); got["cpus"] != 0.5 || got["mem"] != 256 {
		t.Fatalf("second long part %v, want cpus:0.5 mem:256", got)
	}
	f.mustCall(acceptCall([]*mesos.Offer{o2}))
	// long1 ends: its share of the bound is free again.
	a.update(f.id, "long1", mesos.TaskState_TASK_FINISHED, false)
	o3 := h.offer(f, a, "*", "cpus:1.5;mem:256")
	if got := longPart(o3); got["cpus"] != 1.5 || got["mem"] != 256 {
		t.Fatalf("after long1 ended, long part %v, want cpus:1.5 mem:256", got)
	}
	if used := h.s.long.Used(a.id); used.Value("cpus") != 0 || used.Value("mem") != 0 {
		t.Fatalf("long books after long1 ended: used %v", used)
	}
}

// A task group's long tasks fit together or the whole group fails.
func TestLongTasksInGroup(t *testing.T) {
	h := newHarness(t, withLongTasks(0.25))
	a := h.addAgent("a", "cpus:4;mem:1024")
	f := h.subscribe(fwInfo("fw"))
	o := h.offer(f, a, "*", "cpus:4;mem:1024")
	group := func(tasks ...*mesos.TaskInfo) *mesos.Offer_Operation {
		for _, ti := range tasks {
			ti.Command = nil
		}
		return &mesos.Offer_Operation{Type: mesos.Offer_Operation_LAUNCH_GROUP.Enum(),
			LaunchGroup: &mesos.Offer_Operation_LaunchGroup{
				Executor: &mesos.ExecutorInfo{Type: mesos.ExecutorInfo_DEFAULT.Enum(), ExecutorId: &mesos.ExecutorID{Value: proto.String("d")},
					FrameworkId: frameworkID(f.id), Resources: resources.MustParse("cpus:0.1;mem:32").Proto()},
				TaskGroup: &mesos.TaskGroupInfo{Tasks: tasks}}}
	}
	f.mustCall(acceptCall([]*mesos.Offer{o}, group(declared(cmdTask("g1", a.id, "cpus:0.5;mem:64"), "long"),
		declared(cmdTask("g2", a.id, "cpus:0.75;mem:64"), "long"), cmdTask("g3", a.id, "cpus:2;mem:64"))))
	ups := f.updates()
	if len(ups) != 3 {
		t.Fatalf("want TASK_ERROR for the 3 tasks, got %v", ups)
	}
	for _, u := range ups {
		if u.GetState() != mesos.TaskState_TASK_ERROR || u.GetReason() != mesos.TaskStatus_REASON_TASK_GROUP_INVALID ||
			!strings.Contains(u.GetMessage(), "Long task uses") {
			t.Fatalf("group beyond the long part: %v", u)
		}
	}
	if used := h.s.long.Used(a.id); used.Value("cpus") != 0 {
		t.Fatalf("a refused group holds %v of the bound", used)
	}
}

// A short task that outlives its declaration counts as long from then on,
// and a revocation kills it before younger tasks.
func TestShortTaskOverrunRevokedFirst(t *testing.T) {
	h := newHarness(t, withLongTasks(0.5))
	a := h.addAgent("a", "cpus:4;mem:1024")
	f := h.subscribe(fwInfo("fw"))
	o := h.offer(f, a, "*", "cpus:4;mem:1024")
	short := cmdTask("short", a.id, "cpus:1;mem:128")
	short.MaxCompletionTime = &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(30 * time.Second))}
	f.mustCall(acceptCall([]*mesos.Offer{o}, launch(short)))
	a.drain()
	h.advance(10 * time.Second)
	o2 := h.offer(f, a, "*", "cpus:3;mem:896")
	f.mustCall(acceptCall([]*mesos.Offer{o2}, launch(declared(cmdTask("young", a.id, "cpus:1;mem:128"), "long"))))
	a.drain()
	if h.s.counters["master/tasks_short_overrun"] != 0 {
		t.Fatal("overrun counted early")
	}
	h.advance(21 * time.Second) // 31 s after short's launch
	if h.s.counters["master/tasks_short_overrun"] != 1 {
		t.Fatal("the short task's overrun was not noticed")
	}
	if used := h.s.long.Used(a.id); used.Value("cpus") != 2 {
		t.Fatalf("long books %v, want young and the overrun short task (cpus:2)", used)
	}
	h.s.revoke(f.id, a.id, resources.MustParse("cpus:1").AllocatedTo("*"), h.now)
	var killed []string
	for _, ev := range a.drain() {
		if ev.GetType() == protocol.AgentEvent_KILL_TASK {
			killed = append(killed, ev.GetKillTask().GetTaskId().GetValue())
		}
	}
	if len(killed) != 1 || killed[0] != "short" {
		t.Fatalf("revocation killed %v, want the overrun short task (not the younger long one)", killed)
	}
	a.update(f.id, "short", mesos.TaskState_TASK_KILLED, false)
	if used := h.s.long.Used(a.id); used.Value("cpus") != 1 {
		t.Fatalf("long books after the kill %v, want cpus:1", used)
	}
}

// Tasks an agent reports after a master failover count on the books:
// undeclared or long ones hold their resources at once, short ones get a
// full short duration.
func TestLongTasksAdoptedFromAgent(t *testing.T) {
	h := newHarness(t, withLongTasks(0.5), func(c *Config) { c.ShortTaskDuration = 10 * time.Second })
	sub := agentSub("a", "cpus:4;mem:1024")
	sub.AgentInfo.Id = agentID("M-S7")
	sub.Frameworks = []*mesos.FrameworkInfo{{Id: frameworkID("fw1"), User: proto.String("u"), Name: proto.String("fw")}}
	task := func(id, res, decl string) *mesos.Task {
		t := &mesos.Task{Name: proto.String(id), TaskId: &mesos.TaskID{Value: proto.String(id)}, FrameworkId: frameworkID("fw1"),
			AgentId: agentID("M-S7"), State: mesos.TaskState_TASK_RUNNING.Enum(), Resources: resources.MustParse(res).Proto()}
		if decl != "" {
			t.Labels = &mesos.Labels{Labels: []*mesos.Label{{Key: proto.String(longtask.Label), Value: proto.String(decl)}}}
		}
		return t
	}
	sub.Tasks = []*mesos.Task{task("l", "cpus:1;mem:128", "long"), task("u", "cpus:1;mem:128", ""), task("s", "cpus:1;mem:128", "short")}
	h.s.recovered = map[string]bool{"M-S7": true}
	a := h.agentSubscribe(sub)
	if a.id != "M-S7" {
		t.Fatalf("agent %q", a.id)
	}
	if used := h.s.long.Used(a.id); used.Value("cpus") != 2 || used.Value("mem") != 256 {
		t.Fatalf("long books %v, want the long and the undeclared task", used)
	}
	h.advance(9 * time.Second)
	if h.s.counters["master/tasks_short_overrun"] != 0 {
		t.Fatal("overrun before the short duration")
	}
	h.advance(time.Second)
	if used := h.s.long.Used(a.id); used.Value("cpus") != 3 || h.s.counters["master/tasks_short_overrun"] != 1 {
		t.Fatalf("after the short duration: books %v, overruns %v", used, h.s.counters["master/tasks_short_overrun"])
	}
}

// Without --long_task_fraction nothing changes: no attributes, labels
// ignored.
func TestLongTasksOffByDefault(t *testing.T) {
	h := newHarness(t)
	a := h.addAgent("a", "cpus:4;mem:1024")
	f := h.subscribe(fwInfo("fw"))
	o := h.offer(f, a, "*", "cpus:4;mem:1024")
	if longPart(o) != nil {
		t.Fatalf("offer carries a long part: %v", o.GetAttributes())
	}
	f.mustCall(acceptCall([]*mesos.Offer{o}, launch(declared(cmdTask("t", a.id, "cpus:4;mem:1024"), "whatever"))))
	if ups := f.updates(); len(ups) != 0 {
		t.Fatalf("updates %v", ups)
	}
}
