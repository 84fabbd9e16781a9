package sim

import (
	"context"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/internal/clock"
	"mezzo/resources"
)

// A fleet's Vary gives each agent its own resources and attributes in
// SUBSCRIBE (static partitions, agents holding different blocks); agents
// it leaves zero keep the template's.
func TestFleetVaryPerAgent(t *testing.T) {
	fm := newFakeMaster(t, 0)
	f, err := NewFleet(FleetConfig{Agents: 3, Agent: AgentConfig{
		Masters: []string{fm.addr}, Resources: "cpus:2;mem:512", Attributes: map[string]string{"rack": "r0"},
	}, Vary: func(i int) AgentVariant {
		if i == 2 {
			return AgentVariant{}
		}
		return AgentVariant{Resources: "cpus(part" + strconv.Itoa(i) + "):4;mem:1024",
			Attributes: map[string]string{"blocks": "b" + strconv.Itoa(i)}}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	f.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.WaitRegistered(ctx, 3); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range fm.subscriptions() {
		info := s.GetAgentInfo()
		rs, err := resources.FromProto(info.GetResources())
		if err != nil {
			t.Fatal(err)
		}
		attrs := ""
		for _, a := range info.GetAttributes() {
			attrs += a.GetName() + "=" + a.GetText().GetValue()
		}
		got[info.GetHostname()] = rs.String() + " " + attrs
	}
	want := map[string]string{
		"sim-0": resources.MustParse("cpus(part0):4;mem:1024").String() + " blocks=b0",
		"sim-1": resources.MustParse("cpus(part1):4;mem:1024").String() + " blocks=b1",
		"sim-2": resources.MustParse("cpus:2;mem:512").String() + " rack=r0",
	}
	for h, w := range want {
		if got[h] != w {
			t.Errorf("%s subscribed with %q, want %q", h, got[h], w)
		}
	}
	if _, err := NewFleet(FleetConfig{Agents: 1, Agent: AgentConfig{Masters: []string{fm.addr}},
		Vary: func(int) AgentVariant { return AgentVariant{Resources: "cpus:x"} }}); err == nil {
		t.Fatal("a variant with invalid resources was accepted")
	}
}

// An agent with an Oversubscribed estimate sends it, all revocable, in
// UPDATE_RESOURCES after registering, and again after re-registering.
func TestAgentSendsOversubscribedEstimate(t *testing.T) {
	fm := newFakeMaster(t, 0)
	ta := newTestAgent(t, fm, func(c *AgentConfig) { c.Oversubscribed = "cpus:2;mem:256" })
	isUpdate := func(c *protocol.AgentCall) bool { return c.GetType() == protocol.AgentCall_UPDATE_RESOURCES }
	c, idx := ta.awaitCall("UPDATE_RESOURCES", 0, 0, isUpdate)
	rs := c.GetUpdateResources().GetOversubscribed()
	if len(rs) != 2 {
		t.Fatalf("estimate %v, want cpus and mem", rs)
	}
	for _, r := range rs {
		if r.GetRevocable() == nil {
			t.Fatalf("estimate resource %v is not revocable", r)
		}
	}
	got, err := resources.FromProto(rs)
	if err != nil {
		t.Fatal(err)
	}
	if got.Scalar("cpus") != 2 || got.Scalar("mem") != 256 || got.Revocable().Len() != got.Len() {
		t.Fatalf("estimate %s", got)
	}
	// A new master (the stream ended): the estimate goes again.
	fm.dropStreams()
	ta.awaitCall("UPDATE_RESOURCES after re-registering", idx+1, 100*time.Millisecond, isUpdate)

	for _, bad := range []string{"cpus:x", "cpus(web):2"} {
		if _, err := NewAgent(AgentConfig{Masters: []string{fm.addr}, Oversubscribed: bad}); err == nil {
			t.Errorf("Oversubscribed %q accepted", bad)
		}
	}
}

// Task durations drawn around the mean are the same for the same seed,
// differ between seeds, and never fall below a tenth of the mean.
func TestFrameworkDurationDraws(t *testing.T) {
	draw := func(seed uint64) []string {
		f, err := NewFramework(FrameworkConfig{Masters: []string{"127.0.0.1:1"}, Tasks: 1,
			TaskDuration: 30 * time.Second, TaskDurationStdDev: 10 * time.Second, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for range 200 {
			l := f.taskLabels().GetLabels()[0]
			d, err := time.ParseDuration(l.GetValue())
			if err != nil || l.GetKey() != DurationLabel {
				t.Fatalf("label %v: %v", l, err)
			}
			if d < 3*time.Second {
				t.Fatalf("duration %v below a tenth of the mean", d)
			}
			out = append(out, l.GetValue())
		}
		return out
	}
	a, b, c := draw(1), draw(1), draw(2)
	same := func(x, y []string) bool {
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	if !same(a, b) || same(a, c) {
		t.Fatalf("draws not reproducible by seed: %v / %v / %v", a[:3], b[:3], c[:3])
	}
	if _, err := NewFramework(FrameworkConfig{Masters: []string{"x:1"}, TaskDurationStdDev: time.Second}); err == nil {
		t.Fatal("a standard deviation without a mean was accepted")
	}
}

// TasksPerOffer caps what one offer gets.
func TestFrameworkTasksPerOffer(t *testing.T) {
	f, err := NewFramework(FrameworkConfig{Masters: []string{"127.0.0.1:1"}, Tasks: 10, TasksPerOffer: 1,
		TaskResources: "cpus:1;mem:32"})
	if err != nil {
		t.Fatal(err)
	}
	o := &mesos.Offer{Resources: resources.MustParse("cpus:4;mem:1024").Proto()}
	if n := len(f.fill(o)); n != 1 {
		t.Fatalf("%d tasks on one offer, want 1", n)
	}
}

// A fake task's duration comes from its label, else its command's
// SIM_DURATION, else the agent's default.
func TestTaskDurationSources(t *testing.T) {
	label := func(v string) *mesos.Labels {
		return &mesos.Labels{Labels: []*mesos.Label{{Key: proto.String(DurationLabel), Value: proto.String(v)}}}
	}
	env := func(v string) *mesos.CommandInfo {
		return &mesos.CommandInfo{Environment: &mesos.Environment{Variables: []*mesos.Environment_Variable{
			{Name: proto.String(DurationEnv), Value: proto.String(v)}}}}
	}
	for _, c := range []struct {
		name string
		ti   *mesos.TaskInfo
		want time.Duration
	}{
		{"default", &mesos.TaskInfo{}, 10 * time.Second},
		{"label", &mesos.TaskInfo{Labels: label("2s")}, 2 * time.Second},
		{"env", &mesos.TaskInfo{Command: env("1.5s")}, 1500 * time.Millisecond},
		{"label over env", &mesos.TaskInfo{Labels: label("3s"), Command: env("1s")}, 3 * time.Second},
		{"never", &mesos.TaskInfo{Command: env("never")}, Never},
		{"invalid falls back", &mesos.TaskInfo{Labels: label("soon")}, 10 * time.Second},
	} {
		if got := taskDuration(c.ti, 10*time.Second); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// An agent with preloaded tasks reports them running in its first
// SUBSCRIBE and finishes each its duration after registering.
func TestAgentPreloadedTasks(t *testing.T) {
	fm := newFakeMaster(t, 0)
	fw := &mesos.FrameworkInfo{Id: fwID("F1"), Name: proto.String("busy"), User: proto.String("u")}
	res := resources.MustParse("cpus:1;mem:64").Proto()
	fc := clock.NewFake(time.Unix(1_700_000_000, 0))
	f, err := NewFleet(FleetConfig{Agents: 1, Agent: AgentConfig{Masters: []string{fm.addr}, Clock: fc},
		Vary: func(int) AgentVariant {
			return AgentVariant{Tasks: []RunningTask{
				{Framework: fw, TaskID: "short", Resources: res, Duration: 5 * time.Second},
				{Framework: fw, TaskID: "forever", Resources: res, Duration: Never},
			}}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	f.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.WaitRegistered(ctx, 1); err != nil {
		t.Fatal(err)
	}
	sub := fm.subscriptions()[0]
	if len(sub.GetTasks()) != 2 || len(sub.GetFrameworks()) != 1 || sub.GetTasks()[0].GetState() != mesos.TaskState_TASK_RUNNING {
		t.Fatalf("SUBSCRIBE reported tasks %v, frameworks %v", sub.GetTasks(), sub.GetFrameworks())
	}
	ta := &testAgent{Agent: f.Agents()[0], fm: fm, fc: fc}
	c, _ := ta.awaitCall("TASK_FINISHED of the short task", 0, time.Second, statusCall("short", mesos.TaskState_TASK_FINISHED))
	if c.GetStatusUpdate().GetStatus().GetAgentId().GetValue() != ta.ID() {
		t.Fatalf("update %v", c.GetStatusUpdate().GetStatus())
	}
	if st, _ := ta.State(); st.Tasks["F1"]["forever"] != mesos.TaskState_TASK_RUNNING {
		t.Fatalf("tasks %v", st.Tasks)
	}
	if _, err := NewFleet(FleetConfig{Agents: 1, Agent: AgentConfig{Masters: []string{fm.addr}},
		Vary: func(int) AgentVariant { return AgentVariant{Tasks: []RunningTask{{TaskID: "x"}}} }}); err == nil {
		t.Fatal("a preloaded task without a framework id was accepted")
	}
}
