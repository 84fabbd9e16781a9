package master

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"pgregory.net/rapid"

	"mezzo/api/maintenancepb"
	"mezzo/api/mesos"
)

// The machine modes against a naive oracle: random sequences of schedule
// updates, downs and ups (valid or not) on the master and on a map of
// machine → mode. The master accepts exactly what the oracle allows (Mesos's
// rules: only scheduled DRAINING machines go down, only DOWN machines come
// up and leave the schedule, a schedule keeps every DOWN machine), its
// status lists exactly the oracle's DRAINING and DOWN machines, agents run
// only on machines that are not DOWN, and a master elected from the same
// registry shows the same status.
func TestMaintenanceModesProperty(t *testing.T) {
	hosts := []string{"n0", "n1", "n2", "n3"}
	rapid.Check(t, func(rt *rapid.T) {
		h := newHarness(t)
		h.s.elect(nil, 1, h.now)
		for _, n := range hosts {
			h.addAgent(n, "cpus:1;mem:128")
		}
		mode := map[string]string{} // host → DRAINING | DOWN (absent: UP)
		hostsOf := func(r *rapid.T, label string) []string {
			picked := rapid.SliceOfNDistinct(rapid.SampledFrom(hosts), 0, len(hosts), rapid.ID[string]).Draw(r, label)
			sort.Strings(picked)
			return picked
		}
		ids := func(hs []string) []*mesos.MachineID {
			var out []*mesos.MachineID
			for _, n := range hs {
				out = append(out, host(n))
			}
			return out
		}
		for step := range 12 {
			op := rapid.IntRange(0, 3).Draw(rt, fmt.Sprintf("op%d", step))
			switch op {
			case 0: // schedule: the picked machines, in one or two windows
				hs := hostsOf(rt, fmt.Sprintf("schedule%d", step))
				sched := &maintenancepb.Schedule{}
				if len(hs) > 0 {
					split := rapid.IntRange(1, len(hs)).Draw(rt, fmt.Sprintf("split%d", step))
					sched.Windows = append(sched.Windows, window(h.now.Add(time.Hour), time.Hour, ids(hs[:split])...))
					if split < len(hs) {
						sched.Windows = append(sched.Windows, window(h.now.Add(2*time.Hour), time.Hour, ids(hs[split:])...))
					}
				}
				want := true
				in := map[string]bool{}
				for _, n := range hs {
					in[n] = true
				}
				for n, m := range mode {
					if m == "DOWN" && !in[n] {
						want = false
					}
				}
				err := h.runMaint(func(fin func(error)) { h.s.updateSchedule(sched, fin) })
				if (err == nil) != want {
					rt.Fatalf("schedule %v with modes %v: err %v, oracle allows %v", hs, mode, err, want)
				}
				if want {
					for n := range mode {
						if mode[n] == "DRAINING" && !in[n] {
							delete(mode, n)
						}
					}
					for _, n := range hs {
						if mode[n] == "" {
							mode[n] = "DRAINING"
						}
					}
				}
			case 3: // an agent starts on a machine
				n := rapid.SampledFrom(hosts).Draw(rt, fmt.Sprintf("start%d", step))
				a := h.addAgent(n, "cpus:1;mem:128")
				if registered := a.id != ""; registered == (mode[n] == "DOWN") {
					rt.Fatalf("agent on %s (%q): registered=%v", n, mode[n], registered)
				}
			case 1, 2: // down or up
				hs := hostsOf(rt, fmt.Sprintf("machines%d", step))
				down := op == 1
				want := len(hs) > 0
				for _, n := range hs {
					if down && mode[n] != "DRAINING" || !down && mode[n] != "DOWN" {
						want = false
					}
				}
				var err error
				if down {
					if len(hs) == 0 {
						err = ValidateMachines(nil, "m")
					} else {
						err = h.runMaint(func(fin func(error)) { h.s.startMaintenance(ids(hs), fin) })
					}
				} else if len(hs) == 0 {
					err = ValidateMachines(nil, "m")
				} else {
					err = h.runMaint(func(fin func(error)) { h.s.stopMaintenance(ids(hs), fin) })
				}
				if (err == nil) != want {
					rt.Fatalf("down=%v %v with modes %v: err %v, oracle allows %v", down, hs, mode, err, want)
				}
				if want {
					for _, n := range hs {
						if down {
							mode[n] = "DOWN"
						} else {
							delete(mode, n)
							h.addAgent(n, "cpus:1;mem:128") // UP: the agent comes back
						}
					}
				}
			}
			checkModes(rt, h.s.snapshot(h.now).Maintenance.Status, mode)
			for _, id := range h.s.agentIDs() {
				if n := h.s.agents[id].info.GetHostname(); mode[n] == "DOWN" {
					rt.Fatalf("agent %s registered on DOWN machine %s", id, n)
				}
			}
		}
		rec, err := h.reg.inner.Recover(context.Background(), &mesos.MasterInfo{})
		if err != nil {
			rt.Fatal(err)
		}
		h2 := newHarness(t)
		h2.s.elect(rec, 2, h2.now)
		checkModes(rt, h2.s.snapshot(h2.now).Maintenance.Status, mode)
	})
}

func checkModes(rt *rapid.T, st *maintenancepb.ClusterStatus, mode map[string]string) {
	got := map[string]string{}
	for _, d := range st.GetDrainingMachines() {
		got[d.GetId().GetHostname()] = "DRAINING"
	}
	for _, m := range st.GetDownMachines() {
		if got[m.GetHostname()] != "" {
			rt.Fatalf("%s both DRAINING and DOWN", m.GetHostname())
		}
		got[m.GetHostname()] = "DOWN"
	}
	if fmt.Sprint(got) != fmt.Sprint(mode) {
		rt.Fatalf("status %v, oracle %v", got, mode)
	}
}
