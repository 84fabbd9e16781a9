package agent

import (
	"encoding/json"
	"net/http"
	"testing"

	"mezzo/internal/version"
)

// /state and /version describe this build: a real date (never the zero
// time's "0001-01-01 00:00:00"), the same one in both, with the seconds
// that go with it.
func TestStateAndVersionBuildInfo(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, nil)
	want := version.Get()
	if want.BuildDate() == "" {
		t.Fatal("version.Get has no build time in a test binary")
	}
	st := ta.state(t)
	code, body := ta.get(t, "/version")
	if code != http.StatusOK {
		t.Fatalf("/version: %d %s", code, body)
	}
	var ver map[string]any
	if err := json.Unmarshal(body, &ver); err != nil {
		t.Fatalf("/version: %v: %s", err, body)
	}
	for name, doc := range map[string]map[string]any{"/state": st, "/version": ver} {
		if doc["build_date"] != want.BuildDate() || doc["build_time"] != float64(want.BuildUnix()) ||
			doc["build_user"] != want.BuildUser {
			t.Errorf("%s: build_date %v build_time %v build_user %v, want %q %d %q", name,
				doc["build_date"], doc["build_time"], doc["build_user"], want.BuildDate(), want.BuildUnix(), want.BuildUser)
		}
		if sha, ok := doc["git_sha"]; ok != (want.GitSHA != "") || (ok && sha != want.GitSHA) {
			t.Errorf("%s: git_sha %v, want %q", name, sha, want.GitSHA)
		}
	}
	if ver["version"] != version.Version {
		t.Errorf("/version version %v", ver["version"])
	}
	if code, _ := ta.get(t, "/slave(1)/version"); code != http.StatusOK {
		t.Errorf("/slave(1)/version: %d", code)
	}
}
