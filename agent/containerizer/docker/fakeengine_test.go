package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"mezzo/api/mesos"

	"github.com/moby/moby/api/pkg/authconfig"
	"github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/client/pkg/versions"
)

// fakeEngine is an HTTP server speaking the few Engine API calls the
// tests below need, with a range of API versions it accepts, answering
// out-of-range versions as dockerd does (400 "client version ... is too
// old/new"). It records the calls; it has no images and creates no
// containers (POST /containers/create is refused), so a launch against
// it ends after the pull.
type fakeEngine struct {
	min, max string // the API versions accepted

	// pull answers a pull of from:tag given its decoded X-Registry-Auth
	// (nil without the header): "" for success, else the stream's error.
	pull func(image string, auth *registry.AuthConfig) string

	mu    sync.Mutex
	calls []fakeCall
}

type fakeCall struct {
	method, path string // path as sent, with its version prefix
	version      string // "" for unversioned paths
	image        string // pulls: fromImage:tag
	auth         *registry.AuthConfig
}

func (f *fakeEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fail := func(code int, format string, args ...any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]string{"message": fmt.Sprintf(format, args...)})
	}
	c := fakeCall{method: r.Method, path: r.URL.Path}
	path := r.URL.Path
	if rest, ok := strings.CutPrefix(path, "/v"); ok {
		if i := strings.IndexByte(rest, '/'); i > 0 {
			c.version, path = rest[:i], rest[i:]
		}
	}
	if h := r.Header.Get(registry.AuthHeader); h != "" {
		ac, err := authconfig.Decode(h)
		if err != nil {
			fail(http.StatusBadRequest, "bad X-Registry-Auth: %v", err)
			return
		}
		c.auth = ac
	}
	if path == "/images/create" {
		c.image = r.URL.Query().Get("fromImage") + ":" + r.URL.Query().Get("tag")
	}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()

	w.Header().Set("Api-Version", f.max)
	w.Header().Set("Ostype", "linux")
	if path == "/_ping" {
		_, _ = w.Write([]byte("OK"))
		return
	}
	if c.version != "" && versions.LessThan(c.version, f.min) {
		fail(http.StatusBadRequest, "client version %s is too old. Minimum supported API version is %s, please upgrade your client to a newer version", c.version, f.min)
		return
	}
	if c.version != "" && versions.LessThan(f.max, c.version) {
		fail(http.StatusBadRequest, "client version %s is too new. Maximum supported API version is %s", c.version, f.max)
		return
	}
	switch {
	case r.Method == http.MethodGet && path == "/containers/json":
		_, _ = w.Write([]byte("[]"))
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/images/"):
		fail(http.StatusNotFound, "No such image: %s", strings.TrimSuffix(strings.TrimPrefix(path, "/images/"), "/json"))
	case r.Method == http.MethodPost && path == "/images/create":
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		_ = enc.Encode(map[string]string{"status": "Pulling from " + c.image})
		if msg := f.pull(c.image, c.auth); msg != "" {
			_ = enc.Encode(map[string]any{"errorDetail": map[string]string{"message": msg}, "error": msg})
			return
		}
		_ = enc.Encode(map[string]string{"status": "Downloaded newer image for " + c.image})
	case r.Method == http.MethodPost && path == "/containers/create":
		fail(http.StatusInternalServerError, "the fake engine creates no containers")
	default:
		fail(http.StatusNotFound, "page not found")
	}
}

func (f *fakeEngine) recorded() []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeCall(nil), f.calls...)
}

// serveUnix serves the fake engine on a new unix socket and returns its
// path.
func (f *fakeEngine) serveUnix(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "fke") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: f}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return sock
}

// The client negotiates the API version with the engine: an engine that
// refuses the version the hand-written client spoke (1.41; Docker 29 and
// later require 1.44) is spoken to in its own version, and so is an old
// one; an engine newer than the client gets the client's newest; one
// older than the client supports is refused clearly.
func TestVersionNegotiation(t *testing.T) {
	for _, tc := range []struct {
		name, min, max string
		want           string // the version the calls use
		err            string
	}{
		{name: "docker 29 refuses 1.41", min: "1.44", max: "1.52", want: "1.52"},
		{name: "old engine", min: "1.12", max: "1.41", want: "1.41"},
		{name: "engine newer than the client", min: "1.44", max: "1.99", want: "1.56"},
		{name: "engine too old for the client", min: "1.12", max: "1.38",
			err: "API version 1.38 is not supported by this client: the minimum supported API version is 1.40"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeEngine{min: tc.min, max: tc.max}
			sock := f.serveUnix(t)
			// What the hand-written client did: one call at min(1.41,
			// engine's version).
			old := "1.41"
			if versions.LessThan(tc.max, old) {
				old = tc.max
			}
			oldStatus := rawStatus(t, sock, "/v"+old+"/containers/json")

			d, err := New(Config{Socket: "unix://" + sock, Owner: "o", RemoveDelay: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			_, err = d.Recover(context.Background())
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("recover: %v, want an error containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("recover: %v", err)
			}
			var list *fakeCall
			for _, c := range f.recorded() {
				if c.path == "/v"+tc.want+"/containers/json" {
					list = &c
				}
			}
			if list == nil {
				t.Fatalf("no GET /v%s/containers/json among %+v", tc.want, f.recorded())
			}
			if versions.LessThan(old, tc.min) && oldStatus != http.StatusBadRequest {
				t.Errorf("the fake engine answered the old client's version with %d", oldStatus)
			}
		})
	}
}

// rawStatus is the status of a GET to the engine on sock, without the
// client library.
func rawStatus(t *testing.T, sock, path string) int {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	resp, err := c.Get("http://docker" + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A pull sends the credentials of the image's registry (from
// --docker_config, or from a docker config file fetched into the
// sandbox, which wins) in X-Registry-Auth, and none to other registries;
// the registry's refusal is the launch error, and nothing is created.
func TestPullCredentials(t *testing.T) {
	f := &fakeEngine{min: "1.44", max: "1.47", pull: func(image string, auth *registry.AuthConfig) string {
		if strings.HasPrefix(image, "registry.example.com:5000/") && (auth == nil || auth.Password != "s3cret") {
			return "unauthorized: authentication required"
		}
		return ""
	}}
	sock := f.serveUnix(t)
	ra, err := LoadRegistryAuth(`{"auths": {
		"registry.example.com:5000": {"auth": "` + b64("alice:s3cret") + `"},
		"https://index.docker.io/v1/": {"username": "hub", "password": "hubpass"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	d, err := New(Config{Socket: sock, Owner: "o", RemoveDelay: -1, RegistryAuth: ra})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	launch := func(id, image, sandbox string) error {
		if sandbox == "" {
			sandbox = t.TempDir()
		}
		_, err := d.LaunchTask(context.Background(), TaskLaunch{ContainerID: id, Sandbox: sandbox,
			Task: task(image, mesos.ContainerInfo_DockerInfo_NONE, "x")})
		return err
	}
	lastPull := func() fakeCall {
		t.Helper()
		calls := f.recorded()
		for i := len(calls) - 1; i >= 0; i-- {
			if strings.HasSuffix(calls[i].path, "/images/create") {
				return calls[i]
			}
		}
		t.Fatal("no pull")
		return fakeCall{}
	}
	created := func() int {
		n := 0
		for _, c := range f.recorded() {
			if strings.HasSuffix(c.path, "/containers/create") {
				n++
			}
		}
		return n
	}

	// The private registry's credentials, by host and port.
	err = launch("c1", "registry.example.com:5000/team/app:v1", "")
	if err == nil || !strings.Contains(err.Error(), "the fake engine creates no containers") {
		t.Fatalf("launch: %v", err)
	}
	p := lastPull()
	if p.image != "registry.example.com:5000/team/app:v1" || p.auth == nil || p.auth.Username != "alice" ||
		p.auth.Password != "s3cret" || p.auth.ServerAddress != "registry.example.com:5000" || p.version != "1.47" {
		t.Errorf("pull %+v auth %+v", p, p.auth)
	}
	// Docker Hub's, for an image without a registry.
	_ = launch("c2", "busybox", "")
	if p := lastPull(); p.image != "docker.io/library/busybox:latest" || p.auth == nil || p.auth.Username != "hub" {
		t.Errorf("hub pull %+v auth %+v", p, p.auth)
	}
	// None for a registry without credentials.
	_ = launch("c3", "quay.io/team/app:v2", "")
	if p := lastPull(); p.image != "quay.io/team/app:v2" || p.auth != nil {
		t.Errorf("credentials sent to quay.io: %+v", p.auth)
	}
	// A docker config fetched into the sandbox wins, and with the wrong
	// password the registry's refusal is the launch error.
	sb := t.TempDir()
	if err := os.WriteFile(filepath.Join(sb, ".dockercfg"), []byte(`{"registry.example.com:5000": {"auth": "`+b64("bob:wrong")+`"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	before := created()
	err = launch("c4", "registry.example.com:5000/team/app:v1", sb)
	want := `failed to pull image "registry.example.com:5000/team/app:v1": with the credentials for registry.example.com:5000 from the sandbox's docker config: unauthorized: authentication required`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("launch with bad credentials: %v, want %q", err, want)
	}
	if p := lastPull(); p.auth == nil || p.auth.Username != "bob" {
		t.Errorf("the sandbox's credentials were not used: %+v", p.auth)
	}
	if created() != before {
		t.Error("a container was created after a failed pull")
	}
	if got := d.Containers(); len(got) != 0 {
		t.Errorf("containers %v", got)
	}
}
