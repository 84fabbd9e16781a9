// Package mastertest builds the mezzo binary and runs real `mezzo master`
// processes for the simulator's tests (package sim and sim/bench), which
// must talk to a master as external processes do rather than import it.
package mastertest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Build builds ./cmd/mezzo of the module rooted at root into
// <root>/tmp/mezzo (through a per-process name and a rename, so that
// concurrent test binaries never run a half-written file) and returns its
// path.
func Build(root string) (string, error) {
	dir := filepath.Join(root, "tmp")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp := filepath.Join(dir, fmt.Sprintf("mezzo.sim.%d", os.Getpid()))
	cmd := exec.Command("go", "build", "-o", tmp, "./cmd/mezzo")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("building mezzo: %v\n%s", err, out)
	}
	bin := filepath.Join(dir, "mezzo")
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	return bin, nil
}

// FreePort returns a loopback port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Master is a `mezzo master` process.
type Master struct {
	Port int
	Addr string // 127.0.0.1:Port
	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
}

// Start runs `bin master` on port (with --allocation_interval=100ms and
// extra flags) keeping its registry under workDir (in memory if workDir
// is ""; a master restarted on the same workDir recovers the registry, as
// a restarted master host does), waits until /health answers 200, and
// kills it at the end of the test (printing its log if the test failed).
func Start(t testing.TB, bin string, port int, workDir string, extra ...string) *Master {
	t.Helper()
	m := &Master{Port: port, Addr: "127.0.0.1:" + strconv.Itoa(port), out: &lockedBuffer{}, done: make(chan struct{})}
	args := []string{"master", "--port=" + strconv.Itoa(port), "--ip=127.0.0.1",
		"--allocation_interval=100ms", "--logging_level=warn"}
	if workDir == "" {
		args = append(args, "--registry=in_memory")
	} else {
		args = append(args, "--work_dir="+workDir)
	}
	args = append(args, extra...)
	m.cmd = exec.Command(bin, args...)
	m.cmd.Stdout = m.out
	m.cmd.Stderr = m.out
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { m.cmd.Wait(); close(m.done) }()
	t.Cleanup(func() {
		m.Kill()
		if t.Failed() {
			t.Logf("master on port %d log:\n%s", port, m.out.String())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	client := &http.Client{Timeout: time.Second}
	for {
		resp, err := client.Get(m.URL("/health"))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return m
			}
		}
		select {
		case <-m.done:
			t.Fatalf("mezzo master exited: %v\n%s", m.cmd.ProcessState, m.out.String())
		case <-time.After(20 * time.Millisecond): // poll interval, bounded by the deadline
		}
		if time.Now().After(deadline) {
			t.Fatalf("mezzo master not healthy after 20s:\n%s", m.out.String())
		}
	}
}

// URL is the master's URL for path.
func (m *Master) URL(path string) string { return "http://" + m.Addr + path }

// Kill SIGKILLs the master (a crash, no graceful shutdown) and reaps it.
func (m *Master) Kill() {
	if m.cmd.Process == nil {
		return
	}
	select {
	case <-m.done:
		return
	default:
	}
	syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
	<-m.done
}

// Log is what the master printed so far.
func (m *Master) Log() string { return m.out.String() }

// Slaves returns hostname → active for the agents /master/slaves lists.
func (m *Master) Slaves() (map[string]bool, error) {
	var doc struct {
		Slaves []struct {
			Hostname string `json:"hostname"`
			Active   bool   `json:"active"`
		} `json:"slaves"`
	}
	if err := GetJSON(m.URL("/master/slaves"), &doc); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, s := range doc.Slaves {
		out[s.Hostname] = s.Active
	}
	return out, nil
}

// GetJSON GETs url and decodes its JSON body into v.
func GetJSON(url string, v any) error {
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// RSS is the master process's resident set size (0 if unknown).
func (m *Master) RSS() uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", m.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	var kb uint64
	for _, line := range bytes.Split(b, []byte("\n")) {
		if bytes.HasPrefix(line, []byte("VmRSS:")) {
			fmt.Sscanf(string(line[len("VmRSS:"):]), "%d", &kb)
		}
	}
	return kb << 10
}
