package e2e

import (
	"strconv"
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
