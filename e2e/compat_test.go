package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Unmodified mesos-go v0.0.11 clients against a real mezzo cluster
// (issue: "Unmodified Mesos v1 clients must work").

func TestCompatMshEchoAndFalse(t *testing.T) {
	msh := compatBinary(t, "msh")
	c := startLocal(t, 1)
	code, out := runCmd(t, 90*time.Second, msh, "-master", c.addr, "--", "/bin/echo", "hello")
	if code != 0 {
		t.Fatalf("msh -- /bin/echo hello: exit %d, want 0; output:\n%s", code, out)
	}
	code, out = runCmd(t, 90*time.Second, msh, "-master", c.addr, "--", "/bin/false")
	if code != 3 {
		t.Fatalf("msh -- /bin/false: exit %d, want 3; output:\n%s", code, out)
	}
}

func TestCompatExampleScheduler(t *testing.T) {
	sched := compatBinary(t, "example-scheduler")
	exec := compatBinary(t, "example-executor")
	for _, codec := range []string{"protobuf", "json"} {
		t.Run(codec, func(t *testing.T) {
			c := startLocal(t, 1)
			code, out := runCmd(t, 120*time.Second, sched,
				"-url", "http://"+c.addr+"/api/v1/scheduler", "-codec", codec, "-tasks", "3",
				"-executor", exec, "-server.address", "127.0.0.1", "-server.port", strconv.Itoa(freePort(t)),
				"-metrics.port", strconv.Itoa(freePort(t)), "-verbose")
			// example-scheduler reports success by returning an error
			// ("mission accomplished") from app.Run, so it exits 1.
			mustContain(t, out, "mission accomplished")
			if code != 1 {
				t.Fatalf("example-scheduler exit %d; output:\n%s", code, out)
			}
		})
	}
}

// example-scheduler authenticates with HTTP Basic (-authmode basic), as
// against a Mesos master with --authenticate_http_frameworks, and its
// principal passes the ACLs; without credentials it is refused.
func TestCompatExampleSchedulerBasicAuth(t *testing.T) {
	sched := compatBinary(t, "example-scheduler")
	executor := compatBinary(t, "example-executor")
	dir := t.TempDir()
	creds := writeFile(t, filepath.Join(dir, "credentials"), `{"credentials":[{"principal":"example","secret":"example-pw"},{"principal":"ops","secret":"ops-pw"}]}`, 0o600)
	password := writeFile(t, filepath.Join(dir, "password"), "example-pw", 0o600)
	acls := writeFile(t, filepath.Join(dir, "acls.json"), `{"permissive": false,
  "register_frameworks": [{"principals": {"values": ["example"]}, "roles": {"type": "ANY"}}],
  "run_tasks": [{"principals": {"values": ["example"]}, "users": {"values": ["root"]}}],
  "register_agents": [{"principals": {"type": "ANY"}, "agents": {"type": "ANY"}}],
  "view_frameworks": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}}]}`, 0o600)
	c := startLocal(t, 1, "--credentials="+creds, "--authenticate_frameworks", "--acls="+acls)
	args := func(extra ...string) []string {
		return append([]string{"-url", "http://" + c.addr + "/api/v1/scheduler", "-tasks", "2", "-executor", executor,
			"-server.address", "127.0.0.1", "-server.port", strconv.Itoa(freePort(t)), "-metrics.port", strconv.Itoa(freePort(t))}, extra...)
	}
	code, out := runCmd(t, 120*time.Second, sched, args("-authmode", "basic", "-credentials.username", "example",
		"-credentials.passwordFile", password, "-principal", "example")...)
	mustContain(t, out, "mission accomplished")
	if code != 1 {
		t.Fatalf("example-scheduler with credentials: exit %d; output:\n%s", code, out)
	}
	// Without them it never subscribes (mesos-go retries a 401 for ever,
	// quietly): give it a few seconds, then read the master's refusals.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	noCreds, _ := exec.CommandContext(ctx, sched, args("-principal", "example")...).CombinedOutput()
	if strings.Contains(string(noCreds), "mission accomplished") ||
		!strings.Contains(c.logs(), `msg="HTTP authentication failed" realm=mesos-master-scheduler path=/api/v1/scheduler`) {
		t.Fatalf("example-scheduler without credentials:\n%s", noCreds)
	}
}

// A Mesos agent operator-API client built on mesos-go's unmodified agent
// library decodes every read call of a mezzo agent, in both media types.
func TestCompatAgentOperatorAPI(t *testing.T) {
	ops := compatBinary(t, "./agentops")
	c := startLocal(t, 1)
	code, out := runCmd(t, 60*time.Second, mezzoBin, "run", "--master="+c.addr, "--name=compat-task", "--task_id=compat-task", "--", "/bin/echo", "compat-marker")
	if code != 0 {
		t.Fatalf("mezzo run: exit %d:\n%s", code, out)
	}
	agentID, agentAddr := onlyAgent(t, c)
	agentURL := "http://" + agentAddr
	var st struct {
		CompletedFrameworks []struct {
			CompletedExecutors []struct{ Directory string } `json:"completed_executors"`
		} `json:"completed_frameworks"`
	}
	var dir string
	for deadline := time.Now().Add(15 * time.Second); dir == ""; {
		if err := getJSON(agentURL+"/slave(1)/state", &st); err != nil {
			t.Fatal(err)
		}
		for _, f := range st.CompletedFrameworks {
			for _, e := range f.CompletedExecutors {
				dir = e.Directory
			}
		}
		if dir == "" && time.Now().After(deadline) {
			t.Fatal("the finished task's executor never showed as completed on the agent")
		}
		time.Sleep(50 * time.Millisecond) // polling interval, bounded by the deadline
	}
	for _, codec := range []string{"protobuf", "json"} {
		t.Run(codec, func(t *testing.T) {
			code, out := runCmd(t, 60*time.Second, ops, "-agent="+agentURL+"/api/v1", "-codec="+codec, "-sandbox="+dir)
			if code != 0 {
				t.Fatalf("agentops: exit %d:\n%s", code, out)
			}
			mustContain(t, out, "GET_AGENT id="+agentID, "GET_TASKS task=compat-task state=TASK_FINISHED",
				"LIST_FILES path="+dir+"/stdout", `compat-marker`, "GET_LOGGING_LEVEL level=1", "GET_VERSION version=1.")
		})
	}
}
