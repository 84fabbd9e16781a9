package files

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// sandbox builds:
//
//	outside/secret            (not attached)
//	sb/stdout  "hello world\n"
//	sb/sub/inner.txt
//	sb/escape -> ../outside/secret
//	sb/abs    -> <abs>/outside/secret
//	sb/inlink -> stdout
func sandbox(t testing.TB) (h *Handler, sb string) {
	t.Helper()
	base := t.TempDir()
	sb = filepath.Join(base, "sb")
	must(t, os.MkdirAll(filepath.Join(sb, "sub"), 0o755))
	must(t, os.MkdirAll(filepath.Join(base, "outside"), 0o755))
	must(t, os.WriteFile(filepath.Join(base, "outside", "secret"), []byte(secretContent), 0o644))
	must(t, os.WriteFile(filepath.Join(sb, "stdout"), []byte("hello world\n"), 0o644))
	must(t, os.Chmod(filepath.Join(sb, "stdout"), 0o644))
	must(t, os.WriteFile(filepath.Join(sb, "sub", "inner.txt"), []byte("inner"), 0o600))
	must(t, os.Symlink("../outside/secret", filepath.Join(sb, "escape")))
	must(t, os.Symlink(filepath.Join(base, "outside", "secret"), filepath.Join(sb, "abs")))
	must(t, os.Symlink("stdout", filepath.Join(sb, "inlink")))
	must(t, os.WriteFile(filepath.Join(base, "agent.log"), []byte("log line\n"), 0o644))
	h = New()
	h.Attach("/frameworks/F/executors/E/runs/latest/", sb)
	h.Attach(sb, sb)
	h.Attach("/slave/log", filepath.Join(base, "agent.log"))
	return h, sb
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func get(t testing.TB, h http.Handler, endpoint string, q url.Values) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, endpoint+"?"+q.Encode(), nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestBrowse(t *testing.T) {
	h, sb := sandbox(t)
	const v = "/frameworks/F/executors/E/runs/latest"
	w := get(t, h, "/files/browse", url.Values{"path": {v}})
	if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("status %d type %q: %s", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	var list []map[string]any
	must(t, json.Unmarshal(w.Body.Bytes(), &list))
	var paths []string
	byPath := map[string]map[string]any{}
	for _, e := range list {
		p := e["path"].(string)
		paths = append(paths, p)
		byPath[p] = e
	}
	// Sorted; the escaping symlinks are skipped; the inside one is followed.
	want := []string{v + "/inlink", v + "/stdout", v + "/sub"}
	if strings.Join(paths, ",") != strings.Join(want, ",") {
		t.Fatalf("paths %v, want %v", paths, want)
	}
	st, err := os.Stat(filepath.Join(sb, "stdout"))
	must(t, err)
	e := byPath[v+"/stdout"]
	uid := strconv.Itoa(os.Getuid())
	if u, err := user.LookupId(uid); err == nil {
		uid = u.Username
	}
	checks := map[string]any{
		"nlink": float64(1), "size": float64(12), "mtime": float64(st.ModTime().Unix()),
		"mode": "-rw-r--r--", "uid": uid,
	}
	for k, want := range checks {
		if e[k] != want {
			t.Errorf("stdout %s = %v (%T), want %v", k, e[k], e[k], want)
		}
	}
	if _, ok := e["gid"].(string); !ok {
		t.Errorf("gid %v is not a string", e["gid"])
	}
	if m := byPath[v+"/sub"]["mode"]; m != "drwxr-xr-x" {
		t.Errorf("sub mode %v", m)
	}
	// A subfolder, by the real-path attachment, with a trailing slash.
	w = get(t, h, "/files/browse.json", url.Values{"path": {sb + "/sub/"}})
	must(t, json.Unmarshal(w.Body.Bytes(), &list))
	if len(list) != 1 || list[0]["path"] != sb+"/sub/inner.txt" || list[0]["mode"] != "-rw-------" {
		t.Fatalf("sub listing %s", w.Body)
	}
	// A file lists nothing, as in Mesos.
	w = get(t, h, "/files/browse", url.Values{"path": {v + "/stdout"}})
	if w.Code != 200 || strings.TrimSpace(w.Body.String()) != "[]" {
		t.Fatalf("browse of a file: %d %s", w.Code, w.Body)
	}
}

func TestRead(t *testing.T) {
	h, _ := sandbox(t)
	const f = "/frameworks/F/executors/E/runs/latest/stdout"
	tests := []struct {
		name   string
		q      url.Values
		data   string
		offset int64
	}{
		{"whole", url.Values{"path": {f}, "offset": {"0"}}, "hello world\n", 0},
		{"offset and length", url.Values{"path": {f}, "offset": {"6"}, "length": {"5"}}, "world", 6},
		{"size probe", url.Values{"path": {f}, "offset": {"-1"}}, "", 12},
		{"default offset is -1", url.Values{"path": {f}}, "", 12},
		{"past the end", url.Values{"path": {f}, "offset": {"100"}}, "", 12},
		{"length 0", url.Values{"path": {f}, "offset": {"3"}, "length": {"0"}}, "", 3},
		{"length past end", url.Values{"path": {f}, "offset": {"10"}, "length": {"100"}}, "d\n", 10},
		{"inside symlink", url.Values{"path": {"/frameworks/F/executors/E/runs/latest/inlink"}, "offset": {"0"}, "length": {"5"}}, "hello", 0},
		{"attached file", url.Values{"path": {"/slave/log"}, "offset": {"0"}}, "log line\n", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := get(t, h, "/files/read", tc.q)
			if w.Code != 200 {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			var got struct {
				Data   *string `json:"data"`
				Offset *int64  `json:"offset"`
			}
			must(t, json.Unmarshal(w.Body.Bytes(), &got))
			if got.Data == nil || got.Offset == nil || *got.Data != tc.data || *got.Offset != tc.offset {
				t.Fatalf("got %s, want data %q offset %d", w.Body, tc.data, tc.offset)
			}
		})
	}
}

func TestReadCapped(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("x", int(maxReadLength)+100)
	must(t, os.WriteFile(filepath.Join(dir, "big"), []byte(big), 0o644))
	h := New()
	h.Attach("/d", dir)
	w := get(t, h, "/files/read", url.Values{"path": {"/d/big"}, "offset": {"0"}, "length": {"999999999"}})
	var got struct{ Data string }
	must(t, json.Unmarshal(w.Body.Bytes(), &got))
	if int64(len(got.Data)) != maxReadLength {
		t.Fatalf("read %d bytes, want the cap %d", len(got.Data), maxReadLength)
	}
}

func TestErrors(t *testing.T) {
	h, sb := sandbox(t)
	const v = "/frameworks/F/executors/E/runs/latest"
	tests := []struct {
		name     string
		endpoint string
		q        url.Values
		code     int
		body     string
	}{
		{"browse no path", "/files/browse", nil, 400, "Expecting 'path=value' in query.\n"},
		{"read no path", "/files/read", nil, 400, "Expecting 'path=value' in query.\n"},
		{"download no path", "/files/download", url.Values{"path": {""}}, 400, "Expecting 'path=value' in query.\n"},
		{"unknown virtual", "/files/read", url.Values{"path": {"/nope/stdout"}}, 404, "'/nope/stdout'"},
		{"missing file", "/files/read", url.Values{"path": {v + "/missing"}}, 404, "'" + v + "/missing'"},
		{"file attachment used as folder", "/files/read", url.Values{"path": {"/slave/log/x"}}, 404, "'/slave/log/x'"},
		{"dotdot escape read", "/files/read", url.Values{"path": {v + "/../../outside/secret"}, "offset": {"0"}}, 400, "inaccessible"},
		{"dotdot escape download", "/files/download", url.Values{"path": {v + "/sub/../../outside/secret"}}, 400, "inaccessible"},
		{"dotdot escape browse", "/files/browse", url.Values{"path": {sb + "/.."}}, 400, "inaccessible"},
		{"symlink escape read", "/files/read", url.Values{"path": {v + "/escape"}, "offset": {"0"}}, 400, "inaccessible"},
		{"absolute symlink escape", "/files/download", url.Values{"path": {v + "/abs"}}, 400, "inaccessible"},
		{"read dir", "/files/read", url.Values{"path": {v + "/sub"}}, 400, "Cannot read a directory.\n"},
		{"download dir", "/files/download", url.Values{"path": {v}}, 400, "Cannot download a directory.\n"},
		{"bad offset", "/files/read", url.Values{"path": {v + "/stdout"}, "offset": {"x"}}, 400, "Failed to parse offset"},
		{"negative offset", "/files/read", url.Values{"path": {v + "/stdout"}, "offset": {"-2"}}, 400, "Negative offset"},
		{"bad length", "/files/read", url.Values{"path": {v + "/stdout"}, "length": {"1.5"}}, 400, "Failed to parse length"},
		{"unknown endpoint", "/files/nope", url.Values{"path": {v}}, 404, "No endpoint '/files/nope'"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := get(t, h, tc.endpoint, tc.q)
			if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.body) {
				t.Fatalf("got %d %q, want %d containing %q", w.Code, w.Body, tc.code, tc.body)
			}
			if strings.Contains(w.Body.String(), "secret") && !strings.Contains(w.Body.String(), "inaccessible") {
				t.Fatal("leaked outside content")
			}
		})
	}
}

func TestDownload(t *testing.T) {
	h, _ := sandbox(t)
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/files/download?path=" + url.QueryEscape("/frameworks/F/executors/E/runs/latest/sub/inner.txt"))
	must(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "inner" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	if cd := resp.Header.Get("Content-Disposition"); cd != "attachment; filename=inner.txt" {
		t.Errorf("Content-Disposition %q", cd)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q", ct)
	}
	resp2, err := http.Get(srv.URL + "/files/download.json?path=" + url.QueryEscape("/frameworks/F/executors/E/runs/latest/stdout"))
	must(t, err)
	defer resp2.Body.Close()
	body, _ = io.ReadAll(resp2.Body)
	if string(body) != "hello world\n" || resp2.Header.Get("Content-Type") != "application/octet-stream" {
		t.Fatalf("%q %q", body, resp2.Header.Get("Content-Type"))
	}
}

func TestJSONPAndDebug(t *testing.T) {
	h, sb := sandbox(t)
	w := get(t, h, "/files/read", url.Values{"path": {"/slave/log"}, "offset": {"0"}, "length": {"3"}, "jsonp": {"cb"}})
	if w.Body.String() != `cb({"data":"log","offset":0});` || w.Header().Get("Content-Type") != "text/javascript" {
		t.Fatalf("jsonp: %q %q", w.Body, w.Header().Get("Content-Type"))
	}
	w = get(t, h, "/files/debug", nil)
	var m map[string]string
	must(t, json.Unmarshal(w.Body.Bytes(), &m))
	if m["/frameworks/F/executors/E/runs/latest"] == "" || m[sb] == "" {
		t.Fatalf("debug %v", m)
	}
	h.Detach("/frameworks/F/executors/E/runs/latest")
	if w := get(t, h, "/files/read", url.Values{"path": {"/frameworks/F/executors/E/runs/latest/stdout"}}); w.Code != 404 {
		t.Fatalf("after detach: %d", w.Code)
	}
}

// TestAttachResolvesLatestLink: a runs/latest symlink is resolved at attach
// time, as Mesos does; a later relink does not move the attachment.
func TestAttachResolvesLatestLink(t *testing.T) {
	base := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(base, "c1"), 0o755))
	must(t, os.MkdirAll(filepath.Join(base, "c2"), 0o755))
	must(t, os.WriteFile(filepath.Join(base, "c1", "f"), []byte("one"), 0o644))
	must(t, os.WriteFile(filepath.Join(base, "c2", "f"), []byte("two"), 0o644))
	must(t, os.Symlink("c1", filepath.Join(base, "latest")))
	h := New()
	h.Attach("/x", filepath.Join(base, "latest"))
	must(t, os.Remove(filepath.Join(base, "latest")))
	must(t, os.Symlink("c2", filepath.Join(base, "latest")))
	w := get(t, h, "/files/read", url.Values{"path": {"/x/f"}, "offset": {"0"}})
	if !strings.Contains(w.Body.String(), `"one"`) {
		t.Fatalf("%s", w.Body)
	}
}

func TestConcurrentAttachAndRead(t *testing.T) {
	h, sb := sandbox(t)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(2)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				v := "/v" + strconv.Itoa(i)
				h.Attach(v, sb)
				h.Detach(v)
			}
		}(i)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				get(t, h, "/files/read", url.Values{"path": {sb + "/stdout"}, "offset": {"0"}})
			}
		}()
	}
	wg.Wait()
}

func TestModeString(t *testing.T) {
	tests := []struct {
		m    os.FileMode
		want string
	}{
		{0o644, "-rw-r--r--"},
		{os.ModeDir | 0o755, "drwxr-xr-x"},
		{os.ModeSymlink | 0o777, "lrwxrwxrwx"},
		{os.ModeNamedPipe | 0o600, "prw-------"},
		{os.ModeDevice | os.ModeCharDevice | 0o620, "crw--w----"},
		{os.ModeDevice | 0o660, "brw-rw----"},
		{os.ModeSocket | 0o755, "srwxr-xr-x"},
		{0o4755, "-rwxr-xr-x"},
	}
	for _, tc := range tests {
		if got := modeString(tc.m); got != tc.want {
			t.Errorf("modeString(%v) = %q, want %q", tc.m, got, tc.want)
		}
	}
}
