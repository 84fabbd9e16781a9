package docker

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/distribution/reference"
	"github.com/moby/moby/api/pkg/authconfig"
	"github.com/moby/moby/api/types/registry"
)

// Registry credentials for image pulls, as Mesos's --docker_config: a
// docker config file (~/.docker/config.json, whose registries are under
// "auths", or the older ~/.dockercfg, whose registries are the top-level
// keys). The engine pulls with the credentials of the image's registry,
// which it receives base64url-encoded in the X-Registry-Auth header.

// dockerHubHost is the registry host of images without one ("busybox",
// "library/busybox", "docker.io/library/busybox").
const dockerHubHost = "docker.io"

// RegistryAuth holds credentials by registry host. The zero value (and
// nil) holds none.
type RegistryAuth struct {
	byHost map[string]registry.AuthConfig
}

// configEntry is one registry's entry in a docker config file.
type configEntry struct {
	Auth          string `json:"auth"` // base64 of "user:password"
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
	RegistryToken string `json:"registrytoken"`
	Email         string `json:"email"` // informational; never sent
}

// LoadRegistryAuth reads --docker_config's value: an absolute path (or
// file:// URL) of a docker config file, or the file's JSON itself. An
// empty value holds no credentials.
func LoadRegistryAuth(value string) (*RegistryAuth, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return &RegistryAuth{}, nil
	}
	if p, ok := strings.CutPrefix(v, "file://"); ok || strings.HasPrefix(v, "/") {
		if !ok {
			p = v
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("'docker_config': %w", err)
		}
		ra, err := ParseRegistryAuth(data)
		if err != nil {
			return nil, fmt.Errorf("'docker_config' %s: %w", p, err)
		}
		return ra, nil
	}
	if !strings.HasPrefix(v, "{") {
		// Not echoed: it may hold credentials.
		return nil, fmt.Errorf("'docker_config' is neither an absolute path to a docker config file nor its JSON")
	}
	ra, err := ParseRegistryAuth([]byte(v))
	if err != nil {
		return nil, fmt.Errorf("'docker_config': %w", err)
	}
	return ra, nil
}

// ParseRegistryAuth parses a docker config file: {"auths": {registry:
// entry}} or the legacy {registry: entry}. A registry is named as docker
// login names it ("https://index.docker.io/v1/", "registry.example.com",
// "https://registry.example.com:5000/v2/"); an entry holds "auth"
// (base64 of user:password), or "username" and "password", or an
// "identitytoken" or "registrytoken". Credential helpers ("credsStore",
// "credHelpers") run programs the agent does not run: a file naming them
// is refused rather than pulls going out without credentials.
func ParseRegistryAuth(data []byte) (*RegistryAuth, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	for _, k := range []string{"credsStore", "credHelpers"} {
		if _, ok := top[k]; ok {
			return nil, fmt.Errorf("%q: credential helpers are not supported; put the credentials in \"auths\"", k)
		}
	}
	entries := top
	field := ""
	if raw, ok := top["auths"]; ok {
		entries, field = nil, "auths"
		if err := json.Unmarshal(raw, &entries); err != nil {
			return nil, fmt.Errorf("\"auths\" is not an object: %w", err)
		}
	}
	name := func(key string) string {
		if field == "" {
			return fmt.Sprintf("%q", key)
		}
		return fmt.Sprintf("%s[%q]", field, key)
	}
	ra := &RegistryAuth{byHost: map[string]registry.AuthConfig{}}
	keys := make([]string, 0, len(entries))
	for k := range entries {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic errors and duplicate resolution
	for _, key := range keys {
		var e configEntry
		if err := json.Unmarshal(entries[key], &e); err != nil {
			return nil, fmt.Errorf("%s: %w", name(key), err)
		}
		ac, err := e.authConfig(key)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name(key), err)
		}
		host := registryHost(key)
		if host == "" {
			return nil, fmt.Errorf("%s: no registry host in the key", name(key))
		}
		if _, dup := ra.byHost[host]; dup {
			return nil, fmt.Errorf("%s: a second entry for registry %s", name(key), host)
		}
		ra.byHost[host] = ac
	}
	return ra, nil
}

func (e configEntry) authConfig(key string) (registry.AuthConfig, error) {
	ac := registry.AuthConfig{
		Username: e.Username, Password: e.Password, ServerAddress: key,
		IdentityToken: e.IdentityToken, RegistryToken: e.RegistryToken,
	}
	if e.Auth != "" {
		raw, err := base64.StdEncoding.DecodeString(e.Auth)
		if err != nil {
			return ac, fmt.Errorf("\"auth\" is not base64: %w", err)
		}
		user, pass, ok := strings.Cut(string(raw), ":")
		if !ok || user == "" {
			return ac, errors.New("\"auth\" does not decode to user:password")
		}
		ac.Username, ac.Password = user, pass
	}
	if ac.Username == "" && ac.IdentityToken == "" && ac.RegistryToken == "" {
		return ac, errors.New("no credentials (want \"auth\", \"username\" and \"password\", \"identitytoken\" or \"registrytoken\")")
	}
	return ac, nil
}

// registryHost normalizes a config key or an image's domain to a
// lower-case host[:port]: the scheme and path are dropped, and Docker
// Hub's names are one.
func registryHost(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if i := strings.IndexByte(s, '/'); i >= 0 {
		s = s[:i]
	}
	switch s {
	case "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com":
		return dockerHubHost
	}
	return s
}

// Registries lists the registry hosts with credentials, sorted.
func (r *RegistryAuth) Registries() []string {
	if r == nil {
		return nil
	}
	out := make([]string, 0, len(r.byHost))
	for h := range r.byHost {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// header returns the X-Registry-Auth value for pulling image, the
// encoded credentials of its registry, and the registry's host; "" when
// there are none.
func (r *RegistryAuth) header(image string) (header, host string, err error) {
	if r == nil || len(r.byHost) == 0 {
		return "", "", nil
	}
	ref, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return "", "", fmt.Errorf("image %q: %w", image, err)
	}
	host = registryHost(reference.Domain(ref))
	ac, ok := r.byHost[host]
	if !ok {
		return "", "", nil
	}
	header, err = authconfig.Encode(ac)
	return header, host, err
}

// sandboxAuth reads a docker config file that the task's URIs fetched
// into its sandbox (.docker/config.json, else .dockercfg). As in Mesos,
// such a file wins over --docker_config. Reads are confined to the
// sandbox, so a fetched symbolic link cannot make the agent read other
// files. nil, nil: the sandbox has neither file.
func sandboxAuth(sandbox string) (*RegistryAuth, error) {
	root, err := os.OpenRoot(sandbox)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	for _, name := range []string{filepath.Join(".docker", "config.json"), ".dockercfg"} {
		data, err := root.ReadFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("sandbox docker config %s: %w", name, err)
		}
		ra, err := ParseRegistryAuth(data)
		if err != nil {
			return nil, fmt.Errorf("sandbox docker config %s: %w", name, err)
		}
		return ra, nil
	}
	return nil, nil
}
