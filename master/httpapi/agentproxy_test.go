package httpapi

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"mezzo/webui"
)

// The master's router sends /agent/<id>/... and /slave/<id>/... to the
// agent proxy, not to the UI's catch-all: an unknown agent is named, and a
// path the proxy does not forward says what it does.
func TestRouterMountsTheAgentProxy(t *testing.T) {
	c := newCluster(t, Options{UI: webui.Handler()})
	for _, tc := range []struct{ path, want string }{
		{"/agent/S-unknown/files/read?path=/x", "Agent 'S-unknown' is not registered with this master"},
		{"/slave/S-unknown/slave(1)/monitor/statistics", "Agent 'S-unknown' is not registered with this master"},
		{"/agent/S-unknown/api/v1", "The master does not forward '/api/v1' to agents"},
	} {
		resp, err := c.h1.Get(c.srv.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), tc.want) {
			t.Errorf("GET %s: %d %q, want 404 %q", tc.path, resp.StatusCode, b, tc.want)
		}
	}
}
