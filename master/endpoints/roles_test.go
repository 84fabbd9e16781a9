package endpoints

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/api/quotapb"
	"mezzo/api/schedulerpb"
	"mezzo/internal/clock"
	"mezzo/master"
)

// realMaster runs a master (default allocator, in-memory registrar) and
// registers the endpoints over it: weights and quota go through the whole
// path (loop, registrar, allocator, snapshot).
func realMaster(t *testing.T) (*master.Master, *http.ServeMux) {
	t.Helper()
	clk := clock.NewFake(testNow)
	m, err := master.New(master.Config{ID: "m1", Hostname: "m", IP: "127.0.0.1", Port: 5050, Version: "test",
		Clock: clk, Weights: map[string]float64{"ops": 3},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	t.Cleanup(m.Stop)
	mux := http.NewServeMux()
	Register(mux, m, Options{Version: "1.12.0", Clock: clk})
	return m, mux
}

func request(t *testing.T, mux http.Handler, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	return do(mux, req)
}

func wantStatus(t *testing.T, rec *httptest.ResponseRecorder, code int, contains string) {
	t.Helper()
	if rec.Code != code || !strings.Contains(rec.Body.String(), contains) {
		t.Fatalf("status %d body %q, want %d containing %q", rec.Code, rec.Body, code, contains)
	}
}

func TestWeightsEndpoint(t *testing.T) {
	_, mux := realMaster(t)
	wantStatus(t, request(t, mux, http.MethodGet, "/master/weights", ""), 200, `[{"weight":3.0,"role":"ops"}]`)
	rec := request(t, mux, http.MethodPut, "/master/weights", `[{"role":"eng","weight":2.5},{"role":"eng/web","weight":0.5}]`)
	wantStatus(t, rec, 200, "")
	if rec.Body.Len() != 0 || rec.Header().Get("Content-Type") != "" {
		t.Fatalf("success answered %q with Content-Type %q, want an empty 200", rec.Body, rec.Header().Get("Content-Type"))
	}
	wantStatus(t, request(t, mux, http.MethodGet, "/weights", ""), 200,
		`[{"weight":2.5,"role":"eng"},{"weight":0.5,"role":"eng/web"},{"weight":3.0,"role":"ops"}]`)
	for _, tc := range []struct{ name, body, want string }{
		{"bad role", `[{"role":"eng//x","weight":1}]`, "weight_infos[0].role 'eng//x'"},
		{"bad weight", `[{"role":"ok","weight":1},{"role":"eng","weight":0}]`, "weight_infos[1].weight for role 'eng'"},
		{"negative", `[{"role":"eng","weight":-2}]`, "must be positive"},
		{"not an array", `{"role":"eng","weight":1}`, "array of WeightInfo"},
		{"missing weight", `[{"role":"eng"}]`, "[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantStatus(t, request(t, mux, http.MethodPut, "/master/weights", tc.body), 400, tc.want)
		})
	}
	wantStatus(t, request(t, mux, http.MethodPost, "/master/weights", "[]"), 405, "'GET', 'PUT'")
	// Nothing of the refused requests was applied.
	wantStatus(t, request(t, mux, http.MethodGet, "/master/weights?jsonp=cb", ""), 200, `cb([{"weight":2.5,"role":"eng"},`)
}

func TestOperatorWeightsCalls(t *testing.T) {
	m, mux := realMaster(t)
	for _, mt := range []codec.MediaType{codec.JSON, codec.Protobuf} {
		t.Run(string(mt), func(t *testing.T) {
			upd := callOf(masterpb.Call_UPDATE_WEIGHTS)
			upd.UpdateWeights = &masterpb.Call_UpdateWeights{WeightInfos: []*mesos.WeightInfo{
				{Role: proto.String("eng"), Weight: proto.Float64(4)}}}
			rec := postCall(t, mux, mt, upd)
			if rec.Code != 200 || rec.Body.Len() != 0 {
				t.Fatalf("UPDATE_WEIGHTS: %d %q", rec.Code, rec.Body)
			}
			rec = postCall(t, mux, mt, callOf(masterpb.Call_GET_WEIGHTS))
			resp := &masterpb.Response{}
			if err := codec.Unmarshal(mt, rec.Body.Bytes(), resp); err != nil || rec.Code != 200 {
				t.Fatalf("GET_WEIGHTS: %d %v", rec.Code, err)
			}
			got := map[string]float64{}
			for _, w := range resp.GetGetWeights().GetWeightInfos() {
				got[w.GetRole()] = w.GetWeight()
			}
			if resp.GetType() != masterpb.Response_GET_WEIGHTS || got["eng"] != 4 || got["ops"] != 3 || len(got) != 2 {
				t.Fatalf("GET_WEIGHTS = %v", resp)
			}
			bad := callOf(masterpb.Call_UPDATE_WEIGHTS)
			bad.UpdateWeights = &masterpb.Call_UpdateWeights{WeightInfos: []*mesos.WeightInfo{
				{Role: proto.String("a b"), Weight: proto.Float64(1)}}}
			wantStatus(t, postCall(t, mux, mt, bad), 400, "weight_infos[0].role 'a b'")
		})
	}
	// GET_ROLES reports the weight.
	rec := postCall(t, mux, codec.JSON, callOf(masterpb.Call_GET_ROLES))
	if !strings.Contains(rec.Body.String(), `{"name":"eng","weight":4.0}`) {
		t.Fatalf("GET_ROLES = %s", rec.Body)
	}
	if m.Snapshot().Weights["eng"] != 4 {
		t.Fatal("snapshot lacks the weight")
	}
}

func TestQuotaEndpoint(t *testing.T) {
	_, mux := realMaster(t)
	req := `{"role":"dev","guarantee":[{"name":"cpus","type":"SCALAR","scalar":{"value":2}},{"name":"mem","type":"SCALAR","scalar":{"value":512}}]}`
	// No agents: any guarantee overcommits the cluster.
	wantStatus(t, request(t, mux, http.MethodPost, "/master/quota", req), 409, "overcommit")
	forced := `{"force":true,` + req[1:]
	wantStatus(t, request(t, mux, http.MethodPost, "/master/quota", forced), 200, "")
	wantStatus(t, request(t, mux, http.MethodPost, "/master/quota", forced), 400, "already has quota")
	wantStatus(t, request(t, mux, http.MethodPost, "/master/quota",
		`{"role":"x","force":true,"guarantee":[{"name":"ports","type":"RANGES","ranges":{"range":[{"begin":1,"end":2}]}}]}`), 400, "not a scalar")
	wantStatus(t, request(t, mux, http.MethodPost, "/master/quota", `{"role":`), 400, "QuotaRequest")

	rec := request(t, mux, http.MethodGet, "/master/quota", "")
	var st struct {
		Infos []struct {
			Role      string `json:"role"`
			Guarantee []struct {
				Name   string `json:"name"`
				Scalar struct{ Value float64 }
			} `json:"guarantee"`
		} `json:"infos"`
		Configs []struct {
			Role       string                             `json:"role"`
			Guarantees map[string]struct{ Value float64 } `json:"guarantees"`
			Limits     map[string]struct{ Value float64 } `json:"limits"`
		} `json:"configs"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || rec.Code != 200 {
		t.Fatalf("GET /master/quota: %d %s (%v)", rec.Code, rec.Body, err)
	}
	if len(st.Infos) != 1 || st.Infos[0].Role != "dev" || len(st.Infos[0].Guarantee) != 2 ||
		len(st.Configs) != 1 || st.Configs[0].Guarantees["cpus"].Value != 2 || st.Configs[0].Limits["mem"].Value != 512 {
		t.Fatalf("quota status = %s", rec.Body)
	}

	// /master/roles shows it.
	roles := decode(t, request(t, mux, http.MethodGet, "/master/roles", "").Body.Bytes())
	var dev map[string]any
	for _, r := range roles["roles"].([]any) {
		if r.(map[string]any)["name"] == "dev" {
			dev = r.(map[string]any)
		}
	}
	if dev == nil {
		t.Fatalf("/master/roles lacks dev: %v", roles)
	}
	q := dev["quota"].(map[string]any)
	if q["role"] != "dev" || q["guarantee"].(map[string]any)["cpus"] != json.Number("2.0") || q["limit"].(map[string]any)["mem"] != json.Number("512.0") {
		t.Fatalf("dev quota = %v", q)
	}

	wantStatus(t, request(t, mux, http.MethodDelete, "/master/quota/dev", ""), 200, "")
	wantStatus(t, request(t, mux, http.MethodDelete, "/quota/dev", ""), 400, "has no quota")
	wantStatus(t, request(t, mux, http.MethodDelete, "/master/quota", ""), 400, "/master/quota/<role>")
	wantStatus(t, request(t, mux, http.MethodPut, "/master/quota", ""), 405, "'DELETE'")
	wantStatus(t, request(t, mux, http.MethodGet, "/master/quota", ""), 200, "{}")
}

func TestOperatorQuotaCalls(t *testing.T) {
	_, mux := realMaster(t)
	for _, mt := range []codec.MediaType{codec.JSON, codec.Protobuf} {
		t.Run(string(mt), func(t *testing.T) {
			upd := callOf(masterpb.Call_UPDATE_QUOTA)
			upd.UpdateQuota = &masterpb.Call_UpdateQuota{QuotaConfigs: []*quotapb.QuotaConfig{{
				Role:   proto.String("dev"),
				Limits: map[string]*mesos.Value_Scalar{"cpus": {Value: proto.Float64(10)}, "mem": {Value: proto.Float64(2048)}},
			}}}
			if rec := postCall(t, mux, mt, upd); rec.Code != 200 {
				t.Fatalf("UPDATE_QUOTA: %d %s", rec.Code, rec.Body)
			}
			rec := postCall(t, mux, mt, callOf(masterpb.Call_GET_QUOTA))
			resp := &masterpb.Response{}
			if err := codec.Unmarshal(mt, rec.Body.Bytes(), resp); err != nil || rec.Code != 200 {
				t.Fatalf("GET_QUOTA: %d %v", rec.Code, err)
			}
			cfgs := resp.GetGetQuota().GetStatus().GetConfigs()
			if len(cfgs) != 1 || cfgs[0].GetRole() != "dev" || cfgs[0].GetLimits()["mem"].GetValue() != 2048 || len(cfgs[0].GetGuarantees()) != 0 {
				t.Fatalf("GET_QUOTA = %v", resp)
			}
			if infos := resp.GetGetQuota().GetStatus().GetInfos(); len(infos) != 1 || infos[0].GetRole() != "dev" {
				t.Fatalf("GET_QUOTA infos = %v", infos)
			}
			// Guarantee above limit: 400 naming the field.
			bad := callOf(masterpb.Call_UPDATE_QUOTA)
			bad.UpdateQuota = &masterpb.Call_UpdateQuota{Force: proto.Bool(true), QuotaConfigs: []*quotapb.QuotaConfig{{
				Role:       proto.String("dev"),
				Guarantees: map[string]*mesos.Value_Scalar{"cpus": {Value: proto.Float64(3)}},
				Limits:     map[string]*mesos.Value_Scalar{"cpus": {Value: proto.Float64(2)}},
			}}}
			wantStatus(t, postCall(t, mux, mt, bad), 400, "'update_quota.quota_configs[0].guarantees[cpus]' (3) exceeds")
			// Deprecated SET_QUOTA / REMOVE_QUOTA.
			set := callOf(masterpb.Call_SET_QUOTA)
			set.SetQuota = &masterpb.Call_SetQuota{QuotaRequest: &quotapb.QuotaRequest{Role: proto.String("dev"), Force: proto.Bool(true),
				Guarantee: []*mesos.Resource{{Name: proto.String("cpus"), Type: mesos.Value_SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: proto.Float64(1)}}}}}
			wantStatus(t, postCall(t, mux, mt, set), 400, "already has quota")
			rm := callOf(masterpb.Call_REMOVE_QUOTA)
			rm.RemoveQuota = &masterpb.Call_RemoveQuota{Role: proto.String("dev")}
			wantStatus(t, postCall(t, mux, mt, rm), 200, "")
			wantStatus(t, postCall(t, mux, mt, rm), 400, "has no quota")
			if rec := postCall(t, mux, mt, set); rec.Code != 200 {
				t.Fatalf("SET_QUOTA: %d %s", rec.Code, rec.Body)
			}
			wantStatus(t, postCall(t, mux, mt, rm), 200, "")
		})
	}
	// The JSON shape of GET_QUOTA (Mesos's mapping: maps of {"value":…}).
	rec := postCall(t, mux, codec.JSON, upd(t))
	if rec.Code != 200 {
		t.Fatal(rec.Body)
	}
	rec = postCall(t, mux, codec.JSON, callOf(masterpb.Call_GET_QUOTA))
	want := `{"type":"GET_QUOTA","get_quota":{"status":{"infos":[{"role":"web"}],"configs":[{"role":"web","limits":{"cpus":{"value":1.5}}}]}}}`
	if got := rec.Body.String(); got != want {
		t.Fatalf("GET_QUOTA JSON\n got %s\nwant %s", got, want)
	}
}

func upd(t *testing.T) *masterpb.Call {
	c := callOf(masterpb.Call_UPDATE_QUOTA)
	c.UpdateQuota = &masterpb.Call_UpdateQuota{QuotaConfigs: []*quotapb.QuotaConfig{{
		Role: proto.String("web"), Limits: map[string]*mesos.Value_Scalar{"cpus": {Value: proto.Float64(1.5)}}}}}
	return c
}

func TestRoleWritesNeedLeaderAndReachTheSource(t *testing.T) {
	s := testSnapshot()
	src := newFakeSource(s)
	mux, _ := newTestServer(t, src)
	// Writes reach the source, whose refusal decides the answer; an
	// allocator that cannot explain gives 501.
	wantStatus(t, request(t, mux, http.MethodGet, "/master/weights", ""), 200, "[]")
	wantStatus(t, request(t, mux, http.MethodPut, "/master/weights", "[]"), 200, "")
	wantStatus(t, request(t, mux, http.MethodPost, "/master/quota", `{"role":"dev"}`), 200, "")
	wantStatus(t, request(t, mux, http.MethodDelete, "/master/quota/x/y", ""), 200, "")
	wantStatus(t, request(t, mux, http.MethodGet, "/master/allocator/explain?framework_id=x", ""), 501, "")
	if got, want := strings.Join(src.writes, "; "), "UpdateWeights 0; SetQuota dev; RemoveQuota x/y"; got != want {
		t.Errorf("writes = %q, want %q", got, want)
	}
	src.writeErr = &master.APIError{Status: http.StatusConflict, Message: "taken"}
	wantStatus(t, request(t, mux, http.MethodPut, "/master/weights", "[]"), 409, "taken")

	ns := testSnapshot()
	ns.Elected = false
	mux, _ = newTestServer(t, newFakeSource(ns))
	for _, path := range []string{"/master/weights", "/master/quota"} {
		if rec := request(t, mux, http.MethodGet, path, ""); rec.Code != http.StatusTemporaryRedirect {
			t.Errorf("%s on a non-leader: %d, want 307", path, rec.Code)
		}
	}
}

func TestExplainEndpoint(t *testing.T) {
	m, mux := realMaster(t)
	wantStatus(t, request(t, mux, http.MethodGet, "/master/allocator/explain", ""), 400, "framework_id")
	wantStatus(t, request(t, mux, http.MethodGet, "/master/allocator/explain?framework_id=nope", ""), 404, "No framework")
	wantStatus(t, request(t, mux, http.MethodPost, "/master/allocator/explain?framework_id=nope", ""), 405, "GET")

	st, err := m.Subscribe(context.Background(), master.Principal{}, &schedulerpb.Call{Type: schedulerpb.Call_SUBSCRIBE.Enum(),
		Subscribe: &schedulerpb.Call_Subscribe{FrameworkInfo: &mesos.FrameworkInfo{User: proto.String("u"), Name: proto.String("fw"),
			Role: proto.String("eng")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec := request(t, mux, http.MethodGet, "/master/allocator/explain?framework_id="+st.FrameworkID(), "")
	var ex struct {
		FrameworkID string `json:"framework_id"`
		Active      bool   `json:"active"`
		Roles       []struct {
			Role, Reason, Message string
			Agents                map[string]int
		} `json:"roles"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &ex); err != nil || rec.Code != 200 {
		t.Fatalf("explain: %d %s (%v)", rec.Code, rec.Body, err)
	}
	if ex.FrameworkID != st.FrameworkID() || !ex.Active || len(ex.Roles) != 1 || ex.Roles[0].Role != "eng" ||
		ex.Roles[0].Reason != "NO_ACTIVE_AGENTS" || ex.Roles[0].Message == "" {
		t.Fatalf("explanation = %s", rec.Body)
	}
	if strings.Contains(rec.Body.String(), "last_offer") {
		t.Fatalf("never-offered framework has a last_offer: %s", rec.Body)
	}
}

func TestAllocatorMetricsMerged(t *testing.T) {
	m, mux := realMaster(t)
	st, err := m.Subscribe(context.Background(), master.Principal{}, &schedulerpb.Call{Type: schedulerpb.Call_SUBSCRIBE.Enum(),
		Subscribe: &schedulerpb.Call_Subscribe{FrameworkInfo: &mesos.FrameworkInfo{User: proto.String("u"), Name: proto.String("fw"),
			Role: proto.String("eng")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	snap := decode(t, request(t, mux, http.MethodGet, "/metrics/snapshot", "").Body.Bytes())
	for _, k := range []string{"allocator/mesos/allocation_runs", "allocator/mesos/allocation_run_ms/count",
		"allocator/mesos/event_queue_dispatches", "allocator/mesos/roles/eng/shares/dominant", "master/uptime_secs"} {
		if _, ok := snap[k]; !ok {
			t.Errorf("/metrics/snapshot lacks %s", k)
		}
	}
	// The run-time summary exists from the allocator's first run on, which
	// the subscription triggers: wait for it.
	prom := ""
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(prom, "mezzo_allocator_allocation_run_duration_seconds_count"); {
		if time.Now().After(deadline) {
			t.Fatalf("no allocation run after 10s:\n%s", prom)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, bounded by the deadline
		prom = request(t, mux, http.MethodGet, "/metrics", "").Body.String()
	}
	for _, line := range []string{"# TYPE mezzo_allocator_allocation_runs_total counter",
		`mezzo_allocator_role_dominant_share{role="eng"}`, "# TYPE mezzo_allocator_allocation_run_duration_seconds summary",
		"mezzo_metrics_unmapped_keys 0\n", "# TYPE mezzo_master_operator_event_stream_subscribers gauge\n"} {
		if !strings.Contains(prom, line) {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	call := callOf(masterpb.Call_GET_METRICS)
	call.GetMetrics = &masterpb.Call_GetMetrics{}
	rec := postCall(t, mux, codec.JSON, call)
	if !bytes.Contains(rec.Body.Bytes(), []byte(`"allocator/mesos/allocation_runs"`)) {
		t.Errorf("GET_METRICS lacks the allocator's metrics: %s", rec.Body)
	}
}
