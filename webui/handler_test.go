package webui

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"
	"testing"
)

func get(t *testing.T, method, target string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, req)
	return rec
}

func TestHandlerServesPageAndAssets(t *testing.T) {
	tests := []struct {
		method, path string
		status       int
		ctype        string
		contains     string
	}{
		{"GET", "/", 200, "text/html; charset=utf-8", "<title>mezzo</title>"},
		{"GET", "/index.html", 200, "text/html; charset=utf-8", "<title>mezzo</title>"},
		{"HEAD", "/", 200, "text/html; charset=utf-8", ""},
		{"GET", "/static/css/mezzo.css", 200, "text/css; charset=utf-8", ":root"},
		{"GET", "/static/js/app.js", 200, "text/javascript; charset=utf-8", "ROUTE_TABLE"},
		{"GET", "/static/js/api.js", 200, "text/javascript; charset=utf-8", "const ROUTES"},
		{"GET", "/static/favicon.svg", 200, "image/svg+xml", "<svg"},
		{"GET", "/static/js/nope.js", 404, "", ""},
		{"GET", "/static/", 404, "", ""},
		{"GET", "/static", 404, "", ""},
		{"GET", "/master/nothing", 404, "", ""},
		{"GET", "/static/../index.html", 404, "", ""},
		{"POST", "/", 405, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			rec := get(t, tc.method, tc.path, nil)
			if rec.Code != tc.status {
				t.Fatalf("status %d, want %d", rec.Code, tc.status)
			}
			if tc.status != 200 {
				return
			}
			if got := rec.Header().Get("Content-Type"); got != tc.ctype {
				t.Errorf("Content-Type %q, want %q", got, tc.ctype)
			}
			if rec.Header().Get("X-Content-Type-Options") != "nosniff" || rec.Header().Get("ETag") == "" {
				t.Errorf("headers %v", rec.Header())
			}
			if !strings.Contains(rec.Body.String(), tc.contains) {
				t.Errorf("body lacks %q", tc.contains)
			}
		})
	}
}

func TestHandlerRevalidatesWithETag(t *testing.T) {
	first := get(t, "GET", "/static/js/util.js", nil)
	etag := first.Header().Get("ETag")
	again := get(t, "GET", "/static/js/util.js", map[string]string{"If-None-Match": etag})
	if again.Code != http.StatusNotModified || again.Body.Len() != 0 {
		t.Errorf("revalidation: %d with %d bytes", again.Code, again.Body.Len())
	}
	if other := get(t, "GET", "/static/js/app.js", nil).Header().Get("ETag"); other == etag {
		t.Error("two files share an ETag")
	}
}

// refAttr finds src= and href= values in the page.
var refAttr = regexp.MustCompile(`(?i)\b(?:src|href)\s*=\s*"([^"]*)"`)

// pageRefs lists the page's references to its own files (not fragments,
// other origins or the master's endpoints).
func pageRefs(t *testing.T) []string {
	t.Helper()
	page := get(t, "GET", "/", nil).Body.String()
	var out []string
	for _, m := range refAttr.FindAllStringSubmatch(page, -1) {
		ref := m[1]
		switch {
		case strings.HasPrefix(ref, "#"), strings.Contains(ref, "://"), strings.HasPrefix(ref, "data:"), strings.HasPrefix(ref, "master/"):
			continue
		}
		out = append(out, ref)
	}
	return out
}

func TestEveryAssetReferencedByThePageExists(t *testing.T) {
	refs := pageRefs(t)
	if len(refs) < 5 {
		t.Fatalf("found only %v", refs)
	}
	for _, ref := range refs {
		if strings.HasPrefix(ref, "/") {
			t.Errorf("%q is absolute: the page must work behind a path prefix", ref)
		}
		if rec := get(t, "GET", "/"+ref, nil); rec.Code != 200 {
			t.Errorf("the page references %q, served %d", ref, rec.Code)
		}
	}
}

func TestEveryScriptAndStylesheetIsUsed(t *testing.T) {
	used := map[string]bool{}
	for _, ref := range pageRefs(t) {
		used[ref] = true
	}
	fs.WalkDir(embedded, "ui/static", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (path.Ext(p) == ".js" || path.Ext(p) == ".css") {
			if rel := strings.TrimPrefix(p, "ui/"); !used[rel] {
				t.Errorf("%s is embedded but the page never loads it", rel)
			}
		}
		return nil
	})
}

// readJS returns every script's source by file name.
func readJS(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	fs.WalkDir(embedded, "ui/static/js", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := embedded.ReadFile(p)
			out[path.Base(p)] = string(b)
		}
		return nil
	})
	return out
}

var (
	routesBlock = regexp.MustCompile(`(?s)const ROUTES = Object\.freeze\(\{(.*?)\}\);`)
	routeEntry  = regexp.MustCompile(`(\w+):\s*"([^"]*)"`)
	// endpointLiteral is a string that looks like an endpoint path.
	endpointLiteral = regexp.MustCompile(`["'` + "`" + `]/?(?:master|metrics|files|slave\(1\)|api)/[^"'` + "`" + `]*["'` + "`" + `]`)
	// metricName is a metric key: one segment after "master/" with an underscore.
	metricName = regexp.MustCompile(`^.master/[\w${}]*_[\w${}]*.$`)
	// calls of the two readers: the route argument and an optional params object.
	masterCall = regexp.MustCompile(`masterJSON\(\s*([^,)]+)(?:,\s*\{([^}]*)\})?`)
	agentCall  = regexp.MustCompile(`agentJSON\(\s*[^,]+,\s*([^,)]+)(?:,\s*\{([^}]*)\})?`)
	linkCall   = regexp.MustCompile(`(ROUTES\.\w+)\s*\+\s*query\(\{([^}]*)\}\)`)
	urlCall    = regexp.MustCompile(`agentURL\(\s*[^,]+,\s*([^,)]+)(?:,\s*\{([^}]*)\})?`)
)

// jsRoutes parses api.js's ROUTES table: name -> path.
func jsRoutes(t *testing.T, js map[string]string) map[string]string {
	t.Helper()
	block := routesBlock.FindStringSubmatch(js["api.js"])
	if block == nil {
		t.Fatal("api.js has no `const ROUTES = Object.freeze({...});`")
	}
	out := map[string]string{}
	for _, m := range routeEntry.FindAllStringSubmatch(block[1], -1) {
		out[m[1]] = m[2]
	}
	return out
}

// paramKeys lists the keys of a JS object literal body: "path, offset: x".
func paramKeys(body string) []string {
	var out []string
	for _, part := range strings.Split(body, ",") {
		k := strings.TrimSpace(part)
		if i := strings.Index(k, ":"); i >= 0 {
			k = strings.TrimSpace(k[:i])
		}
		if k != "" {
			out = append(out, k)
		}
	}
	return out
}

// TestScriptEndpointsMatchRoutes checks, without running any JavaScript,
// that the endpoints the scripts read are exactly webui.Routes: api.js's
// ROUTES table equals it, no script spells an endpoint path elsewhere, and
// every masterJSON/agentJSON call names a ROUTES entry with parameters
// the Route declares.
func TestScriptEndpointsMatchRoutes(t *testing.T) {
	js := readJS(t)
	table := jsRoutes(t, js)
	byPath := map[string]Route{}
	for _, r := range Routes {
		byPath[r.Path] = r
	}
	var jsPaths []string
	for name, p := range table {
		jsPaths = append(jsPaths, p)
		if _, ok := byPath[p]; !ok {
			t.Errorf("ROUTES.%s = %q is not in webui.Routes", name, p)
		}
	}
	if len(jsPaths) != len(Routes) {
		sort.Strings(jsPaths)
		t.Errorf("ROUTES has %v, webui.Routes has %d entries", jsPaths, len(Routes))
	}
	withoutTable := strings.Replace(js["api.js"], routesBlock.FindString(js["api.js"]), "", 1)
	for name, src := range js {
		if name == "api.js" {
			src = withoutTable
		}
		for _, lit := range endpointLiteral.FindAllString(src, -1) {
			if metricName.MatchString(lit) {
				continue // a /metrics/snapshot key such as "master/tasks_running"
			}
			t.Errorf("%s spells the endpoint %s outside ROUTES", name, lit)
		}
	}
	check := func(file, call, route, params string) {
		ref := strings.TrimSpace(route)
		name, ok := strings.CutPrefix(ref, "ROUTES.")
		if !ok {
			t.Errorf("%s: %s reads %q, not a ROUTES entry", file, call, ref)
			return
		}
		r, ok := byPath[table[name]]
		if !ok {
			t.Errorf("%s: %s reads unknown ROUTES.%s", file, call, name)
			return
		}
		for _, k := range paramKeys(params) {
			if !contains(r.Params, k) {
				t.Errorf("%s: %s sends ?%s= to %s, which declares %v", file, call, k, r.Path, r.Params)
			}
		}
	}
	calls := 0
	for file, src := range js {
		for _, m := range masterCall.FindAllStringSubmatch(src, -1) {
			if strings.HasPrefix(m[0], "masterJSON(route") {
				continue // the definition
			}
			calls++
			check(file, "masterJSON", m[1], m[2])
		}
		for _, m := range agentCall.FindAllStringSubmatch(src, -1) {
			if strings.HasPrefix(m[1], "route") {
				continue
			}
			calls++
			check(file, "agentJSON", m[1], m[2])
		}
		for _, m := range linkCall.FindAllStringSubmatch(src, -1) {
			calls++
			check(file, "link", m[1], m[2])
		}
		for _, m := range urlCall.FindAllStringSubmatch(src, -1) {
			if strings.HasPrefix(m[1], "route") {
				continue // the definition and agentJSON's use of it
			}
			calls++
			check(file, "agentURL", m[1], m[2])
		}
	}
	if calls < 6 {
		t.Errorf("found only %d endpoint uses; has the code changed shape?", calls)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestEmbeddedMatchesSource guards against a stale embed: the files served
// are the files in the source tree.
func TestEmbeddedMatchesSource(t *testing.T) {
	fs.WalkDir(embedded, "ui", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		disk, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			return nil
		}
		if emb, _ := embedded.ReadFile(p); string(emb) != string(disk) {
			t.Errorf("%s differs from the embedded copy", p)
		}
		return nil
	})
}
