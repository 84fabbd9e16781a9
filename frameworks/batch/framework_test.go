package batch

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/frameworks/loop"
	"mezzo/scheduler/schedulertest"
)

func offersEvent(os ...*mesos.Offer) *schedulerpb.Event {
	return &schedulerpb.Event{Type: schedulerpb.Event_OFFERS.Enum(), Offers: &schedulerpb.Event_Offers{Offers: os}}
}

func updateEvent(id string, s mesos.TaskState) *schedulerpb.Event {
	return &schedulerpb.Event{Type: schedulerpb.Event_UPDATE.Enum(), Update: &schedulerpb.Event_Update{
		Status: &mesos.TaskStatus{TaskId: &mesos.TaskID{Value: proto.String(id)}, State: s.Enum(),
			AgentId: &mesos.AgentID{Value: proto.String("s2")}, Uuid: []byte("0123456789abcdef")}}}
}

func env(ti *mesos.TaskInfo) map[string]string {
	out := map[string]string{}
	for _, v := range ti.GetCommand().GetEnvironment().GetVariables() {
		out[v.GetName()] = v.GetValue()
	}
	return out
}

// Against a scripted master: the framework declines an agent without its
// block (with the short filter), launches on the one holding it (the
// task told it is local), suppresses once nothing waits, acknowledges
// the updates, and tears itself down when the job is done.
func TestFrameworkAgainstScriptedMaster(t *testing.T) {
	m := schedulertest.NewMaster(t)
	fw, err := New(Config{
		Config:        loop.Config{Masters: []string{m.Addr()}, Name: "scan", Logf: t.Logf},
		Jobs:          []Job{{Name: "grep", Command: "grep x $MEZZO_BATCH_BLOCK", Tasks: []Task{{Block: "b7"}}}},
		TaskResources: "cpus:1;mem:10",
		Delay:         time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan *Result, 1)
	go func() {
		res, err := fw.Run(ctx)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	m.WaitSubscriptions(t, 1, 10*time.Second)
	m.Send(offersEvent(offer("s1", "cpus:4;mem:100", "b1")))
	dec := m.WaitCall(t, schedulerpb.Call_DECLINE, 1, 10*time.Second)
	if dec.GetDecline().GetFilters().GetRefuseSeconds() != DefaultRefuseSeconds {
		t.Fatalf("declined with %v", dec.GetDecline().GetFilters())
	}
	m.Send(offersEvent(offer("s2", "cpus:4;mem:100", "b3", "b7")))
	acc := m.WaitCall(t, schedulerpb.Call_ACCEPT, 1, 10*time.Second)
	tasks := acc.GetAccept().GetOperations()[0].GetLaunch().GetTaskInfos()
	if len(tasks) != 1 || tasks[0].GetTaskId().GetValue() != "grep.0.1" {
		t.Fatalf("launched %v", tasks)
	}
	if e := env(tasks[0]); e["MEZZO_BATCH_BLOCK"] != "b7" || e["MEZZO_BATCH_LOCAL"] != "1" || e["MEZZO_BATCH_JOB"] != "grep" {
		t.Fatalf("task environment %v", e)
	}
	if !strings.Contains(tasks[0].GetCommand().GetValue(), "grep x") {
		t.Fatalf("command %q", tasks[0].GetCommand().GetValue())
	}
	m.WaitCall(t, schedulerpb.Call_SUPPRESS, 1, 10*time.Second)
	m.Send(updateEvent("grep.0.1", mesos.TaskState_TASK_RUNNING))
	m.Send(updateEvent("grep.0.1", mesos.TaskState_TASK_FINISHED))
	m.WaitCall(t, schedulerpb.Call_ACKNOWLEDGE, 2, 10*time.Second)
	m.WaitCall(t, schedulerpb.Call_TEARDOWN, 1, 10*time.Second)
	res := <-done
	if res == nil || res.Tasks != 1 || res.Local != 1 || res.Locality != 1 || len(res.Jobs) != 1 {
		t.Fatalf("result %+v", res)
	}
}

func TestConfigErrors(t *testing.T) {
	ok := Config{Config: loop.Config{Masters: []string{"m:5050"}}, Jobs: []Job{{Name: "j", Tasks: []Task{{}}}}}
	for _, c := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"no master", func(c *Config) { c.Masters = nil }, "no master"},
		{"no jobs", func(c *Config) { c.Jobs = nil }, "no jobs"},
		{"bad name", func(c *Config) { c.Jobs[0].Name = "a b" }, "jobs[0].name"},
		{"duplicate", func(c *Config) { c.Jobs = append(c.Jobs, c.Jobs[0]) }, "not unique"},
		{"no tasks", func(c *Config) { c.Jobs[0].Tasks = nil }, "at least one task"},
		{"bad block", func(c *Config) { c.Jobs[0].Tasks[0].Block = "b1,b2" }, "tasks[0].block"},
		{"bad resources", func(c *Config) { c.TaskResources = "cpus:-1" }, "task resources"},
		{"negative delay", func(c *Config) { c.Delay = -time.Second }, "delay"},
	} {
		cfg := ok
		cfg.Jobs = []Job{{Name: "j", Tasks: []Task{{}}}}
		c.mod(&cfg)
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: New = %v, want an error with %q", c.name, err, c.want)
		}
	}
}
