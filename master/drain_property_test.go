package master

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/master/registrar"
)

// The drain lifecycle against a naive oracle: after any sequence of
// launches, DRAIN_AGENT (with random grace periods), DEACTIVATE_AGENT,
// REACTIVATE_AGENT, terminal updates from the agent and the framework's
// acknowledgements (in any order), the master's entry, the registry's and
// the snapshot agree with a model that knows only the rules:
//   - drain: deactivated, DRAINING, or DRAINED at once without tasks;
//   - DRAINING becomes DRAINED when the last task's terminal update is
//     acknowledged, never before;
//   - deactivate keeps a drain; reactivate clears all, and is refused
//     (400, nothing changed) for an agent that is not deactivated;
//   - the agent is offered (active) exactly when not deactivated;
//   - every live task of a draining agent has been sent KILL_TASK, with a
//     grace period no longer than the drain's max_grace_period.
func TestDrainMatchesOracle(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := newHarness(t)
		a := h.addAgent("a", "cpus:64;mem:65536")
		f := h.subscribe(fwInfo("fw"))
		type modelTask struct {
			terminal bool   // terminal update sent, not yet acknowledged
			uuid     []byte // of the terminal update
		}
		tasks := map[string]*modelTask{}
		var deact bool
		dstate := mesos.DrainState_UNKNOWN // UNKNOWN: not draining
		var grace time.Duration
		killed := map[string]time.Duration{} // task -> grace of its drain KILL_TASK
		next := 0

		collectKills := func() {
			for _, ev := range a.drain() {
				if ev.GetType() == protocol.AgentEvent_KILL_TASK {
					killed[ev.GetKillTask().GetTaskId().GetValue()] = time.Duration(ev.GetKillTask().GetKillPolicy().GetGracePeriod().GetNanoseconds())
				}
			}
		}
		drainedIfEmpty := func() {
			if dstate == mesos.DrainState_DRAINING && len(tasks) == 0 {
				dstate = mesos.DrainState_DRAINED
			}
		}
		call := func(fn func(s *state, fin func(error))) error {
			answered, err := h.drainCall(fn)
			if !answered {
				rt.Fatal("drain call not answered")
			}
			return err
		}
		rt.Repeat(map[string]func(*rapid.T){
			"launch": func(rt *rapid.T) {
				if deact {
					return // offered nothing: checked below
				}
				id := fmt.Sprintf("t%d", next)
				next++
				var kp *mesos.KillPolicy
				if rapid.Bool().Draw(rt, "own grace") {
					kp = &mesos.KillPolicy{GracePeriod: &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(rapid.IntRange(0, 20).Draw(rt, "grace s")) * int64(time.Second))}}
				}
				runningTask(h, f, a, id, kp)
				tasks[id] = &modelTask{}
			},
			"drain": func(rt *rapid.T) {
				g := time.Duration(rapid.IntRange(0, 10).Draw(rt, "max grace s")) * time.Second
				if err := call(func(s *state, fin func(error)) { s.drainAgent(a.id, graceCfg(g, false), fin) }); err != nil {
					rt.Fatalf("drain: %v", err)
				}
				deact, dstate, grace = true, mesos.DrainState_DRAINING, g
				drainedIfEmpty()
			},
			"deactivate": func(rt *rapid.T) {
				if err := call(func(s *state, fin func(error)) { s.deactivateAgent(a.id, fin) }); err != nil {
					rt.Fatalf("deactivate: %v", err)
				}
				deact = true
			},
			"reactivate": func(rt *rapid.T) {
				err := call(func(s *state, fin func(error)) { s.reactivateAgent(a.id, fin) })
				if !deact {
					if apiStatus(err) != http.StatusBadRequest {
						rt.Fatalf("reactivating an active agent = %v, want 400", err)
					}
					return
				}
				if err != nil {
					rt.Fatalf("reactivate: %v", err)
				}
				deact, dstate = false, mesos.DrainState_UNKNOWN
			},
			"terminal": func(rt *rapid.T) {
				var live []string
				for _, id := range sortedKeys(tasks) {
					if !tasks[id].terminal {
						live = append(live, id)
					}
				}
				if len(live) == 0 {
					rt.Skip("no live task")
				}
				id := live[rapid.IntRange(0, len(live)-1).Draw(rt, "task")]
				st := rapid.SampledFrom([]mesos.TaskState{mesos.TaskState_TASK_KILLED, mesos.TaskState_TASK_FINISHED, mesos.TaskState_TASK_FAILED}).Draw(rt, "state")
				tasks[id].uuid = a.update(f.id, id, st, true)
				tasks[id].terminal = true
				f.updates()
			},
			"ack": func(rt *rapid.T) {
				var done []string
				for _, id := range sortedKeys(tasks) {
					if tasks[id].terminal {
						done = append(done, id)
					}
				}
				if len(done) == 0 {
					rt.Skip("no unacknowledged task")
				}
				id := done[rapid.IntRange(0, len(done)-1).Draw(rt, "task")]
				drainAck(f, a, id, tasks[id].uuid)
				delete(tasks, id)
				drainedIfEmpty()
			},
			"": func(rt *rapid.T) {
				collectKills()
				want := registrar.Drain{Deactivated: deact}
				got, reg := h.s.drainOf(a.id), h.reg.inner.Drain(a.id)
				for _, d := range []registrar.Drain{got, reg} {
					if d.Deactivated != want.Deactivated || d.Info.GetState() != dstate {
						rt.Fatalf("entry %+v (state %v), want deactivated %v state %v", d, d.Info.GetState(), deact, dstate)
					}
					if dstate != mesos.DrainState_UNKNOWN && time.Duration(d.Info.GetConfig().GetMaxGracePeriod().GetNanoseconds()) != grace {
						rt.Fatalf("entry's max_grace_period %v, want %v", d.Info.GetConfig().GetMaxGracePeriod(), grace)
					}
				}
				ag := h.s.agents[a.id]
				if ag.active() == deact {
					rt.Fatalf("agent active %v while deactivated %v", ag.active(), deact)
				}
				if v := h.s.snapshot(h.now).Agents[0]; v.Deactivated != deact || v.DrainInfo.GetState() != dstate {
					rt.Fatalf("snapshot: deactivated %v drain %v", v.Deactivated, v.DrainInfo)
				}
				if dstate == mesos.DrainState_DRAINING {
					for id, mt := range tasks {
						g, ok := killed[id]
						if !mt.terminal && !ok {
							rt.Fatalf("live task %s of a draining agent was not killed", id)
						}
						if !mt.terminal && ok && g > grace {
							rt.Fatalf("task %s killed with grace %v over the drain's %v", id, g, grace)
						}
					}
				}
			},
		})
	})
}
