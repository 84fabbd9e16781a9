package endpoints

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"mezzo/api/codec"
	"mezzo/api/masterpb"
)

// FuzzOperatorCall feeds arbitrary bodies to POST /api/v1 in both media
// types: the handler must never panic and must answer with one of the
// statuses the operator API defines.
func FuzzOperatorCall(f *testing.F) {
	for _, seed := range []string{
		`{"type":"GET_HEALTH"}`, `{"type":"GET_STATE"}`, `{"type":"GET_METRICS","get_metrics":{"timeout":{"nanoseconds":5}}}`,
		`{"type":"TEARDOWN","teardown":{"framework_id":{"value":"m1-0000"}}}`, `{"type":"SUBSCRIBE"}`,
		`{"type":"RESERVE_RESOURCES","reserve_resources":{"agent_id":{"value":"x"}}}`, `{"type":null}`, `[]`, ``,
	} {
		f.Add([]byte(seed), true)
	}
	for _, c := range []*masterpb.Call{callOf(masterpb.Call_GET_AGENTS), callOf(masterpb.Call_GET_TASKS), callOf(masterpb.Call_SUBSCRIBE)} {
		b, _ := codec.Marshal(codec.Protobuf, c)
		f.Add(b, false)
	}
	src := newFakeSource(testSnapshot())
	mux := http.NewServeMux()
	Register(mux, src, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a SUBSCRIBE must end at once rather than stream forever
	f.Fuzz(func(t *testing.T, body []byte, asJSON bool) {
		ct := string(codec.Protobuf)
		if asJSON {
			ct = string(codec.JSON)
		}
		req := httptest.NewRequest(http.MethodPost, "/api/v1", bytes.NewReader(body)).WithContext(ctx)
		req.Header.Set("Content-Type", ct)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusAccepted, http.StatusBadRequest, http.StatusNotImplemented, http.StatusServiceUnavailable:
		default:
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
	})
}
