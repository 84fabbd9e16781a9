package agent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `mezzo agent --work_dir=./a` (and a master with --work_dir=./m), started
// in some directory: an executor-based task (a checkpointing framework's
// command task runs under the command executor) finishes, and the
// sandbox and /flags name the absolute path. Before, the executor's chdir
// into the relative sandbox path failed ("fork/exec /usr/bin/sleep: no
// such file or directory").
func TestE2ERelativeWorkDir(t *testing.T) {
	bin, _ := e2eBinaries(t)
	cwd := t.TempDir()
	mport, aport := freePort(t), freePort(t)
	master := fmt.Sprintf("127.0.0.1:%d", mport)
	agentAddr := fmt.Sprintf("127.0.0.1:%d", aport)
	startE2EIn(t, cwd, bin, "master", "--ip=127.0.0.1", fmt.Sprintf("--port=%d", mport), "--work_dir=./m")
	startE2EIn(t, cwd, bin, "agent", "--master="+master, "--ip=127.0.0.1", fmt.Sprintf("--port=%d", aport),
		"--work_dir=./a", "--runtime_dir=./rt", "--resources=cpus:2;mem:1024;disk:1024;ports:[31000-32000]")
	poll(t, "the agent to register", 30*time.Second, func() bool {
		m, err := getMetrics("http://" + agentAddr + "/metrics/snapshot")
		return err == nil && m["slave/registered"] == 1
	})
	run := startE2E(t, bin, "run", "--stream=false", "--task_id=rel", "--master="+master, "--checkpoint", "--name=rel", "--timeout=60secs", "--", "sleep", "1")
	if code := run.wait(t, 60*time.Second); code != 0 {
		t.Fatalf("mezzo run --checkpoint -- sleep 1 under --work_dir=./a: exit %d:\n%s", code, run.out)
	}
	if last := lastLine(run.out.String()); !strings.Contains(last, "TASK_FINISHED") {
		t.Errorf("last status %q, want TASK_FINISHED", last)
	}
	runs, _ := filepath.Glob(filepath.Join(cwd, "a", "slaves", "*", "frameworks", "*", "executors", "*", "runs", "*", "stdout"))
	if len(runs) == 0 {
		t.Errorf("no sandbox under %s/a", cwd)
	}
	if _, err := os.Stat(filepath.Join(cwd, "m")); err != nil {
		t.Errorf("master work dir: %v", err)
	}
	var flags struct {
		Flags map[string]string `json:"flags"`
	}
	if err := getJSONInto("http://"+agentAddr+"/flags", &flags); err != nil {
		// /flags may be served under /state only; fall back to it.
		var st struct {
			Flags map[string]string `json:"flags"`
		}
		if err := getJSONInto("http://"+agentAddr+"/state", &st); err != nil {
			t.Fatal(err)
		}
		flags.Flags = st.Flags
	}
	if got, want := flags.Flags["work_dir"], filepath.Join(cwd, "a"); got != want {
		t.Errorf("agent flags work_dir %q, want %q", got, want)
	}
	var mflags struct {
		Flags map[string]string `json:"flags"`
	}
	if err := getJSONInto("http://"+master+"/master/flags", &mflags); err != nil {
		t.Fatal(err)
	}
	if got, want := mflags.Flags["work_dir"], filepath.Join(cwd, "m"); got != want {
		t.Errorf("master flags work_dir %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(cwd, "rt")); err != nil {
		t.Errorf("runtime dir: %v", err)
	}

	// The build description of the real binary (built without ldflags or
	// a VCS stamp here: its modification time) on both processes.
	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, url := range []string{"http://" + agentAddr + "/state", "http://" + agentAddr + "/version",
		"http://" + master + "/master/state", "http://" + master + "/version"} {
		var v struct {
			BuildDate string  `json:"build_date"`
			BuildTime float64 `json:"build_time"`
		}
		if err := getJSONInto(url, &v); err != nil {
			t.Fatal(err)
		}
		bt := time.Unix(int64(v.BuildTime), 0).UTC()
		if v.BuildDate != bt.Format(time.DateTime) || strings.HasPrefix(v.BuildDate, "0001") || bt.Year() < 2020 {
			t.Errorf("%s: build_date %q build_time %v", url, v.BuildDate, v.BuildTime)
		}
		if d := fi.ModTime().Sub(bt); d < -time.Second || d > 366*24*time.Hour {
			t.Errorf("%s: build time %v, binary written at %v", url, bt, fi.ModTime())
		}
	}
}

func getJSONInto(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// kill -9 the real agent while two checkpointing tasks run and tear one
// task's task.info: restarted with the default --strict it exits with an
// error naming the file and the ways forward; with --strict=false it
// recovers, counts one slave/recovery_errors, and the other task finishes.
func TestE2EStrictRecovery(t *testing.T) {
	bin, _ := e2eBinaries(t)
	c := startE2ECluster(t, bin, "")
	a := startE2E(t, bin, "run", "--stream=false", "--task_id=torn", "--master="+c.master, "--checkpoint", "--name=torn", "--timeout=90secs", "--", "sleep", "6")
	b := startE2E(t, bin, "run", "--stream=false", "--task_id=intact", "--master="+c.master, "--checkpoint", "--name=intact", "--timeout=90secs", "--", "sleep", "6")
	poll(t, "both tasks running", 30*time.Second, func() bool {
		pids := c.executorPids()
		return strings.Contains(a.out.String(), "TASK_RUNNING") && strings.Contains(b.out.String(), "TASK_RUNNING") &&
			pids["torn"] > 0 && pids["intact"] > 0
	})
	c.agent.cmd.Process.Kill() // SIGKILL
	c.agent.wait(t, 10*time.Second)
	var workDir string
	for _, arg := range c.agentArgs {
		if v, ok := strings.CutPrefix(arg, "--work_dir="); ok {
			workDir = v
		}
	}
	infos, _ := filepath.Glob(filepath.Join(workDir, "meta", "slaves", "latest", "frameworks", "*", "executors", "torn", "runs", "latest", "tasks", "*", "task.info"))
	if len(infos) != 1 {
		t.Fatalf("task.info of the task to tear: %v", infos)
	}
	info, err := filepath.EvalSymlinks(infos[0])
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(info)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(info, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}

	strict := startE2E(t, bin, c.agentArgs...)
	if code := strict.wait(t, 30*time.Second); code == 0 {
		t.Fatal("the strict agent started on a torn checkpoint")
	}
	for _, want := range []string{info, "--strict=false", "remove the file"} {
		if !strings.Contains(strict.log.String(), want) {
			t.Errorf("strict agent's error lacks %q:\n%s", want, tail(strict.log.String(), 10))
		}
	}

	c.agentArgs = append(c.agentArgs, "--strict=false")
	c.startAgent()
	m, err := getMetrics("http://" + c.agentAddr + "/metrics/snapshot")
	if err != nil {
		t.Fatal(err)
	}
	if m["slave/recovery_errors"] != 1 {
		t.Errorf("slave/recovery_errors = %v, want 1", m["slave/recovery_errors"])
	}
	if code := b.wait(t, 60*time.Second); code != 0 {
		t.Errorf("the intact task: mezzo run exited %d:\n%s", code, b.out)
	}
	if last := lastLine(b.out.String()); !strings.Contains(last, "TASK_FINISHED") {
		t.Errorf("the intact task ended with %q, want TASK_FINISHED", last)
	}
}
