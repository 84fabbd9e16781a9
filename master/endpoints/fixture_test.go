package endpoints

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/api/quotapb"
	"mezzo/internal/clock"
	"mezzo/internal/timerstat"
	"mezzo/master"
	"mezzo/master/allocator"
	"mezzo/resources"
)

// fakeSource is a Source over a hand-built snapshot. Events pushed on
// events reach every Watch subscriber's channel until its ctx ends. Its
// allocator cannot explain and reports no metrics; writes are recorded in
// writes ("Call arg") and answer writeErr.
type fakeSource struct {
	mu          sync.Mutex
	snap        *master.Snapshot
	events      chan *masterpb.Event
	watchErr    error
	teardownErr error
	torn        []string
	writeErr    error
	writes      []string
}

func newFakeSource(s *master.Snapshot) *fakeSource {
	return &fakeSource{snap: s, events: make(chan *masterpb.Event)}
}

func (f *fakeSource) Snapshot() *master.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snap
}

func (f *fakeSource) Watch(ctx context.Context) (*master.Snapshot, <-chan *masterpb.Event, error) {
	if f.watchErr != nil {
		return nil, nil, f.watchErr
	}
	out := make(chan *masterpb.Event)
	go func() {
		defer close(out)
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-f.events:
				if !ok {
					return
				}
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return f.Snapshot(), out, nil
}

func (f *fakeSource) Teardown(_ context.Context, _ master.Principal, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.teardownErr != nil {
		return f.teardownErr
	}
	f.torn = append(f.torn, id)
	return nil
}

func (f *fakeSource) Explain(string) (allocator.Explanation, bool) {
	return allocator.Explanation{}, false
}

func (f *fakeSource) AllocatorMetrics() map[string]float64 { return nil }

func (f *fakeSource) AllocatorTimers() map[string]timerstat.Stats { return nil }

func (f *fakeSource) write(call string, arg any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = append(f.writes, fmt.Sprint(call, " ", arg))
	return f.writeErr
}

func (f *fakeSource) KillTask(_ context.Context, _ master.Principal, fw, task string) error {
	return f.write("KillTask", fw+" "+task)
}

func (f *fakeSource) MarkAgentGone(_ context.Context, _ master.Principal, id string) error {
	return f.write("MarkAgentGone", id)
}

func (f *fakeSource) UpdateWeights(_ context.Context, _ master.Principal, infos []*mesos.WeightInfo) error {
	return f.write("UpdateWeights", len(infos))
}

func (f *fakeSource) UpdateQuota(_ context.Context, _ master.Principal, force bool, cs []*quotapb.QuotaConfig) error {
	return f.write("UpdateQuota", len(cs))
}

func (f *fakeSource) SetQuota(_ context.Context, _ master.Principal, req *quotapb.QuotaRequest) error {
	return f.write("SetQuota", req.GetRole())
}

func (f *fakeSource) RemoveQuota(_ context.Context, _ master.Principal, role string) error {
	return f.write("RemoveQuota", role)
}

func (f *fakeSource) ApplyOperation(_ context.Context, _ master.Principal, agentID string, op *mesos.Offer_Operation) error {
	return f.write("ApplyOperation", agentID+" "+op.GetType().String())
}

var errFake = errors.New("fake failure")

var (
	t0      = time.Unix(1700000000, 0)
	testNow = t0.Add(time.Hour)
)

func rs(text string) []*mesos.Resource { return resources.MustParse(text).Proto() }

func allocated(text, role string) []*mesos.Resource {
	return resources.MustParse(text).AllocatedTo(role).Proto()
}

func task(fw, id, agent string, state mesos.TaskState, ts float64, res []*mesos.Resource) *mesos.Task {
	t := &mesos.Task{
		Name:        proto.String("task " + id),
		TaskId:      &mesos.TaskID{Value: proto.String(id)},
		FrameworkId: &mesos.FrameworkID{Value: proto.String(fw)},
		AgentId:     &mesos.AgentID{Value: proto.String(agent)},
		State:       state.Enum(),
		Resources:   res,
	}
	if ts > 0 {
		t.Statuses = []*mesos.TaskStatus{{
			TaskId:    t.TaskId,
			State:     state.Enum(),
			Timestamp: proto.Float64(ts),
		}}
	}
	return t
}

// testSnapshot is a small cluster: two agents (one active with a dynamic
// reservation for "web", one deactivated and disconnected), one unreachable
// agent, a MULTI_ROLE framework with a running and a finished task, an
// outstanding offer and an executor, and one completed framework.
func testSnapshot() *master.Snapshot {
	info := &mesos.MasterInfo{
		Id:       proto.String("m1"),
		Ip:       proto.Uint32(0x0100007f),
		Port:     proto.Uint32(5050),
		Pid:      proto.String("master@127.0.0.1:5050"),
		Hostname: proto.String("master.example"),
		Version:  proto.String("1.12.0"),
		Capabilities: []*mesos.MasterInfo_Capability{
			{Type: mesos.MasterInfo_Capability_AGENT_UPDATE.Enum()},
		},
	}
	total := rs("cpus:4;mem:1024;disk:100;ports:[31000-32000]")
	web := rs("cpus:1;mem:256")
	for _, r := range web {
		r.Reservations = []*mesos.Resource_ReservationInfo{{
			Type:      mesos.Resource_ReservationInfo_DYNAMIC.Enum(),
			Role:      proto.String("web"),
			Principal: proto.String("ops"),
		}}
	}
	total = append(total, web...)
	used := allocated("cpus:1;mem:128", "web")
	offered := allocated("cpus:2;mem:512;ports:[31000-31005]", "web")

	a1 := &master.AgentView{
		Info: &mesos.AgentInfo{
			Hostname: proto.String("agent1.example"),
			Port:     proto.Int32(5051),
			Id:       &mesos.AgentID{Value: proto.String("m1-S0")},
			Attributes: []*mesos.Attribute{
				{Name: proto.String("rack"), Type: mesos.Value_TEXT.Enum(), Text: &mesos.Value_Text{Value: proto.String("r1")}},
				{Name: proto.String("level"), Type: mesos.Value_SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: proto.Float64(2)}},
			},
		},
		PID:            "slave(1)@10.0.0.1:5051",
		Endpoint:       "10.0.0.1:5051",
		Version:        "1.12.0",
		Capabilities:   []*mesos.AgentInfo_Capability{{Type: mesos.AgentInfo_Capability_MULTI_ROLE.Enum()}},
		Active:         true,
		Connected:      true,
		RegisteredTime: t0,
		Total:          total,
		Used:           used,
		Offered:        offered,
	}
	a2 := &master.AgentView{
		Info: &mesos.AgentInfo{
			Hostname: proto.String("agent2.example"),
			Id:       &mesos.AgentID{Value: proto.String("m1-S1")},
		},
		PID:              "slave(1)@10.0.0.2:5051",
		Version:          "1.12.0",
		Deactivated:      true,
		RegisteredTime:   t0,
		ReregisteredTime: t0.Add(time.Minute),
		Total:            rs("cpus:2;mem:512"),
	}

	running := task("m1-0000", "t-run", "m1-S0", mesos.TaskState_TASK_RUNNING, 1700000100.5, used)
	running.Labels = &mesos.Labels{Labels: []*mesos.Label{{Key: proto.String("k"), Value: proto.String("v")}}}
	running.Statuses[0].Healthy = proto.Bool(true)
	running.Statuses[0].Source = mesos.TaskStatus_SOURCE_EXECUTOR.Enum()
	running.Statuses[0].Data = []byte("never shown")
	running.ExecutorId = &mesos.ExecutorID{Value: proto.String("e1")}
	finished := task("m1-0000", "t-done", "m1-S0", mesos.TaskState_TASK_FINISHED, 1700000050, allocated("cpus:0.5", "web"))
	fw := &master.FrameworkView{
		Info: &mesos.FrameworkInfo{
			User:            proto.String("alice"),
			Name:            proto.String("web-fw"),
			Id:              &mesos.FrameworkID{Value: proto.String("m1-0000")},
			FailoverTimeout: proto.Float64(60),
			Checkpoint:      proto.Bool(true),
			Roles:           []string{"web"},
			Hostname:        proto.String("sched.example"),
			Principal:       proto.String("alice"),
			Capabilities: []*mesos.FrameworkInfo_Capability{
				{Type: mesos.FrameworkInfo_Capability_MULTI_ROLE.Enum()},
				{Type: mesos.FrameworkInfo_Capability_PARTITION_AWARE.Enum()},
			},
		},
		Active:         true,
		Connected:      true,
		RegisteredTime: t0.Add(time.Second),
		Tasks:          []*mesos.Task{running},
		CompletedTasks: []*mesos.Task{finished},
		Offers: []*mesos.Offer{{
			Id:             &mesos.OfferID{Value: proto.String("m1-O1")},
			FrameworkId:    &mesos.FrameworkID{Value: proto.String("m1-0000")},
			AgentId:        &mesos.AgentID{Value: proto.String("m1-S0")},
			Hostname:       proto.String("agent1.example"),
			Resources:      offered,
			AllocationInfo: &mesos.Resource_AllocationInfo{Role: proto.String("web")},
		}},
		Executors: []*master.ExecutorView{{
			AgentID: "m1-S0",
			Info: &mesos.ExecutorInfo{
				ExecutorId:  &mesos.ExecutorID{Value: proto.String("e1")},
				FrameworkId: &mesos.FrameworkID{Value: proto.String("m1-0000")},
				Name:        proto.String("exec"),
				Command:     &mesos.CommandInfo{Value: proto.String("./run")},
			},
		}},
		Used:    used,
		Offered: offered,
	}
	killed := task("m1-0001", "t-old", "m1-S1", mesos.TaskState_TASK_KILLED, 1700000010, allocated("cpus:1", "*"))
	killed.Statuses[0].Source = mesos.TaskStatus_SOURCE_MASTER.Enum()
	killed.Statuses[0].Reason = mesos.TaskStatus_REASON_FRAMEWORK_REMOVED.Enum()
	killed.Statuses[0].Message = proto.String("Framework old-fw removed")
	gone := &master.FrameworkView{
		Info: &mesos.FrameworkInfo{
			User: proto.String("bob"),
			Name: proto.String("old-fw"),
			Id:   &mesos.FrameworkID{Value: proto.String("m1-0001")},
		},
		RegisteredTime:   t0,
		UnregisteredTime: t0.Add(time.Minute),
		CompletedTasks:   []*mesos.Task{killed},
	}
	return &master.Snapshot{
		Info:                info,
		Leader:              info,
		Elected:             true,
		StartTime:           t0,
		ElectedTime:         t0.Add(2 * time.Second),
		Flags:               []master.Flag{{Name: "work_dir", Value: "/var/lib/mezzo"}, {Name: "offer_timeout", Value: "15secs"}},
		Frameworks:          []*master.FrameworkView{fw},
		CompletedFrameworks: []*master.FrameworkView{gone},
		Agents:              []*master.AgentView{a1, a2},
		UnreachableAgents:   []*master.UnreachableAgent{{ID: "m1-S9", Time: t0}},
		Roles: []*master.RoleView{{
			Name: "web", Weight: 2, Frameworks: []string{"m1-0000"},
			Allocated: used, Offered: offered, Reserved: web,
		}},
		Counters: map[string]float64{"master/tasks_finished": 1, "master/tasks_killed": 1, "master/slave_registrations": 2},
	}
}

func init() {
	// Golden files must not depend on how the test binary was built.
	buildInfo = func() build {
		return build{Version: "1.12.0", GitSHA: "abc123", BuildDate: "2023-11-14 22:13:20", BuildTime: 1700000000, BuildUser: "mezzo"}
	}
}

// newTestServer registers the endpoints on a fresh mux.
func newTestServer(t *testing.T, src Source) (*http.ServeMux, *clock.Fake) {
	t.Helper()
	fc := clock.NewFake(testNow)
	mux := http.NewServeMux()
	Register(mux, src, Options{Version: "1.12.0", Clock: fc})
	return mux, fc
}

// do runs one request against mux.
func do(mux http.Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	return rec
}
