package sim

import (
	"context"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
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
	// Warm tasks run a fraction of their draw: shorter on average.
	f, err := NewFramework(FrameworkConfig{Masters: []string{"127.0.0.1:1"}, Tasks: 1,
		TaskDuration: 30 * time.Second, TaskDurationStdDev: 10 * time.Second, Seed: 1, WarmTasks: 100})
	if err != nil {
		t.Fatal(err)
	}
	var warm, cold time.Duration
	for i := range 200 {
		f.launched = i + 1
		d, _ := time.ParseDuration(f.taskLabels().GetLabels()[0].GetValue())
		if i < 100 {
			warm += d
		} else {
			cold += d
		}
	}
	if warm*3/2 > cold { // a uniform fraction halves the mean
		t.Fatalf("warm tasks averaged %v, the rest %v", warm/100, cold/100)
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
