package endpoints

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"mezzo/api/codec"
	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/master"
)

func (f *fakeSource) DrainAgent(_ context.Context, _ master.Principal, id string, grace *time.Duration, markGone bool) error {
	g := "nil"
	if grace != nil {
		g = grace.String()
	}
	return f.write("DrainAgent", fmt.Sprintf("%s grace=%s mark_gone=%v", id, g, markGone))
}

func (f *fakeSource) DeactivateAgent(_ context.Context, _ master.Principal, id string) error {
	return f.write("DeactivateAgent", id)
}

func (f *fakeSource) ReactivateAgent(_ context.Context, _ master.Principal, id string) error {
	return f.write("ReactivateAgent", id)
}

func agentIDOf(id string) *mesos.AgentID { return &mesos.AgentID{Value: proto.String(id)} }

// TestDrainCalls: each call reaches the master with its arguments and is
// answered 200 with no body; bad input is 400 naming the field and
// reaches nothing; the master's refusal keeps its status.
func TestDrainCalls(t *testing.T) {
	drain := func(id string, grace *durationpb.Duration, gone bool) *masterpb.Call {
		return &masterpb.Call{Type: masterpb.Call_DRAIN_AGENT.Enum(), DrainAgent: &masterpb.Call_DrainAgent{
			AgentId: agentIDOf(id), MaxGracePeriod: grace, MarkGone: proto.Bool(gone)}}
	}
	cases := []struct {
		name  string
		call  *masterpb.Call
		code  int
		write string // "" : none
		body  string // in the 400's text
	}{
		{"drain", drain("S1", durationpb.New(10*time.Second), true), 200, "DrainAgent S1 grace=10s mark_gone=true", ""},
		{"drain without grace", drain("S1", nil, false), 200, "DrainAgent S1 grace=nil mark_gone=false", ""},
		{"drain zero grace", drain("S1", durationpb.New(0), false), 200, "DrainAgent S1 grace=0s mark_gone=false", ""},
		{"drain negative grace", drain("S1", durationpb.New(-time.Second), false), 400, "", "drain_agent.max_grace_period"},
		{"drain invalid grace", drain("S1", &durationpb.Duration{Seconds: 1, Nanos: -5}, false), 400, "", "drain_agent.max_grace_period"},
		{"drain no agent", drain("", nil, false), 400, "", "drain_agent.agent_id"},
		{"drain no sub-message", callOf(masterpb.Call_DRAIN_AGENT), 400, "", "drain_agent"},
		{"deactivate", &masterpb.Call{Type: masterpb.Call_DEACTIVATE_AGENT.Enum(),
			DeactivateAgent: &masterpb.Call_DeactivateAgent{AgentId: agentIDOf("S2")}}, 200, "DeactivateAgent S2", ""},
		{"deactivate no agent", &masterpb.Call{Type: masterpb.Call_DEACTIVATE_AGENT.Enum(),
			DeactivateAgent: &masterpb.Call_DeactivateAgent{AgentId: agentIDOf("")}}, 400, "", "deactivate_agent.agent_id"},
		{"reactivate", &masterpb.Call{Type: masterpb.Call_REACTIVATE_AGENT.Enum(),
			ReactivateAgent: &masterpb.Call_ReactivateAgent{AgentId: agentIDOf("S3")}}, 200, "ReactivateAgent S3", ""},
		{"reactivate no agent", &masterpb.Call{Type: masterpb.Call_REACTIVATE_AGENT.Enum(),
			ReactivateAgent: &masterpb.Call_ReactivateAgent{}}, 400, "", "reactivate_agent.agent_id"},
	}
	for _, c := range cases {
		for _, mt := range []codec.MediaType{codec.JSON, codec.Protobuf} {
			t.Run(c.name+"/"+string(mt), func(t *testing.T) {
				src := newFakeSource(testSnapshot())
				mux, _ := newTestServer(t, src)
				rec := postCall(t, mux, mt, c.call)
				if rec.Code != c.code {
					t.Fatalf("status %d (%s), want %d", rec.Code, rec.Body, c.code)
				}
				if c.code == 200 && (rec.Body.Len() != 0 || rec.Header().Get("Content-Type") != "") {
					t.Fatalf("200 with body %q, Content-Type %q", rec.Body, rec.Header().Get("Content-Type"))
				}
				if !strings.Contains(rec.Body.String(), c.body) {
					t.Fatalf("body %q does not name %q", rec.Body, c.body)
				}
				var want []string
				if c.write != "" {
					want = []string{c.write}
				}
				if fmt.Sprint(src.writes) != fmt.Sprint(want) {
					t.Fatalf("writes %v, want %v", src.writes, want)
				}
			})
		}
	}
	src := newFakeSource(testSnapshot())
	src.writeErr = &master.APIError{Status: http.StatusNotFound, Message: "Agent S9 not found"}
	mux, _ := newTestServer(t, src)
	if rec := postCall(t, mux, codec.JSON, drain("S9", nil, false)); rec.Code != 404 || !strings.Contains(rec.Body.String(), "S9 not found") {
		t.Fatalf("master refusal answered %d %q, want 404", rec.Code, rec.Body)
	}
}

// TestDrainInfoShown: GET_AGENTS carries drain_info and deactivated;
// /master/slaves and /master/state write drain_info as Mesos does
// (state, config with max_grace_period and mark_gone) and omit it for an
// agent that is not drained.
func TestDrainInfoShown(t *testing.T) {
	snap := testSnapshot()
	a := snap.Agents[0]
	a.Active, a.Deactivated = false, true
	a.DrainInfo = &mesos.DrainInfo{State: mesos.DrainState_DRAINING.Enum(), Config: &mesos.DrainConfig{
		MaxGracePeriod: &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(10 * time.Second))}, MarkGone: proto.Bool(false)}}
	mux, _ := newTestServer(t, newFakeSource(snap))

	rec := postCall(t, mux, codec.Protobuf, callOf(masterpb.Call_GET_AGENTS))
	resp := &masterpb.Response{}
	if err := codec.Unmarshal(codec.Protobuf, rec.Body.Bytes(), resp); err != nil {
		t.Fatal(err)
	}
	got := resp.GetGetAgents().GetAgents()
	if len(got) != 2 || !proto.Equal(got[0].GetDrainInfo(), a.DrainInfo) || !got[0].GetDeactivated() || got[0].GetActive() ||
		got[1].DrainInfo != nil {
		t.Fatalf("GET_AGENTS agents = %v", got)
	}
	for _, path := range []string{"/master/slaves", "/master/state"} {
		m := decode(t, get(t, mux, path).Body.Bytes())
		slaves := m["slaves"].([]any)
		s0, s1 := slaves[0].(map[string]any), slaves[1].(map[string]any)
		di, ok := s0["drain_info"].(map[string]any)
		if !ok || di["state"] != "DRAINING" || s0["deactivated"] != true || s0["active"] != false {
			t.Fatalf("%s: slave %v", path, s0)
		}
		cfg := di["config"].(map[string]any)
		if fmt.Sprint(cfg["max_grace_period"]) != "map[nanoseconds:10000000000]" || cfg["mark_gone"] != false {
			t.Fatalf("%s: drain_info.config = %v", path, cfg)
		}
		if _, ok := s1["drain_info"]; ok {
			t.Fatalf("%s: undrained agent shows drain_info", path)
		}
		// Both agents are inactive (the fixture's second is deactivated).
		if path == "/master/state" && fmt.Sprint(m["deactivated_slaves"]) != "2.0" {
			t.Fatalf("deactivated_slaves = %v", m["deactivated_slaves"])
		}
	}
}
