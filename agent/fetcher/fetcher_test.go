package fetcher

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"mezzo/api/mesos"

	"google.golang.org/protobuf/proto"
)

type tarEntry struct {
	name, body, link string
	typ              byte
	mode             int64
}

func makeTar(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: e.mode, Size: int64(len(e.body))}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(e.body))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func gz(t *testing.T, data []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(data)
	zw.Close()
	return buf.Bytes()
}

func makeZip(t *testing.T, files map[string]string, symlinks map[string]string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range files {
		h := &zip.FileHeader{Name: name, Method: zip.Deflate}
		h.SetMode(0o755)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(body))
	}
	for name, target := range symlinks {
		h := &zip.FileHeader{Name: name}
		h.SetMode(fs.ModeSymlink | 0o777)
		w, _ := zw.CreateHeader(h)
		w.Write([]byte(target))
	}
	zw.Close()
	return buf.Bytes()
}

// server serves files from a map and answers 404 otherwise.
func server(t *testing.T, files map[string][]byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func uri(v string) *mesos.CommandInfo_URI { return &mesos.CommandInfo_URI{Value: proto.String(v)} }

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// layout makes base/sandbox and base/outside, returning both.
func layout(t *testing.T) (sandbox, outside string) {
	base := t.TempDir()
	sandbox, outside = filepath.Join(base, "sandbox"), filepath.Join(base, "outside")
	os.Mkdir(sandbox, 0o755)
	os.Mkdir(outside, 0o755)
	return sandbox, outside
}

func TestFetchHTTPAndExtract(t *testing.T) {
	tgz := gz(t, makeTar(t, []tarEntry{
		{name: "./", typ: tar.TypeDir, mode: 0o755},
		{name: "app/", typ: tar.TypeDir, mode: 0o755},
		{name: "app/run.sh", body: "#!/bin/sh\necho hi\n", mode: 0o755},
		{name: "app/link", typ: tar.TypeSymlink, link: "run.sh"},
		{name: "app/hard", typ: tar.TypeLink, link: "app/run.sh"},
	}))
	srv := server(t, map[string][]byte{
		"/dl/app.tgz":    tgz,
		"/dl/plain.txt":  []byte("plain"),
		"/dl/bundle.zip": makeZip(t, map[string]string{"z/one.txt": "one"}, map[string]string{"z/l": "one.txt"}),
		"/dl/data.gz":    gz(t, []byte("ungzipped")),
		"/dl/tool":       []byte("#!/bin/sh\n"),
		"/dl/keep.tar":   makeTar(t, []tarEntry{{name: "x", body: "x"}}),
	})
	sb, _ := layout(t)
	noExtract := uri(srv.URL + "/dl/keep.tar")
	noExtract.Extract = proto.Bool(false)
	exe := uri(srv.URL + "/dl/tool")
	exe.Executable = proto.Bool(true)
	renamed := uri(srv.URL + "/dl/plain.txt")
	renamed.OutputFile = proto.String("conf/settings.txt")
	uris := []*mesos.CommandInfo_URI{uri(srv.URL + "/dl/app.tgz"), uri(srv.URL + "/dl/plain.txt?x=1"),
		uri(srv.URL + "/dl/bundle.zip"), uri(srv.URL + "/dl/data.gz"), exe, noExtract, renamed}
	if err := Fetch(context.Background(), uris, sb, Options{}); err != nil {
		t.Fatal(err)
	}
	checks := map[string]string{
		"app.tgz":           string(tgz),
		"app/run.sh":        "#!/bin/sh\necho hi\n",
		"app/link":          "#!/bin/sh\necho hi\n",
		"app/hard":          "#!/bin/sh\necho hi\n",
		"plain.txt":         "plain",
		"z/one.txt":         "one",
		"z/l":               "one",
		"data":              "ungzipped",
		"data.gz":           string(gz(t, []byte("ungzipped"))),
		"tool":              "#!/bin/sh\n",
		"conf/settings.txt": "plain",
	}
	for name, want := range checks {
		if got := readFile(t, filepath.Join(sb, name)); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(sb, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Error("extract=false archive was extracted")
	}
	for name, want := range map[string]fs.FileMode{"tool": 0o755, "app/run.sh": 0o755, "plain.txt": 0o644} {
		st, err := os.Stat(filepath.Join(sb, name))
		if err != nil || st.Mode().Perm() != want {
			t.Errorf("%s mode %v, want %v (%v)", name, st.Mode().Perm(), want, err)
		}
	}
	// No temporary files left behind.
	entries, _ := os.ReadDir(sb)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".fetch-") {
			t.Errorf("leftover %s", e.Name())
		}
	}
}

func TestExecutableNeverExtracted(t *testing.T) {
	srv := server(t, map[string][]byte{"/a.tar": makeTar(t, []tarEntry{{name: "inner", body: "x"}})})
	sb, _ := layout(t)
	u := uri(srv.URL + "/a.tar")
	u.Executable = proto.Bool(true)
	if err := Fetch(context.Background(), []*mesos.CommandInfo_URI{u}, sb, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(sb, "inner")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("executable archive was extracted")
	}
}

func TestMaliciousArchivesRefused(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		archive func(t *testing.T) []byte
		entry   string
	}{
		{"dotdot", "evil.tar", func(t *testing.T) []byte {
			return makeTar(t, []tarEntry{{name: "ok", body: "ok"}, {name: "../evil", body: "pwned"}})
		}, `"../evil"`},
		{"nested dotdot", "evil.tar", func(t *testing.T) []byte {
			return makeTar(t, []tarEntry{{name: "a/../../evil", body: "pwned"}})
		}, `"a/../../evil"`},
		{"absolute", "evil.tar", func(t *testing.T) []byte {
			return makeTar(t, []tarEntry{{name: "/tmp/evil", body: "pwned"}})
		}, `"/tmp/evil"`},
		{"symlink escape", "evil.tar", func(t *testing.T) []byte {
			return makeTar(t, []tarEntry{
				{name: "link", typ: tar.TypeSymlink, link: "../outside"},
				{name: "link/evil", body: "pwned"},
			})
		}, `"link"`},
		{"absolute symlink", "evil.tar", func(t *testing.T) []byte {
			return makeTar(t, []tarEntry{{name: "link", typ: tar.TypeSymlink, link: "/etc"}})
		}, `"link"`},
		{"hard link escape", "evil.tar", func(t *testing.T) []byte {
			return makeTar(t, []tarEntry{{name: "h", typ: tar.TypeLink, link: "../outside/target"}})
		}, `"h"`},
		{"zip dotdot", "evil.zip", func(t *testing.T) []byte {
			return makeZip(t, map[string]string{"../evil": "pwned"}, nil)
		}, `"../evil"`},
		{"zip symlink escape", "evil.zip", func(t *testing.T) []byte {
			return makeZip(t, nil, map[string]string{"l": "../../outside"})
		}, `"l"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := server(t, map[string][]byte{"/" + tc.file: tc.archive(t)})
			sb, outside := layout(t)
			os.WriteFile(filepath.Join(outside, "target"), []byte("t"), 0o644)
			err := Fetch(context.Background(), []*mesos.CommandInfo_URI{uri(srv.URL + "/" + tc.file)}, sb, Options{})
			if err == nil {
				t.Fatal("malicious archive accepted")
			}
			if !strings.Contains(err.Error(), tc.entry) || !strings.Contains(err.Error(), tc.file) {
				t.Fatalf("error %q does not name entry %s and the URI", err, tc.entry)
			}
			// Nothing was written outside the sandbox.
			base := filepath.Dir(sb)
			for _, p := range []string{filepath.Join(base, "evil"), filepath.Join(outside, "evil")} {
				if _, err := os.Stat(p); err == nil {
					t.Fatalf("%s written outside the sandbox", p)
				}
			}
			entries, _ := os.ReadDir(outside)
			if len(entries) != 1 {
				t.Fatalf("outside folder changed: %v", entries)
			}
		})
	}
}

// TestPreexistingSymlinkNotFollowed: an archive entry named like a symlink
// already in the sandbox replaces the link instead of writing through it.
func TestPreexistingSymlinkNotFollowed(t *testing.T) {
	srv := server(t, map[string][]byte{"/a.tar": makeTar(t, []tarEntry{{name: "out", body: "new"}})})
	sb, outside := layout(t)
	os.WriteFile(filepath.Join(outside, "victim"), []byte("orig"), 0o644)
	os.Symlink(filepath.Join(outside, "victim"), filepath.Join(sb, "out"))
	if err := Fetch(context.Background(), []*mesos.CommandInfo_URI{uri(srv.URL + "/a.tar")}, sb, Options{}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(outside, "victim")); got != "orig" {
		t.Fatalf("wrote through a symlink: %q", got)
	}
	if got := readFile(t, filepath.Join(sb, "out")); got != "new" {
		t.Fatalf("out = %q", got)
	}
}

func TestErrors(t *testing.T) {
	srv := server(t, map[string][]byte{"/big": bytes.Repeat([]byte("x"), 2048), "/bomb.tgz": gz(t, makeTar(t, []tarEntry{{name: "b", body: strings.Repeat("y", 4096)}}))})
	sb, outside := layout(t)
	os.WriteFile(filepath.Join(outside, "local.txt"), []byte("local"), 0o644)
	out := func(v, o string) *mesos.CommandInfo_URI {
		u := uri(v)
		u.OutputFile = proto.String(o)
		return u
	}
	allowOutside := Options{AllowedFileDirs: []string{outside}}
	tests := []struct {
		name string
		u    *mesos.CommandInfo_URI
		opts Options
		want []string
	}{
		{"http 404", uri(srv.URL + "/missing.txt"), Options{}, []string{"/missing.txt", "404"}},
		{"size limit", uri(srv.URL + "/big"), Options{MaxSize: 1024}, []string{"/big", "size limit of 1024"}},
		{"extract limit", uri(srv.URL + "/bomb.tgz"), Options{MaxSize: 3000}, []string{"/bomb.tgz", `entry "b"`, "extracted data exceeds the size limit of 3000"}},
		{"output_file escape", out(srv.URL+"/big", "../x"), Options{}, []string{"output_file", "../x"}},
		{"output_file absolute", out(srv.URL+"/big", "/tmp/x"), Options{}, []string{"output_file", "/tmp/x"}},
		{"no basename", uri(srv.URL + "/"), Options{}, []string{"output_file"}},
		{"scheme", uri("ftp://host/f"), Options{}, []string{"ftp://host/f", "unsupported URI scheme"}},
		{"relative", uri("relative/path"), Options{}, []string{"relative/path"}},
		{"empty", uri(""), Options{}, []string{"missing 'value'"}},
		{"local refused by default", uri("file:///etc/shadow"), Options{}, []string{"file:///etc/shadow", "the fetcher refused local path", "--fetcher_allowed_dirs", "not set"}},
		{"plain path refused by default", uri(filepath.Join(outside, "local.txt")), Options{}, []string{"the fetcher refused", "not set"}},
		{"local outside the allowed", uri(filepath.Join(outside, "local.txt")), Options{AllowedFileDirs: []string{sb}}, []string{"the fetcher refused", "not under --fetcher_allowed_dirs (" + sb + ")"}},
		{"missing outside the allowed: refused, existence not told", uri("file://" + filepath.Join(outside, "nope")), Options{AllowedFileDirs: []string{sb}}, []string{"the fetcher refused"}},
		{"dot-dot out of the allowed", uri(filepath.Join(sb, "..", filepath.Base(outside), "local.txt")), Options{AllowedFileDirs: []string{sb}}, []string{"the fetcher refused"}},
		{"local missing", uri("file://" + filepath.Join(outside, "nope")), allowOutside, []string{"nope", "no such file"}},
		{"local dir", uri(outside), allowOutside, []string{"not a regular file"}},
		{"xz", out("file://"+filepath.Join(outside, "local.txt"), "a.tar.xz"), allowOutside, []string{"xz archives are not supported"}},
		{"password redacted", uri("http://user:hunter2@127.0.0.1:1/f"), Options{Timeout: 2 * time.Second}, []string{"xxxxx"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Fetch(context.Background(), []*mesos.CommandInfo_URI{tc.u}, sb, tc.opts)
			if err == nil {
				t.Fatal("no error")
			}
			var ue *URIError
			if !errors.As(err, &ue) {
				t.Fatalf("%T is not a *URIError", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			var re *RefusedError
			if refused := strings.Contains(err.Error(), "fetcher refused"); refused != errors.As(err, &re) {
				t.Errorf("error %q: *RefusedError %v", err, errors.As(err, &re))
			}
			if errors.As(err, &re) && strings.Contains(err.Error(), "no such file") {
				t.Errorf("a refusal tells whether the file exists: %q", err)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Error("password in error")
			}
		})
	}
	// Failed downloads leave nothing under the final name.
	if _, err := os.Stat(filepath.Join(sb, "big")); !errors.Is(err, os.ErrNotExist) {
		t.Error("partial download left behind")
	}
}

func TestLocalFiles(t *testing.T) {
	sb, outside := layout(t)
	os.WriteFile(filepath.Join(outside, "a.txt"), []byte("A"), 0o644)
	os.Symlink(filepath.Join(outside, "a.txt"), filepath.Join(outside, "link.txt"))
	other := t.TempDir()
	os.Symlink(filepath.Join(outside, "a.txt"), filepath.Join(other, "sneaky.txt"))
	opts := Options{AllowedFileDirs: []string{outside}}
	uris := []*mesos.CommandInfo_URI{uri(filepath.Join(outside, "a.txt")), uri("file://" + filepath.Join(outside, "link.txt"))}
	if err := Fetch(context.Background(), uris, sb, opts); err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(sb, "a.txt")) != "A" || readFile(t, filepath.Join(sb, "link.txt")) != "A" {
		t.Fatal("local fetch content")
	}
	// A link from a non-allowed dir into an allowed one resolves inside: allowed.
	if err := Fetch(context.Background(), []*mesos.CommandInfo_URI{uri(filepath.Join(other, "sneaky.txt"))}, sb, opts); err != nil {
		t.Fatal(err)
	}
	// A link from an allowed dir to outside it is refused.
	os.Symlink("/etc/hostname", filepath.Join(outside, "out.txt"))
	var re *RefusedError
	if err := Fetch(context.Background(), []*mesos.CommandInfo_URI{uri(filepath.Join(outside, "out.txt"))}, sb, opts); !errors.As(err, &re) {
		t.Fatalf("symlink out of the allowed dir: %v, want a *RefusedError", err)
	}
	// The same URIs on an agent with no allowed directories: all refused.
	for _, u := range []string{filepath.Join(outside, "a.txt"), "file://" + filepath.Join(outside, "link.txt")} {
		if err := Fetch(context.Background(), []*mesos.CommandInfo_URI{uri(u)}, t.TempDir(), Options{}); !errors.As(err, &re) {
			t.Errorf("%s with no --fetcher_allowed_dirs: %v, want a *RefusedError", u, err)
		}
	}
}

// A local file's copy keeps the source's permission bits (never setuid or
// setgid), whatever the agent's umask; a download gets 0644; executable
// makes it 0755.
func TestLocalFilesKeepPermissions(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	srv := server(t, map[string][]byte{"/dl.txt": []byte("d")})
	sb, outside := layout(t)
	files := map[string]os.FileMode{"private": 0o600, "tool": 0o750, "shared": 0o664, "readonly": 0o444}
	var uris []*mesos.CommandInfo_URI
	for name, mode := range files {
		p := filepath.Join(outside, name)
		if err := os.WriteFile(p, []byte(name), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		uris = append(uris, uri(p))
	}
	setuid := filepath.Join(outside, "setuid")
	os.WriteFile(setuid, []byte("s"), 0o600)
	os.Chmod(setuid, 0o4755)
	files["setuid"] = 0o755
	exe := uri("file://" + filepath.Join(outside, "private"))
	exe.Executable = proto.Bool(true)
	exe.OutputFile = proto.String("private-exe")
	files["private-exe"] = 0o755
	files["dl.txt"] = 0o644
	uris = append(uris, uri(setuid), exe, uri(srv.URL+"/dl.txt"))
	if err := Fetch(context.Background(), uris, sb, Options{AllowedFileDirs: []string{outside}}); err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		fi, err := os.Stat(filepath.Join(sb, name))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky); got != want {
			t.Errorf("%s: mode %v, want %v", name, got, want)
		}
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(block)
	sb, _ := layout(t)
	err := Fetch(context.Background(), []*mesos.CommandInfo_URI{uri(srv.URL + "/slow")}, sb, Options{Timeout: 200 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "/slow") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want a deadline error naming the URI", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Fetch(ctx, []*mesos.CommandInfo_URI{uri(srv.URL + "/slow")}, sb, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestClassify(t *testing.T) {
	tests := map[string]archiveKind{
		"a.tar": kindTar, "a.TAR.GZ": kindTarGz, "a.tgz": kindTarGz, "a.tar.bz2": kindTarBz2,
		"a.tbz2": kindTarBz2, "a.tar.xz": kindTarXz, "a.txz": kindTarXz, "a.zip": kindZip,
		"a.gz": kindGz, "a.txt": notArchive, "tar": notArchive,
	}
	for name, want := range tests {
		if got := classify(name); got != want {
			t.Errorf("classify(%q) = %v, want %v", name, got, want)
		}
	}
}

func FuzzEntryName(f *testing.F) {
	for _, s := range []string{"a", "../a", "a/../../b", "/abs", "./x/", "a\\b", ".", "", ".//", "a//b/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		name, err := entryName(raw)
		if err != nil {
			return
		}
		if name != "." && !filepath.IsLocal(name) {
			t.Fatalf("entryName(%q) = %q escapes", raw, name)
		}
	})
}
