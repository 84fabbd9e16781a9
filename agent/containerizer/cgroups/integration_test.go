package cgroups

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"mezzo/agent/containerizer"
)

// The isolators as the mesos containerizer drives them: a container whose
// executor daemonizes a grandchild is fully killed by Destroy, and its
// cgroups are gone afterwards.
func TestMesosContainerizerWithCgroupIsolators(t *testing.T) {
	m := testV1(t, Config{})
	if err := Configure(m.cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Configure(DefaultConfig()) })

	mesos, err := containerizer.NewMesos(containerizer.Options{Isolation: []string{"cgroups/cpu", "cgroups/mem", "filesystem/posix"}})
	if err != nil && strings.Contains(err.Error(), "filesystem/posix") {
		// filesystem/posix lives in package pidns; not registered here.
		mesos, err = containerizer.NewMesos(containerizer.Options{Isolation: []string{"cgroups/cpu", "cgroups/mem"}})
	}
	if err != nil {
		t.Fatal(err)
	}
	sandbox := t.TempDir()
	pidfile := filepath.Join(sandbox, "daemon.pid")
	id := "integration"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := mesos.Launch(ctx, containerizer.ContainerConfig{
		ContainerID: id,
		Path:        os.Args[0],
		Args:        []string{os.Args[0], "-test.run=^$"},
		// No MEZZO_CGTEST_CGROUP: the program forks at once, so it must
		// be born in the container's cgroups.
		Env:       []string{modeEnv + "=daemon", "MEZZO_CGTEST_PIDFILE=" + pidfile},
		Dir:       sandbox,
		Resources: res(0.25, 64),
	})
	if err != nil {
		t.Fatal(err)
	}
	// The thread that forked the program left the container's cgroups
	// (a kill freezes them; a thread of ours in there would hang us).
	tasks, _ := filepath.Glob("/proc/self/task/*/cgroup")
	for _, f := range tasks {
		if cg, err := os.ReadFile(f); err == nil && strings.Contains(string(cg), ":"+m.relPath(id)+"\n") {
			t.Errorf("a thread of the agent is still in the container's cgroups (%s):\n%s", f, cg)
		}
	}
	var daemon int
	pollUntil(t, 10*time.Second, "the daemon's pid file", func() bool {
		data, err := os.ReadFile(pidfile)
		daemon, _ = strconv.Atoi(string(data))
		return err == nil && daemon > 0
	})
	cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", c.Pid))
	for _, want := range []string{"cpu:" + m.relPath(id), "memory:" + m.relPath(id), "freezer:" + m.relPath(id)} {
		if !strings.Contains(string(cg), want) {
			t.Errorf("/proc/%d/cgroup lacks %q:\n%s", c.Pid, want, cg)
		}
	}
	// The daemon was forked by the program, after placement: it is in the
	// container's cgroups too.
	if pids, _ := m.Pids(id); !slices.Contains(pids, daemon) || !slices.Contains(pids, c.Pid) {
		t.Errorf("container cgroups hold %v, want the executor %d and its daemon %d", pids, c.Pid, daemon)
	}
	if got := readTrim(t, filepath.Join(m.dir("cpu", id), "cpu.shares")); got != "256" {
		t.Errorf("cpu.shares = %s, want 256", got)
	}
	st, err := Stats(id)
	if err != nil || st.CPUsLimit != 0.25 || st.MemLimitBytes != 64<<20 || st.Processes != 2 {
		t.Errorf("Stats = %+v, %v; want cpus_limit 0.25, mem_limit 64MB, 2 processes", st, err)
	}
	if err := mesos.Destroy(ctx, id, 0); err != nil {
		t.Fatal(err)
	}
	term, err := mesos.Wait(ctx, id)
	if err != nil || !term.Destroyed {
		t.Fatalf("Wait = %+v, %v", term, err)
	}
	if alive(daemon) {
		t.Errorf("daemonized grandchild %d survived Destroy", daemon)
	}
	for _, p := range m.Paths(id) {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists after Destroy", p)
		}
	}
	if !slices.Contains(containerizer.IsolatorNames(), "cgroups/all") {
		t.Errorf("cgroups/all not registered: %v", containerizer.IsolatorNames())
	}
}

// cgroups/mem implements Limiter and Usager as the containerizer finds them
// by type assertion.
func TestIsolatorInterfaces(t *testing.T) {
	m := testV1(t, Config{})
	if err := Configure(m.cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Configure(DefaultConfig()) })
	isos, err := containerizer.NewIsolators([]string{"cgroups/cpu", "cgroups/mem"}, containerizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := isos[0].(Limiter); ok {
		t.Error("cgroups/cpu claims to be a Limiter")
	}
	if _, ok := isos[1].(Limiter); !ok {
		t.Error("cgroups/mem is not a Limiter")
	}
	for _, iso := range isos {
		if _, ok := iso.(Usager); !ok {
			t.Errorf("%s is not a Usager", iso.Name())
		}
	}
	if _, err := containerizer.NewIsolators([]string{"cgroups/cpu"}, containerizer.Options{}); err != nil {
		t.Error(err)
	}
}
