package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The logging traps of issue 16: a healthy single master logged four WARN
// lines at start (Raft's "starting election", the agents' "connection lost"
// while the master was still electing itself), and Raft's lines came in
// hclog's format whatever the process's.

// warnLine matches a WARN or ERROR record in the text format.
var warnLine = regexp.MustCompile(`(?m)^.*level=(WARN|ERROR).*$`)

func assertNoWarnings(t *testing.T, who, logs string) {
	t.Helper()
	if bad := warnLine.FindAllString(logs, -1); len(bad) > 0 {
		t.Errorf("%s logged %d WARN/ERROR line(s) on a healthy start:\n%s\n--- full log:\n%s",
			who, len(bad), strings.Join(bad, "\n"), logs)
	}
	if strings.Contains(logs, "[WARN]") || strings.Contains(logs, "[ERROR]") || strings.Contains(logs, "[INFO]") {
		t.Errorf("%s logged hclog-formatted lines (Raft must log through slog):\n%s", who, logs)
	}
}

// awaitLog waits until the process's log holds line (a record the start
// logs once it is complete), so that the check covers the whole start.
func awaitLog(t *testing.T, logs func() string, what string) {
	t.Helper()
	poll(t, "the log line "+strconv.Quote(what), 30*time.Second, func() bool { return strings.Contains(logs(), what) })
}

func TestHealthyStartLogsNoWarning(t *testing.T) {
	t.Run("single master, new and restarted", func(t *testing.T) {
		port := freeMasterPort(t)
		addr := "127.0.0.1:" + strconv.Itoa(port)
		dir := t.TempDir()
		for _, run := range []string{"new registry", "restart on it"} {
			p := startProc(t, "master", "master", "--ip=127.0.0.1", "--port="+strconv.Itoa(port), "--work_dir="+dir)
			poll(t, "the master to lead", 30*time.Second, func() bool { return leads(addr) })
			awaitLog(t, p.logs, "elected leading master")
			assertNoWarnings(t, "master ("+run+")", p.logs())
			p.signal(syscall.SIGTERM)
			poll(t, "the master to exit", 30*time.Second, p.exited)
		}
	})
	t.Run("an agent started before its master", func(t *testing.T) {
		// The agent's first attempts find nothing listening, then a master
		// that has not elected itself: both are how a cluster comes up.
		port := freeMasterPort(t)
		addr := "127.0.0.1:" + strconv.Itoa(port)
		dir := t.TempDir()
		a := startProc(t, "agent", "agent", "--master="+addr, "--ip=127.0.0.1", "--port="+strconv.Itoa(freePort(t)),
			"--work_dir="+filepath.Join(dir, "agent"), "--resources=cpus:1;mem:256")
		awaitLog(t, a.logs, "no registration with the master yet")
		m := startProc(t, "master", "master", "--ip=127.0.0.1", "--port="+strconv.Itoa(port), "--work_dir="+filepath.Join(dir, "master"))
		awaitLog(t, a.logs, "registered with the master")
		assertNoWarnings(t, "master", m.logs())
		assertNoWarnings(t, "agent", a.logs())
	})
	t.Run("three masters started one by one", func(t *testing.T) {
		// As three hosts boot: the first campaigns alone, the first two
		// elect a leader while the third is not up, the third joins.
		c := &haCluster{t: t, dir: t.TempDir()}
		for range 3 {
			c.addrs = append(c.addrs, "127.0.0.1:"+strconv.Itoa(freeMasterPort(t)))
			c.masters = append(c.masters, nil)
		}
		c.startMaster(0)
		awaitLog(t, c.masters[0].logs, "master listening")
		c.startMaster(1)
		leader := c.awaitLeader("")
		c.startMaster(2)
		poll(t, "the third master to know the leader", 30*time.Second, func() bool { return knowsLeader(c.addrs[2]) })
		awaitLog(t, c.masters[leader].logs, "elected leading master")
		for i, m := range c.masters {
			assertNoWarnings(t, fmt.Sprintf("master%d", i+1), m.logs())
		}
	})
	t.Run("mezzo local --agents=1", func(t *testing.T) {
		c := startLocal(t, 1)
		awaitLog(t, c.logs, "registered with the master")
		assertNoWarnings(t, "mezzo local", c.logs())
	})
}

// knowsLeader reports whether the master at addr names a leader: a
// follower's /master/redirect answers 307 to it, and so does the leader's
// (to itself); 503 while none is known.
func knowsLeader(addr string) bool {
	client := &http.Client{Timeout: time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get("http://" + addr + "/master/redirect")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusTemporaryRedirect
}

// TestLogFormatJSON: with --log_format=json every line on stderr is one
// JSON object with time, level and msg, Raft's lines among them.
func TestLogFormatJSON(t *testing.T) {
	port := freePort(t)
	var stderr, stdout lockedWriter
	stderr.w, stdout.w = &bytes.Buffer{}, &bytes.Buffer{}
	cmd := exec.Command(mezzoBin, "local", "--agents=1", "--port="+strconv.Itoa(port), "--work_dir="+t.TempDir(),
		"--resources=cpus:1;mem:256", "--log_format=json")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &cluster{addr: "127.0.0.1:" + strconv.Itoa(port), cmd: cmd, out: &stderr}
	t.Cleanup(func() { c.stop(t) })
	awaitLog(t, c.logs, `"msg":"registered with the master"`)

	logs := c.logs()
	complete := logs[:strings.LastIndexByte(logs, '\n')+1] // a line may be half written
	var raft, agent int
	for i, line := range strings.Split(strings.TrimSuffix(complete, "\n"), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("stderr line %d is not one JSON object (%v): %q\n--- stderr:\n%s", i+1, err, line, logs)
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := rec[k].(string); !ok {
				t.Errorf("stderr line %d lacks %q: %q", i+1, k, line)
			}
		}
		if rec["component"] == "raft" {
			raft++
		}
		if rec["agent"] != nil {
			agent++
		}
	}
	if raft == 0 {
		t.Errorf("no Raft line (component=raft) in the JSON log:\n%s", logs)
	}
	if agent == 0 {
		t.Errorf("no agent line in the JSON log:\n%s", logs)
	}
}

// TestLogFormatRefusesUnknown: a bad --log_format stops the process with
// a message naming the flag, rather than logging in some default.
func TestLogFormatRefusesUnknown(t *testing.T) {
	for _, args := range [][]string{
		{"master", "--port=0"},
		{"agent", "--master=127.0.0.1:1", "--port=0"},
		{"local", "--agents=0", "--port=0"},
	} {
		args = append(args, "--work_dir="+t.TempDir(), "--log_format=xml")
		code, out := runCmd(t, 30*time.Second, mezzoBin, args...)
		if code != 2 || !strings.Contains(out, `--log_format="xml"`) {
			t.Errorf("mezzo %v: exit %d, output %q; want exit 2 naming the flag", args, code, out)
		}
	}
}
