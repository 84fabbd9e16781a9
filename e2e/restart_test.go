package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/resources"
	"mezzo/scheduler"
)

// Issue 11 §3 "Accounting drift" with the real binary: an agent (cpus:2)
// runs a checkpointing framework's command task using a whole cpu and a
// task group (default executor, 0.1 cpus) of a framework that does not
// checkpoint. The agent process is SIGKILLed and restarted: it reattaches
// to the command task and loses the task group. Afterwards the master
// counts exactly the command task (its command executor is the agent's
// own overcommit, never counted), lists no executor for the other
// framework, and reports that framework's task lost.
func TestAgentRestartAccounting(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	startProc(t, "master", "master", "--ip=127.0.0.1", "--port="+strconv.Itoa(port),
		"--work_dir="+filepath.Join(dir, "master"), "--allocation_interval=100ms")
	agentArgs := []string{"agent", "--master=" + addr, "--ip=127.0.0.1", "--port=" + strconv.Itoa(freePort(t)),
		"--hostname=acct", "--work_dir=" + filepath.Join(dir, "agent"), "--resources=cpus:2;mem:1024;disk:1000"}
	agent := startProc(t, "agent", agentArgs...)
	c := &haCluster{t: t, addrs: []string{addr}}
	poll(t, "the agent to register", 30*time.Second, func() bool {
		st, err := c.state(0)
		return err == nil && len(st.Slaves) == 1 && st.Slaves[0].Active
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cp := startAcctFramework(ctx, t, addr, "acct-checkpoint", true)
	nc := startAcctFramework(ctx, t, addr, "acct-nocheckpoint", false)

	o := cp.offer(t)
	if err := cp.client.Launch(ctx, []*mesos.OfferID{o.GetId()}, []*mesos.TaskInfo{{
		Name: proto.String("whole-cpu"), TaskId: &mesos.TaskID{Value: proto.String("whole-cpu")}, AgentId: o.GetAgentId(),
		Resources: resources.MustParse("cpus:1;mem:64").Proto(),
		Command:   &mesos.CommandInfo{Value: proto.String("sleep 300")},
	}}, scheduler.RefuseFor(3600)); err != nil {
		t.Fatal(err)
	}
	cp.await(t, "whole-cpu", mesos.TaskState_TASK_RUNNING)
	// The command executor outlives the agent it was started by (that is
	// what the test is about), so no process-group kill of ours reaches
	// it: kill the task through the master before the framework's
	// subscription (ctx) and the agent go.
	defer func() {
		if err := cp.client.Kill(context.Background(), &mesos.TaskID{Value: proto.String("whole-cpu")}, o.GetAgentId()); err != nil {
			t.Logf("killing whole-cpu: %v", err)
			return
		}
		cp.await(t, "whole-cpu", mesos.TaskState_TASK_KILLED)
	}()

	o = nc.offer(t)
	group := &mesos.Offer_Operation{Type: mesos.Offer_Operation_LAUNCH_GROUP.Enum(), LaunchGroup: &mesos.Offer_Operation_LaunchGroup{
		Executor: &mesos.ExecutorInfo{Type: mesos.ExecutorInfo_DEFAULT.Enum(), ExecutorId: &mesos.ExecutorID{Value: proto.String("group-ex")},
			FrameworkId: nc.client.FrameworkID(), Resources: resources.MustParse("cpus:0.1;mem:32").Proto()},
		TaskGroup: &mesos.TaskGroupInfo{Tasks: []*mesos.TaskInfo{{
			Name: proto.String("grouped"), TaskId: &mesos.TaskID{Value: proto.String("grouped")}, AgentId: o.GetAgentId(),
			Resources: resources.MustParse("cpus:0.5;mem:64").Proto(),
			Command:   &mesos.CommandInfo{Value: proto.String("sleep 300")},
		}}},
	}}
	if err := nc.client.Accept(ctx, []*mesos.OfferID{o.GetId()}, []*mesos.Offer_Operation{group}, scheduler.RefuseFor(3600)); err != nil {
		t.Fatal(err)
	}
	nc.await(t, "grouped", mesos.TaskState_TASK_RUNNING)

	// Kill the agent process alone (its executors live on) and restart it.
	syscall.Kill(agent.cmd.Process.Pid, syscall.SIGKILL)
	<-agent.done
	startProc(t, "agent-restarted", agentArgs...)
	nc.await(t, "grouped", mesos.TaskState_TASK_LOST)

	var used, total float64
	var ncExecutors int
	settled := func() bool {
		st, err := c.state(0)
		if err != nil || len(st.Slaves) != 1 || !st.Slaves[0].Active {
			return false
		}
		used, total = num(st.Slaves[0].UsedRaw["cpus"]), num(st.Slaves[0].Total["cpus"])
		ncExecutors = 0
		for _, fw := range st.Frameworks {
			if fw.ID == nc.client.FrameworkID().GetValue() {
				ncExecutors = len(fw.Executors)
			}
		}
		return used == 1 && ncExecutors == 0
	}
	deadline := time.Now().Add(30 * time.Second)
	for !settled() {
		if time.Now().After(deadline) {
			t.Fatalf("after the agent restart the master counts %g cpus used (want 1, the command task alone) and lists %d executors of the framework that does not checkpoint (want 0)", used, ncExecutors)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, bounded by the deadline
	}
	if used > total {
		t.Fatalf("used cpus %g > total %g", used, total)
	}
}

// acctFramework is a minimal SDK framework for the accounting test.
type acctFramework struct {
	client  *scheduler.Client
	offers  chan *mesos.Offer
	updates chan *mesos.TaskStatus
}

func startAcctFramework(ctx context.Context, t *testing.T, addr, name string, checkpoint bool) *acctFramework {
	t.Helper()
	f := &acctFramework{offers: make(chan *mesos.Offer, 16), updates: make(chan *mesos.TaskStatus, 64)}
	f.client = scheduler.New(scheduler.Config{Masters: []string{addr}, Framework: &mesos.FrameworkInfo{
		User: proto.String("root"), Name: proto.String(name), Checkpoint: proto.Bool(checkpoint)}})
	events, err := f.client.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev := range events {
			switch ev.GetType() {
			case schedulerpb.Event_OFFERS:
				for _, o := range ev.GetOffers().GetOffers() {
					select {
					case f.offers <- o:
					default:
						f.client.Decline(ctx, []*mesos.OfferID{o.GetId()}, nil)
					}
				}
			case schedulerpb.Event_UPDATE:
				st := ev.GetUpdate().GetStatus()
				f.client.Acknowledge(ctx, st)
				f.updates <- st
			}
		}
	}()
	return f
}

func (f *acctFramework) offer(t *testing.T) *mesos.Offer {
	t.Helper()
	select {
	case o := <-f.offers:
		return o
	case <-time.After(30 * time.Second):
		t.Fatal("no offer")
		return nil
	}
}

func (f *acctFramework) await(t *testing.T, task string, state mesos.TaskState) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case st := <-f.updates:
			if st.GetTaskId().GetValue() == task && st.GetState() == state {
				return
			}
		case <-deadline:
			t.Fatalf("%s never reached %v", task, state)
		}
	}
}

// Issue 11 §1's reproduction, as written: one master and one agent,
// `mezzo run --checkpoint -- sleep 3`, the master SIGKILLed while the task
// runs, the task finishing while no master is up, the master restarted.
// The agent's TASK_FINISHED must reach `mezzo run`, which exits 0.
func TestRunOutcomeSurvivesMasterRestart(t *testing.T) {
	dir := t.TempDir()
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	masterArgs := []string{"master", "--ip=127.0.0.1", "--port=" + strconv.Itoa(port),
		"--work_dir=" + filepath.Join(dir, "master"), "--allocation_interval=100ms"}
	master := startProc(t, "master", masterArgs...)
	agentPort := freePort(t)
	startProc(t, "agent", "agent", "--master="+addr, "--ip=127.0.0.1", "--port="+strconv.Itoa(agentPort),
		"--hostname=repro", "--work_dir="+filepath.Join(dir, "agent"), "--resources=cpus:2;mem:1024;disk:1000")
	c := &haCluster{t: t, addrs: []string{addr}}
	poll(t, "the agent to register", 30*time.Second, func() bool {
		st, err := c.state(0)
		return err == nil && len(st.Slaves) == 1 && st.Slaves[0].Active
	})

	type result struct {
		code int
		out  string
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, mezzoBin, "run", "--master="+addr, "--checkpoint", "--", "sleep", "3")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			code = -1
		}
		done <- result{code, out.String()}
	}()
	poll(t, "the task to run", 30*time.Second, func() bool {
		st, err := c.state(0)
		if err != nil {
			return false
		}
		for _, fw := range st.Frameworks {
			for _, tk := range fw.Tasks {
				if tk.State == "TASK_RUNNING" {
					return true
				}
			}
		}
		return false
	})
	master.kill()
	// The task finishes while no master is up.
	poll(t, "the task to finish on the agent", 30*time.Second, func() bool {
		var m map[string]float64
		return getJSON("http://127.0.0.1:"+strconv.Itoa(agentPort)+"/metrics/snapshot", &m) == nil && m["slave/tasks_finished"] == 1
	})
	startProc(t, "master-restarted", masterArgs...)
	r := <-done
	if r.code != 0 || !strings.Contains(r.out, "TASK_FINISHED") {
		t.Fatalf("mezzo run did not see its task finish across the master restart (exit %d):\n%s", r.code, r.out)
	}
}
