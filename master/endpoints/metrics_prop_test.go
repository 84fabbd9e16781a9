package endpoints

import (
	"math"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"mezzo/api/mesos"
	"mezzo/master"
)

// TestMetricsProperty checks the derived gauges against a naive recount
// over random snapshots.
func TestMetricsProperty(t *testing.T) {
	states := []mesos.TaskState{mesos.TaskState_TASK_STAGING, mesos.TaskState_TASK_STARTING,
		mesos.TaskState_TASK_RUNNING, mesos.TaskState_TASK_KILLING}
	rapid.Check(t, func(t *rapid.T) {
		s := &master.Snapshot{StartTime: t0, Elected: rapid.Bool().Draw(t, "elected")}
		var wantCPUs, wantUsed, wantRevocable float64
		var active, connected int
		for i := range rapid.IntRange(0, 6).Draw(t, "agents") {
			cpus := rapid.IntRange(1, 64).Draw(t, "cpus")
			used := rapid.IntRange(0, cpus).Draw(t, "used")
			rev := rapid.IntRange(0, 8).Draw(t, "revocable")
			total := rs("cpus:" + strconv.Itoa(cpus) + ";mem:100")
			if rev > 0 {
				r := rs("cpus:" + strconv.Itoa(rev))
				r[0].Revocable = &mesos.Resource_RevocableInfo{}
				total = append(total, r...)
			}
			a := &master.AgentView{
				Info:      &mesos.AgentInfo{Hostname: mesosString("a" + strconv.Itoa(i))},
				Active:    rapid.Bool().Draw(t, "active"),
				Connected: rapid.Bool().Draw(t, "connected"),
				Total:     total,
			}
			if used > 0 {
				a.Used = allocated("cpus:"+strconv.Itoa(used), "r")
			}
			if a.Active {
				active++
			}
			if a.Connected {
				connected++
			}
			wantCPUs += float64(cpus)
			wantUsed += float64(used)
			wantRevocable += float64(rev)
			s.Agents = append(s.Agents, a)
		}
		live := map[mesos.TaskState]int{}
		var offers, unreachable int
		for i := range rapid.IntRange(0, 4).Draw(t, "frameworks") {
			f := &master.FrameworkView{Active: rapid.Bool().Draw(t, "fw active")}
			for j := range rapid.IntRange(0, 10).Draw(t, "tasks") {
				st := rapid.SampledFrom(states).Draw(t, "state")
				f.Tasks = append(f.Tasks, task("f"+strconv.Itoa(i), strconv.Itoa(j), "a", st, 0, nil))
				live[st]++
			}
			n := rapid.IntRange(0, 3).Draw(t, "unreachable")
			for j := 0; j < n; j++ {
				f.UnreachableTasks = append(f.UnreachableTasks, task("f", "u", "a", mesos.TaskState_TASK_UNREACHABLE, 0, nil))
			}
			unreachable += n
			k := rapid.IntRange(0, 3).Draw(t, "offers")
			for j := 0; j < k; j++ {
				f.Offers = append(f.Offers, &mesos.Offer{})
			}
			offers += k
			s.Frameworks = append(s.Frameworks, f)
		}

		m := Metrics(s, t0.Add(90*1e9))
		check := func(key string, want float64) {
			if math.Abs(m[key]-want) > 1e-9 {
				t.Fatalf("%s = %v, want %v", key, m[key], want)
			}
		}
		check("master/uptime_secs", 90)
		check("master/elected", b2f(s.Elected))
		check("master/slaves_active", float64(active))
		check("master/slaves_inactive", float64(len(s.Agents)-active))
		check("master/slaves_connected", float64(connected))
		check("master/slaves_disconnected", float64(len(s.Agents)-connected))
		check("master/outstanding_offers", float64(offers))
		check("master/tasks_staging", float64(live[mesos.TaskState_TASK_STAGING]))
		check("master/tasks_starting", float64(live[mesos.TaskState_TASK_STARTING]))
		check("master/tasks_running", float64(live[mesos.TaskState_TASK_RUNNING]))
		check("master/tasks_killing", float64(live[mesos.TaskState_TASK_KILLING]))
		check("master/tasks_unreachable", float64(unreachable))
		check("master/cpus_total", wantCPUs)
		check("master/cpus_used", wantUsed)
		check("master/cpus_revocable_total", wantRevocable)
		check("master/mem_total", 100*float64(len(s.Agents)))
		pct := 0.0
		if wantCPUs > 0 {
			pct = wantUsed / wantCPUs
		}
		check("master/cpus_percent", pct)
	})
}

func mesosString(s string) *string { return &s }
