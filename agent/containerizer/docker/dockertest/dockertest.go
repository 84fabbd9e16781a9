// Package dockertest gives tests outside package docker (the agent's) what
// they need to run Docker containers for real: whether an engine is
// reachable, a tiny test image (FROM scratch, holding the static
// testdata/testprog binary of package docker, whose first argument picks a
// behaviour: serve ADDR REPLY, sleep, ignore-term, exit CODE, echo ...),
// and the removal of the containers an agent left. It talks to the engine
// over its socket with net/http, like the containerizer.
package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"
)

// Socket is the engine's socket the helpers use.
const Socket = "/var/run/docker.sock"

// OwnerLabel is the label by which the docker containerizer marks the
// containers of one agent.
const OwnerLabel = "org.mezzo.owner"

var client = &http.Client{Transport: &http.Transport{
	DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", Socket)
	},
}}

// Available tells whether the engine answers on Socket (DOCKER_HOST is
// not consulted: the tests use the local engine).
func Available() error {
	if _, err := os.Stat(Socket); err != nil {
		return fmt.Errorf("no Docker engine: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return call(ctx, http.MethodGet, "/_ping", nil, nil, nil)
}

func call(ctx context.Context, method, path string, q url.Values, body io.Reader, out any) error {
	u := "http://docker" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/x-tar")
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, strings.TrimSpace(string(b)))
	}
	if out != nil {
		return json.NewDecoder(resp.Body).Decode(out)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

var (
	imageOnce sync.Once
	image     string
	imageErr  error
)

// Image builds (once per process) and returns the test image's tag,
// "mezzo-test/httpserver:<hash of the binary>". RemoveImage removes it.
func Image() (string, error) {
	imageOnce.Do(func() { image, imageErr = buildImage() })
	return image, imageErr
}

// RemoveImage removes the test image if Image built it.
func RemoveImage() {
	if image == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = call(ctx, http.MethodDelete, "/images/"+image, url.Values{"force": {"1"}}, nil, nil)
}

// ImageSource compiles the testprog binary statically and returns the test
// image's tag (from the binary's hash, so a rebuilt testprog gets a new
// image, and this process's ID) and its build context: a tar of a FROM scratch Dockerfile and the
// binary. Package docker's own tests build the image with it through the
// containerizer's client; Image builds it through this package's.
func ImageSource() (tag string, buildContext *bytes.Buffer, err error) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return "", nil, errors.New("dockertest: cannot locate the testprog sources")
	}
	src := filepath.Join(filepath.Dir(self), "..", "testdata", "testprog")
	dir, err := os.MkdirTemp("", "mezzo-dockertest")
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(dir)
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(dir, "testprog")
	cmd := exec.Command(goBin, "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("dockertest: building testprog: %v\n%s", err, out)
	}
	prog, err := os.ReadFile(bin)
	if err != nil {
		return "", nil, err
	}
	sum := sha256.Sum256(prog)
	// The tag also names this process: test binaries of several packages
	// run at once under `go test ./...`, and each removes its image when it
	// ends; a shared tag would vanish under the others' running tests.
	// The layers are shared, so the extra tags cost nothing.
	tag = fmt.Sprintf("mezzo-test/httpserver:%s-%d", hex.EncodeToString(sum[:6]), os.Getpid())
	var tarCtx bytes.Buffer
	tw := tar.NewWriter(&tarCtx)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{
		{"Dockerfile", 0o644, []byte("FROM scratch\nCOPY testprog /testprog\nENTRYPOINT [\"/testprog\"]\n")},
		{"testprog", 0o755, prog},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data))}); err != nil {
			return "", nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return "", nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return "", nil, err
	}
	return tag, &tarCtx, nil
}

func buildImage() (string, error) {
	tag, tarCtx, err := ImageSource()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if call(ctx, http.MethodGet, "/images/"+tag+"/json", nil, nil, nil) == nil {
		return tag, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		"http://docker/build?"+url.Values{"t": {tag}, "rm": {"1"}, "forcerm": {"1"}}.Encode(), tarCtx)
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-tar")
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("dockertest: building the image: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return "", fmt.Errorf("dockertest: building the image: %s: %s", resp.Status, b)
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var msg struct{ Error string }
		if err := dec.Decode(&msg); err == io.EOF {
			break
		} else if err != nil {
			return "", err
		}
		if msg.Error != "" {
			return "", fmt.Errorf("dockertest: building the image: %s", msg.Error)
		}
	}
	return tag, nil
}

// Container is one container as the engine lists it.
type Container struct {
	ID     string
	State  string
	Labels map[string]string
}

// Owned lists the containers (running or not) whose owner label is owner.
func Owned(owner string) ([]Container, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	filters, _ := json.Marshal(map[string][]string{"label": {OwnerLabel + "=" + owner}})
	var out []Container
	err := call(ctx, http.MethodGet, "/containers/json", url.Values{"all": {"1"}, "filters": {string(filters)}}, nil, &out)
	return out, err
}

// RemoveOwned force-removes every container whose owner label is owner.
func RemoveOwned(owner string) error {
	cs, err := Owned(owner)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	for _, c := range cs {
		if c.State == "removing" {
			continue // the agent is removing it
		}
		err := call(ctx, http.MethodDelete, "/containers/"+c.ID, url.Values{"force": {"1"}, "v": {"1"}}, nil, nil)
		if err != nil && !strings.Contains(err.Error(), "404") && !strings.Contains(err.Error(), "409") {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
