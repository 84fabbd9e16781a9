package docker

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/api/pkg/authconfig"
	"github.com/moby/moby/api/types/registry"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// decodeHeader is what the engine does with X-Registry-Auth.
func decodeHeader(t *testing.T, h string) registry.AuthConfig {
	t.Helper()
	ac, err := authconfig.Decode(h)
	if err != nil {
		t.Fatalf("X-Registry-Auth %q: %v", h, err)
	}
	return *ac
}

// The credentials sent for an image are those of its registry, whichever
// way the config file names it; images of other registries get none.
func TestRegistryAuthLookup(t *testing.T) {
	ra, err := ParseRegistryAuth([]byte(`{
		"auths": {
			"https://index.docker.io/v1/": {"auth": "` + b64("hubuser:hubpass") + `", "email": "x@example.com"},
			"registry.example.com:5000": {"username": "alice", "password": "s3cret"},
			"HTTPS://Other.Example.com/v2/": {"identitytoken": "tok"}
		},
		"HttpHeaders": {"User-Agent": "ignored"}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := ra.Registries(); !slices.Equal(got, []string{"docker.io", "other.example.com", "registry.example.com:5000"}) {
		t.Errorf("registries %q", got)
	}
	for _, tc := range []struct {
		image            string
		user, pass, tok  string
		server           string
		none             bool
		wantErrSubstring string
	}{
		{image: "busybox", user: "hubuser", pass: "hubpass", server: "https://index.docker.io/v1/"},
		{image: "library/busybox:1.36", user: "hubuser", pass: "hubpass", server: "https://index.docker.io/v1/"},
		{image: "docker.io/team/app@sha256:" + strings.Repeat("a", 64), user: "hubuser", pass: "hubpass", server: "https://index.docker.io/v1/"},
		{image: "registry.example.com:5000/team/app:v1", user: "alice", pass: "s3cret", server: "registry.example.com:5000"},
		{image: "registry.example.com/team/app", none: true}, // another port is another registry
		{image: "other.example.com/x", tok: "tok", server: "HTTPS://Other.Example.com/v2/"},
		{image: "quay.io/x/y", none: true},
		{image: "Bad/Upper", wantErrSubstring: "must be lowercase"},
	} {
		h, host, err := ra.header(tc.image)
		if tc.wantErrSubstring != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErrSubstring) {
				t.Errorf("%s: error %v, want %q", tc.image, err, tc.wantErrSubstring)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.image, err)
			continue
		}
		if tc.none {
			if h != "" {
				t.Errorf("%s: credentials %v sent to a registry without any", tc.image, decodeHeader(t, h))
			}
			continue
		}
		ac := decodeHeader(t, h)
		if host != registryHost(tc.server) {
			t.Errorf("%s: registry %q", tc.image, host)
		}
		if ac.Username != tc.user || ac.Password != tc.pass || ac.IdentityToken != tc.tok || ac.ServerAddress != tc.server || ac.Auth != "" {
			t.Errorf("%s: credentials %+v", tc.image, ac)
		}
		if strings.ContainsAny(h, "+/") {
			t.Errorf("%s: header %q is not base64url", tc.image, h)
		}
	}
	var none *RegistryAuth
	if h, _, err := none.header("busybox"); h != "" || err != nil {
		t.Errorf("nil RegistryAuth: %q %v", h, err)
	}
}

// The legacy ~/.dockercfg form has the registries at the top level.
func TestRegistryAuthLegacyDockercfg(t *testing.T) {
	ra, err := ParseRegistryAuth([]byte(`{"https://index.docker.io/v1/": {"auth": "` + b64("u:p:with:colons") + `", "email": "e"}}`))
	if err != nil {
		t.Fatal(err)
	}
	ac := decodeHeader(t, must(ra.header("busybox")))
	if ac.Username != "u" || ac.Password != "p:with:colons" {
		t.Errorf("credentials %+v", ac)
	}
}

func must(s, _ string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}

// A config file the agent cannot use fully is refused, naming the
// problem, rather than pulls going out without credentials.
func TestRegistryAuthErrors(t *testing.T) {
	for name, tc := range map[string]struct{ in, want string }{
		"not JSON":            {`{`, "not a JSON object"},
		"not an object":       {`[]`, "not a JSON object"},
		"credential store":    {`{"auths": {}, "credsStore": "desktop"}`, `"credsStore": credential helpers are not supported`},
		"credential helpers":  {`{"credHelpers": {"gcr.io": "gcloud"}}`, `"credHelpers"`},
		"auths not an object": {`{"auths": []}`, `"auths" is not an object`},
		"entry not an object": {`{"auths": {"r.io": "x"}}`, `auths["r.io"]`},
		"bad base64":          {`{"auths": {"r.io": {"auth": "%%%"}}}`, `auths["r.io"]: "auth" is not base64`},
		"auth without colon":  {`{"auths": {"r.io": {"auth": "` + b64("nocolon") + `"}}}`, `does not decode to user:password`},
		"no credentials":      {`{"auths": {"r.io": {}}}`, `auths["r.io"]: no credentials`},
		"legacy entry":        {`{"r.io": {"email": "only"}}`, `"r.io": no credentials`},
		"empty key":           {`{"auths": {"https://": {"username": "u"}}}`, "no registry host"},
		"two names for hub": {`{"auths": {"docker.io": {"username": "a"}, "https://index.docker.io/v1/": {"username": "b"}}}`,
			"a second entry for registry docker.io"},
	} {
		if _, err := ParseRegistryAuth([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.want)
		}
	}
}

// --docker_config is a path (or file:// URL) or the JSON itself.
func TestLoadRegistryAuth(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "config.json")
	if err := os.WriteFile(file, []byte(`{"auths": {"r.io": {"username": "u", "password": "p"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{file, "file://" + file, ` {"auths": {"r.io": {"username": "u", "password": "p"}}} `} {
		ra, err := LoadRegistryAuth(v)
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		if got := ra.Registries(); !slices.Equal(got, []string{"r.io"}) {
			t.Errorf("%q: registries %q", v, got)
		}
	}
	if ra, err := LoadRegistryAuth(""); err != nil || len(ra.Registries()) != 0 {
		t.Errorf("empty flag: %v %v", ra, err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"auths": {"r.io": {}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for v, want := range map[string]string{
		filepath.Join(dir, "missing.json"): "'docker_config': open",
		bad:                                "'docker_config' " + bad + `: auths["r.io"]: no credentials`,
		"relative/config.json":             "neither an absolute path",
		`{"auths": {"r.io": {"password": "hunter2"}}}`: "'docker_config': auths",
	} {
		_, err := LoadRegistryAuth(v)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one containing %q", v, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: the error shows the password: %v", v, err)
		}
	}
}

// A docker config fetched into the sandbox wins over --docker_config (as
// in Mesos); reads stay inside the sandbox.
func TestSandboxAuth(t *testing.T) {
	sb := t.TempDir()
	if ra, err := sandboxAuth(sb); ra != nil || err != nil {
		t.Fatalf("empty sandbox: %v %v", ra, err)
	}
	if err := os.WriteFile(filepath.Join(sb, ".dockercfg"), []byte(`{"r.io": {"auth": "`+b64("old:cfg")+`"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ra, err := sandboxAuth(sb)
	if err != nil || decodeHeader(t, must(ra.header("r.io/x"))).Username != "old" {
		t.Fatalf(".dockercfg: %v %v", ra, err)
	}
	if err := os.MkdirAll(filepath.Join(sb, ".docker"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sb, ".docker", "config.json"), []byte(`{"auths": {"r.io": {"auth": "`+b64("new:cfg")+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if ra, err := sandboxAuth(sb); err != nil || decodeHeader(t, must(ra.header("r.io/x"))).Username != "new" {
		t.Fatalf(".docker/config.json: %v %v", ra, err)
	}
	// A symbolic link out of the sandbox is not followed.
	outside := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(outside, []byte(`{"auths": {"r.io": {"auth": "`+b64("leak:ed")+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	sb2 := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(sb2, ".dockercfg")); err != nil {
		t.Fatal(err)
	}
	if ra, err := sandboxAuth(sb2); err == nil {
		t.Errorf("a link out of the sandbox was read: %v", ra.Registries())
	}
	sb3 := t.TempDir()
	if err := os.WriteFile(filepath.Join(sb3, ".dockercfg"), []byte(`not json`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := sandboxAuth(sb3); err == nil || !strings.Contains(err.Error(), "sandbox docker config .dockercfg") {
		t.Errorf("bad sandbox config: %v", err)
	}
}
