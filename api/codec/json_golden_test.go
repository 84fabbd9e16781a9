package codec_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
)

func offerID(v string) *mesos.OfferID  { return &mesos.OfferID{Value: proto.String(v)} }
func fwID(v string) *mesos.FrameworkID { return &mesos.FrameworkID{Value: proto.String(v)} }
func agentID(v string) *mesos.AgentID  { return &mesos.AgentID{Value: proto.String(v)} }
func taskID(v string) *mesos.TaskID    { return &mesos.TaskID{Value: proto.String(v)} }
func execID(v string) *mesos.ExecutorID {
	return &mesos.ExecutorID{Value: proto.String(v)}
}

// referenceOffer is the OFFERS example of the scheduler HTTP API docs
// (reference/mesos-v1-api.md §1.5), with the elided ids filled in.
func referenceOffer() *mesos.Offer {
	return &mesos.Offer{
		AllocationInfo: &mesos.Resource_AllocationInfo{Role: proto.String("engineering")},
		Id:             offerID("12214-23523-O1"),
		FrameworkId:    fwID("12124-235325-32425"),
		AgentId:        agentID("12325-23523-S23"),
		Hostname:       proto.String("agent.host"),
		Resources: []*mesos.Resource{{
			AllocationInfo: &mesos.Resource_AllocationInfo{Role: proto.String("engineering")},
			Name:           proto.String("cpus"),
			Type:           mesos.Value_SCALAR.Enum(),
			Scalar:         &mesos.Value_Scalar{Value: proto.Float64(2)},
			Role:           proto.String("*"),
		}},
		Attributes: []*mesos.Attribute{{
			Name: proto.String("os"),
			Type: mesos.Value_TEXT.Enum(),
			Text: &mesos.Value_Text{Value: proto.String("ubuntu16.04")},
		}},
		ExecutorIds: []*mesos.ExecutorID{execID("12214-23523-my-executor")},
	}
}

// The docs example, as the docs print it (hand-ordered, integral doubles
// without a decimal point).
const referenceOfferJSON = `{"allocation_info":{"role":"engineering"},"id":{"value":"12214-23523-O1"},
"framework_id":{"value":"12124-235325-32425"},"agent_id":{"value":"12325-23523-S23"},"hostname":"agent.host",
"resources":[{"allocation_info":{"role":"engineering"},"name":"cpus","type":"SCALAR","scalar":{"value":2},"role":"*"}],
"attributes":[{"name":"os","type":"TEXT","text":{"value":"ubuntu16.04"}}],
"executor_ids":[{"value":"12214-23523-my-executor"}]}`

// What Mesos itself writes for that offer: declaration order, compact, and
// doubles printed by stout with a decimal point.
const goldenOfferJSON = `{"id":{"value":"12214-23523-O1"},"framework_id":{"value":"12124-235325-32425"},` +
	`"agent_id":{"value":"12325-23523-S23"},"hostname":"agent.host",` +
	`"resources":[{"name":"cpus","type":"SCALAR","scalar":{"value":2.0},"role":"*","allocation_info":{"role":"engineering"}}],` +
	`"attributes":[{"name":"os","type":"TEXT","text":{"value":"ubuntu16.04"}}],` +
	`"executor_ids":[{"value":"12214-23523-my-executor"}],"allocation_info":{"role":"engineering"}}`

// referenceStatus is the status of the UPDATE example in the scheduler HTTP
// API docs, completed the way a master sends it (agent, executor, time).
func referenceStatus() *mesos.TaskStatus {
	return &mesos.TaskStatus{
		TaskId:     taskID("12344-foo"),
		State:      mesos.TaskState_TASK_RUNNING.Enum(),
		Source:     mesos.TaskStatus_SOURCE_EXECUTOR.Enum(),
		AgentId:    agentID("12325-23523-S23"),
		ExecutorId: execID("12344-foo"),
		Timestamp:  proto.Float64(1700000000.5),
		Uuid:       []byte{0x6a, 0x9d, 0x5c, 0x2e, 0x11, 0x22, 0x44, 0x1f, 0x8a, 0x7b, 0x00, 0xff, 0x10, 0x20, 0x30, 0x40},
		Healthy:    proto.Bool(true),
	}
}

const goldenStatusJSON = `{"task_id":{"value":"12344-foo"},"state":"TASK_RUNNING","source":"SOURCE_EXECUTOR",` +
	`"agent_id":{"value":"12325-23523-S23"},"executor_id":{"value":"12344-foo"},"timestamp":1700000000.5,` +
	`"uuid":"ap1cLhEiRB+KewD/ECAwQA==","healthy":true}`

// The docs' UPDATE example (its "bytes" key is not a TaskStatus field and
// must be ignored).
const referenceUpdateJSON = `{
  "type" : "UPDATE",
  "update" : {
    "status" : {
        "task_id" : { "value" : "12344-foo" },
        "state" : "TASK_RUNNING",
        "source" : "SOURCE_EXECUTOR",
        "uuid" : "adfadfadbhgvjayd23r2uahj",
        "bytes" : "uhdjfhuagdj63d7hadkf"
      }
  }
}`

func TestGoldenOffer(t *testing.T) {
	got, err := codec.MarshalJSON(referenceOffer())
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != goldenOfferJSON {
		t.Errorf("offer JSON\n got: %s\nwant: %s", got, goldenOfferJSON)
	}
	// Same document as the docs example, up to key order and number form.
	if !sameJSON(t, got, []byte(referenceOfferJSON)) {
		t.Errorf("offer JSON differs from the reference example\n got: %s\nwant: %s", got, referenceOfferJSON)
	}
	var back mesos.Offer
	if err := codec.UnmarshalJSON([]byte(referenceOfferJSON), &back); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(&back, referenceOffer()) {
		t.Errorf("decoded reference offer = %v, want %v", &back, referenceOffer())
	}
}

func TestGoldenTaskStatus(t *testing.T) {
	got, err := codec.MarshalJSON(referenceStatus())
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != goldenStatusJSON {
		t.Errorf("status JSON\n got: %s\nwant: %s", got, goldenStatusJSON)
	}

	var ev schedulerpb.Event
	if err := codec.UnmarshalJSON([]byte(referenceUpdateJSON), &ev); err != nil {
		t.Fatal(err)
	}
	st := ev.GetUpdate().GetStatus()
	if st.GetState() != mesos.TaskState_TASK_RUNNING || st.GetSource() != mesos.TaskStatus_SOURCE_EXECUTOR ||
		st.GetTaskId().GetValue() != "12344-foo" || len(st.GetUuid()) != 18 {
		t.Errorf("decoded docs UPDATE example = %v", st)
	}
	out, _ := codec.MarshalJSON(&ev)
	want := `{"type":"UPDATE","update":{"status":{"task_id":{"value":"12344-foo"},"state":"TASK_RUNNING",` +
		`"source":"SOURCE_EXECUTOR","uuid":"adfadfadbhgvjayd23r2uahj"}}}`
	if string(out) != want {
		t.Errorf("re-encoded UPDATE\n got: %s\nwant: %s", out, want)
	}
}

// TestMesosGoCall decodes a call shaped as mesos-go's JSON codec sends it:
// nil slices and messages become null.
func TestMesosGoCall(t *testing.T) {
	const in = `{"framework_id":{"value":"fw-1"},"type":"ACCEPT","subscribe":null,
"accept":{"offer_ids":[{"value":"O-1"}],"operations":[{"type":"LAUNCH","id":null,
"launch":{"task_infos":[{"name":"t","task_id":{"value":"t1"},"agent_id":{"value":"S1"},
"resources":[{"provider_id":null,"name":"cpus","type":"SCALAR","scalar":{"value":0.1},"ranges":null,"set":null,
"role":null,"allocation_info":null,"reservation":null,"reservations":null,"disk":null,"revocable":null,"shared":null}],
"executor":null,"command":{"uris":null,"environment":null,"shell":false,"value":"/bin/true","arguments":["/bin/true"],"user":null},
"limits":null,"labels":null}]},"launch_group":null}],"filters":{"refuse_seconds":5}},
"decline":null,"kill":null}`
	var c schedulerpb.Call
	if err := codec.UnmarshalJSON([]byte(in), &c); err != nil {
		t.Fatal(err)
	}
	want := &schedulerpb.Call{
		FrameworkId: fwID("fw-1"),
		Type:        schedulerpb.Call_ACCEPT.Enum(),
		Accept: &schedulerpb.Call_Accept{
			OfferIds: []*mesos.OfferID{offerID("O-1")},
			Operations: []*mesos.Offer_Operation{{
				Type: mesos.Offer_Operation_LAUNCH.Enum(),
				Launch: &mesos.Offer_Operation_Launch{TaskInfos: []*mesos.TaskInfo{{
					Name:    proto.String("t"),
					TaskId:  taskID("t1"),
					AgentId: agentID("S1"),
					Resources: []*mesos.Resource{{
						Name: proto.String("cpus"), Type: mesos.Value_SCALAR.Enum(),
						Scalar: &mesos.Value_Scalar{Value: proto.Float64(0.1)},
					}},
					Command: &mesos.CommandInfo{Shell: proto.Bool(false), Value: proto.String("/bin/true"), Arguments: []string{"/bin/true"}},
				}}},
			}},
			Filters: &mesos.Filters{RefuseSeconds: proto.Float64(5)},
		},
	}
	if !proto.Equal(&c, want) {
		t.Errorf("decoded\n got %v\nwant %v", &c, want)
	}

	// A DECLINE with null offer_ids (msh sends an empty list) decodes to an
	// empty list.
	var d schedulerpb.Call
	if err := codec.UnmarshalJSON([]byte(`{"framework_id":{"value":"f"},"type":"DECLINE","decline":{"offer_ids":null,"filters":null}}`), &d); err != nil {
		t.Fatal(err)
	}
	if d.GetDecline() == nil || len(d.GetDecline().GetOfferIds()) != 0 || d.GetDecline().Filters != nil {
		t.Errorf("decline = %v", &d)
	}
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("invalid JSON %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("invalid JSON %s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}
