package loop

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/internal/clock"
	"mezzo/scheduler/schedulertest"
)

// recorder is a handler that records what the loop hands it.
type recorder struct {
	mu     sync.Mutex
	events []schedulerpb.Event_Type
	wakes  int
	next   time.Time
	done   bool
}

func (r *recorder) Event(_ context.Context, ev *schedulerpb.Event, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev.GetType())
	if ev.GetType() == schedulerpb.Event_SUBSCRIBED && r.next.IsZero() {
		r.next = now.Add(time.Minute)
	}
	if ev.GetType() == schedulerpb.Event_UPDATE && ev.GetUpdate().GetStatus().GetState() == mesos.TaskState_TASK_FINISHED {
		r.done = true
	}
}

func (r *recorder) Next() time.Time { r.mu.Lock(); defer r.mu.Unlock(); return r.next }

func (r *recorder) Wake(context.Context, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wakes++
	r.next = time.Time{}
}

func (r *recorder) Done() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.done }

func (r *recorder) count() (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.events), r.wakes
}

// The loop passes events on, wakes the handler at the time it asked for
// (on the injected clock), reconciles after a re-subscription,
// acknowledges updates, and tears the framework down once it is done.
func TestLoopRunsAHandler(t *testing.T) {
	m := schedulertest.NewMaster(t)
	fc := clock.NewFake(time.Unix(1_700_000_000, 0))
	cfg, err := Config{Masters: []string{m.Addr()}, Clock: fc}.Normalize("test")
	if err != nil {
		t.Fatal(err)
	}
	l := New(cfg, mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES)
	h := &recorder{}
	done := make(chan error, 1)
	go func() { done <- l.Run(context.Background(), h) }()
	m.WaitSubscriptions(t, 1, 10*time.Second)
	sub := m.Calls(schedulerpb.Call_SUBSCRIBE)[0].GetSubscribe().GetFrameworkInfo()
	if sub.GetName() != "test" || len(sub.GetCapabilities()) != 2 {
		t.Fatalf("subscribed with %v", sub)
	}
	// Wake comes when the fake clock reaches Next.
	if !schedulertest.Eventually(5*time.Second, func() bool { n, _ := h.count(); return n >= 1 }) {
		t.Fatal("SUBSCRIBED not handed over")
	}
	if _, w := h.count(); w != 0 {
		t.Fatal("woken before its time")
	}
	if !schedulertest.Eventually(5*time.Second, func() bool { fc.Advance(time.Minute); _, w := h.count(); return w == 1 }) {
		t.Fatal("not woken at its time")
	}
	// A re-subscription is followed by a reconciliation.
	m.Disconnect()
	// The SDK's backoff runs on the fake clock too.
	if !schedulertest.Eventually(10*time.Second, func() bool { fc.Advance(time.Second); return m.Subscriptions() >= 2 }) {
		t.Fatal("no re-subscription")
	}
	m.WaitCall(t, schedulerpb.Call_RECONCILE, 1, 10*time.Second)
	// Updates are acknowledged; the handler saying it is done tears down.
	m.Send(&schedulerpb.Event{Type: schedulerpb.Event_UPDATE.Enum(), Update: &schedulerpb.Event_Update{
		Status: &mesos.TaskStatus{TaskId: &mesos.TaskID{Value: proto.String("t1")}, State: mesos.TaskState_TASK_FINISHED.Enum(),
			AgentId: &mesos.AgentID{Value: proto.String("a1")}, Uuid: []byte("0123456789abcdef")}}})
	m.WaitCall(t, schedulerpb.Call_ACKNOWLEDGE, 1, 10*time.Second)
	m.WaitCall(t, schedulerpb.Call_TEARDOWN, 1, 10*time.Second)
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
}

func TestArrivals(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	a := NewArrivals([]string{"c", "a", "b"}, func(s string) Duration {
		return Duration(map[string]time.Duration{"a": 0, "b": 10 * time.Second, "c": 10 * time.Second}[s])
	})
	if due := a.Due(t0); len(due) != 0 || !a.Next().IsZero() {
		t.Fatal("jobs due before Start")
	}
	a.Start(t0)
	a.Start(t0.Add(time.Hour)) // the first start counts
	if due := a.Due(t0); len(due) != 1 || due[0] != "a" {
		t.Fatalf("due at start: %v", due)
	}
	if !a.Next().Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("next %v", a.Next())
	}
	// Ties keep their given order.
	if due := a.Due(t0.Add(11 * time.Second)); len(due) != 2 || due[0] != "c" || due[1] != "b" || a.Waiting() != 0 {
		t.Fatalf("due at 11s: %v", due)
	}
}

func TestCheckJobs(t *testing.T) {
	names := []string{"ok", "ok", "bad name"}
	for _, c := range []struct {
		n    int
		want string
	}{{0, "no jobs"}, {2, "jobs[1].name \"ok\" is not unique"}} {
		err := CheckJobs(c.n, func(i int) string { return names[i] }, func(int) Duration { return 0 }, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckJobs(%d) = %v, want %q", c.n, err, c.want)
		}
	}
	if err := CheckJobs(1, func(int) string { return "j" }, func(int) Duration { return -1 }, nil); err == nil {
		t.Error("a negative submit time was accepted")
	}
	if err := CheckJobs(1, func(int) string { return "a b" }, func(int) Duration { return 0 }, nil); err == nil {
		t.Error("a name with a space was accepted")
	}
}

func TestLoadJobs(t *testing.T) {
	type job struct {
		Name   string   `json:"name"`
		Submit Duration `json:"submit"`
	}
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	check := func(js []job) error {
		return CheckJobs(len(js), func(i int) string { return js[i].Name }, func(i int) Duration { return js[i].Submit }, nil)
	}
	jobs, err := LoadJobs(write("ok.json", `{"jobs":[{"name":"a","submit":"1m30s"},{"name":"b","submit":2.5}]}`), check)
	if err != nil || len(jobs) != 2 || time.Duration(jobs[0].Submit) != 90*time.Second || time.Duration(jobs[1].Submit) != 2500*time.Millisecond {
		t.Fatalf("LoadJobs = %+v, %v", jobs, err)
	}
	for file, want := range map[string]string{
		`{"jobs":[{"name":"a","sumbit":"1s"}]}`:   `unknown field "sumbit"`,
		`{"jobs":[{"name":"a","submit":"soon"}]}`: "soon",
		`{"jobs":[]}`: "no jobs given",
	} {
		if _, err := LoadJobs(write("bad.json", file), check); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadJobs(%s) = %v, want an error with %q", file, err, want)
		}
	}
}
