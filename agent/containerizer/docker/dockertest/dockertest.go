// Package dockertest gives tests outside package docker (the agent's) what
// they need to run Docker containers for real: whether an engine is
// reachable, a tiny test image (FROM scratch, holding the static
// testdata/testprog binary of package docker, whose first argument picks a
// behaviour: serve ADDR REPLY, sleep, ignore-term, exit CODE, echo ...),
// and the removal of the containers an agent left. It talks to the engine
// over its socket with the Engine API client library the containerizer
// uses (github.com/moby/moby/client).
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
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
)

// Socket is the engine's socket the helpers use.
const Socket = "/var/run/docker.sock"

// OwnerLabel is the label by which the docker containerizer marks the
// containers of one agent.
const OwnerLabel = "org.mezzo.owner"

var engine = sync.OnceValues(func() (*client.Client, error) {
	return client.New(client.WithHost("unix://" + Socket))
})

// Available tells whether the engine answers on Socket (DOCKER_HOST is
// not consulted: the tests use the local engine).
func Available() error {
	if _, err := os.Stat(Socket); err != nil {
		return fmt.Errorf("no Docker engine: %w", err)
	}
	api, err := engine()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = api.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
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
	api, err := engine()
	if image == "" || err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = api.ImageRemove(ctx, image, client.ImageRemoveOptions{Force: true})
}

// imageSource compiles the testprog binary statically and returns the test
// image's tag (from the binary's hash, so a rebuilt testprog gets a new
// image, and this process's ID) and its build context: a tar of a FROM
// scratch Dockerfile and the binary.
func imageSource() (tag string, buildContext *bytes.Buffer, err error) {
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
	api, err := engine()
	if err != nil {
		return "", err
	}
	tag, tarCtx, err := imageSource()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := api.ImageInspect(ctx, tag); err == nil {
		return tag, nil
	}
	res, err := api.ImageBuild(ctx, tarCtx, client.ImageBuildOptions{
		Tags: []string{tag}, Remove: true, ForceRemove: true, Version: build.BuilderV1,
	})
	if err != nil {
		return "", fmt.Errorf("dockertest: building the image: %w", err)
	}
	defer res.Body.Close()
	dec := json.NewDecoder(res.Body)
	for {
		var msg jsonstream.Message
		if err := dec.Decode(&msg); err == io.EOF {
			break
		} else if err != nil {
			return "", err
		}
		if msg.Error != nil {
			return "", fmt.Errorf("dockertest: building the image: %s", msg.Error.Message)
		}
	}
	return tag, nil
}

// Owned lists the containers (running or not) whose owner label is owner:
// their engine IDs.
func Owned(owner string) ([]string, error) {
	api, err := engine()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", OwnerLabel+"="+owner)})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range res.Items {
		if c.State != "removing" { // the agent is removing it
			out = append(out, c.ID)
		}
	}
	return out, nil
}

// RemoveOwned force-removes every container whose owner label is owner.
func RemoveOwned(owner string) error {
	ids, err := Owned(owner)
	if err != nil {
		return err
	}
	api, _ := engine()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	for _, id := range ids {
		_, err := api.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
