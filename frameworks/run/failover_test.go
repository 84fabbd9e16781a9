package run_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/frameworks/run"
	"mezzo/internal/clock"
	"mezzo/scheduler/schedulertest"
)

// startHA runs Run against several fake masters with a fake clock.
func startHA(t *testing.T, clk *clock.Fake, ms ...*schedulertest.Master) (<-chan result, *syncBuffer) {
	t.Helper()
	out := &syncBuffer{}
	opts := run.Options{Command: []string{"true"}, TaskID: "mezzo-run", User: "alice", Out: out, Clock: clk}
	for _, m := range ms {
		opts.Masters = append(opts.Masters, m.Addr())
	}
	return runAsync(t, opts), out
}

// resubscribed drives the client's backoff clock until m has accepted n
// subscriptions.
func resubscribed(t *testing.T, clk *clock.Fake, m *schedulertest.Master, n int) {
	t.Helper()
	if !schedulertest.Eventually(wait, func() bool {
		if m.Subscriptions() >= n {
			return true
		}
		if clk.Pending() > 0 {
			clk.Advance(time.Second)
		}
		return false
	}) {
		t.Fatalf("no re-subscription (%d of %d)", m.Subscriptions(), n)
	}
}

// checkReconcile: the reconciliation names the task and the agent it was
// launched on.
func checkReconcile(t *testing.T, c *schedulerpb.Call) {
	t.Helper()
	rt := c.GetReconcile().GetTasks()
	if len(rt) != 1 || rt[0].GetTaskId().GetValue() != "mezzo-run" || rt[0].GetAgentId().GetValue() != "a1" {
		t.Errorf("reconcile = %v", c.GetReconcile())
	}
}

// acceptedReconcile waits for a RECONCILE the master answered 202 (one
// sent while the stream was down is refused and does not count).
func acceptedReconcile(t *testing.T, m *schedulertest.Master) *schedulerpb.Call {
	t.Helper()
	var got *schedulerpb.Call
	if !schedulertest.Eventually(wait, func() bool {
		for _, r := range m.Received() {
			if r.Call.GetType() == schedulerpb.Call_RECONCILE && r.Status == http.StatusAccepted {
				got = r.Call
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no accepted RECONCILE; calls: %v", m.Calls())
	}
	return got
}

var (
	lostUnknown = update{state: mesos.TaskState_TASK_LOST, source: master,
		reason: mesos.TaskStatus_REASON_RECONCILIATION.Enum(), message: "Reconciliation: Task is unknown", noUUID: true}
	running  = update{state: mesos.TaskState_TASK_RUNNING, source: executor}
	finished = update{state: mesos.TaskState_TASK_FINISHED, source: executor}
)

func acceptOnce(fail func()) func(*schedulerpb.Call) (int, string) {
	n := 0
	return func(c *schedulerpb.Call) (int, string) {
		if c.GetType() != schedulerpb.Call_ACCEPT {
			return 0, ""
		}
		n++
		if n == 1 {
			fail()
			return http.StatusServiceUnavailable, "No leader elected"
		}
		return 0, ""
	}
}

// TestRunFailover: an ACCEPT that fails because the master went away is
// settled by reconciliation, so that exactly one task runs to
// TASK_FINISHED and Run exits 0.
func TestRunFailover(t *testing.T) {
	tests := []struct {
		name string
		// arm scripts the failure of the first ACCEPT at m1 (m2 is the
		// second master).
		arm func(m1, m2 *schedulertest.Master)
		// newLeader is where Run ends up subscribed: 1 or 2.
		newLeader int
		// reached: the failed ACCEPT reached the master, which knows the
		// task; otherwise it answers "unknown" and Run launches again.
		reached bool
	}{
		{
			name: "stream cut mid-ACCEPT, task was launched",
			arm: func(m1, _ *schedulertest.Master) {
				// The master takes the ACCEPT, then every connection
				// drops before the answer.
				m1.Respond(func(c *schedulerpb.Call) (int, string) {
					if c.GetType() == schedulerpb.Call_ACCEPT && len(m1.Calls(schedulerpb.Call_ACCEPT)) == 0 {
						m1.Disconnect()
						m1.Server.CloseClientConnections()
					}
					return 0, ""
				})
			},
			newLeader: 1,
			reached:   true,
		},
		{
			name: "503 on ACCEPT, task unknown",
			arm: func(m1, _ *schedulertest.Master) {
				m1.Respond(acceptOnce(func() {}))
			},
			newLeader: 1,
		},
		{
			name: "503 on ACCEPT and stream lost, task unknown",
			arm: func(m1, _ *schedulertest.Master) {
				m1.Respond(acceptOnce(m1.Disconnect))
			},
			newLeader: 1,
		},
		{
			name: "leader change: 307 to the second master",
			arm: func(m1, m2 *schedulertest.Master) {
				m1.Respond(func(c *schedulerpb.Call) (int, string) {
					if c.GetType() != schedulerpb.Call_ACCEPT {
						return 0, ""
					}
					m1.RedirectTo(m2.Addr())
					m1.Disconnect()
					return http.StatusTemporaryRedirect, ""
				})
			},
			newLeader: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m1, m2 := schedulertest.NewMaster(t), schedulertest.NewMaster(t)
			clk := clock.NewFake(time.Unix(0, 0))
			tt.arm(m1, m2)
			done, out := startHA(t, clk, m1, m2)
			m1.WaitSubscriptions(t, 1, wait)
			fwID := m1.FrameworkID()
			m1.Send(offersEvent(offer("O1", "a1", "cpus:1;mem:64")))
			m1.WaitCall(t, schedulerpb.Call_ACCEPT, 1, wait)

			leader, subs := m1, 2
			if tt.newLeader == 2 {
				leader, subs = m2, 1
			}
			// Lost streams are re-established (same framework id) and
			// the task reconciled there before anything else.
			if tt.name != "503 on ACCEPT, task unknown" {
				resubscribed(t, clk, leader, subs)
				if got := leader.FrameworkID(); got != fwID {
					t.Errorf("re-subscribed as %s, want %s", got, fwID)
				}
			}
			checkReconcile(t, acceptedReconcile(t, leader))
			accepts := 1
			if tt.reached {
				leader.Send(updateEvent("mezzo-run", "a1", update{state: mesos.TaskState_TASK_RUNNING, source: master,
					reason: mesos.TaskStatus_REASON_RECONCILIATION.Enum(), noUUID: true}, 0))
			} else {
				leader.Send(updateEvent("mezzo-run", "a1", lostUnknown, 0))
				// Unknown to the master: launched again on the next offer.
				n := len(leader.Calls(schedulerpb.Call_ACCEPT)) + 1
				leader.Send(offersEvent(offer("O2", "a1", "cpus:1;mem:64")))
				a := leader.WaitCall(t, schedulerpb.Call_ACCEPT, n, wait).GetAccept()
				if a.GetOfferIds()[0].GetValue() != "O2" {
					t.Errorf("relaunched on %v, want O2", a.GetOfferIds())
				}
				accepts = 2
				leader.Send(updateEvent("mezzo-run", "a1", running, 1))
			}
			leader.Send(updateEvent("mezzo-run", "a1", finished, 2))
			res := finish(t, done)
			if res.code != run.ExitFinished || res.err != nil {
				t.Errorf("Run = %d, %v; want 0, nil", res.code, res.err)
			}
			if got := len(m1.Calls(schedulerpb.Call_ACCEPT)) + len(m2.Calls(schedulerpb.Call_ACCEPT)); got != accepts {
				t.Errorf("%d ACCEPT calls, want %d", got, accepts)
			}
			if strings.Contains(out.String(), "TASK_LOST") || strings.Count(out.String(), "TASK_FINISHED") != 1 {
				t.Errorf("output:\n%s", out.String())
			}
		})
	}
}
