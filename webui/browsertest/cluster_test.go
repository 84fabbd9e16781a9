package browsertest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// logBuffer collects a process's output for failure messages.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// process is a mezzo process of the test, killed (with its process group)
// when the test ends.
type process struct {
	name string
	cmd  *exec.Cmd
	out  *logBuffer
	done chan struct{}
}

func start(t *testing.T, name string, stdout io.Writer, args ...string) *process {
	t.Helper()
	p := &process{name: name, out: &logBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(mezzoBin, args...)
	p.cmd.Stderr = p.out
	p.cmd.Stdout = p.out
	if stdout != nil {
		p.cmd.Stdout = io.MultiWriter(p.out, stdout)
	}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		if t.Failed() {
			t.Logf("--- %s output:\n%s", p.name, p.out.String())
		}
	})
	return p
}

// cluster is a running `mezzo local`.
type cluster struct {
	t       *testing.T
	proc    *process
	masters []string // host:port of every master
	// auth, when set, is the Authorization header of the test's own
	// reads (a cluster with --authenticate_http_readonly).
	auth string
}

var readyLine = regexp.MustCompile(`mezzo local: (?:master at http://(\S+)|\d+ masters at (\S+) \(leader)`)

// startCluster runs `mezzo local` with the given masters and agents (and
// extra flags) and waits for its ready line (printed once a leader serves
// and every agent registered).
func startCluster(t *testing.T, masters, agents int, extra ...string) *cluster {
	t.Helper()
	pr, pw := io.Pipe()
	args := append([]string{"local", fmt.Sprintf("--agents=%d", agents), "--port=0", "--work_dir=" + t.TempDir(),
		"--allocation_interval=100ms", "--resources=cpus:4;mem:4096;disk:10000;ports:[31000-32000]"}, extra...)
	if masters > 1 {
		args = append(args, fmt.Sprintf("--masters=%d", masters))
	}
	p := start(t, "mezzo local", pw, args...)
	ready := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if m := readyLine.FindStringSubmatch(sc.Text()); m != nil {
				addrs := m[1]
				if addrs == "" {
					addrs = m[2]
				}
				ready <- strings.Split(addrs, ",")
				break
			}
		}
		io.Copy(io.Discard, pr)
	}()
	t.Cleanup(func() { pw.Close() })
	select {
	case addrs := <-ready:
		return &cluster{t: t, proc: p, masters: addrs}
	case <-p.done:
		t.Fatalf("mezzo local exited before it was ready:\n%s", p.out.String())
	case <-time.After(timeout):
		t.Fatalf("mezzo local not ready after %v:\n%s", timeout, p.out.String())
	}
	return nil
}

var client = &http.Client{Timeout: 5 * time.Second}

// leader asks a master for the leader's host:port (/master/redirect).
func (c *cluster) leader() string {
	c.t.Helper()
	noFollow := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	deadline := time.Now().Add(timeout)
	for {
		resp, err := noFollow.Get("http://" + c.masters[0] + "/master/redirect")
		if err == nil {
			resp.Body.Close()
			if loc := resp.Header.Get("Location"); resp.StatusCode == http.StatusTemporaryRedirect && loc != "" {
				return strings.TrimPrefix(loc, "//")
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no leader known after %v (last: %v)", timeout, err)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, bounded by the deadline
	}
}

// task is a task as /master/tasks lists it.
type task struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	FrameworkID string `json:"framework_id"`
	SlaveID     string `json:"slave_id"`
	State       string `json:"state"`
}

// awaitTask waits until the leader lists a task named name in one of states.
func (c *cluster) awaitTask(name string, states ...string) task {
	c.t.Helper()
	leader := c.leader()
	deadline := time.Now().Add(timeout)
	for {
		var doc struct {
			Tasks []task `json:"tasks"`
		}
		req, _ := http.NewRequest("GET", "http://"+leader+"/master/tasks", nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		if resp, err := client.Do(req); err == nil {
			json.NewDecoder(resp.Body).Decode(&doc)
			resp.Body.Close()
		}
		for _, tk := range doc.Tasks {
			if tk.Name == name && (len(states) == 0 || contains(states, tk.State)) {
				return tk
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("no task %q in %v after %v; tasks: %+v", name, states, timeout, doc.Tasks)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, bounded by the deadline
	}
}

// run starts `mezzo run` with a shell command as a task named name; the
// process (and with it the framework) lives until the test ends.
func (c *cluster) run(name, command string) *process {
	c.t.Helper()
	return start(c.t, "mezzo run "+name, nil, "run", "--master="+strings.Join(c.masters, ","), "--name="+name,
		"--resources=cpus:0.1;mem:32", "--shell", "--", command)
}

// runChecked is run with a command health check ("true", every second).
func (c *cluster) runChecked(name, command string) *process {
	c.t.Helper()
	task, _ := json.Marshal(map[string]any{
		"resources": []any{
			map[string]any{"name": "cpus", "type": "SCALAR", "scalar": map[string]any{"value": 0.1}},
			map[string]any{"name": "mem", "type": "SCALAR", "scalar": map[string]any{"value": 32}},
		},
		"command": map[string]any{"value": command},
		"health_check": map[string]any{"type": "COMMAND", "command": map[string]any{"value": "true"},
			"interval_seconds": 1, "delay_seconds": 0, "grace_period_seconds": 0},
	})
	return start(c.t, "mezzo run "+name, nil, "run", "--master="+strings.Join(c.masters, ","), "--name="+name, "--task="+string(task))
}

// url is a page of the UI on the given master.
func url(master, hash string) string { return "http://" + master + "/" + hash }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// counter prints a numbered line every ~100ms: the task whose output the
// log view must follow.
const counter = `i=0; while [ $i -lt 100000 ]; do i=$((i+1)); echo "line $i"; sleep 0.1; done`
