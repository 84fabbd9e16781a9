package cli

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

func TestCommandTables(t *testing.T) {
	m := newFakeMaster(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"tasks hides terminal tasks", []string{"tasks"}, `
ID     NAME        FRAMEWORK  AGENT  STATE         CPUS  MEM    AGE
t-run  task t-run  m1-0000    m1-S0  TASK_RUNNING  1     128MB  59s
`},
		{"tasks --all", []string{"tasks", "--all"}, `
ID      NAME         FRAMEWORK  AGENT  STATE          CPUS  MEM    AGE
t-run   task t-run   m1-0000    m1-S0  TASK_RUNNING   1     128MB  59s
t-done  task t-done  m1-0000    m1-S0  TASK_FINISHED  0.5   0      1m
t-old   task t-old   m1-0001    m1-S1  TASK_KILLED    1     0      2m
`},
		{"tasks --state without prefix", []string{"tasks", "--state=finished"}, `
ID      NAME         FRAMEWORK  AGENT  STATE          CPUS  MEM  AGE
t-done  task t-done  m1-0000    m1-S0  TASK_FINISHED  0.5   0    1m
`},
		{"tasks --framework", []string{"tasks", "--all", "--framework=m1-0001"}, `
ID     NAME        FRAMEWORK  AGENT  STATE        CPUS  MEM  AGE
t-old  task t-old  m1-0001    m1-S1  TASK_KILLED  1     0    2m
`},
		{"agents", []string{"agents"}, `
ID     HOSTNAME        CPUS  MEM           TASKS  ACTIVE  DRAIN
m1-S0  agent1.example  1/5   128MB/1.25GB  1      yes     -
m1-S1  agent2.example  0/2   0/512MB       0      no      deactivated
`},
		{"frameworks", []string{"frameworks"}, `
ID       NAME    ROLES  ACTIVE  TASKS  CPUS  MEM
m1-0000  web-fw  web    yes     1      1     128MB
`},
		{"frameworks --all", []string{"frameworks", "--all"}, `
ID       NAME    ROLES  ACTIVE     TASKS  CPUS  MEM
m1-0000  web-fw  web    yes        1      1     128MB
m1-0001  old-fw  *      completed  0      0     0
`},
		{"roles", []string{"roles"}, `
NAME  WEIGHT  QUOTA GUARANTEE / LIMIT            ALLOCATED         SHARE
*     1       - / -                              -                 0%
web   2.5     cpus:1;mem:256MB / cpus:4;mem:2GB  cpus:1;mem:128MB  50%
`},
		{"explain", []string{"explain", "m1-0000"}, `
Framework m1-0000 is active (connected). It was last offered resources 1m ago (2023-11-14T22:15:00Z).

Role "web": no offers (FILTERED)
  The framework declined these resources with a filter (refuse_seconds) that has not expired; REVIVE clears it.
  Active agents: 1 filtered by the framework.
`},
		{"teardown", []string{"teardown", "m1-0000"}, `
Framework m1-0000 torn down: its tasks are being killed.
`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := testEnv()
			code, out, errs := run(e, tc.args[0], append(tc.args[1:], "--master="+m.addr())...)
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, errs)
			}
			if want := strings.TrimPrefix(tc.want, "\n"); out != want {
				t.Errorf("got\n%s\nwant\n%s", out, want)
			}
		})
	}
}

func TestCommandJSON(t *testing.T) {
	m := newFakeMaster(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"tasks", "--all", "--framework=m1-0000"}, `[
			{"id":"t-run","name":"task t-run","framework_id":"m1-0000","agent_id":"m1-S0","state":"TASK_RUNNING","role":"web","cpus":1,"mem":128,"started":1700000100.5,
			 "source":"SOURCE_EXECUTOR","healthy":false,"message":"health check failed: exit 1"},
			{"id":"t-done","name":"task t-done","framework_id":"m1-0000","agent_id":"m1-S0","state":"TASK_FINISHED","role":"web","cpus":0.5,"mem":0,"started":1700000050,
			 "source":"SOURCE_EXECUTOR","message":"Command exited with status 0"}]`},
		// The reason is there for scripts, not only in -o wide (trap 3).
		{[]string{"tasks", "--all", "--framework=m1-0001"}, `[
			{"id":"t-old","name":"task t-old","framework_id":"m1-0001","agent_id":"m1-S1","state":"TASK_KILLED","role":"*","cpus":1,"mem":0,"started":1700000010,
			 "message":"Framework removed","reason":"REASON_FRAMEWORK_REMOVED","source":"SOURCE_MASTER"}]`},
		{[]string{"tasks", "--state=TASK_LOST"}, `[]`},
		{[]string{"agents"}, `[
			{"id":"m1-S0","hostname":"agent1.example","pid":"slave(1)@10.0.0.1:5051","cpus_used":1,"cpus_total":5,"mem_used":128,"mem_total":1280,"cpus_revocable_used":0,"cpus_revocable_total":0,"tasks":1,"active":true,"deactivated":false},
			{"id":"m1-S1","hostname":"agent2.example","pid":"slave(1)@10.0.0.2:5051","cpus_used":0,"cpus_total":2,"mem_used":0,"mem_total":512,"cpus_revocable_used":0,"cpus_revocable_total":0,"tasks":0,"active":false,"deactivated":true}]`},
		{[]string{"frameworks", "--all"}, `[
			{"id":"m1-0000","name":"web-fw","roles":["web"],"active":true,"connected":true,"tasks":1,"offers":1,"cpus":1,"mem":128},
			{"id":"m1-0001","name":"old-fw","roles":["*"],"active":false,"connected":false,"completed":true,"tasks":0,"offers":0,"cpus":0,"mem":0}]`},
		{[]string{"roles"}, `[
			{"name":"*","weight":1,"quota_guarantee":{},"quota_limit":{},"allocated":{},"offered":{},"dominant_share":0,"frameworks":[]},
			{"name":"web","weight":2.5,"quota_guarantee":{"cpus":1,"mem":256},"quota_limit":{"cpus":4,"mem":2048},
			 "allocated":{"cpus":1,"mem":128},"offered":{"cpus":2,"mem":512},"dominant_share":0.5,"frameworks":["m1-0000"]}]`},
		{[]string{"explain", "m1-0000"}, goldenExplain},
		{[]string{"teardown", "m1-0000"}, `{"framework_id":"m1-0000","torn_down":true}`},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			e, _ := testEnv()
			code, out, errs := run(e, tc.args[0], append(tc.args[1:], "--json", "--master="+m.addr())...)
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, errs)
			}
			var got, want any
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("output is not JSON: %v\n%s", err, out)
			}
			if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got\n%s\nwant\n%s", out, tc.want)
			}
		})
	}
}

func TestTeardownSendsOperatorCall(t *testing.T) {
	m := newFakeMaster(t)
	e, _ := testEnv()
	if code, _, errs := run(e, "teardown", "--master="+m.addr(), "m1-0000"); code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var call map[string]any
	if len(m.teardowns) != 1 || json.Unmarshal([]byte(m.teardowns[0]), &call) != nil {
		t.Fatalf("calls: %q", m.teardowns)
	}
	want := map[string]any{"type": "TEARDOWN", "teardown": map[string]any{"framework_id": map[string]any{"value": "m1-0000"}}}
	if !reflect.DeepEqual(call, want) {
		t.Errorf("call %v, want %v", call, want)
	}
}

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestUsageAndErrors(t *testing.T) {
	m := newFakeMaster(t)
	dead := deadAddr(t)
	tests := []struct {
		name     string
		args     []string
		code     int
		inStderr string
	}{
		{"unknown state", []string{"tasks", "--state=sleeping"}, 2, `--state="sleeping": unknown task state`},
		{"explain needs an ID", []string{"explain"}, 2, "expecting 1 argument(s) FRAMEWORK_ID, got 0"},
		{"logs takes one task", []string{"logs", "a", "b"}, 2, "expecting 1 argument(s) TASK_ID, got 2"},
		{"bad flag", []string{"agents", "--bogus"}, 2, "flag provided but not defined: -bogus"},
		{"zookeeper master", []string{"agents", "--master=zk://a:2181/mesos"}, 2, "ZooKeeper addresses are not supported"},
		{"master without port", []string{"agents", "--master=localhost"}, 2, `"localhost": expecting host:port`},
		{"connection refused names the master", []string{"agents", "--master=" + dead}, ExitUnreachable, "master " + dead + ": connection refused"},
		{"unknown framework", []string{"explain", "--master=" + m.addr(), "nope"}, 1,
			"master " + m.addr() + ": GET /master/allocator/explain?framework_id=nope: 404 Not Found: No framework found with specified ID"},
		{"help", []string{"tasks", "--help"}, 0, "Usage: mezzo tasks [flags]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := testEnv()
			code, _, errs := run(e, tc.args[0], tc.args[1:]...)
			if code != tc.code || !strings.Contains(errs, tc.inStderr) {
				t.Errorf("exit %d stderr %q; want exit %d and %q", code, errs, tc.code, tc.inStderr)
			}
		})
	}
}

func TestMastersFailoverAndRedirect(t *testing.T) {
	leader := newFakeMaster(t)
	// A non-leading master answers 307 with a protocol-relative Location,
	// as mezzo's and Mesos's masters do.
	follower := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "//"+leader.addr()+r.URL.RequestURI())
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	defer follower.Close()
	electing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "No leader elected", http.StatusServiceUnavailable)
	}))
	defer electing.Close()
	dead := deadAddr(t)
	host := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }

	t.Run("skips unreachable and leaderless masters, follows the redirect", func(t *testing.T) {
		e, _ := testEnv()
		code, out, errs := run(e, "frameworks", "--master="+dead+","+host(electing)+","+host(follower))
		if code != 0 || !strings.Contains(out, "web-fw") {
			t.Fatalf("exit %d out %q err %q", code, out, errs)
		}
	})
	t.Run("POST follows the redirect with its body", func(t *testing.T) {
		e, _ := testEnv()
		if code, _, errs := run(e, "teardown", "--master="+host(follower), "m1-0000"); code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		if len(leader.teardowns) == 0 || !strings.Contains(leader.teardowns[len(leader.teardowns)-1], "m1-0000") {
			t.Errorf("leader got %q", leader.teardowns)
		}
	})
	t.Run("all failing: every master is named", func(t *testing.T) {
		e, _ := testEnv()
		code, _, errs := run(e, "agents", "--master="+dead+","+host(electing))
		want := "master " + dead + ": connection refused; master " + host(electing) + ": GET /master/state-summary: 503 Service Unavailable: No leader elected"
		if code != ExitUnreachable || !strings.Contains(errs, want) {
			t.Errorf("exit %d stderr %q, want %q", code, errs, want)
		}
	})
	t.Run("reads go to the leader, not a follower's own empty view", func(t *testing.T) {
		// A follower answers read endpoints from its own view (no agents),
		// as mezzo's and Mesos's masters do; only /master/redirect names
		// the leader.
		reads := 0
		quiet := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/master/redirect" {
				w.Header().Set("Location", "//"+leader.addr())
				w.WriteHeader(http.StatusTemporaryRedirect)
				return
			}
			reads++
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"hostname":"f","slaves":[],"frameworks":[]}`)
		}))
		defer quiet.Close()
		e, _ := testEnv()
		code, out, errs := run(e, "agents", "--master="+host(quiet)+","+leader.addr())
		if code != 0 || !strings.Contains(out, "agent1.example") || reads != 0 {
			t.Fatalf("exit %d, %d reads from the follower, out %q err %q", code, reads, out, errs)
		}
	})
	t.Run("redirect to a dead leader says so", func(t *testing.T) {
		bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", "//"+dead+r.URL.RequestURI())
			w.WriteHeader(http.StatusTemporaryRedirect)
		}))
		defer bad.Close()
		e, _ := testEnv()
		code, _, errs := run(e, "agents", "--master="+host(bad))
		want := "master " + host(bad) + ": connection refused (redirected to " + dead + ")"
		if code != ExitUnreachable || !strings.Contains(errs, want) {
			t.Errorf("exit %d stderr %q, want %q", code, errs, want)
		}
	})
}

func TestMasterFromEnvironmentAndInterspersedFlags(t *testing.T) {
	m := newFakeMaster(t)
	e, _ := testEnv()
	e.lookup = func(k string) (string, bool) {
		if k == "MESOS_MASTER" {
			return "http://" + m.addr() + "/", true
		}
		return "", false
	}
	code, out, errs := run(e, "explain", "m1-0000", "--json")
	if code != 0 || !strings.HasPrefix(out, "{") {
		t.Fatalf("exit %d out %q err %q", code, out, errs)
	}
	// The command line wins over the environment.
	code, _, errs = run(e, "agents", "--master="+deadAddr(t))
	if code != ExitUnreachable || !strings.Contains(errs, "connection refused") {
		t.Errorf("--master did not win over MESOS_MASTER: %d %q", code, errs)
	}
}

func TestParseMasters(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  bool
	}{
		{"127.0.0.1:5050", []string{"127.0.0.1:5050"}, false},
		{" a:1 , http://b:2/ ,", []string{"a:1", "b:2"}, false},
		{"[::1]:5050", []string{"[::1]:5050"}, false},
		{"", nil, true},
		{"zk://z:2181/mesos", nil, true},
		{"host", nil, true},
	}
	for _, tc := range tests {
		got, err := parseMasters(tc.in)
		if (err != nil) != tc.err || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parseMasters(%q) = %v, %v", tc.in, got, err)
		}
	}
}

func TestCommandsHaveSummaries(t *testing.T) {
	cmds := Commands()
	for _, name := range []string{"tasks", "agents", "frameworks", "roles", "explain", "logs", "teardown"} {
		c, ok := cmds[name]
		if !ok || c.Summary == "" || c.Run == nil {
			t.Errorf("command %q missing or incomplete", name)
		}
	}
	if got := Names(); len(got) != len(cmds) {
		t.Errorf("Names() = %v", got)
	}
}
