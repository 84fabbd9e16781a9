package httpapi

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"mezzo/webui"
)

// A path no endpoint serves gets a 404 whose body names the path, with and
// without the web UI mounted at "/".
func TestNotFoundNamesThePath(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{{"no UI", Options{}}, {"UI", Options{UI: webui.Handler()}}} {
		c := newCluster(t, tc.opts)
		for _, p := range []string{"/master/foo", "/nope/deeper", "/master/redirect/state", "/master/quota/web"} {
			resp, err := http.Get(c.srv.URL + p)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 404 || !strings.Contains(string(b), "No endpoint '"+p+"'") ||
				!strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
				t.Errorf("%s %s: %d %q (%s)", tc.name, p, resp.StatusCode, b, resp.Header.Get("Content-Type"))
			}
		}
	}
}
