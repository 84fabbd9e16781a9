package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mezzo/agent/fetcher"
	"mezzo/api/mesos"

	"google.golang.org/protobuf/proto"
)

func TestParseContainerizers(t *testing.T) {
	for _, tc := range []struct {
		in            string
		mesos, docker bool
		errContains   string
	}{
		{"mesos", true, false, ""},
		{"docker", false, true, ""},
		{"docker,mesos", true, true, ""},
		{" mesos , docker ", true, true, ""},
		{"mesos,mesos", false, false, "listed twice"},
		{"appc", false, false, "unknown containerizer \"appc\""},
		{"mesos,", false, false, "unknown containerizer \"\""},
	} {
		m, d, err := parseContainerizers(tc.in)
		if tc.errContains != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errContains) || !strings.Contains(err.Error(), "'containerizers'") {
				t.Errorf("parseContainerizers(%q) err = %v, want %q", tc.in, err, tc.errContains)
			}
			continue
		}
		if err != nil || m != tc.mesos || d != tc.docker {
			t.Errorf("parseContainerizers(%q) = %v, %v, %v", tc.in, m, d, err)
		}
	}
}

func TestConfigFetcherAndDockerDefaults(t *testing.T) {
	c := Config{Masters: []string{"127.0.0.1:5050"}, WorkDir: t.TempDir(), LauncherPath: "/bin/true"}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	if c.FetcherCacheDir != "/tmp/mesos/fetch" || c.FetcherCacheSize != 2<<30 {
		t.Errorf("fetcher cache defaults %q %d", c.FetcherCacheDir, c.FetcherCacheSize)
	}
	bad := c
	bad.Docker.SandboxDirectory = "relative"
	if err := bad.validate(); err == nil || !strings.Contains(err.Error(), "'sandbox_directory'") {
		t.Errorf("relative sandbox_directory: %v", err)
	}
	bad = c
	bad.Containerizers = "docker,docker"
	if err := bad.validate(); err == nil {
		t.Error("duplicate containerizers accepted")
	}
	bad = c
	bad.Docker.Config = `{"auths": {"r.io": {}}}`
	if err := bad.validate(); err == nil || !strings.Contains(err.Error(), "agent config: 'docker_config': auths[\"r.io\"]: no credentials") {
		t.Errorf("docker_config without credentials: %v", err)
	}
	good := c
	good.Docker.Config = `{"auths": {"r.io": {"username": "u", "password": "hunter2"}}}`
	if err := good.validate(); err != nil {
		t.Fatal(err)
	}
	if got := dockerConfigFlag(good.Docker); got != "(inline JSON with credentials for: r.io)" {
		t.Errorf("/flags docker_config %q", got)
	}
	good.Docker.Config = "/etc/mezzo/docker.json"
	if got := dockerConfigFlag(good.Docker); got != "/etc/mezzo/docker.json" {
		t.Errorf("/flags docker_config %q", got)
	}
}

// A URI with cache=true is fetched through the cache in
// <--fetcher_cache_dir>/slaves/<agent id>, and file:// URIs outside
// --fetcher_allowed_dirs are refused.
func TestFetcherCacheAndAllowedDirs(t *testing.T) {
	cacheDir := t.TempDir()
	allowed := t.TempDir()
	src := filepath.Join(allowed, "data.txt")
	if err := os.WriteFile(src, []byte("cached bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, func(c *Config) {
		c.FetcherCacheDir = cacheDir
		c.FetcherCacheSize = 1 << 20
		c.Fetcher.AllowedFileDirs = []string{allowed}
	})
	sub := register(t, m, 1)
	task := commandTask("t1", "finish")
	task.Command.Uris = []*mesos.CommandInfo_URI{{Value: proto.String("file://" + src), Cache: proto.Bool(true)}}
	sub.send(runTask(frameworkInfo("F1"), task, 1))
	m.waitCall(t, "TASK_RUNNING", updateFor("t1", mesos.TaskState_TASK_RUNNING))
	entries, err := os.ReadDir(filepath.Join(cacheDir, "slaves", "S1"))
	if err != nil || len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), "c") {
		t.Errorf("cache dir holds %v, %v; want one entry", entries, err)
	}
	if got := readFile(t, filepath.Join(executorDirectory(t, ta, "t1"), "data.txt")); got != "cached bytes" {
		t.Errorf("fetched %q", got)
	}

	outside := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(outside, []byte("x"), 0o644)
	task2 := commandTask("t2", "finish")
	task2.Command.Uris = []*mesos.CommandInfo_URI{{Value: proto.String("file://" + outside)}}
	sub.send(runTask(frameworkInfo("F1"), task2, 1))
	c := m.waitCall(t, "TASK_FAILED", updateFor("t2", mesos.TaskState_TASK_FAILED))
	if st := c.GetStatusUpdate().GetStatus(); st.GetReason() != mesos.TaskStatus_REASON_CONTAINER_LAUNCH_FAILED ||
		!strings.Contains(st.GetMessage(), "the fetcher refused local path") || !strings.Contains(st.GetMessage(), outside) {
		t.Errorf("status %v", st)
	}
}

// An agent without --fetcher_allowed_dirs fetches no local file: a task
// naming file:///etc/shadow (or a plain path) fails TASK_FAILED with
// REASON_CONTAINER_LAUNCH_FAILED, as any fetch failure does in Mesos, with
// a message saying that the fetcher refused it and why; nothing of it
// lands in the sandbox for /files to serve.
func TestFetcherRefusesLocalPathsByDefault(t *testing.T) {
	src := filepath.Join(t.TempDir(), "data.txt")
	if err := os.WriteFile(src, []byte("agent-private"), 0o600); err != nil {
		t.Fatal(err)
	}
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, nil)
	sub := register(t, m, 1)
	for i, u := range []string{"file:///etc/shadow", src} {
		id := fmt.Sprintf("t%d", i)
		task := commandTask(id, "finish")
		task.Command.Uris = []*mesos.CommandInfo_URI{{Value: proto.String(u)}}
		sub.send(runTask(frameworkInfo("F1"), task, 1))
		c := m.waitCall(t, "TASK_FAILED", updateFor(id, mesos.TaskState_TASK_FAILED))
		st := c.GetStatusUpdate().GetStatus()
		if st.GetReason() != mesos.TaskStatus_REASON_CONTAINER_LAUNCH_FAILED ||
			!strings.Contains(st.GetMessage(), "the fetcher refused local path") ||
			!strings.Contains(st.GetMessage(), "--fetcher_allowed_dirs") {
			t.Errorf("%s: status %v", u, st)
		}
		dir := executorDirectory(t, ta, id)
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if name := e.Name(); name == "shadow" || name == "data.txt" {
				t.Errorf("%s: %s is in the sandbox", u, name)
			}
		}
	}
	if got := ta.metric(t, "slave/container_launch_errors"); got != 2 {
		t.Errorf("slave/container_launch_errors = %v, want 2", got)
	}
}

// Relative paths are resolved once, against the agent's working directory:
// the executors, whose working directory is their sandbox, get the same
// meaning.
func TestConfigResolvesRelativePaths(t *testing.T) {
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Masters: []string{"127.0.0.1:5050"}, WorkDir: "./a", RuntimeDir: "rt", FetcherCacheDir: "../cache",
		LauncherPath: "/bin/true", Fetcher: fetcher.Options{AllowedFileDirs: []string{"data", "/srv/x"}}}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	for _, p := range [][2]string{
		{c.WorkDir, filepath.Join(cwd, "a")}, {c.RuntimeDir, filepath.Join(cwd, "rt")},
		{c.FetcherCacheDir, filepath.Join(filepath.Dir(cwd), "cache")},
		{c.Fetcher.AllowedFileDirs[0], filepath.Join(cwd, "data")}, {c.Fetcher.AllowedFileDirs[1], "/srv/x"},
	} {
		if p[0] != p[1] {
			t.Errorf("resolved %q, want %q", p[0], p[1])
		}
	}
}
