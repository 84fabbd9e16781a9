package docker

import (
	"context"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"mezzo/agent/containerizer"
	"mezzo/agent/containerizer/docker/dockertest"
	"mezzo/api/mesos"

	"github.com/moby/moby/api/types/network"
	"google.golang.org/protobuf/proto"
)

// The tests below run against the real Docker engine. They build one tiny
// image (FROM scratch, holding the static testdata/testprog binary) per
// test run (dockertest.Image) and remove it, and every container they
// create, at the end.

func TestMain(m *testing.M) {
	code := m.Run()
	dockertest.RemoveImage()
	os.Exit(code)
}

// realEngine skips the test when there is no Docker engine, and returns
// the engine and the test image.
func realEngine(t *testing.T) (*engine, string) {
	t.Helper()
	if err := dockertest.Available(); err != nil {
		t.Skip(err)
	}
	image, err := dockertest.Image()
	if err != nil {
		t.Fatal(err)
	}
	return localEngine(t), image
}

func localEngine(t *testing.T) *engine {
	api, err := newEngineClient(DefaultSocket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	return &engine{api: api}
}

// newTest builds a containerizer with its own owner label, and removes
// every container of that owner when the test ends.
func newTest(t *testing.T, cfg Config) *Docker {
	t.Helper()
	if cfg.Owner == "" {
		cfg.Owner = fmt.Sprintf("mezzo-test-%s-%d", t.Name(), rand.Uint32())
	}
	if cfg.RemoveDelay == 0 {
		cfg.RemoveDelay = -1
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close(); removeOwned(t, cfg.Owner) })
	return d
}

func removeOwned(t *testing.T, owner string) {
	c := localEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := c.list(ctx, labelOwner+"="+owner)
	if err != nil {
		t.Logf("listing test containers: %v", err)
		return
	}
	for _, s := range list {
		if err := c.remove(ctx, s.ID); err != nil {
			t.Logf("removing test container %s: %v", s.ID, err)
		}
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readFile(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// task makes a command task running testprog with args (not a shell).
func task(image string, net mesos.ContainerInfo_DockerInfo_Network, args ...string) *mesos.TaskInfo {
	return &mesos.TaskInfo{
		Name:      proto.String("t"),
		TaskId:    &mesos.TaskID{Value: proto.String("t1")},
		AgentId:   &mesos.AgentID{Value: proto.String("a1")},
		Container: dockerInfo(image, net),
		Command:   &mesos.CommandInfo{Shell: proto.Bool(false), Value: proto.String(args[0]), Arguments: args[1:]},
		Resources: []*mesos.Resource{scalarRes("cpus", 0.25), scalarRes("mem", 48)},
	}
}

// freePort finds a host port in the usual ports resource range.
func freePort(t *testing.T) uint32 {
	for range 200 {
		p := 31000 + rand.IntN(1000)
		l, err := net.Listen("tcp", fmt.Sprintf(":%d", p))
		if err == nil {
			l.Close()
			return uint32(p)
		}
	}
	t.Fatal("no free port in 31000-31999")
	return 0
}

// countingProxy forwards the engine's API from a new unix socket and
// counts requests by method and unversioned path.
type countingProxy struct {
	socket string
	mu     sync.Mutex
	counts map[string]int
}

func newCountingProxy(t *testing.T) *countingProxy {
	dir, err := os.MkdirTemp("", "dkp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &countingProxy{socket: filepath.Join(dir, "docker.sock"), counts: map[string]int{}}
	l, err := net.Listen("unix", p.socket)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme, r.Out.URL.Host = "http", "docker"
		},
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", DefaultSocket)
		}},
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0), // clients hang up on followed streams
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := r.URL.Path
		if strings.HasPrefix(path, "/v1.") {
			path = path[strings.Index(path[1:], "/")+1:]
		}
		p.mu.Lock()
		p.counts[r.Method+" "+path]++
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return p
}

func (p *countingProxy) count(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts[key]
}

// A command task with BRIDGE networking and a port mapping: the test
// connects to the container through the mapped host port; cpu shares and
// the memory limit are the engine's; the container's output lands in the
// sandbox; a kill ends it and the container is removed.
func TestBridgePortMapping(t *testing.T) {
	t.Parallel()
	cl, image := realEngine(t)
	d := newTest(t, Config{})
	port := freePort(t)
	sandbox := t.TempDir()
	tk := task(image, mesos.ContainerInfo_DockerInfo_BRIDGE, "serve", ":8080", "hello from mezzo")
	tk.Container.Docker.PortMappings = []*mesos.ContainerInfo_DockerInfo_PortMapping{mapping(port, 8080, "tcp")}
	tk.Resources = append(tk.Resources, portsRes(uint64(port), uint64(port)))
	ctx := ctxT(t)
	c, err := d.LaunchTask(ctx, TaskLaunch{ContainerID: "bridge1", Sandbox: sandbox, Task: tk})
	if err != nil {
		t.Fatal(err)
	}
	if c.ID != "bridge1" || c.Pid <= 0 || c.Started.IsZero() {
		t.Errorf("container %+v", c)
	}
	if got := d.Containers(); len(got) != 1 || got[0] != "bridge1" {
		t.Errorf("containers %v", got)
	}
	var body string
	eventually(t, "the task to answer on the mapped port", func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		return true
	})
	if body != "hello from mezzo" {
		t.Errorf("reply %q", body)
	}
	eventually(t, "stdout in the sandbox", func() bool {
		return strings.Contains(readFile(t, filepath.Join(sandbox, "stdout")), "listening on :8080")
	})
	dockerID, _ := d.DockerID("bridge1")
	info, err := cl.inspect(ctx, dockerID)
	if err != nil {
		t.Fatal(err)
	}
	if info.Name != "/mesos-bridge1" || info.HostConfig.CPUShares != 256 || info.HostConfig.Memory != 48<<20 ||
		info.HostConfig.NetworkMode != "bridge" {
		t.Errorf("name %q shares %d memory %d network %q", info.Name, info.HostConfig.CPUShares, info.HostConfig.Memory, info.HostConfig.NetworkMode)
	}
	if b := info.NetworkSettings.Ports[network.MustParsePort("8080/tcp")]; len(b) == 0 || b[0].HostPort != fmt.Sprint(port) {
		t.Errorf("port bindings %v", info.NetworkSettings.Ports)
	}
	st, err := d.Usage(ctx, "bridge1")
	if err != nil {
		t.Fatal(err)
	}
	if st.GetCpusLimit() != 0.25 || st.GetMemLimitBytes() != 48<<20 || st.GetTimestamp() == 0 {
		t.Errorf("usage %v", st)
	}
	if err := d.Destroy(ctx, "bridge1", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	term, err := d.Wait(ctx, "bridge1")
	if err != nil {
		t.Fatal(err)
	}
	// Go's runtime exits with status 2 on an unhandled SIGTERM when it is
	// pid 1 (the kernel ignores the default action for init).
	if !term.Destroyed || term.ExitCode != 2 || term.Message != "Container exited with status 2" || term.Status != 2<<8 {
		t.Errorf("termination %+v", term)
	}
	if len(d.Containers()) != 0 {
		t.Errorf("containers after the end: %v", d.Containers())
	}
	eventually(t, "the container's removal", func() bool {
		_, err := cl.inspect(ctx, dockerID)
		return isNotFound(err)
	})
	if err := d.Destroy(ctx, "bridge1", 0); err != nil {
		t.Errorf("destroying an ended container: %v", err)
	}
	if _, err := d.Wait(ctx, "nope"); err == nil {
		t.Error("wait on an unknown container succeeded")
	}
}

// Environment, volumes, the sandbox mount, stdout and stderr, exit codes,
// a shell command, and an executor launched through the Containerizer
// interface.
func TestEnvironmentVolumesAndOutput(t *testing.T) {
	t.Parallel()
	_, image := realEngine(t)
	d := newTest(t, Config{})
	ctx := ctxT(t)
	hostDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(hostDir, "file"), []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(id string, tk *mesos.TaskInfo, env ...string) (string, containerizer.Termination) {
		t.Helper()
		sandbox := t.TempDir()
		if _, err := d.LaunchTask(ctx, TaskLaunch{ContainerID: id, Sandbox: sandbox, Task: tk, Env: env}); err != nil {
			t.Fatal(err)
		}
		term, err := d.Wait(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return sandbox, term
	}

	tk := task(image, mesos.ContainerInfo_DockerInfo_NONE, "env", "BASE", "FOO", "MESOS_SANDBOX", "MESOS_CONTAINER_NAME")
	tk.Command.Environment = &mesos.Environment{Variables: []*mesos.Environment_Variable{
		{Name: proto.String("FOO"), Value: proto.String("bar")}, {Name: proto.String("BASE"), Value: proto.String("overridden")}}}
	sb, term := run("env1", tk, "BASE=base")
	want := "BASE=base\nFOO=bar\nMESOS_SANDBOX=/mnt/mesos/sandbox\nMESOS_CONTAINER_NAME=mesos-env1\n"
	if got := readFile(t, filepath.Join(sb, "stdout")); got != want || term.ExitCode != 0 || term.Destroyed {
		t.Errorf("stdout %q (want %q), termination %+v", got, want, term)
	}

	tk = task(image, mesos.ContainerInfo_DockerInfo_HOST, "cat", "/data/file")
	tk.Container.Volumes = []*mesos.Volume{volume("/data", hostDir, mesos.Volume_RO)}
	sb, term = run("vol1", tk)
	if got := readFile(t, filepath.Join(sb, "stdout")); got != "from the host\n" || term.ExitCode != 0 {
		t.Errorf("stdout %q, termination %+v", got, term)
	}

	tk = task(image, mesos.ContainerInfo_DockerInfo_HOST, "write", "/data/new", "x")
	tk.Container.Volumes = []*mesos.Volume{volume("/data", hostDir, mesos.Volume_RO)}
	sb, term = run("ro1", tk)
	if term.ExitCode != 1 || !strings.Contains(readFile(t, filepath.Join(sb, "stderr")), "read-only") {
		t.Errorf("writing a read-only volume: %+v, stderr %q", term, readFile(t, filepath.Join(sb, "stderr")))
	}

	tk = task(image, mesos.ContainerInfo_DockerInfo_HOST, "write", "/mnt/mesos/sandbox/out.txt", "in the sandbox")
	sb, term = run("sandbox1", tk)
	if got := readFile(t, filepath.Join(sb, "out.txt")); got != "in the sandbox" || term.ExitCode != 0 {
		t.Errorf("sandbox file %q, termination %+v", got, term)
	}

	tk = task(image, mesos.ContainerInfo_DockerInfo_HOST, "echo", "some", "words")
	sb, _ = run("echo1", tk)
	if o, e := readFile(t, filepath.Join(sb, "stdout")), readFile(t, filepath.Join(sb, "stderr")); o != "some words\n" || e != "err: some words\n" {
		t.Errorf("stdout %q stderr %q", o, e)
	}

	tk = task(image, mesos.ContainerInfo_DockerInfo_HOST, "exit", "3")
	_, term = run("exit3", tk)
	if term.ExitCode != 3 || term.Status != 3<<8 || term.Message != "Container exited with status 3" || term.Destroyed {
		t.Errorf("termination %+v", term)
	}

	// A shell command needs /bin/sh, which a scratch image lacks: the
	// start fails with the engine's reason and nothing is left behind.
	tk = task(image, mesos.ContainerInfo_DockerInfo_HOST, "unused")
	tk.Command = &mesos.CommandInfo{Value: proto.String("echo hi")}
	if _, err := d.LaunchTask(ctx, TaskLaunch{ContainerID: "shell1", Sandbox: t.TempDir(), Task: tk}); err == nil ||
		!strings.Contains(err.Error(), "starting the Docker container") || !strings.Contains(err.Error(), "/bin/sh") {
		t.Errorf("shell launch error %v", err)
	}

	// An executor through the generic interface: its command and the
	// agent-made environment.
	sandbox := t.TempDir()
	cfg := containerizer.ContainerConfig{
		ContainerID: "exec1", Dir: sandbox, Env: []string{"MESOS_EXECUTOR_ID=e1", "MESOS_SANDBOX=" + sandbox},
		Resources: []*mesos.Resource{scalarRes("cpus", 0.1), scalarRes("mem", 32)},
		ExecutorInfo: &mesos.ExecutorInfo{
			ExecutorId: &mesos.ExecutorID{Value: proto.String("e1")},
			Command:    &mesos.CommandInfo{Shell: proto.Bool(false), Value: proto.String("env"), Arguments: []string{"MESOS_EXECUTOR_ID", "MESOS_SANDBOX"}},
			Container:  dockerInfo(image, mesos.ContainerInfo_DockerInfo_HOST),
		},
	}
	if !d.Accepts(cfg) {
		t.Fatal("Accepts is false for a DOCKER executor")
	}
	var cz containerizer.Containerizer = d
	if _, err := cz.Launch(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if term, err := cz.Wait(ctx, "exec1"); err != nil || term.ExitCode != 0 {
		t.Fatalf("executor: %+v %v", term, err)
	}
	if got := readFile(t, filepath.Join(sandbox, "stdout")); got != "MESOS_EXECUTOR_ID=e1\nMESOS_SANDBOX=/mnt/mesos/sandbox\n" {
		t.Errorf("executor stdout %q", got)
	}
	if _, err := cz.Launch(ctx, cfg); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("duplicate launch: %v", err)
	}
}

// Destroy sends SIGTERM and waits the grace period (on the injected
// clock) before SIGKILL: a container that ignores SIGTERM is still
// running until the grace has passed; one that honours it ends at once.
func TestKillGracePeriod(t *testing.T) {
	t.Parallel()
	cl, image := realEngine(t)
	fake := clockFake()
	d := newTest(t, Config{Options: containerizer.Options{Clock: fake}})
	ctx := ctxT(t)

	sandbox := t.TempDir()
	if _, err := d.LaunchTask(ctx, TaskLaunch{ContainerID: "stubborn", Sandbox: sandbox,
		Task: task(image, mesos.ContainerInfo_DockerInfo_NONE, "ignore-term")}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the SIGTERM handler", func() bool {
		return strings.Contains(readFile(t, filepath.Join(sandbox, "stdout")), "ignoring SIGTERM")
	})
	pending := fake.Pending()
	done := make(chan error, 1)
	go func() { done <- d.Destroy(ctx, "stubborn", 30*time.Second) }()
	eventually(t, "the grace timer", func() bool { return fake.Pending() > pending })
	dockerID, _ := d.DockerID("stubborn")
	if info, err := cl.inspect(ctx, dockerID); err != nil || !info.State.Running {
		t.Fatalf("the container did not outlive SIGTERM: %v", err)
	}
	select {
	case err := <-done:
		t.Fatalf("Destroy returned before the grace period: %v", err)
	default:
	}
	fake.Advance(30 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	term, _ := d.Wait(ctx, "stubborn")
	if !term.Destroyed || term.ExitCode != 137 {
		t.Errorf("termination %+v", term)
	}

	sandbox = t.TempDir()
	if _, err := d.LaunchTask(ctx, TaskLaunch{ContainerID: "polite", Sandbox: sandbox,
		Task: task(image, mesos.ContainerInfo_DockerInfo_NONE, "sleep")}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the SIGTERM handler", func() bool {
		return strings.Contains(readFile(t, filepath.Join(sandbox, "stdout")), "sleeping")
	})
	if err := d.Destroy(ctx, "polite", time.Hour); err != nil { // the fake clock never gets there
		t.Fatal(err)
	}
	term, _ = d.Wait(ctx, "polite")
	if !term.Destroyed || term.ExitCode != 0 || !strings.Contains(readFile(t, filepath.Join(sandbox, "stdout")), "got SIGTERM") {
		t.Errorf("termination %+v, stdout %q", term, readFile(t, filepath.Join(sandbox, "stdout")))
	}
}

// An agent restart: a new containerizer with the same owner and runtime
// dir re-attaches to the running containers it is told about, resumes
// copying their output without duplicating it, reports one that ended
// meanwhile with its real exit status, and removes the orphan.
func TestRecoverAfterRestart(t *testing.T) {
	t.Parallel()
	cl, image := realEngine(t)
	owner := fmt.Sprintf("mezzo-test-recover-%d", rand.Uint32())
	rt := t.TempDir()
	d1 := newTest(t, Config{Owner: owner, Options: containerizer.Options{RuntimeDir: rt}})
	ctx := ctxT(t)
	port := freePort(t)

	sbServe, sbSleep, sbOrphan := t.TempDir(), t.TempDir(), t.TempDir()
	tk := task(image, mesos.ContainerInfo_DockerInfo_BRIDGE, "serve", ":8080", "still here")
	tk.Container.Docker.PortMappings = []*mesos.ContainerInfo_DockerInfo_PortMapping{mapping(port, 8080, "")}
	tk.Resources = append(tk.Resources, portsRes(uint64(port), uint64(port)))
	for _, l := range []TaskLaunch{
		{ContainerID: "serve", Sandbox: sbServe, Task: tk},
		{ContainerID: "sleeper", Sandbox: sbSleep, Task: task(image, mesos.ContainerInfo_DockerInfo_NONE, "sleep")},
		{ContainerID: "orphan", Sandbox: sbOrphan, Task: task(image, mesos.ContainerInfo_DockerInfo_NONE, "sleep")},
	} {
		if _, err := d1.LaunchTask(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "output copied before the restart", func() bool {
		return strings.Contains(readFile(t, filepath.Join(sbServe, "stdout")), "listening") &&
			strings.Contains(readFile(t, filepath.Join(sbSleep, "stdout")), "sleeping")
	})
	sleeperID, _ := d1.DockerID("sleeper")
	orphanID, _ := d1.DockerID("orphan")
	d1.Close() // the agent process goes away; its containers keep running

	// While no agent watches, the sleeper ends (exit status 0).
	if err := cl.kill(ctx, sleeperID, "SIGTERM"); err != nil {
		t.Fatal(err)
	}
	if code, err := cl.wait(ctx, sleeperID); err != nil || code != 0 {
		t.Fatalf("sleeper: %d %v", code, err)
	}

	d2 := newTest(t, Config{Owner: owner, Options: containerizer.Options{RuntimeDir: rt}})
	got, err := d2.RecoverKnown(ctx, []string{"serve", "sleeper", "unknown-to-docker"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "serve" || got[0].Ended || got[1].ID != "sleeper" || !got[1].Ended {
		t.Fatalf("recovered %+v", got)
	}
	if _, err := cl.inspect(ctx, orphanID); !isNotFound(err) {
		t.Errorf("the orphan is still there: %v", err)
	}
	term, err := d2.Wait(ctx, "sleeper")
	if err != nil || term.ExitCode != 0 || !term.Recovered || term.Destroyed {
		t.Errorf("sleeper termination %+v %v", term, err)
	}
	if got := readFile(t, filepath.Join(sbSleep, "stdout")); got != "sleeping\ngot SIGTERM\n" {
		t.Errorf("sleeper stdout %q", got)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "still here" {
		t.Errorf("reply %q", b)
	}
	if got := d2.Containers(); len(got) != 1 || got[0] != "serve" {
		t.Errorf("containers %v", got)
	}
	if err := d2.Destroy(ctx, "serve", 5*time.Second); err != nil {
		t.Fatal(err)
	}
	term, _ = d2.Wait(ctx, "serve")
	if !term.Destroyed || !term.Recovered {
		t.Errorf("serve termination %+v", term)
	}
	if got := readFile(t, filepath.Join(sbServe, "stdout")); got != "listening on :8080\n" {
		t.Errorf("serve stdout %q (duplicated after the restart?)", got)
	}
	if entries, _ := os.ReadDir(filepath.Join(rt, "docker")); len(entries) != 0 {
		t.Errorf("log cursors left behind: %v", entries)
	}
}

// An image that is present is never pulled; an absent one is pulled, and
// a failed pull is a launch error naming the image.
func TestPullOnlyWhenAbsent(t *testing.T) {
	t.Parallel()
	_, image := realEngine(t)
	// Sandboxes first: cleanups run last-in first-out, so the containerizer
	// (and the log copying into them) stops before they are removed.
	sandboxes := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	proxy := newCountingProxy(t)
	d := newTest(t, Config{Socket: "unix://" + proxy.socket})
	ctx := ctxT(t)
	if _, err := d.LaunchTask(ctx, TaskLaunch{ContainerID: "present", Sandbox: sandboxes[0],
		Task: task(image, mesos.ContainerInfo_DockerInfo_NONE, "exit", "0")}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Wait(ctx, "present"); err != nil {
		t.Fatal(err)
	}
	if n := proxy.count("POST /images/create"); n != 0 {
		t.Errorf("pulled a present image %d times", n)
	}
	if n := proxy.count("POST /containers/create"); n != 1 {
		t.Errorf("%d creates", n)
	}
	if n := proxy.count("GET /images/" + image + "/json"); n != 1 {
		t.Errorf("%d image inspections", n)
	}

	absent := "127.0.0.1:1/mezzo-test/absent:v1"
	_, err := d.LaunchTask(ctx, TaskLaunch{ContainerID: "absent", Sandbox: sandboxes[1],
		Task: task(absent, mesos.ContainerInfo_DockerInfo_NONE, "exit", "0")})
	if err == nil || !strings.Contains(err.Error(), `failed to pull image "`+absent+`"`) {
		t.Fatalf("launch error %v", err)
	}
	if n := proxy.count("POST /images/create"); n != 1 {
		t.Errorf("%d pulls of the absent image", n)
	}
	if n := proxy.count("POST /containers/create"); n != 1 {
		t.Errorf("a container was created for an image that could not be pulled")
	}
	if got := d.Containers(); len(got) != 0 {
		t.Errorf("containers %v", got)
	}
	// The ID is free again after a failed launch.
	if _, err := d.LaunchTask(ctx, TaskLaunch{ContainerID: "absent", Sandbox: sandboxes[1],
		Task: task(image, mesos.ContainerInfo_DockerInfo_NONE, "exit", "0")}); err != nil {
		t.Errorf("relaunch after a failed launch: %v", err)
	}
}

func TestRegisteredAndBadInput(t *testing.T) {
	found := false
	for _, n := range containerizer.Names() {
		found = found || n == "docker"
	}
	if !found {
		t.Errorf("docker is not registered: %v", containerizer.Names())
	}
	if _, err := New(Config{Socket: "http://x"}); err == nil || !strings.Contains(err.Error(), "docker_socket") {
		t.Errorf("bad socket: %v", err)
	}
	if _, err := New(Config{SandboxDirectory: "rel"}); err == nil {
		t.Error("relative sandbox directory accepted")
	}
	d, err := New(Config{Socket: "/nonexistent/docker.sock", RemoveDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	tk := task("img", mesos.ContainerInfo_DockerInfo_HOST, "x")
	if _, err := d.LaunchTask(ctx, TaskLaunch{ContainerID: "c", Sandbox: "relative", Task: tk}); err == nil || !strings.Contains(err.Error(), "sandbox") {
		t.Errorf("relative sandbox: %v", err)
	}
	if _, err := d.LaunchTask(ctx, TaskLaunch{ContainerID: "c", Sandbox: t.TempDir(), Task: tk}); err == nil || !strings.Contains(err.Error(), "failed to connect to the docker API at unix:///nonexistent/docker.sock") {
		t.Errorf("no engine: %v", err)
	}
	if _, err := d.Launch(ctx, containerizer.ContainerConfig{ContainerID: "c", Dir: t.TempDir(), ExecutorInfo: &mesos.ExecutorInfo{}}); err == nil ||
		!strings.Contains(err.Error(), "'executor_info.container'") {
		t.Errorf("executor without container: %v", err)
	}
	if _, err := d.Usage(ctx, "c"); err == nil {
		t.Error("usage of an unknown container")
	}
}

// The composite sends DOCKER executors to Docker and the rest to the
// mesos containerizer, and routes later calls by container.
func TestComposite(t *testing.T) {
	t.Parallel()
	_, image := realEngine(t)
	d := newTest(t, Config{})
	m, err := containerizer.NewMesos(containerizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cz := Compose(d, m)
	ctx := ctxT(t)
	procDir, dockerDir := t.TempDir(), t.TempDir()
	if _, err := cz.Launch(ctx, containerizer.ContainerConfig{ContainerID: "proc", Dir: procDir, Path: "/bin/sh",
		Args: []string{"sh", "-c", "echo process; exec sleep 30"}, ExecutorInfo: &mesos.ExecutorInfo{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cz.Launch(ctx, containerizer.ContainerConfig{ContainerID: "ctr", Dir: dockerDir, ExecutorInfo: &mesos.ExecutorInfo{
		Command:   &mesos.CommandInfo{Shell: proto.Bool(false), Value: proto.String("sleep")},
		Container: dockerInfo(image, mesos.ContainerInfo_DockerInfo_NONE)}}); err != nil {
		t.Fatal(err)
	}
	if got := cz.Containers(); len(got) != 2 || got[0] != "ctr" || got[1] != "proc" {
		t.Errorf("containers %v", got)
	}
	if got := d.Containers(); len(got) != 1 || got[0] != "ctr" {
		t.Errorf("docker containers %v", got)
	}
	for _, id := range []string{"ctr", "proc"} {
		if err := cz.Destroy(ctx, id, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		if term, err := cz.Wait(ctx, id); err != nil || !term.Destroyed {
			t.Errorf("%s: %+v %v", id, term, err)
		}
	}
	if got := readFile(t, filepath.Join(procDir, "stdout")); got != "process\n" {
		t.Errorf("process stdout %q", got)
	}
	if cz.Docker() != d {
		t.Error("Docker() is not the docker containerizer")
	}
}

// A revocable container at low cpu priority and under a CFS quota is
// given one cpu's shares and no quota before SIGKILL, so that it dies at
// once even on a busy machine (a QoS correction waited 2–3 s for it).
func TestDestroyLiftsCPULimits(t *testing.T) {
	t.Parallel()
	cl, image := realEngine(t)
	d := newTest(t, Config{EnableCFS: true, RevocableCPULowPriority: true})
	ctx := ctxT(t)
	tk := task(image, mesos.ContainerInfo_DockerInfo_NONE, "sleep")
	tk.Resources[0].Revocable = &mesos.Resource_RevocableInfo{ThrottleInfo: &mesos.Resource_RevocableInfo_ThrottleInfo{}}
	if _, err := d.LaunchTask(ctx, TaskLaunch{ContainerID: "tenant", Sandbox: t.TempDir(), Task: tk}); err != nil {
		t.Fatal(err)
	}
	dockerID, _ := d.DockerID("tenant")
	info, err := cl.inspect(ctx, dockerID)
	if err != nil {
		t.Fatal(err)
	}
	if hc := info.HostConfig; hc.CPUShares != 4 || hc.CPUQuota != 25000 {
		t.Fatalf("launched with %d shares, quota %d; want 4 and 25000", hc.CPUShares, hc.CPUQuota)
	}
	if err := d.Destroy(ctx, "tenant", 0); err != nil {
		t.Fatal(err)
	}
	info, err = cl.inspect(ctx, dockerID)
	if err != nil {
		t.Fatal(err)
	}
	if hc := info.HostConfig; hc.CPUShares != cpuSharesPerCPU || hc.CPUQuota > 0 {
		t.Errorf("killed with %d shares, quota %d; want %d and none", hc.CPUShares, hc.CPUQuota, cpuSharesPerCPU)
	}
}
