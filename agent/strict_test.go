package agent

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
)

// strictFixture checkpoints an agent A-S1 with frameworks F1 (executors
// e1 with tasks t1, t2, and e2 with task t3) and F2 (executor e3 with
// task t4), and returns the meta dir.
func strictFixture(t *testing.T) metaDir {
	t.Helper()
	m := metaDir(t.TempDir())
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(m.checkpointAgent(&mesos.AgentInfo{Hostname: proto.String("h"), Id: agentIDProto("A-S1")}, "boot", 3))
	for _, fw := range []string{"F1", "F2"} {
		must(m.checkpointFramework("A-S1", checkpointingFramework(fw)))
	}
	for _, ex := range []struct{ fw, ex, cid string }{{"F1", "e1", "c1"}, {"F1", "e2", "c2"}, {"F2", "e3", "c3"}} {
		info := &mesos.ExecutorInfo{ExecutorId: &mesos.ExecutorID{Value: proto.String(ex.ex)}, Command: &mesos.CommandInfo{Value: proto.String("x")}}
		must(m.checkpointExecutor("A-S1", ex.fw, info, kindCustom, ex.cid, true))
	}
	for _, tk := range []struct{ fw, ex, cid, task string }{{"F1", "e1", "c1", "t1"}, {"F1", "e1", "c1", "t2"}, {"F1", "e2", "c2", "t3"}, {"F2", "e3", "c3", "t4"}} {
		must(m.checkpointTask("A-S1", tk.fw, tk.ex, tk.cid, customTask(tk.task, tk.ex, "x"), true))
	}
	return m
}

// summary lists what was recovered as "fw/executor/task" entries (and
// "fw/executor/" for an executor), sorted.
func recoveredSummary(r *recovered) []string {
	var out []string
	for _, fw := range r.frameworks {
		for _, e := range fw.executors {
			prefix := fw.info.GetId().GetValue() + "/" + e.info.GetExecutorId().GetValue() + "/"
			out = append(out, prefix)
			for _, t := range e.tasks {
				out = append(out, prefix+t.GetTaskId().GetValue())
			}
		}
	}
	slices.Sort(out)
	return out
}

// Mesos's --strict, against torn and garbage checkpoint files: strict,
// recovery fails with an error naming the file and the two ways forward;
// lenient (--strict=false), exactly the entity the file describes is left
// out, one error is kept, and everything else is recovered.
func TestStrictRecovery(t *testing.T) {
	all := []string{"F1/e1/", "F1/e1/t1", "F1/e1/t2", "F1/e2/", "F1/e2/t3", "F2/e3/", "F2/e3/t4"}
	exDir := func(m metaDir, fw, ex string) string { return m.executorDir("A-S1", fw, ex) }
	torn := func(b []byte) []byte { return b[:len(b)-5] }
	garbage := func([]byte) []byte { return []byte("\x00\x01garbage, not a checkpoint at all") }
	for _, tc := range []struct {
		name     string
		file     func(m metaDir) string
		damage   func([]byte) []byte
		lenient  []string // recovered with --strict=false
		newAgent bool     // lenient: the agent's identity is lost
	}{
		{"torn task.info", func(m metaDir) string { return filepath.Join(m.taskDir("A-S1", "F1", "e1", "c1", "t2"), "task.info") },
			torn, []string{"F1/e1/", "F1/e1/t1", "F1/e2/", "F1/e2/t3", "F2/e3/", "F2/e3/t4"}, false},
		{"garbage task.info", func(m metaDir) string { return filepath.Join(m.taskDir("A-S1", "F2", "e3", "c3", "t4"), "task.info") },
			garbage, []string{"F1/e1/", "F1/e1/t1", "F1/e1/t2", "F1/e2/", "F1/e2/t3", "F2/e3/"}, false},
		{"empty task.info", func(m metaDir) string { return filepath.Join(m.taskDir("A-S1", "F1", "e2", "c2", "t3"), "task.info") },
			func([]byte) []byte { return nil }, []string{"F1/e1/", "F1/e1/t1", "F1/e1/t2", "F1/e2/", "F2/e3/", "F2/e3/t4"}, false},
		{"torn executor.info", func(m metaDir) string { return filepath.Join(exDir(m, "F1", "e2"), "executor.info") },
			torn, []string{"F1/e1/", "F1/e1/t1", "F1/e1/t2", "F2/e3/", "F2/e3/t4"}, false},
		{"garbage executor.kind", func(m metaDir) string { return filepath.Join(exDir(m, "F1", "e1"), "executor.kind") },
			garbage, []string{"F1/e2/", "F1/e2/t3", "F2/e3/", "F2/e3/t4"}, false},
		{"garbage framework.info", func(m metaDir) string { return m.frameworkInfoPath("A-S1", "F2") },
			garbage, []string{"F1/e1/", "F1/e1/t1", "F1/e1/t2", "F1/e2/", "F1/e2/t3"}, false},
		{"torn slave.info", func(m metaDir) string { return m.agentInfoPath("A-S1") }, torn, nil, true},
		{"garbage epoch", func(m metaDir) string { return m.epochPath() }, garbage, all, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := strictFixture(t)
			if r, err := recoverMeta(m, m, "boot", nil); err != nil || !slices.Equal(recoveredSummary(r), all) {
				t.Fatalf("intact checkpoint: %v %v", recoveredSummary(r), err)
			}
			file := tc.file(m)
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, tc.damage(b), 0o644); err != nil {
				t.Fatal(err)
			}

			_, err = recoverMeta(m, m, "boot", &recoveryErrs{})
			var ce *CorruptCheckpointError
			if err == nil || !errors.As(err, &ce) || ce.File != file {
				t.Fatalf("strict: %v, want a *CorruptCheckpointError for %s", err, file)
			}
			for _, want := range []string{file, "--strict=false", "remove the file"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("strict error %q lacks %q", err, want)
				}
			}

			errs := &recoveryErrs{lenient: true}
			r, err := recoverMeta(m, m, "boot", errs)
			if err != nil {
				t.Fatalf("lenient: %v", err)
			}
			if len(errs.skipped) != 1 || !strings.Contains(errs.skipped[0].Error(), file) {
				t.Errorf("lenient: kept errors %v, want one naming %s", errs.skipped, file)
			}
			if got := recoveredSummary(r); !slices.Equal(got, tc.lenient) {
				t.Errorf("lenient: recovered %v, want %v", got, tc.lenient)
			}
			if (r.info == nil) != tc.newAgent {
				t.Errorf("lenient: agent info %v, want lost=%v", r.info, tc.newAgent)
			}
		})
	}
}

// A torn task.info after a restart: the agent with the default --strict
// refuses to start, naming the file; with --strict=false it re-registers
// as the same agent with every other task, and counts the error in
// slave/recovery_errors.
func TestStrictFalseRecoversTheRest(t *testing.T) {
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, nil)
	sub := register(t, m, 1)
	sub.send(runTask(checkpointingFramework("F1"), customTask("ta", "ex-a", "exec sleep 30"), 1))
	sub.send(runTask(checkpointingFramework("F1"), customTask("tb", "ex-b", "exec sleep 30"), 1))
	eventually(t, "executors started", func() bool { return pidOf(t, ta, "F1", "ex-a") > 0 && pidOf(t, ta, "F1", "ex-b") > 0 })
	ta.Stop()
	ta.srv.Close()
	tasks, _ := filepath.Glob(filepath.Join(ta.dir, "meta", "slaves", "S1", "frameworks", "F1", "executors", "ex-a", "runs", "latest", "tasks", "ta", "task.info"))
	if len(tasks) != 1 {
		t.Fatalf("task.info of ta: %v", tasks)
	}
	if real, err := filepath.EvalSymlinks(tasks[0]); err == nil {
		tasks[0] = real // the error names the file by its container's path
	}
	b, err := os.ReadFile(tasks[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tasks[0], b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}

	cfg := ta.cfg
	cfg.Clock, cfg.Logger, cfg.HTTPClient, cfg.Containerizer = nil, nil, nil, nil
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tasks[0]) || !strings.Contains(err.Error(), "--strict=false") {
		t.Fatalf("strict restart: %v, want an error naming %s and --strict=false", err, tasks[0])
	}

	ta2, err := restartTestAgent(t, m, ta, func(c *Config) { c.LenientRecovery = true })
	if err != nil {
		t.Fatalf("--strict=false restart: %v", err)
	}
	sub2 := m.nextSub(t)
	if id := sub2.call.GetAgentId().GetValue(); id != "S1" {
		t.Fatalf("re-registered as %q, want S1", id)
	}
	var ids []string
	for _, task := range sub2.call.GetSubscribe().GetTasks() {
		ids = append(ids, task.GetTaskId().GetValue())
	}
	if !slices.Equal(ids, []string{"tb"}) {
		t.Errorf("re-registration reports tasks %v, want [tb]", ids)
	}
	if got := ta2.metric(t, "slave/recovery_errors"); got != 1 {
		t.Errorf("slave/recovery_errors = %v, want 1", got)
	}
	if ta2.state(t)["flags"].(map[string]any)["strict"] != "false" {
		t.Error("/state flags do not say strict=false")
	}
}
