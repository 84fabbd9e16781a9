package run_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/frameworks/run"
	"mezzo/resources"
	"mezzo/scheduler"
	"mezzo/scheduler/schedulertest"
)

func revocableOffer(id, agent, res string) *mesos.Offer {
	o := offer(id, agent, res)
	for _, r := range o.Resources {
		r.Revocable = &mesos.Resource_RevocableInfo{ThrottleInfo: &mesos.Resource_RevocableInfo_ThrottleInfo{}}
	}
	return o
}

// --revocable: the framework subscribes with REVOCABLE_RESOURCES, skips an
// agent without revocable cpus, and launches on revocable cpus with
// regular memory, accepting that agent's regular and revocable offers
// together (the master sends them apart).
func TestRunRevocable(t *testing.T) {
	m := schedulertest.NewMaster(t)
	done, _ := start(t, m, run.Options{Command: []string{"true"}, Resources: "cpus:0.5;mem:64", Revocable: true})
	m.WaitSubscriptions(t, 1, wait)
	fi := m.Calls(schedulerpb.Call_SUBSCRIBE)[0].GetSubscribe().GetFrameworkInfo()
	var caps []string
	for _, c := range fi.GetCapabilities() {
		caps = append(caps, c.GetType().String())
	}
	if strings.Join(caps, ",") != "RESERVATION_REFINEMENT,REVOCABLE_RESOURCES" {
		t.Fatalf("capabilities %v", caps)
	}
	m.Send(offersEvent(offer("O0", "a0", "cpus:4;mem:4096"),
		offer("O1", "a1", "cpus:1;mem:128"), revocableOffer("R1", "a1", "cpus:2")))
	accept := m.WaitCall(t, schedulerpb.Call_ACCEPT, 1, wait).GetAccept()
	var ids []string
	for _, id := range accept.GetOfferIds() {
		ids = append(ids, id.GetValue())
	}
	if strings.Join(ids, ",") != "O1,R1" {
		t.Fatalf("accepted %v, want a1's offers O1,R1", ids)
	}
	task := accept.GetOperations()[0].GetLaunch().GetTaskInfos()[0]
	got, err := resources.FromProto(task.GetResources())
	if err != nil {
		t.Fatal(err)
	}
	if got.Revocable().Scalar("cpus") != 0.5 || got.NonRevocable().Scalar("cpus") != 0 || got.NonRevocable().Scalar("mem") != 64 {
		t.Fatalf("task resources %v, want revocable cpus 0.5 and regular mem 64", got)
	}
	d := m.WaitCall(t, schedulerpb.Call_DECLINE, 1, wait).GetDecline()
	if len(d.GetOfferIds()) != 1 || d.GetOfferIds()[0].GetValue() != "O0" {
		t.Fatalf("declined %v, want O0 (no revocable cpus there)", d.GetOfferIds())
	}
	m.Send(updateEvent(task.GetTaskId().GetValue(), "a1", update{state: mesos.TaskState_TASK_FINISHED, source: executor}, 0))
	if r := finish(t, done); r.code != 0 || r.err != nil {
		t.Fatalf("Run = %d, %v", r.code, r.err)
	}
}

func TestRunRevocableUsageErrors(t *testing.T) {
	for _, tt := range []struct{ res, want string }{
		{"mem:64", "ask for no cpus"},
		{"cpus:1;ports:[31000-31001]", "scalar quantities"},
		{"cpus(web):1", "scalar quantities"},
	} {
		code, err := run.Run(context.Background(), run.Options{Masters: []string{"127.0.0.1:1"}, Command: []string{"ls"},
			Resources: tt.res, Revocable: true, Out: &bytes.Buffer{}})
		if code != run.ExitUsage || err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("--revocable --resources=%s: Run = %d, %v; want %d and an error containing %q", tt.res, code, err, run.ExitUsage, tt.want)
		}
	}
}

// While no agent has revocable cpus the run says so, and what turns them
// on; once some agent has them it compares like a regular run.
func TestWhyWaitingRevocable(t *testing.T) {
	need, err := scheduler.ParseNeed("cpus:1;mem:64", "cpus")
	if err != nil {
		t.Fatal(err)
	}
	none := []run.AgentTotal{{ID: "S0", Hostname: "a", Total: map[string]float64{"cpus": 8, "mem": 4096}}}
	some := []run.AgentTotal{
		{ID: "S0", Hostname: "a", Total: map[string]float64{"cpus": 8, "mem": 4096, "cpus_revocable": 0.5}},
		{ID: "S1", Hostname: "b", Total: map[string]float64{"cpus": 8, "mem": 32, "cpus_revocable": 3}},
	}
	for _, tt := range []struct {
		agents []run.AgentTotal
		want   string
	}{
		{nil, "no agents are registered"},
		{none, "no agent has revocable cpus: an agent offers its unused cpus when it runs a resource estimator"},
		{some, "no single agent has cpus_revocable:1;mem:64 at once"},
		{some[1:], "no agent has mem:64; largest is mem:32"},
		{[]run.AgentTotal{{Hostname: "c", Total: map[string]float64{"cpus_revocable": 2, "mem": 128}}}, "agent c has cpus_revocable:1;mem:64 in total; waiting"},
	} {
		if got := run.WhyWaitingRevocable(need, tt.agents); !strings.HasPrefix(got, tt.want) {
			t.Errorf("WhyWaitingRevocable = %q, want it to start with %q", got, tt.want)
		}
	}
}
