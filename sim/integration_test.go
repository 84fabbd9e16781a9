package sim

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestFleetAgainstRealMaster: 200 emulated agents register with a real
// `mezzo master` process and show up in /master/slaves; a framework runs
// 100 fake tasks on them to TASK_FINISHED; after the master is SIGKILLed
// and a new one starts on the same port (and work_dir), the whole fleet
// re-registers and the framework re-subscribes, over a handful of TCP
// connections.
func TestFleetAgainstRealMaster(t *testing.T) {
	port, dir := freePort(t), t.TempDir()
	m := startMaster(t, port, dir)
	const n = 200
	f, err := NewFleet(FleetConfig{Agents: n, Agent: AgentConfig{
		Masters:             []string{m.Addr},
		Resources:           "cpus:2;mem:2048;disk:4096;ports:[31000-31100]",
		RegistrationBackoff: 200 * time.Millisecond,
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	f.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := f.WaitRegistered(ctx, n); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "all agents in /master/slaves", func() (bool, string) {
		s, err := m.Slaves()
		if err != nil {
			return false, err.Error()
		}
		for i := range n {
			if !s[fmt.Sprintf("sim-%d", i)] {
				return false, fmt.Sprintf("sim-%d missing or inactive (%d listed)", i, len(s))
			}
		}
		return true, ""
	})
	t.Logf("registered %d agents; conns %+v", n, f.Conns())

	// A framework launches 100 fake tasks across them; all finish.
	fw, err := NewFramework(FrameworkConfig{Masters: []string{m.Addr}, Name: "sim-fw", Tasks: 100,
		TaskDuration: 100 * time.Millisecond, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer fw.Stop()
	if err := fw.Start(ctx); err != nil {
		t.Fatal(err)
	}
	finished, err := fw.WaitTasks(ctx, 100)
	if err != nil {
		t.Fatalf("%v; stats %+v", err, fw.Stats())
	}
	if finished != 100 {
		t.Fatalf("%d of 100 tasks finished; states %v", finished, fw.TaskStates())
	}
	// The acknowledgements reach the agents, which then forget the tasks.
	eventually(t, 10*time.Second, "agents idle", func() (bool, string) {
		for _, a := range f.Agents() {
			if st, _ := a.State(); len(st.Tasks) > 0 || st.Unacknowledged > 0 {
				return false, fmt.Sprintf("agent %s still holds %v (%d unacknowledged)", a, st.Tasks, st.Unacknowledged)
			}
		}
		return true, ""
	})
	if s := f.Stats(); s.TasksLaunched != 100 || s.TasksFinished != 100 || s.UpdatesAcked != 300 {
		t.Fatalf("fleet stats %+v", s)
	}

	// SIGKILL the master; a fresh one on the same port gets the fleet and
	// the framework back.
	killed := time.Now()
	m.Kill()
	m2 := startMaster(t, port, dir) // the same host restarting: it recovers the registry
	last, err := f.WaitAllRegisteredSince(ctx, killed)
	if err != nil {
		t.Fatal(err)
	}
	resub, err := fw.WaitSubscribedSince(ctx, killed)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fleet re-registered %s and the framework re-subscribed %s after the kill; conns %+v; stats %+v",
		last.Sub(killed), resub.Sub(killed), f.Conns(), f.Stats())
	eventually(t, 10*time.Second, "the new master lists the fleet", func() (bool, string) {
		s, err := m2.Slaves()
		if err != nil {
			return false, err.Error()
		}
		active := 0
		for _, ok := range s {
			if ok {
				active++
			}
		}
		return active == n, fmt.Sprintf("%d listed, %d active", len(s), active)
	})
	if c := f.Conns(); c.Open > 4 {
		t.Fatalf("%d TCP connections open for %d agents, want a handful", c.Open, n)
	}
}
