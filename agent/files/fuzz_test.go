package files

import (
	"net/url"
	"strings"
	"testing"
)

const secretContent = "TOP-SECRET-OUTSIDE-CONTENT"

// FuzzPathConfinement: whatever virtual path is asked for, neither read nor
// download returns the content of the file outside the attached folder.
func FuzzPathConfinement(f *testing.F) {
	for _, s := range []string{
		"/frameworks/F/executors/E/runs/latest/stdout",
		"/frameworks/F/executors/E/runs/latest/../../outside/secret",
		"/frameworks/F/executors/E/runs/latest/escape",
		"/frameworks/F/executors/E/runs/latest/abs",
		"/frameworks/F/executors/E/runs/latest/sub/../..",
		"/frameworks/F/executors/E/runs/latest//..//../outside/secret",
		"/slave/log/../outside/secret",
		"/", "", "..", "/frameworks",
	} {
		f.Add(s, "0")
		f.Add(s, "-1")
	}
	h, _ := sandbox(f)
	f.Fuzz(func(t *testing.T, p, offset string) {
		for _, ep := range []string{"/files/read", "/files/download", "/files/browse"} {
			w := get(t, h, ep, url.Values{"path": {p}, "offset": {offset}})
			if strings.Contains(w.Body.String(), secretContent) && !strings.Contains(p, secretContent) {
				t.Fatalf("%s?path=%q leaked: %d %q", ep, p, w.Code, w.Body)
			}
		}
	})
}
