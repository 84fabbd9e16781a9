// Package e2e tests the real mezzo binary end to end: it builds
// cmd/mezzo, starts `mezzo local` as a separate process, and drives it with
// `mezzo run` and with unmodified Mesos v1 clients from mesos-go v0.0.11
// (built from the compat/mesosgo module). Nothing here talks to mezzo's
// master or agent packages directly: only processes, ports and HTTP (the
// failover test's frameworks use the scheduler SDK, a client library).
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	binDir    string // holds mezzo and the compat clients
	mezzoBin  string
	repoRoot  string
	buildOnce sync.Map // name -> *buildResult
)

type buildResult struct {
	once sync.Once
	path string
	err  error
}

func TestMain(m *testing.M) {
	flagShort := false
	for _, a := range os.Args {
		if a == "-test.short=true" || a == "-test.short" {
			flagShort = true
		}
	}
	if flagShort {
		fmt.Println("e2e: skipped in -short mode")
		os.Exit(0)
	}
	wd, _ := os.Getwd()
	repoRoot = filepath.Dir(wd)
	dir, err := os.MkdirTemp("", "mezzo-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	// Tasks may run as other users (--switch_user): the built-in
	// executors must be reachable by them.
	os.Chmod(dir, 0o755)
	mezzoBin = filepath.Join(dir, "mezzo")
	cmd := exec.Command("go", "build", "-o", mezzoBin, "./cmd/mezzo")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: building mezzo: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// compatBinary builds (once) a mesos-go v0.0.11 command from the
// compat/mesosgo module, e.g. "msh", or one of that module's own
// programs by its relative path, e.g. "./agentops".
func compatBinary(t *testing.T, name string) string {
	t.Helper()
	v, _ := buildOnce.LoadOrStore(name, &buildResult{})
	b := v.(*buildResult)
	b.once.Do(func() {
		b.path = filepath.Join(binDir, filepath.Base(name))
		pkg := "github.com/mesos/mesos-go/api/v1/cmd/" + name
		if strings.HasPrefix(name, "./") {
			pkg = name // a client of the compat module itself, over mesos-go's libraries
		}
		cmd := exec.Command("go", "build", "-o", b.path, pkg)
		cmd.Dir = filepath.Join(repoRoot, "compat", "mesosgo")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("building %s: %v\n%s", name, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// cluster is a `mezzo local` process.
type cluster struct {
	addr string
	dir  string
	cmd  *exec.Cmd
	out  *lockedWriter
	// hc and scheme reach the cluster (a secured one needs credentials
	// or TLS); plain HTTP by default.
	hc     *http.Client
	scheme string
}

// logs returns what the cluster process has printed so far.
func (c *cluster) logs() string {
	c.out.mu.Lock()
	defer c.out.mu.Unlock()
	return c.out.w.(*bytes.Buffer).String()
}

// startLocal runs `mezzo local --agents=n` and waits until it is ready
// (/health answers 200 and n agents are registered).
func startLocal(t *testing.T, agents int, extra ...string) *cluster {
	t.Helper()
	return startLocalVia(t, func(string) *http.Client { return &http.Client{Timeout: 2 * time.Second} }, "http", agents, extra...)
}

// startLocalVia is startLocal for a cluster reached over scheme with the
// client client makes from the cluster's work directory (a secured
// cluster: credentials, TLS files under it).
func startLocalVia(t *testing.T, client func(dir string) *http.Client, scheme string, agents int, extra ...string) *cluster {
	t.Helper()
	port := freePort(t)
	for _, a := range extra {
		if p, ok := strings.CutPrefix(a, "--port="); ok {
			port, _ = strconv.Atoi(p) // the caller's choice wins, as on mezzo local's command line
		}
	}
	dir := t.TempDir()
	hc := client(dir)
	args := append([]string{"local", "--agents=" + strconv.Itoa(agents), "--port=" + strconv.Itoa(port),
		"--work_dir=" + dir, "--allocation_interval=100ms", "--resources=cpus:4;mem:4096;disk:10000;ports:[31000-32000]"}, extra...)
	c := &cluster{addr: "127.0.0.1:" + strconv.Itoa(port), dir: dir, out: &lockedWriter{w: &bytes.Buffer{}}, hc: hc, scheme: scheme}
	c.cmd = exec.Command(mezzoBin, args...)
	c.cmd.Stdout = c.out
	c.cmd.Stderr = c.out
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.stop(t) })
	deadline := time.Now().Add(30 * time.Second)
	for {
		var state struct {
			Slaves []json.RawMessage `json:"slaves"`
		}
		if err := getJSONWith(c.hc, c.url("/master/slaves"), &state); err == nil && len(state.Slaves) >= agents {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("mezzo local not ready after 30s; log:\n%s", c.logs())
		}
		time.Sleep(50 * time.Millisecond) // polling interval, bounded by the deadline above
	}
}

func (c *cluster) url(path string) string { return c.scheme + "://" + c.addr + path }

func (c *cluster) stop(t *testing.T) {
	if c.cmd.Process == nil {
		return
	}
	syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	if t.Failed() {
		t.Logf("mezzo local log:\n%s", c.logs())
	}
}

// runCmd runs a command with a timeout and returns its exit code and output.
func runCmd(t *testing.T, timeout time.Duration, name string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %v timed out after %v; output:\n%s", filepath.Base(name), args, timeout, out.String())
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return code, out.String()
}

// onlyAgent is the ID and host:port of the cluster's one agent, as the
// master's /master/state lists it (its PID is slave(1)@host:port).
func onlyAgent(t *testing.T, c *cluster) (id, addr string) {
	t.Helper()
	var state struct {
		Slaves []struct{ ID, PID string } `json:"slaves"`
	}
	if err := getJSON(c.url("/master/state"), &state); err != nil || len(state.Slaves) != 1 {
		t.Fatalf("master state: %v %+v", err, state)
	}
	pid := state.Slaves[0].PID
	return state.Slaves[0].ID, pid[strings.Index(pid, "@")+1:]
}

func getJSON(url string, v any) error {
	return getJSONWith(&http.Client{Timeout: 2 * time.Second}, url, v)
}

func getJSONWith(client *http.Client, url string, v any) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return json.Unmarshal(body, v)
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func mustContain(t *testing.T, out string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(out, s) {
			t.Fatalf("output lacks %q:\n%s", s, out)
		}
	}
}
