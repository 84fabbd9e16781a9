package docker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// The Engine API calls the containerizer makes, over the maintained
// client library, with the semantics it relies on (a kill or removal of a
// container that is gone is not an error, a pull reports the stream's
// error).

// Labels put on every container, so that a restarted agent finds its own
// containers (and only its own: several agents may share one engine).
const (
	labelOwner     = "org.mezzo.owner"        // the agent instance (Config.Owner)
	labelContainer = "org.mezzo.container_id" // the Mesos container ID
	labelSandbox   = "org.mezzo.sandbox"      // the host sandbox directory
)

// engine is the Engine API as the containerizer uses it.
type engine struct {
	api        *client.Client
	negotiated atomic.Bool
}

// negotiate agrees on the API version with the engine, once (Launch and
// Recover call it first; every other call concerns a container they
// made). The library would negotiate on the first call too, but would
// then send it at its own newest version if negotiation failed, and the
// engine's "client version is too new" would hide the reason.
func (e *engine) negotiate(ctx context.Context) error {
	if e.negotiated.Load() {
		return nil
	}
	if _, err := e.api.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return fmt.Errorf("docker engine at %s: %w", e.api.DaemonHost(), err)
	}
	e.negotiated.Store(true)
	return nil
}

// createSpec is what POST /containers/create takes.
type createSpec struct {
	config container.Config
	host   container.HostConfig
}

func isNotFound(err error) bool { return err != nil && cerrdefs.IsNotFound(err) }
func isConflict(err error) bool { return err != nil && cerrdefs.IsConflict(err) }

func parseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// imagePresent reports whether the engine has the image locally.
func (e *engine) imagePresent(ctx context.Context, image string) (bool, error) {
	_, err := e.api.ImageInspect(ctx, image)
	switch {
	case err == nil:
		return true, nil
	case isNotFound(err):
		return false, nil
	}
	return false, err
}

// pull fetches the image, sending registryAuth (an X-Registry-Auth value,
// "" for none). The engine answers 200 and streams progress; a failure
// (a registry refusing the credentials, an unknown image) arrives in the
// stream, and is returned.
func (e *engine) pull(ctx context.Context, image, registryAuth string) error {
	resp, err := e.api.ImagePull(ctx, image, client.ImagePullOptions{RegistryAuth: registryAuth})
	if err != nil {
		return err
	}
	defer resp.Close()
	return resp.Wait(ctx)
}

func (e *engine) create(ctx context.Context, name string, s *createSpec) (string, error) {
	res, err := e.api.ContainerCreate(ctx, client.ContainerCreateOptions{
		Name: name, Config: &s.config, HostConfig: &s.host,
	})
	return res.ID, err
}

func (e *engine) start(ctx context.Context, id string) error {
	_, err := e.api.ContainerStart(ctx, id, client.ContainerStartOptions{})
	return err
}

// wait blocks until the container is not running and returns its exit
// code.
func (e *engine) wait(ctx context.Context, id string) (int, error) {
	w := e.api.ContainerWait(ctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case r := <-w.Result:
		if r.Error != nil && r.Error.Message != "" {
			return int(r.StatusCode), fmt.Errorf("%s", r.Error.Message)
		}
		return int(r.StatusCode), nil
	case err := <-w.Error:
		return 0, err
	}
}

// kill sends a signal; a container that is not running (409) or gone
// (404) is not an error: the goal is that it does not run.
func (e *engine) kill(ctx context.Context, id, signal string) error {
	_, err := e.api.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: signal})
	if isConflict(err) || isNotFound(err) {
		return nil
	}
	return err
}

// unthrottle gives a container one cpu's shares and no CFS quota (-1
// removes it), so that its processes, about to be killed, get scheduled
// to exit. A container that is gone is not an error.
func (e *engine) unthrottle(ctx context.Context, id string) error {
	_, err := e.api.ContainerUpdate(ctx, id, client.ContainerUpdateOptions{
		Resources: &container.Resources{CPUShares: cpuSharesPerCPU, CPUQuota: -1}})
	if isConflict(err) || isNotFound(err) {
		return nil
	}
	return err
}

// inspect returns the container's description; State, Config and
// HostConfig are never nil.
func (e *engine) inspect(ctx context.Context, id string) (*container.InspectResponse, error) {
	res, err := e.api.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return nil, err
	}
	info := &res.Container
	if info.State == nil {
		info.State = &container.State{}
	}
	if info.Config == nil {
		info.Config = &container.Config{}
	}
	if info.HostConfig == nil {
		info.HostConfig = &container.HostConfig{}
	}
	return info, nil
}

// remove deletes a container (forcibly, with its anonymous volumes); a
// container already gone is not an error.
func (e *engine) remove(ctx context.Context, id string) error {
	_, err := e.api.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if isNotFound(err) {
		return nil
	}
	return err
}

// list returns all containers (running or not) with the given label
// (key=value).
func (e *engine) list(ctx context.Context, label string) ([]container.Summary, error) {
	res, err := e.api.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", label)})
	return res.Items, err
}

// logs opens the container's multiplexed stdout/stderr stream, following
// it until the container stops, each entry prefixed with its timestamp.
// since (if non-zero) skips entries logged before it.
func (e *engine) logs(ctx context.Context, id string, since time.Time) (io.ReadCloser, error) {
	opts := client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: true, Timestamps: true}
	if !since.IsZero() {
		opts.Since = fmt.Sprintf("%d.%09d", since.Unix(), since.Nanosecond())
	}
	return e.api.ContainerLogs(ctx, id, opts)
}

// stats returns one sample of the container's statistics.
func (e *engine) stats(ctx context.Context, id string) (*container.StatsResponse, error) {
	res, err := e.api.ContainerStats(ctx, id, client.ContainerStatsOptions{})
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var out container.StatsResponse
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("docker engine: decoding the statistics: %w", err)
	}
	return &out, nil
}
