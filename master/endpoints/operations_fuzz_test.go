package endpoints

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"mezzo/api/codec"
)

// operationFuzzTargets are the endpoints FuzzOperationEndpoints reaches: a
// v1 call type (the fuzzed bytes are its sub-message, as JSON) or a classic
// path (the fuzzed bytes are the whole form body).
var operationFuzzTargets = []struct{ call, key, path string }{
	{call: "RESERVE_RESOURCES", key: "reserve_resources"},
	{call: "UNRESERVE_RESOURCES", key: "unreserve_resources"},
	{call: "CREATE_VOLUMES", key: "create_volumes"},
	{call: "DESTROY_VOLUMES", key: "destroy_volumes"},
	{call: "GROW_VOLUME", key: "grow_volume"},
	{call: "SHRINK_VOLUME", key: "shrink_volume"},
	{path: "/master/reserve"},
	{path: "/master/unreserve"},
	{path: "/master/create-volumes"},
	{path: "/master/destroy-volumes"},
}

// FuzzOperationEndpoints feeds arbitrary bodies to the operator's operation
// calls and the classic operation forms of a real master with one agent:
// never a panic, never a 5xx, and an answer of 4xx changes nothing in the
// master's state (agents' totals, roles' reservations, tracked operations).
// Accepted operations do change it, so later inputs meet reservations and
// volumes made by earlier ones.
func FuzzOperationEndpoints(f *testing.F) {
	agent := `{"value":"m1-S0"}`
	for _, seed := range []struct {
		target uint8
		body   string
	}{
		{0, `{"agent_id":` + agent + `,"resources":[` + dbCPUs + `,` + dbDisk + `]}`},
		{0, `{"agent_id":` + agent + `,"resources":[{"name":"cpus","type":"SCALAR","scalar":{"value":1e308},"reservations":[{"type":"DYNAMIC","role":"db"}]}]}`},
		{0, `{"agent_id":` + agent + `,"source":[{"name":"disk","type":"SCALAR","scalar":{"value":100},"reservations":[{"type":"STATIC","role":"static"}]}],"resources":[{"name":"disk","type":"SCALAR","scalar":{"value":100},"reservations":[{"type":"STATIC","role":"static"},{"type":"DYNAMIC","role":"static/sub"}]}]}`},
		{1, `{"agent_id":` + agent + `,"resources":[` + dbCPUs + `]}`},
		{2, `{"agent_id":` + agent + `,"volumes":[` + dbVolume + `]}`},
		{2, `{"agent_id":` + agent + `,"volumes":[` + freeVolume + `]}`},
		{3, `{"agent_id":` + agent + `,"volumes":[` + dbVolume + `]}`},
		{4, `{"agent_id":` + agent + `,"volume":` + dbVolume + `,"addition":` + dbDisk + `}`},
		{5, `{"agent_id":` + agent + `,"volume":` + dbVolume + `,"subtract":{"value":50}}`},
		{5, `{"agent_id":` + agent + `,"volume":` + dbVolume + `,"subtract":{"value":-1}}`},
		{0, `{}`}, {1, `null`}, {2, `[]`}, {3, `{"agent_id":{}}`},
		{6, `slaveId=m1-S0&resources=[` + dbCPUs + `]`},
		{6, `slaveId=m1-S0&resources=%5B%5D`},
		{7, `slaveId=m1-S0&resources=[` + dbCPUs + `]`},
		{8, `slaveId=m1-S0&volumes=[` + dbVolume + `]`},
		{9, `slaveId=m1-S0&volumes=[` + dbVolume + `]`},
		{9, `slaveId=%zz`}, {6, ``}, {7, `slaveId=&resources=[null]`},
	} {
		f.Add(seed.target, seed.body)
	}
	m, mux, _ := masterWithAgent(f)
	f.Fuzz(func(t *testing.T, target uint8, body string) {
		tg := operationFuzzTargets[int(target)%len(operationFuzzTargets)]
		var req *http.Request
		if tg.path != "" {
			req = httptest.NewRequest(http.MethodPost, tg.path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		} else {
			call := `{"type":"` + tg.call + `","` + tg.key + `":` + body + `}`
			req = httptest.NewRequest(http.MethodPost, "/api/v1", bytes.NewReader([]byte(call)))
			req.Header.Set("Content-Type", string(codec.JSON))
		}
		before := m.Snapshot()
		rec := do(mux, req)
		switch {
		case rec.Code == http.StatusAccepted:
		case rec.Code == http.StatusBadRequest || rec.Code == http.StatusConflict:
			if rec.Body.Len() == 0 {
				t.Fatalf("%d without a reason for %q", rec.Code, body)
			}
			assertUnchanged(t, before, m.Snapshot())
		default:
			t.Fatalf("status %d for %s %q: %s", rec.Code, tg.call+tg.path, body, rec.Body)
		}
	})
}
