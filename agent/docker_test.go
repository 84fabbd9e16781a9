package agent

import (
	"encoding/base64"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"mezzo/agent/containerizer/docker/dockertest"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/internal/clock"

	"google.golang.org/protobuf/proto"
)

// The tests below run Docker command tasks through the agent against the
// real Docker engine (skipped without one), with a fake master.

// dockerAgentSetup skips without an engine and returns the test image and
// a Config mutation selecting --containerizers=docker,mesos on workDir;
// the agent's containers are removed when the test ends.
func dockerAgentSetup(t *testing.T, workDir string) (string, func(*Config)) {
	t.Helper()
	if err := dockertest.Available(); err != nil {
		t.Skip(err)
	}
	image, err := dockertest.Image()
	if err != nil {
		t.Fatal(err)
	}
	owner := filepath.Join(workDir, "meta", "docker") // the agent's owner label
	t.Cleanup(func() {
		if err := dockertest.RemoveOwned(owner); err != nil {
			t.Logf("removing the test's containers: %v", err)
		}
	})
	return image, func(c *Config) {
		c.WorkDir = workDir
		c.Containerizers = "docker,mesos"
		c.Docker.RemoveDelay = -1
	}
}

func dockerTask(id, image string, network mesos.ContainerInfo_DockerInfo_Network, args ...string) *mesos.TaskInfo {
	t := commandTask(id, "")
	t.Command = &mesos.CommandInfo{Shell: proto.Bool(false), Value: proto.String(args[0]), Arguments: args[1:]}
	t.Container = &mesos.ContainerInfo{
		Type:   mesos.ContainerInfo_DOCKER.Enum(),
		Docker: &mesos.ContainerInfo_DockerInfo{Image: proto.String(image), Network: network.Enum()},
	}
	t.Resources = append(t.Resources, &mesos.Resource{
		Name: proto.String("mem"), Type: mesos.Value_SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: proto.Float64(48)},
	})
	return t
}

// freeHostPort finds a free host port in the agent's ports range.
func freeHostPort(t *testing.T) uint32 {
	for range 200 {
		p := 31000 + rand.IntN(1000)
		if l, err := net.Listen("tcp", fmt.Sprintf(":%d", p)); err == nil {
			l.Close()
			return uint32(p)
		}
	}
	t.Fatal("no free port in 31000-31999")
	return 0
}

func httpGet(url string) (string, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// waitUpdate waits for the task's update in state, checks it came from the
// "executor", and acknowledges it.
func waitUpdate(t *testing.T, m *fakeMaster, sub *fakeSub, task string, state mesos.TaskState) *mesos.TaskStatus {
	t.Helper()
	c := m.waitCall(t, task+" "+state.String(), updateFor(task, state))
	st := c.GetStatusUpdate().GetStatus()
	if st.GetSource() != mesos.TaskStatus_SOURCE_EXECUTOR {
		t.Errorf("%s %s: source %v, want SOURCE_EXECUTOR", task, state, st.GetSource())
	}
	sub.send(ack("F1", c, 1))
	return st
}

// A Docker command task with BRIDGE networking and a port mapping from its
// ports resources runs through the agent: STARTING, RUNNING, the test
// reaches it on the host port, its HTTP health check (container port
// 8080, probed through the mapping) reports healthy, its output is in the
// sandbox; it survives an agent restart (recovered, still serving, no
// terminal update), and is then killed. A second task ignores SIGTERM: its
// kill sends TASK_KILLING and waits the kill policy's grace period on the
// agent's clock before SIGKILL. Exit codes map to FINISHED and FAILED.
func TestDockerTaskThroughAgent(t *testing.T) {
	workDir := t.TempDir()
	image, docker := dockerAgentSetup(t, workDir)
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, docker)
	sub := register(t, m, 1)

	fw := frameworkInfo("F1")
	fw.Checkpoint = proto.Bool(true)
	fw.Capabilities = []*mesos.FrameworkInfo_Capability{{Type: mesos.FrameworkInfo_Capability_TASK_KILLING_STATE.Enum()}}

	port := freeHostPort(t)
	web := dockerTask("web", image, mesos.ContainerInfo_DockerInfo_BRIDGE, "serve", ":8080", "hello from a docker task")
	web.Container.Docker.PortMappings = []*mesos.ContainerInfo_DockerInfo_PortMapping{
		{HostPort: proto.Uint32(port), ContainerPort: proto.Uint32(8080), Protocol: proto.String("tcp")},
	}
	web.Resources = append(web.Resources, &mesos.Resource{
		Name: proto.String("ports"), Type: mesos.Value_RANGES.Enum(),
		Ranges: &mesos.Value_Ranges{Range: []*mesos.Value_Range{{Begin: proto.Uint64(uint64(port)), End: proto.Uint64(uint64(port))}}},
	})
	web.HealthCheck = &mesos.HealthCheck{
		Type:            mesos.HealthCheck_HTTP.Enum(),
		Http:            &mesos.HealthCheck_HTTPCheckInfo{Port: proto.Uint32(8080), Path: proto.String("/")},
		DelaySeconds:    proto.Float64(1),
		IntervalSeconds: proto.Float64(1),
	}
	sub.send(runTask(fw, web, 1))
	sub.send(runTask(fw, dockerTask("ok", image, mesos.ContainerInfo_DockerInfo_NONE, "exit", "0"), 1))
	sub.send(runTask(fw, dockerTask("bad", image, mesos.ContainerInfo_DockerInfo_NONE, "exit", "3"), 1))

	waitUpdate(t, m, sub, "web", mesos.TaskState_TASK_STARTING)
	running := waitUpdate(t, m, sub, "web", mesos.TaskState_TASK_RUNNING)
	if running.GetContainerStatus().GetContainerId().GetValue() == "" {
		t.Errorf("TASK_RUNNING without container_status.container_id: %v", running)
	}
	var body string
	eventually(t, "the task to answer on host port", func() bool {
		b, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/", port))
		body = b
		return err == nil
	})
	if body != "hello from a docker task" {
		t.Errorf("reply %q", body)
	}
	// The health check's first probe runs once the fake clock passes its
	// delay; its success is a TASK_RUNNING with healthy=true.
	var healthy *mesos.TaskStatus
	eventually(t, "a healthy TASK_RUNNING", func() bool {
		m.mu.Lock()
		for i, c := range m.calls {
			st := c.GetStatusUpdate().GetStatus()
			if !m.taken[i] && st.GetTaskId().GetValue() == "web" && st.Healthy != nil {
				m.taken[i] = true
				healthy = st
			}
		}
		m.mu.Unlock()
		if healthy == nil {
			ta.advance(t, m, sub, time.Second)
		}
		return healthy != nil
	})
	if !healthy.GetHealthy() || healthy.GetReason() != mesos.TaskStatus_REASON_TASK_HEALTH_CHECK_STATUS_UPDATED ||
		healthy.GetState() != mesos.TaskState_TASK_RUNNING {
		t.Errorf("health update %v", healthy)
	}
	sub.send(&protocol.AgentEvent{Type: protocol.AgentEvent_ACKNOWLEDGE.Enum(), Epoch: proto.Uint64(1),
		Acknowledge: &protocol.AgentEvent_Acknowledge{FrameworkId: fw.Id, TaskId: healthy.TaskId, Uuid: healthy.Uuid}})

	for _, id := range []string{"ok", "bad"} {
		waitUpdate(t, m, sub, id, mesos.TaskState_TASK_STARTING)
		waitUpdate(t, m, sub, id, mesos.TaskState_TASK_RUNNING)
	}
	fin := waitUpdate(t, m, sub, "ok", mesos.TaskState_TASK_FINISHED)
	if fin.GetMessage() != "Container exited with status 0" {
		t.Errorf("FINISHED message %q", fin.GetMessage())
	}
	failed := waitUpdate(t, m, sub, "bad", mesos.TaskState_TASK_FAILED)
	if failed.GetMessage() != "Container exited with status 3" {
		t.Errorf("FAILED message %q", failed.GetMessage())
	}

	// The container's output is in the sandbox.
	dir := executorDirectory(t, ta, "web")
	eventually(t, "the task's stdout in the sandbox", func() bool {
		b, _ := readFileOK(filepath.Join(dir, "stdout"))
		return strings.Contains(b, "listening on :8080")
	})

	// Agent restart: the task keeps running and is recovered.
	fake := clock.NewFake(time.Unix(1_000_000_000, 0))
	ta2, err := restartTestAgent(t, m, ta, func(c *Config) { c.Clock = fake })
	if err != nil {
		t.Fatal(err)
	}
	ta2.clock = fake
	sub = register(t, m, 1)
	if got := sub.call.GetSubscribe().GetAgentInfo().GetId().GetValue(); got != "S1" {
		t.Fatalf("re-registered as %q, want S1", got)
	}
	ta2.sync(t, m, sub, 1)
	if got := ta2.metric(t, "slave/tasks_running"); got != 1 {
		t.Errorf("after the restart slave/tasks_running = %v, want 1 (the recovered Docker task)", got)
	}
	if b, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/", port)); err != nil || b != "hello from a docker task" {
		t.Errorf("after the restart the task answers %q, %v", b, err)
	}
	m.noCall(t, "a terminal update of the recovered task", func(c *protocol.AgentCall) bool {
		st := c.GetStatusUpdate().GetStatus()
		return st.GetTaskId().GetValue() == "web" && st.GetState() != mesos.TaskState_TASK_RUNNING
	})

	// Kill with grace: SIGTERM is ignored, SIGKILL comes once the grace
	// period has passed on the agent's clock.
	stubborn := dockerTask("stubborn", image, mesos.ContainerInfo_DockerInfo_NONE, "ignore-term")
	stubborn.KillPolicy = &mesos.KillPolicy{GracePeriod: &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(30 * time.Second))}}
	sub.send(runTask(fw, stubborn, 1))
	waitUpdate(t, m, sub, "stubborn", mesos.TaskState_TASK_STARTING)
	waitUpdate(t, m, sub, "stubborn", mesos.TaskState_TASK_RUNNING)
	sdir := executorDirectory(t, ta2, "stubborn")
	eventually(t, "the stubborn task's output", func() bool {
		b, _ := readFileOK(filepath.Join(sdir, "stdout"))
		return strings.Contains(b, "ignoring SIGTERM")
	})
	sub.send(killTask("F1", "stubborn", 1))
	waitUpdate(t, m, sub, "stubborn", mesos.TaskState_TASK_KILLING)
	ta2.sync(t, m, sub, 1)
	m.noCall(t, "TASK_KILLED before the grace period", updateFor("stubborn", mesos.TaskState_TASK_KILLED))
	var killed *protocol.AgentCall
	eventually(t, "TASK_KILLED after the grace period", func() bool {
		m.mu.Lock()
		for i, c := range m.calls {
			if !m.taken[i] && updateFor("stubborn", mesos.TaskState_TASK_KILLED)(c) {
				m.taken[i] = true
				killed = c
			}
		}
		m.mu.Unlock()
		if killed == nil {
			ta2.advance(t, m, sub, 10*time.Second)
		}
		return killed != nil
	})
	if msg := killed.GetStatusUpdate().GetStatus().GetMessage(); msg != "Container exited with status 137" {
		t.Errorf("KILLED message %q, want the SIGKILL exit status 137", msg)
	}

	// The recovered task is killed (it exits on SIGTERM).
	sub.send(killTask("F1", "web", 1))
	waitUpdate(t, m, sub, "web", mesos.TaskState_TASK_KILLING)
	waitUpdate(t, m, sub, "web", mesos.TaskState_TASK_KILLED)
	if _, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/", port)); err == nil {
		t.Error("the killed task still answers")
	}
}

// A DOCKER command task on an agent without the docker containerizer fails
// with a launch error naming the flag.
func TestDockerTaskWithoutDockerContainerizer(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, nil)
	sub := register(t, m, 1)
	sub.send(runTask(frameworkInfo("F1"), dockerTask("d1", "busybox", mesos.ContainerInfo_DockerInfo_HOST, "true"), 1))
	c := m.waitCall(t, "TASK_FAILED", updateFor("d1", mesos.TaskState_TASK_FAILED))
	st := c.GetStatusUpdate().GetStatus()
	if st.GetReason() != mesos.TaskStatus_REASON_CONTAINER_LAUNCH_FAILED || !strings.Contains(st.GetMessage(), "--containerizers=mesos") {
		t.Errorf("status %v", st)
	}
	_ = ta
}

// executorDirectory is the sandbox of the executor running task (from
// /state).
func executorDirectory(t *testing.T, ta *testAgent, task string) string {
	t.Helper()
	for _, f := range ta.state(t)["frameworks"].([]any) {
		for _, e := range f.(map[string]any)["executors"].([]any) {
			ex := e.(map[string]any)
			if ex["id"] == task {
				return ex["directory"].(string)
			}
		}
	}
	t.Fatalf("no executor for task %s in /state", task)
	return ""
}

func readFileOK(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

// A Docker task failing its health check consecutive_failures times is
// killed; its TASK_KILLED carries healthy=false.
func TestDockerTaskKilledByHealthCheck(t *testing.T) {
	workDir := t.TempDir()
	image, docker := dockerAgentSetup(t, workDir)
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, docker)
	sub := register(t, m, 1)
	sick := dockerTask("sick", image, mesos.ContainerInfo_DockerInfo_HOST, "sleep")
	sick.HealthCheck = &mesos.HealthCheck{
		Type:                mesos.HealthCheck_TCP.Enum(),
		Tcp:                 &mesos.HealthCheck_TCPCheckInfo{Port: proto.Uint32(freeHostPort(t))}, // nobody listens
		DelaySeconds:        proto.Float64(1),
		IntervalSeconds:     proto.Float64(1),
		GracePeriodSeconds:  proto.Float64(0),
		ConsecutiveFailures: proto.Uint32(1),
	}
	sub.send(runTask(frameworkInfo("F1"), sick, 1))
	waitUpdate(t, m, sub, "sick", mesos.TaskState_TASK_STARTING)
	waitUpdate(t, m, sub, "sick", mesos.TaskState_TASK_RUNNING)
	var unhealthy *protocol.AgentCall
	eventually(t, "an unhealthy TASK_RUNNING", func() bool {
		m.mu.Lock()
		for i, c := range m.calls {
			if st := c.GetStatusUpdate().GetStatus(); !m.taken[i] && st.GetTaskId().GetValue() == "sick" && st.Healthy != nil {
				m.taken[i] = true
				unhealthy = c
			}
		}
		m.mu.Unlock()
		if unhealthy == nil {
			ta.advance(t, m, sub, time.Second)
		}
		return unhealthy != nil
	})
	if st := unhealthy.GetStatusUpdate().GetStatus(); st.GetHealthy() || !strings.Contains(st.GetMessage(), "TCP health check failed") {
		t.Errorf("health update %v", st)
	}
	sub.send(ack("F1", unhealthy, 1))
	// `sleep` as the container's first process ignores SIGTERM, so the
	// kill waits the grace period on the agent's clock before SIGKILL:
	// move the clock on while waiting (how far it moved while the health
	// checks ran depends on the machine's load), a PING before each step
	// (advance).
	var killed *mesos.TaskStatus
	eventually(t, "sick TASK_KILLED", func() bool {
		m.mu.Lock()
		for i, c := range m.calls {
			if !m.taken[i] && updateFor("sick", mesos.TaskState_TASK_KILLED)(c) {
				m.taken[i] = true
				killed = c.GetStatusUpdate().GetStatus()
			}
		}
		m.mu.Unlock()
		if killed == nil {
			ta.advance(t, m, sub, time.Second)
		}
		return killed != nil
	})
	if killed.GetSource() != mesos.TaskStatus_SOURCE_EXECUTOR {
		t.Errorf("TASK_KILLED source %v, want SOURCE_EXECUTOR", killed.GetSource())
	}
	if killed.Healthy == nil || killed.GetHealthy() {
		t.Errorf("TASK_KILLED after failed health checks has healthy=%v, want false", killed.Healthy)
	}
}

// fakeRegistry is a Docker registry that knows no images and demands
// HTTP Basic credentials user:pass; it records the Authorization headers
// the engine sent.
type fakeRegistry struct {
	user, pass string
	mu         sync.Mutex
	seen       []string // "user:pass" of each request with Basic credentials
}

func (f *fakeRegistry) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Docker-Distribution-Api-Version", "registry/2.0")
	user, pass, ok := r.BasicAuth()
	if ok {
		f.mu.Lock()
		f.seen = append(f.seen, user+":"+pass)
		f.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/json")
	if !ok || user != f.user || pass != f.pass {
		w.Header().Set("WWW-Authenticate", `Basic realm="mezzo-test"`)
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
		return
	}
	if r.URL.Path == "/v2/" {
		fmt.Fprint(w, `{}`)
		return
	}
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprint(w, `{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}`)
}

func (f *fakeRegistry) saw(cred string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Contains(f.seen, cred)
}

// A task whose image is missing pulls it with --docker_config's
// credentials for its registry, through the real engine: with a wrong
// password the registry refuses and the task fails at once with
// REASON_CONTAINER_LAUNCH_FAILED and the registry's reason. A docker
// config fetched into the sandbox (a .dockercfg URI) wins over the flag:
// its right password reaches the registry, which has no such image.
func TestDockerPullCredentials(t *testing.T) {
	workDir := t.TempDir()
	_, docker := dockerAgentSetup(t, workDir)
	reg := &fakeRegistry{user: "mezzo", pass: "s3cret"}
	srv := httptest.NewServer(reg) // 127.0.0.1: an insecure registry to the engine by default
	defer srv.Close()
	host := srv.Listener.Addr().String()
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	cfgDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(cfgDir, ".dockercfg"), []byte(`{"`+host+`": {"auth": "`+b64("mezzo:s3cret")+`"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	m := newFakeMaster(t)
	startTestAgent(t, m, func(c *Config) {
		docker(c)
		c.Docker.Config = `{"auths": {"http://` + host + `/v2/": {"auth": "` + b64("mezzo:wrong") + `"}}}`
		c.Fetcher.AllowedFileDirs = []string{cfgDir}
	})
	sub := register(t, m, 1)
	image := host + "/private/app:v1"

	sub.send(runTask(frameworkInfo("F1"), dockerTask("bad-creds", image, mesos.ContainerInfo_DockerInfo_NONE, "x"), 1))
	waitUpdate(t, m, sub, "bad-creds", mesos.TaskState_TASK_STARTING)
	st := m.waitCall(t, "TASK_FAILED", updateFor("bad-creds", mesos.TaskState_TASK_FAILED)).GetStatusUpdate().GetStatus()
	want := `Failed to launch container: launch `
	if st.GetReason() != mesos.TaskStatus_REASON_CONTAINER_LAUNCH_FAILED || !strings.HasPrefix(st.GetMessage(), want) ||
		!strings.Contains(st.GetMessage(), `failed to pull image "`+image+`": with the credentials for `+host+` from --docker_config`) ||
		!strings.Contains(st.GetMessage(), "unauthorized") {
		t.Errorf("status %v: %q", st.GetReason(), st.GetMessage())
	}
	if !reg.saw("mezzo:wrong") {
		t.Errorf("the registry never saw --docker_config's credentials; it saw %q", reg.seen)
	}

	task := dockerTask("sandbox-creds", image, mesos.ContainerInfo_DockerInfo_NONE, "x")
	task.Command.Uris = []*mesos.CommandInfo_URI{{Value: proto.String(filepath.Join(cfgDir, ".dockercfg"))}}
	sub.send(runTask(frameworkInfo("F1"), task, 1))
	waitUpdate(t, m, sub, "sandbox-creds", mesos.TaskState_TASK_STARTING)
	st = m.waitCall(t, "TASK_FAILED", updateFor("sandbox-creds", mesos.TaskState_TASK_FAILED)).GetStatusUpdate().GetStatus()
	if st.GetReason() != mesos.TaskStatus_REASON_CONTAINER_LAUNCH_FAILED || !strings.Contains(st.GetMessage(), "from the sandbox's docker config") ||
		!strings.Contains(st.GetMessage(), "manifest unknown") {
		t.Errorf("status %v: %q", st.GetReason(), st.GetMessage())
	}
	if !reg.saw("mezzo:s3cret") {
		t.Errorf("the registry never saw the sandbox's credentials; it saw %q", reg.seen)
	}
}
