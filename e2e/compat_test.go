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
