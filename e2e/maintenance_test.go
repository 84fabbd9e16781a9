package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/scheduler"
)

// operatorJSON posts a v1 operator call (JSON) to the master at addr and
// returns the status and body.
func operatorJSON(t *testing.T, addr, body string) (int, string) {
	t.Helper()
	resp, err := http.Post("http://"+addr+"/api/v1", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// maintenanceStatus is GET_MAINTENANCE_STATUS from the master at addr.
type maintenanceStatus struct {
	GetMaintenanceStatus struct {
		Status struct {
			Draining []struct {
				ID       map[string]string `json:"id"`
				Statuses []struct {
					Status      string            `json:"status"`
					FrameworkID map[string]string `json:"framework_id"`
				} `json:"statuses"`
			} `json:"draining_machines"`
			Down []map[string]string `json:"down_machines"`
		} `json:"status"`
	} `json:"get_maintenance_status"`
}

func getMaintenanceStatus(t *testing.T, addr string) *maintenanceStatus {
	t.Helper()
	code, body := operatorJSON(t, addr, `{"type":"GET_MAINTENANCE_STATUS"}`)
	var st maintenanceStatus
	if code != 200 || json.Unmarshal([]byte(body), &st) != nil {
		return nil
	}
	return &st
}

// Issue 15 through the real binaries, three masters: a schedule makes a
// framework (the scheduler SDK) receive inverse offers, which it accepts
// (GET_MAINTENANCE_STATUS shows it); machine down ends the agent's task
// (TASK_LOST: the framework is not partition-aware), shuts the agent down
// and refuses its registration; up lets it back. After each step the
// leader is killed with SIGKILL and the next leader carries on from the
// registry.
func TestMaintenanceSurvivesLeaderKill(t *testing.T) {
	c := startHA(t)
	agent, agentID := c.startAgent("maint-a1")
	machine := `{"hostname":"maint-a1","ip":"127.0.0.1"}`
	leader := c.awaitLeader("")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl := scheduler.New(scheduler.Config{Masters: c.addrs, Framework: &mesos.FrameworkInfo{
		User: proto.String("root"), Name: proto.String("maint"), FailoverTimeout: proto.Float64(3600)}})
	events, err := cl.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// next returns the next event matching pred, acknowledging updates.
	next := func(what string, pred func(*schedulerpb.Event) bool) *schedulerpb.Event {
		t.Helper()
		deadline := time.After(90 * time.Second)
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatalf("event stream ended waiting for %s: %v", what, cl.Err())
				}
				if st := ev.GetUpdate().GetStatus(); ev.GetType() == schedulerpb.Event_UPDATE && len(st.GetUuid()) > 0 {
					cl.Acknowledge(ctx, st)
				}
				if pred(ev) {
					return ev
				}
			case <-deadline:
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	offer := next("an offer", func(ev *schedulerpb.Event) bool { return ev.GetType() == schedulerpb.Event_OFFERS }).GetOffers().GetOffers()[0]
	if offer.Unavailability != nil {
		t.Fatalf("offer from an UP machine carries %v", offer.GetUnavailability())
	}
	task := &mesos.TaskInfo{Name: proto.String("sleeper"), TaskId: &mesos.TaskID{Value: proto.String("sleeper")},
		AgentId:   offer.GetAgentId(),
		Resources: []*mesos.Resource{dynScalar("cpus", 0.5, "*", false), dynScalar("mem", 32, "*", false)},
		Command:   &mesos.CommandInfo{Value: proto.String("sleep 1000")}}
	if err := cl.Launch(ctx, []*mesos.OfferID{offer.GetId()}, []*mesos.TaskInfo{task}, nil); err != nil {
		t.Fatal(err)
	}
	next("TASK_RUNNING", func(ev *schedulerpb.Event) bool {
		return ev.GetUpdate().GetStatus().GetState() == mesos.TaskState_TASK_RUNNING
	})

	// 1. Schedule: a window an hour from now for the agent's machine.
	start := time.Now().Add(time.Hour).UnixNano()
	sched := fmt.Sprintf(`{"windows":[{"machine_ids":[%s],"unavailability":{"start":{"nanoseconds":%d},"duration":{"nanoseconds":%d}}}]}`,
		machine, start, int64(2*time.Hour))
	if code, body := operatorJSON(t, c.addrs[leader], `{"type":"UPDATE_MAINTENANCE_SCHEDULE","update_maintenance_schedule":{"schedule":`+sched+`}}`); code != 200 {
		t.Fatalf("UPDATE_MAINTENANCE_SCHEDULE: %d %s", code, body)
	}
	inverse := func() *mesos.InverseOffer {
		ev := next("INVERSE_OFFERS", func(ev *schedulerpb.Event) bool { return ev.GetType() == schedulerpb.Event_INVERSE_OFFERS })
		io := ev.GetInverseOffers().GetInverseOffers()[0]
		if io.GetAgentId().GetValue() != agentID || io.GetUnavailability().GetStart().GetNanoseconds() != start {
			t.Fatalf("inverse offer %v", io)
		}
		return io
	}
	io := inverse()
	if err := cl.AcceptInverseOffers(ctx, []*mesos.OfferID{io.GetId()}, nil); err != nil {
		t.Fatal(err)
	}
	poll(t, "the accepted inverse offer in GET_MAINTENANCE_STATUS", 30*time.Second, func() bool {
		st := getMaintenanceStatus(t, c.addrs[leader])
		return st != nil && len(st.GetMaintenanceStatus.Status.Draining) == 1 &&
			len(st.GetMaintenanceStatus.Status.Draining[0].Statuses) == 1 &&
			st.GetMaintenanceStatus.Status.Draining[0].Statuses[0].Status == "ACCEPT"
	})

	// Kill the leader: the next one has the schedule and sends inverse
	// offers again once the agent and the framework are back.
	leader = c.killLeader(leader)
	code, body := operatorJSON(t, c.addrs[leader], `{"type":"GET_MAINTENANCE_SCHEDULE"}`)
	if code != 200 || !strings.Contains(body, `"maint-a1"`) {
		t.Fatalf("schedule after failover: %d %s", code, body)
	}
	inverse()

	// 2. Down: the task ends TASK_LOST, the agent is shut down (it exits).
	if code, body := postMachines(t, c.addrs[leader], "/master/machine/down", "["+machine+"]"); code != 200 {
		t.Fatalf("machine/down: %d %s", code, body)
	}
	ev := next("the task's end", func(ev *schedulerpb.Event) bool {
		return ev.GetType() == schedulerpb.Event_UPDATE && mesos.IsTerminal(ev.GetUpdate().GetStatus().GetState())
	})
	if st := ev.GetUpdate().GetStatus(); st.GetState() != mesos.TaskState_TASK_LOST {
		t.Fatalf("task on a DOWN machine: %v %s", st.GetState(), st.GetMessage())
	}
	poll(t, "the agent to exit", 60*time.Second, agent.exited)
	if !strings.Contains(agent.logs(), "Machine DOWN") {
		t.Fatalf("agent log does not show the shutdown:\n%s", agent.logs())
	}

	// Kill the leader; the machine is still DOWN and a restarted agent is
	// refused.
	leader = c.killLeader(leader)
	poll(t, "the DOWN machine in the new leader's status", 30*time.Second, func() bool {
		st := getMaintenanceStatus(t, c.addrs[leader])
		return st != nil && len(st.GetMaintenanceStatus.Status.Down) == 1 && st.GetMaintenanceStatus.Status.Down[0]["hostname"] == "maint-a1"
	})
	refused := startProc(t, agent.name, agent.args...)
	c.agents = append(c.agents, refused)
	poll(t, "the agent on a DOWN machine to be refused", 60*time.Second, refused.exited)
	if !strings.Contains(refused.logs(), "Machine is `DOWN`") {
		t.Fatalf("refused agent log:\n%s", refused.logs())
	}
	if st, err := c.state(leader); err != nil || len(st.Slaves) != 0 {
		t.Fatalf("agents after a refused registration: %+v (%v)", st, err)
	}

	// 3. Up: the machine leaves the schedule; after one more leader kill,
	// the agent registers again and its resources are offered.
	if code, body := postMachines(t, c.addrs[leader], "/master/machine/up", "["+machine+"]"); code != 200 {
		t.Fatalf("machine/up: %d %s", code, body)
	}
	leader = c.killLeader(leader)
	if code, body := operatorJSON(t, c.addrs[leader], `{"type":"GET_MAINTENANCE_SCHEDULE"}`); code != 200 || strings.Contains(body, "maint-a1") {
		t.Fatalf("schedule after up and failover: %d %s", code, body)
	}
	back := startProc(t, agent.name, agent.args...)
	c.agents = append(c.agents, back)
	poll(t, "the agent to register after UP", 60*time.Second, func() bool {
		st, err := c.state(leader)
		return err == nil && len(st.Slaves) == 1 && st.Slaves[0].Active && st.Slaves[0].Hostname == "maint-a1"
	})
	off := next("an offer from the machine after UP", func(ev *schedulerpb.Event) bool {
		return ev.GetType() == schedulerpb.Event_OFFERS && ev.GetOffers().GetOffers()[0].GetHostname() == "maint-a1"
	}).GetOffers().GetOffers()[0]
	if off.Unavailability != nil {
		t.Fatalf("offer after UP carries %v", off.GetUnavailability())
	}
}

// postMachines posts body to path on the master at addr.
func postMachines(t *testing.T, addr, path, body string) (int, string) {
	t.Helper()
	resp, err := http.Post("http://"+addr+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// killLeader SIGKILLs the leading master, waits for another to lead and
// restarts the killed one on its work dir (so that two of three masters
// stay up for the next kill); it returns the new leader.
func (c *haCluster) killLeader(leader int) int {
	c.t.Helper()
	c.masters[leader].kill()
	next := c.awaitLeader(c.addrs[leader])
	c.startMaster(leader)
	return next
}
