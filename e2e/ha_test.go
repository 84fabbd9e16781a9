package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/recordio"
)

// High availability with real processes: three `mezzo master` processes
// on loopback forming a Raft group, real `mezzo agent` processes given all
// three addresses, frameworks (`mezzo run`) given all three.

// proc is a process of the test cluster.
type proc struct {
	name string
	args []string
	cmd  *exec.Cmd
	out  *lockedWriter
	done chan struct{}
}

func startProc(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	p := &proc{name: name, args: args, out: &lockedWriter{w: &bytes.Buffer{}}, done: make(chan struct{})}
	p.cmd = exec.Command(mezzoBin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("--- %s log:\n%s", p.name, p.logs())
		}
	})
	return p
}

func (p *proc) logs() string {
	p.out.mu.Lock()
	defer p.out.mu.Unlock()
	return p.out.w.(*bytes.Buffer).String()
}

func (p *proc) signal(sig syscall.Signal) { syscall.Kill(-p.cmd.Process.Pid, sig) }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill SIGKILLs the process group (resuming it first if stopped) and reaps it.
func (p *proc) kill() {
	if p.exited() {
		return
	}
	p.signal(syscall.SIGCONT)
	p.signal(syscall.SIGKILL)
	<-p.done
}

// haCluster is three masters and some agents.
type haCluster struct {
	t       *testing.T
	dir     string
	addrs   []string
	masters []*proc
	flags   []string
	agents  []*proc
}

// freeMasterPort returns a port p with p and p+1000 free.
func freeMasterPort(t *testing.T) int {
	t.Helper()
	for range 50 {
		p := freePort(t)
		if p+1000 > 65535 {
			continue
		}
		if ln, err := listenTCP(p + 1000); err == nil {
			ln.Close()
			return p
		}
	}
	t.Fatal("no free port pair")
	return 0
}

func startHA(t *testing.T, extra ...string) *haCluster {
	t.Helper()
	c := &haCluster{t: t, dir: t.TempDir(), flags: extra}
	for range 3 {
		c.addrs = append(c.addrs, "127.0.0.1:"+strconv.Itoa(freeMasterPort(t)))
	}
	for i := range c.addrs {
		c.masters = append(c.masters, nil)
		c.startMaster(i)
	}
	c.awaitLeader("")
	return c
}

func (c *haCluster) startMaster(i int) {
	_, port, _ := strings.Cut(c.addrs[i], ":")
	args := append([]string{"master", "--ip=127.0.0.1", "--port=" + port,
		"--work_dir=" + filepath.Join(c.dir, fmt.Sprintf("master%d", i+1)),
		"--masters=" + strings.Join(c.addrs, ","), "--quorum=2",
		"--allocation_interval=100ms", "--logging_level=info"}, c.flags...)
	c.masters[i] = startProc(c.t, fmt.Sprintf("master%d", i+1), args...)
}

// startAgent starts a `mezzo agent` given all masters (and extra flags)
// and waits until the leader lists it; it returns the agent and its ID.
func (c *haCluster) startAgent(name string, extra ...string) (*proc, string) {
	c.t.Helper()
	port := freePort(c.t)
	p := startProc(c.t, name, append([]string{"agent", "--master=" + strings.Join(c.addrs, ","), "--ip=127.0.0.1",
		"--port=" + strconv.Itoa(port), "--hostname=" + name, "--work_dir=" + filepath.Join(c.dir, name),
		"--resources=cpus:4;mem:4096;disk:10000;ports:[31000-32000]"}, extra...)...)
	c.agents = append(c.agents, p)
	var id string
	poll(c.t, name+" to register", 30*time.Second, func() bool {
		st, err := c.state(c.awaitLeader(""))
		if err != nil {
			return false
		}
		for _, s := range st.Slaves {
			if s.Hostname == name && s.Active {
				id = s.ID
				return true
			}
		}
		return false
	})
	return p, id
}

// awaitLeader returns the index of the master serving as leader (not
// skip), polling until one does.
func (c *haCluster) awaitLeader(skip string) int {
	c.t.Helper()
	var idx int
	poll(c.t, "a leading master", 30*time.Second, func() bool {
		for i, a := range c.addrs {
			if a == skip || c.masters[i].exited() {
				continue
			}
			if leads(a) {
				idx = i
				return true
			}
		}
		return false
	})
	return idx
}

// leads reports whether the master at addr serves the scheduler API as
// the leader: a follower answers 307 or 503 before looking at the
// request; the leader refuses the empty call with a 4xx of its own.
func leads(addr string) bool {
	client := &http.Client{Timeout: time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Post("http://"+addr+"/api/v1/scheduler", "application/json", strings.NewReader("{}"))
	if err != nil {
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode >= 400 && resp.StatusCode < 500
}

// redirectsTo returns the Location a master answers GET path with, or ""
// when it does not answer 307.
func redirectsTo(addr, path string) string {
	client := &http.Client{Timeout: time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get("http://" + addr + path)
	if err != nil {
		return ""
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTemporaryRedirect {
		return ""
	}
	return resp.Header.Get("Location")
}

type masterState struct {
	ElectedTime *float64 `json:"elected_time"`
	Leader      string   `json:"leader"`
	Slaves      []struct {
		ID       string         `json:"id"`
		Hostname string         `json:"hostname"`
		Active   bool           `json:"active"`
		Total    map[string]any `json:"resources"`
		UsedRaw  map[string]any `json:"used_resources"`
		Offered  map[string]any `json:"offered_resources"`
	} `json:"slaves"`
	Recovered []struct {
		ID string `json:"id"`
	} `json:"recovered_slaves"`
	Unreachable float64 `json:"unreachable_slaves"`
	Frameworks  []struct {
		ID    string `json:"id"`
		Tasks []struct {
			ID    string `json:"id"`
			State string `json:"state"`
		} `json:"tasks"`
		Executors []json.RawMessage `json:"executors"`
	} `json:"frameworks"`
}

func (c *haCluster) state(i int) (*masterState, error) {
	var st masterState
	err := getJSON("http://"+c.addrs[i]+"/master/state", &st)
	return &st, err
}

// poll waits for cond, checking every 50 ms, failing after timeout.
func poll(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, bounded by the deadline
	}
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

// SIGKILL the leader while frameworks launch tasks: a new leader serves
// within seconds, the agents and frameworks re-register with it, every
// task runs to completion (no task lost), the agent processes are
// unaffected, and no agent's resources are offered or used beyond its
// total on the new leader.
func TestHAKillLeaderWhileLaunching(t *testing.T) {
	c := startHA(t)
	c.startAgent("ha-a1")
	c.startAgent("ha-a2")
	const runs = 4
	type result struct {
		code int
		out  string
	}
	results := make(chan result, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, mezzoBin, "run", "--master="+strings.Join(c.addrs, ","),
				"--name=ha-run-"+strconv.Itoa(i), "--resources=cpus:0.5;mem:64", "--", "/bin/sh", "-c", "sleep 3; echo done-"+strconv.Itoa(i))
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				code = -1
			}
			results <- result{code, out.String()}
		}()
	}
	leader := c.awaitLeader("")
	// Kill while the tasks are being launched: as soon as the leader has
	// accepted every launch (the tasks are staging or starting on the
	// agents). Killing it in the middle of an ACCEPT call would fail the
	// call itself, which `mezzo run` treats as fatal (see docs/ha.md).
	poll(t, "tasks to be launched", 30*time.Second, func() bool {
		st, err := c.state(leader)
		if err != nil {
			return false
		}
		n := 0
		for _, fw := range st.Frameworks {
			n += len(fw.Tasks)
		}
		return n == runs
	})
	killedAt := time.Now()
	c.masters[leader].kill()
	next := c.awaitLeader(c.addrs[leader])
	t.Logf("new leader %s serving %v after the kill", c.addrs[next], time.Since(killedAt))
	if d := time.Since(killedAt); d > 10*time.Second {
		t.Errorf("new leader took %v", d)
	}
	wg.Wait()
	close(results)
	for r := range results {
		if r.code != 0 || !strings.Contains(r.out, "TASK_FINISHED") {
			t.Errorf("a framework did not see its task finish across the failover (exit %d):\n%s", r.code, r.out)
		}
	}
	for _, a := range c.agents {
		if a.exited() {
			t.Errorf("%s exited during the failover", a.name)
		}
	}
	st, err := c.state(next)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Slaves) != 2 {
		t.Fatalf("new leader lists %d agents, want 2", len(st.Slaves))
	}
	for _, s := range st.Slaves {
		total, used, offered := num(s.Total["cpus"]), num(s.UsedRaw["cpus"]), num(s.Offered["cpus"])
		if used+offered > total+1e-9 {
			t.Errorf("agent %s: used %.2f + offered %.2f cpus > total %.2f (offered twice)", s.Hostname, used, offered, total)
		}
	}
}

// SIGSTOP the leader (all its traffic freezes): the others elect a new
// leader and the agent moves to it; SIGCONT: the old leader finds it was
// deposed and redirects; whatever it did on waking (its overdue ping
// timeouts try to mark the silent agent unreachable) has no effect: the
// registry refuses its writes, the agent stays registered and active with
// the new leader, and is never shut down.
func TestHAIsolatedLeaderStepsDown(t *testing.T) {
	c := startHA(t, "--agent_ping_timeout=1secs", "--max_agent_ping_timeouts=2")
	agent, id := c.startAgent("ha-b1")
	old := c.awaitLeader("")
	c.masters[old].signal(syscall.SIGSTOP)
	next := c.awaitLeader(c.addrs[old])
	poll(t, "the agent to re-register with the new leader", 30*time.Second, func() bool {
		st, err := c.state(next)
		if err != nil {
			return false
		}
		for _, s := range st.Slaves {
			if s.ID == id && s.Active {
				return true
			}
		}
		return false
	})
	c.masters[old].signal(syscall.SIGCONT)
	poll(t, "the old leader to step down and redirect", 20*time.Second, func() bool {
		// A follower answers reads of the cluster's state with 307 to the
		// leader, as Mesos does.
		return strings.HasSuffix(redirectsTo(c.addrs[old], "/master/state"), c.addrs[next]+"/master/state") &&
			!leads(c.addrs[old])
	})
	// Give the old master's late work time to happen, then check nothing
	// it tried took effect.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		st, err := c.state(next)
		if err != nil {
			t.Fatal(err)
		}
		if st.Unreachable != 0 || len(st.Slaves) != 1 || !st.Slaves[0].Active {
			t.Fatalf("the deposed leader's late actions took effect: unreachable=%v slaves=%+v", st.Unreachable, st.Slaves)
		}
		time.Sleep(200 * time.Millisecond) // sampling interval over a bounded window
	}
	if agent.exited() || strings.Contains(agent.logs(), "shut this agent down") {
		t.Fatalf("the agent acted on a deposed leader's message:\n%s", agent.logs())
	}
}

// Restart every master: the registry survives. Admitted agents keep their
// IDs (one that does not come back is marked unreachable after
// --agent_reregister_timeout), and an agent removed before the restart
// is still refused under its old ID.
func TestHARegistrySurvivesFullRestart(t *testing.T) {
	c := startHA(t, "--agent_reregister_timeout=4secs")
	_, id1 := c.startAgent("ha-c1")
	a2, _ := c.startAgent("ha-c2")
	a3, id3 := c.startAgent("ha-c3")
	leader := c.awaitLeader("")
	// a3 is removed by the operator; a2 will not come back.
	operator(t, c.addrs[leader], fmt.Sprintf(`{"type":"MARK_AGENT_GONE","mark_agent_gone":{"agent_id":{"value":%q}}}`, id3))
	poll(t, "the removed agent to shut down", 20*time.Second, a3.exited)
	a2.kill()
	for _, m := range c.masters {
		m.kill()
	}
	for i := range c.masters {
		c.startMaster(i)
	}
	leader = c.awaitLeader("")
	st, err := c.state(leader)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after restart: %d registered, recovered %v", len(st.Slaves), st.Recovered)
	poll(t, "ha-c1 to re-register under its ID", 30*time.Second, func() bool {
		st, err := c.state(c.awaitLeader(""))
		if err != nil {
			return false
		}
		for _, s := range st.Slaves {
			if s.Hostname == "ha-c1" {
				if s.ID != id1 {
					t.Fatalf("ha-c1 re-registered as %s, want %s", s.ID, id1)
				}
				return true
			}
		}
		return false
	})
	poll(t, "ha-c2 to be marked unreachable after the re-registration timeout", 30*time.Second, func() bool {
		st, err := c.state(c.awaitLeader(""))
		return err == nil && st.Unreachable == 1 && len(st.Recovered) == 0
	})
	if ev := rawSubscribe(t, c.addrs[c.awaitLeader("")], id3); ev.GetType() != protocol.AgentEvent_SHUTDOWN {
		t.Fatalf("the removed agent's ID got %v after the restart, want SHUTDOWN", ev.GetType())
	}
}

// The registrar-design partition scenario: an agent is partitioned away
// (SIGSTOP), the master marks it unreachable, the operator marks it gone,
// the leader fails over during the partition; when the partition heals
// the agent is refused by the new leader with a clear reason and exits.
func TestHAPartitionedAgentRemovedIsRefused(t *testing.T) {
	c := startHA(t, "--agent_ping_timeout=1secs", "--max_agent_ping_timeouts=2")
	agent, id := c.startAgent("ha-d1")
	leader := c.awaitLeader("")
	agent.signal(syscall.SIGSTOP)
	poll(t, "the partitioned agent to become unreachable", 30*time.Second, func() bool {
		st, err := c.state(leader)
		return err == nil && st.Unreachable == 1
	})
	operator(t, c.addrs[leader], fmt.Sprintf(`{"type":"MARK_AGENT_GONE","mark_agent_gone":{"agent_id":{"value":%q}}}`, id))
	c.masters[leader].kill()
	next := c.awaitLeader(c.addrs[leader])
	agent.signal(syscall.SIGCONT)
	poll(t, "the healed agent to be refused and exit", 60*time.Second, agent.exited)
	if !strings.Contains(agent.logs(), "register anew") && !strings.Contains(agent.logs(), "may not re-register") {
		t.Fatalf("the agent's log does not say why it was refused:\n%s", agent.logs())
	}
	st, err := c.state(next)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st.Slaves {
		if s.ID == id {
			t.Fatalf("removed agent %s was readmitted after the partition healed", id)
		}
	}
}

// operator posts a v1 operator call (JSON) and requires 200.
func operator(t *testing.T, addr, body string) {
	t.Helper()
	resp, err := http.Post("http://"+addr+"/api/v1", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("operator call %s: %s %s", body, resp.Status, b)
	}
}

// rawSubscribe speaks the agent protocol as an agent with id would and
// returns the first event the master sends.
func rawSubscribe(t *testing.T, addr, id string) *protocol.AgentEvent {
	t.Helper()
	call := &protocol.AgentCall{Type: protocol.AgentCall_SUBSCRIBE.Enum(), Subscribe: &protocol.AgentCall_Subscribe{
		AgentInfo: &mesos.AgentInfo{Id: &mesos.AgentID{Value: proto.String(id)}, Hostname: proto.String("ghost"), Port: proto.Int32(5051)},
		Endpoint:  proto.String("127.0.0.1:1"),
		Version:   protocol.Version_VERSION_1.Enum(),
	}}
	body, _ := proto.Marshal(call)
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/internal/v1/agent", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Accept", "application/x-protobuf")
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("agent SUBSCRIBE: %s %s", resp.Status, b)
	}
	rec, err := recordio.NewReader(resp.Body, 0).Next()
	if err != nil {
		t.Fatal(err)
	}
	ev := &protocol.AgentEvent{}
	if err := proto.Unmarshal(rec, ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

func listenTCP(port int) (net.Listener, error) {
	return net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
}
