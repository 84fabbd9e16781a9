package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/recordio"
	"mezzo/api/schedulerpb"
)

// opsScheduler is a bare v1 scheduler (protobuf) for the operation tests:
// it subscribes, makes calls on the subscription, and acknowledges every
// task status update it reads.
type opsScheduler struct {
	t        *testing.T
	addr     string
	streamID string
	fwID     string
	events   chan *schedulerpb.Event
}

func subscribeOpsScheduler(t *testing.T, addr string, info *mesos.FrameworkInfo) *opsScheduler {
	body, _ := proto.Marshal(&schedulerpb.Call{Type: schedulerpb.Call_SUBSCRIBE.Enum(), Subscribe: &schedulerpb.Call_Subscribe{FrameworkInfo: info}})
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/api/v1/scheduler", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Accept", "application/x-protobuf")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("subscribe: %v %v", err, resp)
	}
	s := &opsScheduler{t: t, addr: addr, streamID: resp.Header.Get("Mesos-Stream-Id"), events: make(chan *schedulerpb.Event, 100)}
	go func() {
		r := recordio.NewReader(resp.Body, 0)
		for {
			rec, err := r.Next()
			if err != nil {
				close(s.events)
				return
			}
			ev := &schedulerpb.Event{}
			proto.Unmarshal(rec, ev)
			s.events <- ev
		}
	}()
	ev := s.next(func(ev *schedulerpb.Event) bool { return ev.GetType() == schedulerpb.Event_SUBSCRIBED })
	s.fwID = ev.GetSubscribed().GetFrameworkId().GetValue()
	return s
}

func (s *opsScheduler) next(pred func(*schedulerpb.Event) bool) *schedulerpb.Event {
	s.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				s.t.Fatal("stream ended")
			}
			if st := ev.GetUpdate().GetStatus(); ev.GetType() == schedulerpb.Event_UPDATE && len(st.GetUuid()) > 0 {
				s.call(&schedulerpb.Call{Type: schedulerpb.Call_ACKNOWLEDGE.Enum(), Acknowledge: &schedulerpb.Call_Acknowledge{
					AgentId: st.GetAgentId(), TaskId: st.GetTaskId(), Uuid: st.GetUuid()}})
			}
			if pred(ev) {
				return ev
			}
		case <-deadline:
			s.t.Fatal("timed out")
		}
	}
}

func (s *opsScheduler) call(c *schedulerpb.Call) {
	s.t.Helper()
	c.FrameworkId = &mesos.FrameworkID{Value: proto.String(s.fwID)}
	body, _ := proto.Marshal(c)
	req, _ := http.NewRequest(http.MethodPost, "http://"+s.addr+"/api/v1/scheduler", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Mesos-Stream-Id", s.streamID)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 202 {
		s.t.Fatalf("call %v: %s %s", c.GetType(), resp.Status, b)
	}
}

// dynScalar is a scalar resource of role, dynamically reserved if dynamic
// (pre-refinement format, as a framework without RESERVATION_REFINEMENT
// sends it).
func dynScalar(name string, v float64, role string, dynamic bool) *mesos.Resource {
	r := &mesos.Resource{Name: proto.String(name), Type: mesos.Value_SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: proto.Float64(v)}, Role: proto.String(role)}
	if dynamic {
		r.Reservation = &mesos.Resource_ReservationInfo{}
	}
	return r
}

// dbVolume is persistent volume v1 of role db, mounted at "data".
func dbVolume(mb float64) *mesos.Resource {
	v := dynScalar("disk", mb, "db", true)
	v.Disk = &mesos.Resource_DiskInfo{Persistence: &mesos.Resource_DiskInfo_Persistence{Id: proto.String("v1")},
		Volume: &mesos.Volume{ContainerPath: proto.String("data"), Mode: mesos.Volume_RW.Enum()}}
	return v
}

// Issue 12 through the real binaries, without the CLI: one ACCEPT
// reserves resources, creates a volume on them and launches a writer task
// that uses it (operations with an id get OPERATION_FINISHED, acknowledged);
// SIGKILL the leading master of three; the new leader learns the
// reservation and the volume from the re-registering agent
// (/master/slaves reserved_resources_full), offers them to the role, and a
// reader task launched on them finds the writer's data; the agent, killed
// and restarted, brings them back too.
func TestReservationAndVolumeSurviveLeaderKill(t *testing.T) {
	c := startHA(t)
	agent, agentID := c.startAgent("res-a1")
	leader := c.awaitLeader("")
	info := &mesos.FrameworkInfo{User: proto.String("root"), Name: proto.String("db"), Role: proto.String("db")}
	s := subscribeOpsScheduler(t, c.addrs[leader], info)
	offer := s.next(func(ev *schedulerpb.Event) bool { return ev.GetType() == schedulerpb.Event_OFFERS }).GetOffers().GetOffers()[0]
	reserved := []*mesos.Resource{dynScalar("cpus", 1, "db", true), dynScalar("mem", 64, "db", true), dynScalar("disk", 100, "db", true)}
	task := &mesos.TaskInfo{Name: proto.String("writer"), TaskId: &mesos.TaskID{Value: proto.String("writer")},
		AgentId:   &mesos.AgentID{Value: proto.String(agentID)},
		Resources: []*mesos.Resource{dynScalar("cpus", 1, "db", true), dynScalar("mem", 64, "db", true), dbVolume(100)},
		Command:   &mesos.CommandInfo{Value: proto.String("echo hello > data/f && cat data/f")}}
	s.call(&schedulerpb.Call{Type: schedulerpb.Call_ACCEPT.Enum(), Accept: &schedulerpb.Call_Accept{
		OfferIds: []*mesos.OfferID{offer.GetId()},
		Operations: []*mesos.Offer_Operation{
			{Type: mesos.Offer_Operation_RESERVE.Enum(), Id: &mesos.OperationID{Value: proto.String("r1")}, Reserve: &mesos.Offer_Operation_Reserve{Resources: reserved}},
			{Type: mesos.Offer_Operation_CREATE.Enum(), Id: &mesos.OperationID{Value: proto.String("c1")}, Create: &mesos.Offer_Operation_Create{Volumes: []*mesos.Resource{dbVolume(100)}}},
			{Type: mesos.Offer_Operation_LAUNCH.Enum(), Launch: &mesos.Offer_Operation_Launch{TaskInfos: []*mesos.TaskInfo{task}}},
		}}})
	for _, id := range []string{"r1", "c1"} {
		ev := s.next(func(ev *schedulerpb.Event) bool { return ev.GetType() == schedulerpb.Event_UPDATE_OPERATION_STATUS })
		st := ev.GetUpdateOperationStatus().GetStatus()
		if st.GetState() != mesos.OperationState_OPERATION_FINISHED || st.GetOperationId().GetValue() != id {
			t.Fatalf("op %v", st)
		}
		s.call(&schedulerpb.Call{Type: schedulerpb.Call_ACKNOWLEDGE_OPERATION_STATUS.Enum(), AcknowledgeOperationStatus: &schedulerpb.Call_AcknowledgeOperationStatus{
			AgentId: st.GetAgentId(), Uuid: st.GetUuid().GetValue(), OperationId: st.GetOperationId()}})
	}
	ev := s.next(func(ev *schedulerpb.Event) bool {
		return ev.GetType() == schedulerpb.Event_UPDATE && mesos.IsTerminal(ev.GetUpdate().GetStatus().GetState())
	})
	if st := ev.GetUpdate().GetStatus(); st.GetState() != mesos.TaskState_TASK_FINISHED {
		t.Fatalf("writer: %v %s", st.GetState(), st.GetMessage())
	}
	slaves := func(i int) string {
		resp, err := http.Get("http://" + c.addrs[i] + "/master/slaves")
		if err != nil {
			return ""
		}
		defer resp.Body.Close()
		var v struct {
			Slaves []struct {
				Full map[string]any `json:"reserved_resources_full"`
			} `json:"slaves"`
		}
		json.NewDecoder(resp.Body).Decode(&v)
		if len(v.Slaves) == 0 {
			return ""
		}
		b, _ := json.Marshal(v.Slaves[0].Full)
		return string(b)
	}
	c.masters[leader].kill()
	next := c.awaitLeader(c.addrs[leader])
	poll(t, "reservation on the new leader", 60*time.Second, func() bool {
		return strings.Contains(slaves(next), `"v1"`)
	})
	s2 := subscribeOpsScheduler(t, c.addrs[next], &mesos.FrameworkInfo{User: proto.String("root"), Name: proto.String("db2"), Role: proto.String("db")})
	var off *mesos.Offer
	s2.next(func(ev *schedulerpb.Event) bool {
		if ev.GetType() != schedulerpb.Event_OFFERS {
			return false
		}
		for _, o := range ev.GetOffers().GetOffers() {
			for _, r := range o.GetResources() {
				if r.GetDisk().GetPersistence().GetId() == "v1" {
					off = o
					return true
				}
			}
		}
		return false
	})
	reader := proto.Clone(task).(*mesos.TaskInfo)
	reader.TaskId.Value = proto.String("reader")
	reader.Command.Value = proto.String(`test "$(cat data/f)" = hello`)
	s2.call(&schedulerpb.Call{Type: schedulerpb.Call_ACCEPT.Enum(), Accept: &schedulerpb.Call_Accept{
		OfferIds:   []*mesos.OfferID{off.GetId()},
		Operations: []*mesos.Offer_Operation{{Type: mesos.Offer_Operation_LAUNCH.Enum(), Launch: &mesos.Offer_Operation_Launch{TaskInfos: []*mesos.TaskInfo{reader}}}}}})
	ev = s2.next(func(ev *schedulerpb.Event) bool {
		return ev.GetType() == schedulerpb.Event_UPDATE && mesos.IsTerminal(ev.GetUpdate().GetStatus().GetState())
	})
	if st := ev.GetUpdate().GetStatus(); st.GetState() != mesos.TaskState_TASK_FINISHED {
		t.Fatalf("reader: %v %s", st.GetState(), st.GetMessage())
	}

	// SIGKILL the agent and start it again on its work dir: it recovers
	// its checkpointed set and re-registers with it; the master keeps the
	// reservation and the volume.
	agent.kill()
	poll(t, "the master to see the agent go", 60*time.Second, func() bool {
		st, err := c.state(next)
		return err == nil && len(st.Slaves) == 1 && !st.Slaves[0].Active
	})
	restarted := startProc(t, agent.name, agent.args...)
	c.agents = append(c.agents, restarted)
	poll(t, "the restarted agent to re-register", 60*time.Second, func() bool {
		st, err := c.state(next)
		if err != nil || len(st.Slaves) != 1 || !st.Slaves[0].Active || st.Slaves[0].ID != agentID {
			return false
		}
		return strings.Contains(slaves(next), `"v1"`)
	})
	if restarted.exited() {
		t.Fatalf("the restarted agent exited:\n%s", restarted.logs())
	}
}
