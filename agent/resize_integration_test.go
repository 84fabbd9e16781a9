package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"mezzo/agent/containerizer/cgroups"
	"mezzo/api/mesos"
	"mezzo/resources"
)

// A custom executor's real container grows in its cgroups when a second
// task joins it: before, a task that joined a running executor had to
// fit the memory limit of the executor and its first task, and the
// kernel OOM-killed the executor when it did not.
func TestContainerGrowsWithTasksRealCgroups(t *testing.T) {
	isolation, err := cgroupsIsolation()
	if err != nil {
		t.Skipf("needs cgroups: %v", err)
	}
	m := newFakeMaster(t)
	root := testCgroupsRoot(t, "resize")
	startTestAgent(t, m, func(c *Config) {
		c.Isolation = isolation
		c.Cgroups.Root = root
	})
	sub := register(t, m, 1)
	task := func(id, res string) *mesos.TaskInfo {
		ti := customTask(id, "E1", testExecutor)
		ti.Resources = resources.MustParse(res).Proto()
		ti.Executor.Resources = resources.MustParse("cpus:0.1;mem:32").Proto()
		return ti
	}
	limits := func() (shares, memMB int) {
		t.Helper()
		var dirs []string
		entries, _ := os.ReadDir("/sys/fs/cgroup/memory/" + root)
		for _, e := range entries {
			if e.IsDir() {
				dirs = append(dirs, filepath.Join("/sys/fs/cgroup/memory", root, e.Name()))
			}
		}
		if len(dirs) != 1 {
			t.Fatalf("containers' memory cgroups: %v", dirs)
		}
		id := filepath.Base(dirs[0])
		shares = readInt(t, filepath.Join("/sys/fs/cgroup/cpu", root, id, "cpu.shares"))
		return shares, readInt(t, filepath.Join(dirs[0], "memory.limit_in_bytes")) >> 20
	}
	for _, step := range []struct {
		id, res       string
		shares, memMB int
	}{
		{"T1", "cpus:0.5;mem:64", 614, 96},
		{"T2", "cpus:1;mem:128", 1638, 224},
	} {
		sub.send(runTask(frameworkInfo("F1"), task(step.id, step.res), 1))
		c := m.waitCall(t, "TASK_RUNNING of "+step.id, updateFor(step.id, mesos.TaskState_TASK_RUNNING))
		sub.send(ack("F1", c, 1))
		if shares, mem := limits(); shares != step.shares || mem != step.memMB {
			t.Errorf("after %s: cpu.shares %d, memory limit %d MB; want %d and %d", step.id, shares, mem, step.shares, step.memMB)
		}
	}
}

// testCgroupsRoot is a --cgroups_root for one test's agent, removed (with
// the process-wide cgroups configuration reset) once the agent has
// stopped: cleanups run last first, and the agent's was registered later.
func testCgroupsRoot(t *testing.T, name string) string {
	root := fmt.Sprintf("mezzo-test-%d-%s", os.Getpid(), name)
	t.Cleanup(func() {
		_ = cgroups.Configure(cgroups.DefaultConfig())
		dirs, _ := filepath.Glob("/sys/fs/cgroup/*/" + root)
		for _, d := range dirs {
			_ = os.Remove(d)
		}
	})
	return root
}

func readInt(t *testing.T, path string) int {
	t.Helper()
	v, err := strconv.Atoi(strings.TrimSpace(readFile(t, path)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}
