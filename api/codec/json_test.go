package codec_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/mesos"
	"mezzo/api/quotapb"
	"mezzo/api/schedulerpb"
)

func TestMarshalJSON(t *testing.T) {
	tests := []struct {
		name string
		msg  proto.Message
		want string
	}{
		{"explicit default emitted", &mesos.Filters{}, `{"refuse_seconds":5.0}`},
		{"set value wins over default", &mesos.Filters{RefuseSeconds: proto.Float64(0.5)}, `{"refuse_seconds":0.5}`},
		{"shell default true", &mesos.CommandInfo{Value: proto.String("ls")}, `{"shell":true,"value":"ls"}`},
		{"framework defaults, deprecated role omitted",
			&mesos.FrameworkInfo{User: proto.String("u"), Name: proto.String("n")},
			`{"user":"u","name":"n","failover_timeout":0.0,"checkpoint":false}`},
		{"deprecated role emitted when set",
			&mesos.FrameworkInfo{User: proto.String("u"), Name: proto.String("n"), Role: proto.String("web")},
			`{"user":"u","name":"n","failover_timeout":0.0,"checkpoint":false,"role":"web"}`},
		{"resource role only when set",
			&mesos.Resource{Name: proto.String("mem"), Type: mesos.Value_SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: proto.Float64(32)}},
			`{"name":"mem","type":"SCALAR","scalar":{"value":32.0}}`},
		{"empty repeated omitted", &mesos.Labels{Labels: []*mesos.Label{}}, `{}`},
		{"required with default emitted",
			&mesos.AgentInfo{Hostname: proto.String("h")},
			`{"hostname":"h","port":5051}`},
		{"64-bit integers as numbers",
			&mesos.Value_Range{Begin: proto.Uint64(0), End: proto.Uint64(math.MaxUint64)},
			`{"begin":0,"end":18446744073709551615}`},
		{"int64 exact", &mesos.TimeInfo{Nanoseconds: proto.Int64(-9007199254740993)}, `{"nanoseconds":-9007199254740993}`},
		{"doubles like stout",
			&mesos.Value_Scalar{Value: proto.Float64(1.0 / 3)}, `{"value":0.333333333333333}`},
		{"NaN as string", &mesos.Value_Scalar{Value: proto.Float64(math.NaN())}, `{"value":"NaN"}`},
		{"Inf as string", &mesos.Filters{RefuseSeconds: proto.Float64(math.Inf(1))}, `{"refuse_seconds":"Infinity"}`},
		{"bytes base64", &mesos.UUID{Value: []byte{0xff, 0xfe, 0x00}}, `{"value":"//4A"}`},
		{"string escaping",
			&mesos.Label{Key: proto.String("a\"b\\c\n\t\x01</>"), Value: proto.String("\xff\u2028é")},
			`{"key":"a\"b\\c\n\t\u0001</>","value":"\ufffd\u2028é"}`},
		{"enum by name", &mesos.TaskStatus{TaskId: taskID("t"), State: mesos.TaskState_TASK_FINISHED.Enum()},
			`{"task_id":{"value":"t"},"state":"TASK_FINISHED"}`},
		{"enum without name as number", &mesos.TaskStatus{TaskId: taskID("t"), State: mesos.TaskState(99).Enum()},
			`{"task_id":{"value":"t"},"state":99}`},
		{"map as object with sorted keys",
			&quotapb.QuotaConfig{Role: proto.String("r"), Guarantees: map[string]*mesos.Value_Scalar{
				"mem": {Value: proto.Float64(64)}, "cpus": {Value: proto.Float64(1)}}},
			`{"role":"r","guarantees":{"cpus":{"value":1.0},"mem":{"value":64.0}}}`},
		{"oneof member",
			&schedulerpb.AttributeConstraint_Selector{Selector: &schedulerpb.AttributeConstraint_Selector_AttributeName{AttributeName: "rack"}},
			`{"attribute_name":"rack"}`},
		{"unset required not written", &mesos.TaskID{}, `{}`},
		{"nested default", &schedulerpb.Call{Type: schedulerpb.Call_DECLINE.Enum(), Decline: &schedulerpb.Call_Decline{Filters: &mesos.Filters{}}},
			`{"type":"DECLINE","decline":{"filters":{"refuse_seconds":5.0}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := codec.MarshalJSON(tt.msg)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("\n got: %s\nwant: %s", got, tt.want)
			}
			if strings.ContainsAny(string(got), "\n\r") {
				t.Errorf("output contains a raw newline: %q", got)
			}
		})
	}
}

func TestAppendFloat(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{2, "2.0"},
		{0.1, "0.1"},
		{0.1 + 0.2, "0.3"}, // 15 significant digits, as stout
		{1024.5, "1024.5"},
		{123456789012345, "123456789012345.0"},
		{1e15, "1.0e+15"},
		{1e21, "1.0e+21"},
		{0.0001, "0.0001"},
		{0.00001, "1.0e-05"},
		{1700000000.123456, "1700000000.12346"},
		{-31536000, "-31536000.0"},
		{math.Inf(-1), `"-Infinity"`},
	}
	for _, tt := range tests {
		if got := string(codec.AppendFloat(nil, tt.in)); got != tt.want {
			t.Errorf("AppendFloat(%v) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestUnmarshalJSON(t *testing.T) {
	tests := []struct {
		name string
		in   string
		into proto.Message
		want proto.Message
	}{
		{"numeric strings for integers",
			`{"begin":"31000","end":"32000"}`, &mesos.Value_Range{},
			&mesos.Value_Range{Begin: proto.Uint64(31000), End: proto.Uint64(32000)}},
		{"integral float and exponent for integers",
			`{"nanoseconds":1e3}`, &mesos.TimeInfo{}, &mesos.TimeInfo{Nanoseconds: proto.Int64(1000)}},
		{"Infinity string for double",
			`{"refuse_seconds":"Infinity"}`, &mesos.Filters{}, &mesos.Filters{RefuseSeconds: proto.Float64(math.Inf(1))}},
		{"-Infinity string for double",
			`{"value":"-Infinity"}`, &mesos.Value_Scalar{}, &mesos.Value_Scalar{Value: proto.Float64(math.Inf(-1))}},
		{"numeric string for double",
			`{"value":"1.5"}`, &mesos.Value_Scalar{}, &mesos.Value_Scalar{Value: proto.Float64(1.5)}},
		{"enum by number",
			`{"task_id":{"value":"t"},"state":1}`, &mesos.TaskStatus{},
			&mesos.TaskStatus{TaskId: taskID("t"), State: mesos.TaskState_TASK_RUNNING.Enum()}},
		{"unknown enum name on optional field dropped",
			`{"task_id":{"value":"t"},"state":"TASK_RUNNING","source":"SOURCE_MARS"}`, &mesos.TaskStatus{},
			&mesos.TaskStatus{TaskId: taskID("t"), State: mesos.TaskState_TASK_RUNNING.Enum()}},
		{"unknown enum in repeated dropped",
			`{"user":"u","name":"n","capabilities":[{"type":"MULTI_ROLE"},{"type":"TELEPORT"}]}`, &mesos.FrameworkInfo{},
			&mesos.FrameworkInfo{User: proto.String("u"), Name: proto.String("n"), Capabilities: []*mesos.FrameworkInfo_Capability{
				{Type: mesos.FrameworkInfo_Capability_MULTI_ROLE.Enum()}, {}}}},
		{"null everywhere and unknown keys",
			`{"value":"x","parent":null,"bogus":{"deep":[1,2]},"alsoBogus":null}`, &mesos.ContainerID{},
			&mesos.ContainerID{Value: proto.String("x")}},
		{"null inside arrays skipped",
			`{"item":["a",null,"b"]}`, &mesos.Value_Set{}, &mesos.Value_Set{Item: []string{"a", "b"}}},
		{"lone value for repeated field",
			`{"item":"a"}`, &mesos.Value_Set{}, &mesos.Value_Set{Item: []string{"a"}}},
		{"bytes base64 standard and unpadded",
			`{"value":"//4A"}`, &mesos.UUID{}, &mesos.UUID{Value: []byte{0xff, 0xfe, 0}}},
		{"map as object",
			`{"role":"r","guarantees":{"cpus":{"value":1},"mem":null}}`, &quotapb.QuotaConfig{},
			&quotapb.QuotaConfig{Role: proto.String("r"), Guarantees: map[string]*mesos.Value_Scalar{"cpus": {Value: proto.Float64(1)}}}},
		{"map as key/value entries",
			`{"role":"r","limits":[{"key":"cpus","value":{"value":2}}]}`, &quotapb.QuotaConfig{},
			&quotapb.QuotaConfig{Role: proto.String("r"), Limits: map[string]*mesos.Value_Scalar{"cpus": {Value: proto.Float64(2)}}}},
		{"oneof",
			`{"pseudoattribute_type":"HOSTNAME"}`, &schedulerpb.AttributeConstraint_Selector{},
			&schedulerpb.AttributeConstraint_Selector{Selector: &schedulerpb.AttributeConstraint_Selector_PseudoattributeType_{
				PseudoattributeType: schedulerpb.AttributeConstraint_Selector_HOSTNAME}}},
		{"top-level null is an empty message", `null`, &mesos.Filters{}, &mesos.Filters{}},
		{"bool from string", `{"shell":"false"}`, &mesos.CommandInfo{}, &mesos.CommandInfo{Shell: proto.Bool(false)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := codec.UnmarshalJSON([]byte(tt.in), tt.into); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(tt.into, tt.want) {
				t.Errorf("\n got: %v\nwant: %v", tt.into, tt.want)
			}
		})
	}
}

func TestUnmarshalJSONErrors(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		into     proto.Message
		wantErr  string
		required bool // ErrNotInitialized rather than ErrInvalidJSON
	}{
		{"missing required nested",
			`{"type":"SUBSCRIBE","subscribe":{"framework_info":{"name":"x"}}}`, &schedulerpb.Call{},
			"subscribe.framework_info.user", true},
		{"missing required in list",
			`{"type":"OFFERS","offers":{"offers":[{"id":{"value":"o"},"framework_id":{"value":"f"},"hostname":"h","agent_id":{}}]}}`, &schedulerpb.Event{},
			"offers.offers[0].agent_id.value", true},
		{"unknown enum on required field",
			`{"task_id":{"value":"t"},"state":"TASK_SLEEPING"}`, &mesos.TaskStatus{}, "field 'state'", false},
		{"wrong type for string",
			`{"type":"SUBSCRIBE","subscribe":{"framework_info":{"user":"u","name":5}}}`, &schedulerpb.Call{},
			"field 'subscribe.framework_info.name': expecting a string", false},
		{"array for singular",
			`{"value":[1]}`, &mesos.Value_Scalar{}, "field 'value': expecting a number, got an array", false},
		{"object expected in list",
			`{"accept":{"offer_ids":[{"value":"a"},"b"]}}`, &schedulerpb.Call{},
			"field 'accept.offer_ids[1]': expecting a JSON object", false},
		{"integer out of range",
			`{"port":4294967296}`, &mesos.Address{}, "field 'port'", false},
		{"negative unsigned", `{"begin":-1,"end":2}`, &mesos.Value_Range{}, "field 'begin'", false},
		{"fractional integer", `{"nanoseconds":1.5}`, &mesos.TimeInfo{}, "field 'nanoseconds'", false},
		{"bad base64", `{"value":"***"}`, &mesos.UUID{}, "field 'value': invalid base64", false},
		{"not an object", `[1,2]`, &mesos.Filters{}, "expecting a JSON object", false},
		{"malformed", `{"refuse_seconds":`, &mesos.Filters{}, "malformed JSON", false},
		{"trailing data", `{} {}`, &mesos.Filters{}, "data after", false},
		{"bad map key", `{"role":"r","guarantees":{"cpus":5}}`, &quotapb.QuotaConfig{},
			`field 'guarantees["cpus"]': expecting a JSON object`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := codec.UnmarshalJSON([]byte(tt.in), tt.into)
			if err == nil {
				t.Fatalf("no error; decoded %v", tt.into)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
			want := codec.ErrInvalidJSON
			if tt.required {
				want = codec.ErrNotInitialized
			}
			if !errors.Is(err, want) {
				t.Errorf("error %q is not %v", err, want)
			}
		})
	}
}

func TestCheckInitializedPath(t *testing.T) {
	tests := []struct {
		name string
		msg  proto.Message
		path string
	}{
		{"complete", &mesos.TaskID{Value: proto.String("x")}, ""},
		{"top level", &mesos.TaskID{}, "value"},
		{"nested", &schedulerpb.Call{Subscribe: &schedulerpb.Call_Subscribe{FrameworkInfo: &mesos.FrameworkInfo{Name: proto.String("n")}}},
			"subscribe.framework_info.user"},
		{"list element", &mesos.Offer{Id: offerID("o"), FrameworkId: fwID("f"), AgentId: agentID("a"), Hostname: proto.String("h"),
			Resources: []*mesos.Resource{{Name: proto.String("cpus"), Type: mesos.Value_SCALAR.Enum()}, {Name: proto.String("mem")}}},
			"resources[1].type"},
		{"map value", &quotapb.QuotaConfig{Role: proto.String("r"), Limits: map[string]*mesos.Value_Scalar{"cpus": {}}},
			`limits["cpus"].value`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := codec.CheckInitialized(tt.msg)
			if tt.path == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			var re *codec.RequiredError
			if !errors.As(err, &re) {
				t.Fatalf("error %v is not a *RequiredError", err)
			}
			if re.Path != tt.path {
				t.Errorf("path = %q, want %q", re.Path, tt.path)
			}
		})
	}
}

// TestRoundTrip: decoding what we encode gives the same message, and
// re-encoding gives the same bytes, over both codecs.
func TestRoundTrip(t *testing.T) {
	msgs := []proto.Message{referenceOffer(), referenceStatus(), &schedulerpb.Call{
		FrameworkId: fwID("f"), Type: schedulerpb.Call_ACKNOWLEDGE.Enum(),
		Acknowledge: &schedulerpb.Call_Acknowledge{AgentId: agentID("a"), TaskId: taskID("t"), Uuid: []byte("0123456789abcdef")},
	}}
	for _, m := range msgs {
		for _, mt := range []codec.MediaType{codec.JSON, codec.Protobuf} {
			b, err := codec.Marshal(mt, m)
			if err != nil {
				t.Fatal(err)
			}
			back := m.ProtoReflect().New().Interface()
			if err := codec.Unmarshal(mt, b, back); err != nil {
				t.Fatalf("%s: %v", mt, err)
			}
			if !proto.Equal(back, m) {
				t.Errorf("%s round trip: got %v want %v", mt, back, m)
			}
		}
	}
}
