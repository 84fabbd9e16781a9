package e2e

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// /metrics on the master and on every agent of a cluster that has run
// tasks (one finished, one running, so per-framework and per-role series
// exist) passes `promtool check metrics` without a finding, carries the Go
// runtime and process collectors, and leaves no Mesos key untranslated.
// The agents also serve /flags and /version. (issue 16: /metrics failed
// promtool with 35 findings, and agents had no /metrics or /flags.)
func TestPrometheusMetricsPassPromtool(t *testing.T) {
	promtool := promtoolPath(t)
	c := startLocal(t, 2)
	code, out := runCmd(t, 60*time.Second, mezzoBin, "run", "--master="+c.addr, "--role=web", "--", "/bin/true")
	if code != 0 {
		t.Fatalf("mezzo run: exit %d; output:\n%s", code, out)
	}
	// A task that keeps running while the endpoints are scraped.
	run := exec.Command(mezzoBin, "run", "--master="+c.addr, "--role=web", "--", "/bin/sleep", "300")
	run.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var runOut bytes.Buffer
	run.Stdout, run.Stderr = &runOut, &runOut
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-run.Process.Pid, syscall.SIGTERM)
		run.Wait()
	})
	master := ""
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(master, `mezzo_master_tasks{state="running"} 1`) {
		if time.Now().After(deadline) {
			t.Fatalf("no running task after 60s; mezzo run says:\n%s\n/metrics:\n%s", runOut.String(), master)
		}
		time.Sleep(100 * time.Millisecond) // polling interval, bounded by the deadline above
		master = scrape(t, c.url("/metrics"))
	}
	mustContain(t, master,
		`mezzo_master_tasks_terminal_total{state="finished"} 1`,
		`mezzo_master_framework_subscribed{framework_id=`,
		`mezzo_allocator_role_dominant_share{role="web"}`,
		`# TYPE mezzo_allocator_allocation_run_duration_seconds summary`,
		`mezzo_master_agent_connected{agent_id=`,
		`# TYPE mezzo_master_operator_event_stream_subscribers gauge`,
		`# TYPE mezzo_registrar_state_store_duration_seconds summary`, "mezzo_registrar_log_recovered 1\n",
		"mezzo_metrics_unmapped_keys 0\n", "# TYPE go_goroutines gauge", "# TYPE process_cpu_seconds_total counter")
	promtoolCheck(t, promtool, "master", master)

	var slaves struct {
		Slaves []struct {
			PID string `json:"pid"`
		} `json:"slaves"`
	}
	if err := getJSON(c.url("/master/slaves"), &slaves); err != nil || len(slaves.Slaves) != 2 {
		t.Fatalf("/master/slaves: %v, %d agents", err, len(slaves.Slaves))
	}
	finished := 0
	for _, s := range slaves.Slaves {
		_, addr, _ := strings.Cut(s.PID, "@")
		agent := scrape(t, "http://"+addr+"/metrics")
		mustContain(t, agent, `mezzo_agent_info{agent_id=`, `mezzo_agent_resource_capacity{resource="mem",revocable="false",unit="bytes"}`,
			"mezzo_metrics_unmapped_keys 0\n", "# TYPE go_goroutines gauge", "# TYPE process_cpu_seconds_total counter")
		if strings.Contains(agent, `mezzo_agent_tasks_terminal_total{state="finished"} 1`) {
			finished++
		}
		promtoolCheck(t, promtool, "agent "+addr, agent)
		for _, path := range []string{"/flags", "/version", "/slave(1)/flags"} {
			var v map[string]any
			if err := getJSON("http://"+addr+path, &v); err != nil {
				t.Errorf("agent %s%s: %v", addr, path, err)
			}
			if _, ok := v["flags"]; !ok && strings.HasSuffix(path, "flags") {
				t.Errorf("agent %s%s has no flags: %v", addr, path, v)
			}
			if _, ok := v["version"]; !ok && path == "/version" {
				t.Errorf("agent %s/version has no version: %v", addr, v)
			}
		}
	}
	if finished != 1 {
		t.Errorf("%d agents report the finished task, want 1", finished)
	}
}

// promtoolPath finds promtool. Without it the test skips, except in CI
// (CI=true), where .ci/run installs it and its absence is a failure.
func promtoolPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool not found in CI: .ci/run installs Debian's prometheus package")
		}
		t.Skip("promtool not installed (apt-get install prometheus)")
	}
	return p
}

// promtoolCheck runs `promtool check metrics` on an exposition and fails
// on any finding (promtool prints each; it exits non-zero on errors only).
func promtoolCheck(t *testing.T, promtool, what, text string) {
	t.Helper()
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = strings.NewReader(text)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics on the %s's /metrics: %v\n%s", what, err, out)
	}
}

func scrape(t *testing.T, url string) string {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", url, resp.StatusCode, err, b)
	}
	return string(b)
}
