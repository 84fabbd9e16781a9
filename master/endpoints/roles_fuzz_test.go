package endpoints

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"mezzo/api/mesos"
	"mezzo/api/quotapb"
	"mezzo/master"
)

// validatingWriter is a Source whose role writes runs the master's validators and
// applies nothing, so fuzzing reaches them without a running master.
type validatingWriter struct{ *fakeSource }

func (validatingWriter) UpdateWeights(_ context.Context, _ master.Principal, infos []*mesos.WeightInfo) error {
	_, err := master.ValidateWeightInfos(infos)
	return err
}

func (validatingWriter) UpdateQuota(_ context.Context, _ master.Principal, _ bool, cs []*quotapb.QuotaConfig) error {
	for i, c := range cs {
		if err := master.ValidateQuotaConfig(c, fmt.Sprintf("update_quota.quota_configs[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}

func (validatingWriter) SetQuota(_ context.Context, _ master.Principal, req *quotapb.QuotaRequest) error {
	_, err := master.ValidateQuotaRequest(req)
	return err
}

func (validatingWriter) RemoveQuota(context.Context, master.Principal, string) error { return nil }

// FuzzRoleEndpoints feeds arbitrary bodies to PUT /master/weights and POST
// /master/quota: never a panic, only 200 or 400.
func FuzzRoleEndpoints(f *testing.F) {
	for _, seed := range []string{
		`[{"role":"eng","weight":2}]`, `[{"role":"a//b","weight":1}]`, `[{"weight":-1}]`, `[]`, `[null]`, `{}`,
		`{"role":"dev","guarantee":[{"name":"cpus","type":"SCALAR","scalar":{"value":1}}]}`,
		`{"role":"dev","guarantee":[{"name":"cpus","type":"RANGES","ranges":{"range":[{"begin":1,"end":2}]}}]}`,
		`{"role":"dev","force":true,"guarantee":[{"name":"mem","type":"SCALAR","scalar":{"value":1e300}}]}`, ``, `null`,
	} {
		f.Add(seed, true)
		f.Add(seed, false)
	}
	mux := http.NewServeMux()
	Register(mux, validatingWriter{newFakeSource(testSnapshot())}, Options{})
	f.Fuzz(func(t *testing.T, body string, weights bool) {
		method, path := http.MethodPost, "/master/quota"
		if weights {
			method, path = http.MethodPut, "/master/weights"
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
		if rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
	})
}
