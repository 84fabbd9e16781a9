package webui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

//go:embed ui
var embedded embed.FS

// asset is one embedded file, ready to serve.
type asset struct {
	data  []byte
	ctype string
	etag  string
}

// contentTypes are set explicitly, not sniffed nor taken from the host's
// mime tables, so every machine serves the same headers.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".ico":  "image/x-icon",
	".json": "application/json",
	".txt":  "text/plain; charset=utf-8",
}

// assets maps a URL path ("/" and "/static/...") to its file. It is built
// (hashing every file) on the first request, not at package init, which
// every process of the binary (each executor too) would pay for.
var assets = sync.OnceValue(loadAssets)

func loadAssets() map[string]asset {
	out := map[string]asset{}
	err := fs.WalkDir(embedded, "ui", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := embedded.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		ctype, ok := contentTypes[path.Ext(p)]
		if !ok {
			ctype = "application/octet-stream"
		}
		url := strings.TrimPrefix(p, "ui")
		out[url] = asset{data: data, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		// The files are compiled in; failing to read them is a build defect.
		panic("webui: reading embedded files: " + err.Error())
	}
	out["/"] = out["/index.html"]
	return out
}

// Handler serves the UI: "/" and "/index.html" are the page, "/static/..."
// its assets; any other path is 404, so it can be mounted as the master
// mux's catch-all "/" pattern without hiding real endpoints' 404s behind
// the page. Assets carry an ETag and "Cache-Control: no-cache", so browsers
// revalidate cheaply and pick up a new binary's UI at once.
func Handler() http.Handler {
	return http.HandlerFunc(serve)
}

func serve(w http.ResponseWriter, r *http.Request) {
	a, ok := assets()[r.URL.Path]
	if !ok || (r.URL.Path != "/" && r.URL.Path != "/index.html" && !strings.HasPrefix(r.URL.Path, "/static/")) {
		// Name the path: the UI answers every path no API claims, so this
		// is the 404 of a mistyped endpoint too.
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, "No endpoint '"+r.URL.Path+"' on this master\n")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "Expecting one of { 'GET', 'HEAD' }, but received '"+r.Method+"'", http.StatusMethodNotAllowed)
		return
	}
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Set("ETag", a.etag)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.data))
}

// Route is an HTTP endpoint the UI's JavaScript reads (static/js/api.js
// names each in its ROUTES table; tests keep the two in step and check the
// master's and agent's routers serve them).
type Route struct {
	// Path as the UI requests it: relative to the page for the master;
	// for agents, the agent's own path, which the UI requests as
	// "agent/<agent_id>" + Path from the master (master/agentproxy).
	Path string
	// Server is "master" or "agent" (read through the master's proxy);
	// both are same-origin fetches.
	Server string
	// Params are the query parameters the UI sends.
	Params []string
}

// Routes lists every endpoint the UI reads.
var Routes = []Route{
	{Path: "master/state", Server: "master"},
	{Path: "metrics/snapshot", Server: "master"},
	{Path: "master/roles", Server: "master"},
	{Path: "master/slaves", Server: "master", Params: []string{"slave_id"}},
	{Path: "master/allocator/explain", Server: "master", Params: []string{"framework_id"}},
	{Path: "master/maintenance/schedule", Server: "master"},
	{Path: "master/maintenance/status", Server: "master"},
	{Path: "master/api/v1", Server: "master"},   // POST: GET_FRAMEWORKS (inverse offers)
	{Path: "master/redirect", Server: "master"}, // navigated to by a follower's page, not read
	{Path: "/slave(1)/state", Server: "agent"},
	{Path: "/files/browse", Server: "agent", Params: []string{"path"}},
	{Path: "/files/read", Server: "agent", Params: []string{"path", "offset", "length"}},
	{Path: "/files/download", Server: "agent", Params: []string{"path"}}, // a link, not read by script
	{Path: "/monitor/statistics", Server: "agent"},
}
