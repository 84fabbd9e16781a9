package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/executorpb"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/internal/exectoken"
)

// The attacker's view of a secured cluster (issue: security). One
// `mezzo local` with every authentication flag, ACLs that allow nothing
// by default, executor tokens and tasks running as their users; each
// attack gets its refusal and changes nothing.

// Principals: alice and bob run frameworks (alice's tasks as nobody,
// bob's as daemon), ops is the operator, agent is what the cluster's own
// agents (and the master reading them) present, agent2 another agent.
var securityCreds = map[string]string{"ops": "ops-pw", "alice": "alice-pw", "bob": "bob-pw", "agent": "agent-pw", "agent2": "agent2-pw"}

const securityACLs = `{
  "permissive": false,
  "register_frameworks": [{"principals": {"values": ["alice", "bob"]}, "roles": {"type": "ANY"}}],
  "run_tasks": [{"principals": {"values": ["alice"]}, "users": {"values": ["nobody"]}},
                {"principals": {"values": ["bob"]}, "users": {"values": ["daemon"]}}],
  "register_agents": [{"principals": {"values": ["agent", "agent2"]}, "agents": {"type": "ANY"}}],
  "teardown_frameworks": [{"principals": {"values": ["ops"]}, "framework_principals": {"type": "ANY"}}],
  "view_frameworks": [{"principals": {"values": ["ops", "agent"]}, "users": {"type": "ANY"}},
                      {"principals": {"values": ["alice"]}, "users": {"values": ["nobody"]}},
                      {"principals": {"values": ["bob"]}, "users": {"values": ["daemon"]}}],
  "view_tasks": [{"principals": {"values": ["ops", "agent"]}, "users": {"type": "ANY"}},
                 {"principals": {"values": ["alice"]}, "users": {"values": ["nobody"]}},
                 {"principals": {"values": ["bob"]}, "users": {"values": ["daemon"]}}],
  "view_executors": [{"principals": {"values": ["ops", "agent"]}, "users": {"type": "ANY"}},
                     {"principals": {"values": ["alice"]}, "users": {"values": ["nobody"]}},
                     {"principals": {"values": ["bob"]}, "users": {"values": ["daemon"]}}],
  "access_sandboxes": [{"principals": {"values": ["ops", "agent"]}, "users": {"type": "ANY"}},
                       {"principals": {"values": ["alice"]}, "users": {"values": ["nobody"]}},
                       {"principals": {"values": ["bob"]}, "users": {"values": ["daemon"]}}],
  "view_roles": [{"principals": {"values": ["ops", "agent"]}, "roles": {"type": "ANY"}}],
  "view_flags": [{"principals": {"values": ["ops", "agent"]}, "flags": {"type": "ANY"}}],
  "get_endpoints": [{"principals": {"values": ["ops", "agent"]}, "paths": {"type": "ANY"}}]
}`

// secured is a cluster and what its attackers and users hold.
type secured struct {
	*cluster
	dir   string            // credentials, keys
	creds map[string]string // principal -> --credential file
	key   []byte            // the executor secret key
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	return path
}

// traversable opens dir and its parents to every user: tasks run as
// nobody and daemon and must reach their sandboxes.
func traversable(t *testing.T, dir string) {
	for d := dir; d != "/" && d != "."; d = filepath.Dir(d) {
		if d == os.TempDir() {
			break
		}
		os.Chmod(d, 0o755)
	}
}

func startSecured(t *testing.T) *secured {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running tasks as other users needs root")
	}
	s := &secured{dir: t.TempDir(), creds: map[string]string{}}
	var lines []string
	for p, pw := range securityCreds {
		lines = append(lines, p+" "+pw)
		s.creds[p] = writeFile(t, filepath.Join(s.dir, p+".cred"), p+" "+pw+"\n", 0o600)
	}
	credentials := writeFile(t, filepath.Join(s.dir, "credentials"), strings.Join(lines, "\n")+"\n", 0o600)
	acls := writeFile(t, filepath.Join(s.dir, "acls.json"), securityACLs, 0o600)
	s.key = bytes.Repeat([]byte("0123456789abcdef"), 3)
	key := writeFile(t, filepath.Join(s.dir, "executor.key"), string(s.key), 0o600)
	ops := func(string) *http.Client { return &http.Client{Timeout: 5 * time.Second, Transport: basicAs("ops")} }
	s.cluster = startLocalVia(t, ops, "http", 1,
		"--credentials="+credentials, "--credential="+s.creds["agent"], "--acls="+acls,
		"--authenticate_frameworks", "--authenticate_agents", "--authenticate_http_readwrite", "--authenticate_http_readonly",
		"--authenticate_http_executors", "--executor_secret_key="+key)
	traversable(t, s.cluster.dir)
	return s
}

// basicAs presents principal's credential on every request.
func basicAs(principal string) http.RoundTripper {
	return roundTrip(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.SetBasicAuth(principal, securityCreds[principal])
		return http.DefaultTransport.RoundTrip(r)
	})
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// call sends one request as who ("" anonymous, "wrong" a wrong password)
// and returns the status, headers and body.
func call(t *testing.T, method, u, who, contentType string, body []byte) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, u, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	switch who {
	case "":
	case "wrong":
		req.SetBasicAuth("ops", "guess")
	default:
		req.SetBasicAuth(who, securityCreds[who])
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// startRun runs `mezzo run` in the background as principal (its
// framework lives while it runs) and stops it at the end of the test.
func (s *secured) startRun(t *testing.T, principal string, args ...string) {
	t.Helper()
	cmd := exec.Command(mezzoBin, append([]string{"run", "--master=" + s.addr, "--credential=" + s.creds[principal], "--stream=false"}, args...)...)
	out := &lockedWriter{w: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("mezzo run as %s:\n%s", principal, out.w.(*bytes.Buffer).String())
		}
	})
}

type taskView struct {
	ID          string `json:"id"`
	FrameworkID string `json:"framework_id"`
	State       string `json:"state"`
	User        string `json:"user"`
}

// tasks is /master/tasks as who sees it.
func (s *secured) tasks(t *testing.T, who string) map[string]taskView {
	t.Helper()
	code, _, body := call(t, "GET", s.url("/master/tasks?limit=-1"), who, "", nil)
	if code != 200 {
		t.Fatalf("/master/tasks as %q: %d %s", who, code, body)
	}
	var v struct{ Tasks []taskView }
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	out := map[string]taskView{}
	for _, tk := range v.Tasks {
		out[tk.ID] = tk
	}
	return out
}

// waitRunning waits until every task is TASK_RUNNING (as ops sees them).
func (s *secured) waitRunning(t *testing.T, ids ...string) map[string]taskView {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ts := s.tasks(t, "ops")
		n := 0
		for _, id := range ids {
			switch st := ts[id].State; st {
			case "TASK_RUNNING":
				n++
			case "", "TASK_STAGING", "TASK_STARTING":
			default:
				t.Fatalf("task %s is %s", id, st)
			}
		}
		if n == len(ids) {
			return ts
		}
		if time.Now().After(deadline) {
			t.Fatalf("tasks %v not all running: %+v", ids, ts)
		}
		time.Sleep(100 * time.Millisecond) // polling interval, bounded by the deadline
	}
}

type agentExecutor struct {
	ID, Container, Directory string
	FrameworkID              string
}

// agentExecutors lists the agent's executors (as the agent principal).
func (s *secured) agentExecutors(t *testing.T, agentAddr string) map[string]agentExecutor {
	t.Helper()
	code, _, body := call(t, "GET", "http://"+agentAddr+"/state", "agent", "", nil)
	if code != 200 {
		t.Fatalf("agent /state: %d %s", code, body)
	}
	var st struct {
		Frameworks []struct {
			ID        string `json:"id"`
			Executors []struct{ ID, Container, Directory string }
		}
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	out := map[string]agentExecutor{}
	for _, f := range st.Frameworks {
		for _, e := range f.Executors {
			out[e.ID] = agentExecutor{ID: e.ID, Container: e.Container, Directory: e.Directory, FrameworkID: f.ID}
		}
	}
	return out
}

func TestSecurityAttacks(t *testing.T) {
	s := startSecured(t)
	agentID, agentAddr := s.onlyAgent(t)

	t.Run("no credentials or wrong ones", func(t *testing.T) {
		for _, tc := range []struct{ method, path, ct, realm string }{
			{"GET", "/master/state", "", "mesos-master-readonly"},
			{"POST", "/api/v1", "application/json", "mesos-master-readwrite"},
			{"POST", "/master/teardown", "", "mesos-master-readwrite"},
			{"POST", "/api/v1/scheduler", "application/json", "mesos-master-scheduler"},
			{"GET", "/agent/" + agentID + "/state", "", "mesos-master-readonly"},
		} {
			for _, who := range []string{"", "wrong"} {
				code, hdr, body := call(t, tc.method, s.url(tc.path), who, tc.ct, []byte(`{"type":"GET_HEALTH"}`))
				if code != http.StatusUnauthorized || hdr.Get("WWW-Authenticate") != `Basic realm="`+tc.realm+`"` {
					t.Errorf("%s %s as %q: %d %q %s", tc.method, tc.path, who, code, hdr.Get("WWW-Authenticate"), body)
				}
			}
		}
		code, _, _ := call(t, "GET", "http://"+agentAddr+"/state", "", "", nil)
		if code != http.StatusUnauthorized {
			t.Errorf("agent /state anonymously: %d", code)
		}
		code, out := runCmd(t, 30*time.Second, mezzoBin, "run", "--master="+s.addr, "--", "true")
		if code == 0 || !strings.Contains(out, "401 Unauthorized") {
			t.Errorf("mezzo run without a credential: exit %d\n%s", code, out)
		}
		var metrics map[string]float64
		if err := getJSONWith(s.hc, s.url("/metrics/snapshot"), &metrics); err != nil || metrics["master/http_authentication_failures"] < 10 {
			t.Errorf("authentication failures counted: %v (%v)", metrics["master/http_authentication_failures"], err)
		}
		if n := len(s.tasks(t, "ops")); n != 0 {
			t.Errorf("refused requests left %d tasks", n)
		}
	})

	// alice's and bob's long tasks, run by their own frameworks, through
	// the command executor (checkpointing), which presents its token.
	s.startRun(t, "alice", "--user=nobody", "--checkpoint", "--task_id=alice-task", "--shell", "--",
		"echo alice-private; ln -s /etc/shadow shadow; ln -s .. up; exec sleep 600")
	s.startRun(t, "bob", "--user=daemon", "--checkpoint", "--task_id=bob-task", "--shell", "--", "echo bob-private; exec sleep 600")
	ts := s.waitRunning(t, "alice-task", "bob-task")
	if ts["alice-task"].User != "nobody" || ts["bob-task"].User != "daemon" {
		t.Fatalf("tasks' users: %+v", ts)
	}
	aliceFw, bobFw := ts["alice-task"].FrameworkID, ts["bob-task"].FrameworkID
	execs := s.agentExecutors(t, agentAddr)
	aliceDir, bobDir := execs["alice-task"].Directory, execs["bob-task"].Directory
	// Each is its user's, and the tasks really run as them.
	for dir, want := range map[string]int{aliceDir: 65534, bobDir: 1} {
		var st syscall.Stat_t
		if err := syscall.Stat(dir, &st); err != nil || int(st.Uid) != want {
			t.Errorf("sandbox %s owned by %d (%v), want %d", dir, st.Uid, err, want)
		}
	}

	t.Run("another principal's teardown and kill", func(t *testing.T) {
		form := "application/x-www-form-urlencoded"
		for _, tc := range []struct {
			name, method, path, ct, body string
			want                         int
			says                         string
		}{
			{"classic teardown", "POST", "/master/teardown", form, "frameworkId=" + aliceFw, 403, "not authorized to teardown_frameworks"},
			{"operator TEARDOWN", "POST", "/api/v1", "application/json", `{"type":"TEARDOWN","teardown":{"framework_id":{"value":"` + aliceFw + `"}}}`, 403, "teardown_frameworks"},
			{"kill-task", "POST", "/master/kill-task", form, "frameworkId=" + aliceFw + "&taskId=alice-task", 403, "teardown_frameworks"},
			{"scheduler KILL on alice's framework", "POST", "/api/v1/scheduler", "application/json",
				`{"framework_id":{"value":"` + aliceFw + `"},"type":"KILL","kill":{"task_id":{"value":"alice-task"}}}`, 400,
				"Authenticated principal 'bob' does not match principal 'alice'"},
			{"scheduler TEARDOWN on alice's framework", "POST", "/api/v1/scheduler", "application/json",
				`{"framework_id":{"value":"` + aliceFw + `"},"type":"TEARDOWN"}`, 400, "does not match"},
			{"re-subscribing as alice's framework", "POST", "/api/v1/scheduler", "application/json",
				`{"type":"SUBSCRIBE","framework_id":{"value":"` + aliceFw + `"},"subscribe":{"framework_info":{"id":{"value":"` + aliceFw + `"},"user":"nobody","name":"x","principal":"alice"}}}`,
				400, "Authenticated principal 'bob' does not match principal 'alice'"},
		} {
			code, _, body := call(t, tc.method, s.url(tc.path), "bob", tc.ct, []byte(tc.body))
			if code != tc.want || !strings.Contains(body, tc.says) {
				t.Errorf("%s as bob: %d %s, want %d saying %q", tc.name, code, body, tc.want, tc.says)
			}
		}
		if ts := s.tasks(t, "ops"); ts["alice-task"].State != "TASK_RUNNING" {
			t.Errorf("alice's task after bob's attempts: %+v", ts["alice-task"])
		}
	})

	t.Run("a launch as root that the ACLs forbid", func(t *testing.T) {
		code, out := runCmd(t, 60*time.Second, mezzoBin, "run", "--master="+s.addr, "--credential="+s.creds["alice"],
			"--user=root", "--stream=false", "--task_id=alice-root", "--", "id")
		if code == 0 || !strings.Contains(out, "TASK_ERROR") || !strings.Contains(out, "REASON_TASK_UNAUTHORIZED") ||
			!strings.Contains(out, `run_tasks (user \"root\")`) {
			t.Errorf("alice's launch as root: exit %d\n%s", code, out)
		}
		if _, ran := s.agentExecutors(t, agentAddr)["alice-root"]; ran {
			t.Error("the agent was told to run alice's root task")
		}
	})

	t.Run("each principal sees its own", func(t *testing.T) {
		for who, want := range map[string]string{"alice": "alice-task", "bob": "bob-task"} {
			ts := s.tasks(t, who)
			if len(ts) != 1 || ts[want].State == "" {
				t.Errorf("%s sees tasks %v, want only %s", who, ts, want)
			}
			_, _, state := call(t, "GET", s.url("/master/state"), who, "", nil)
			other := map[string]string{"alice": bobFw, "bob": aliceFw}[who]
			if strings.Contains(state, other) {
				t.Errorf("%s's /master/state shows the other framework %s", who, other)
			}
			_, _, agentState := call(t, "GET", s.url("/agent/"+agentID+"/state"), who, "", nil)
			if strings.Contains(agentState, other) || !strings.Contains(agentState, want) {
				t.Errorf("%s's view of the agent's state through the master: %s", who, agentState)
			}
		}
	})

	t.Run("sandbox reads of another framework and escapes", func(t *testing.T) {
		proxy := func(who, path string) (int, string) {
			code, _, body := call(t, "GET", s.url("/agent/"+agentID+"/files/read?offset=0&path="+path), who, "", nil)
			return code, body
		}
		direct := func(who, path string) (int, string) {
			code, _, body := call(t, "GET", "http://"+agentAddr+"/files/read?offset=0&path="+path, who, "", nil)
			return code, body
		}
		q := url.QueryEscape
		for _, tc := range []struct {
			name, who, path string
			want            int
		}{
			{"own, through the master", "alice", q(aliceDir + "/stdout"), 200},
			{"bob's, through the master", "alice", q(bobDir + "/stdout"), 403},
			{"bob's by its virtual path", "alice", q("/frameworks/" + bobFw + "/executors/bob-task/runs/latest/stdout"), 403},
			{"escape with ..", "alice", q(aliceDir + "/../../../bob-task/runs/latest/stdout"), 400},
			{"escape with encoded ..", "alice", strings.ReplaceAll(q(aliceDir+"/../../../bob-task/runs/latest/stdout"), ".", "%2e"), 400},
			{"escape with double-encoded ..", "alice", q(aliceDir + "/%2e%2e/%2e%2e/%2e%2e/bob-task/runs/latest/stdout"), 404},
		} {
			code, body := proxy(tc.who, tc.path)
			if code != tc.want || (code != 200 && strings.Contains(body, "bob-private")) {
				t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.want)
			}
		}
		for _, tc := range []struct {
			name, who, path string
			want            int
		}{
			{"bob's, on the agent", "alice", q(bobDir + "/stdout"), 403},
			{"alice's, on the agent, as bob", "bob", q(aliceDir + "/stdout"), 403},
			{"escape with .. on the agent", "alice", q(aliceDir + "/../../../bob-task/runs/latest/stdout"), 400},
		} {
			if code, body := direct(tc.who, tc.path); code != tc.want || strings.Contains(body, "private") {
				t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.want)
			}
		}
		// Symlinks alice's task made in its own sandbox lead nowhere.
		for _, p := range []string{aliceDir + "/shadow", aliceDir + "/up/../../bob-task/runs/latest/stdout"} {
			for name, read := range map[string]func(string, string) (int, string){"master": proxy, "agent": direct} {
				code, body := read("alice", q(p))
				if code == 200 || strings.Contains(body, "root:") || strings.Contains(body, "bob-private") {
					t.Errorf("symlink %s through the %s: %d %s", p, name, code, body)
				}
			}
		}
	})

	t.Run("an agent presenting another agent's ID", func(t *testing.T) {
		sub := &protocol.AgentCall{Type: protocol.AgentCall_SUBSCRIBE.Enum(), Subscribe: &protocol.AgentCall_Subscribe{
			AgentInfo: &mesos.AgentInfo{Id: &mesos.AgentID{Value: proto.String(agentID)}, Hostname: proto.String("evil"), Port: proto.Int32(1)},
			Endpoint:  proto.String("127.0.0.1:1"),
			Version:   protocol.Version_VERSION_1.Enum(),
		}}
		body, _ := proto.Marshal(sub)
		for who, want := range map[string]int{"agent2": 403, "": 401, "alice": 403} {
			code, _, text := call(t, "POST", s.url("/internal/v1/agent"), who, "application/x-protobuf", body)
			if code != want {
				t.Errorf("SUBSCRIBE with %s's ID as %q: %d %s, want %d", agentID, who, code, text, want)
			}
		}
		update := &protocol.AgentCall{Type: protocol.AgentCall_STATUS_UPDATE.Enum(), AgentId: &mesos.AgentID{Value: proto.String(agentID)},
			StatusUpdate: &protocol.AgentCall_StatusUpdate{FrameworkId: &mesos.FrameworkID{Value: proto.String(aliceFw)},
				Status: &mesos.TaskStatus{TaskId: &mesos.TaskID{Value: proto.String("alice-task")}, State: mesos.TaskState_TASK_FINISHED.Enum()}}}
		body, _ = proto.Marshal(update)
		if code, _, text := call(t, "POST", s.url("/internal/v1/agent"), "agent2", "application/x-protobuf", body); code != 403 {
			t.Errorf("a forged status update as agent2: %d %s", code, text)
		}
		var slaves struct {
			Slaves []struct {
				ID, Hostname string
				Active       bool
			}
		}
		if err := getJSONWith(s.hc, s.url("/master/slaves"), &slaves); err != nil || len(slaves.Slaves) != 1 || slaves.Slaves[0].Hostname == "evil" || !slaves.Slaves[0].Active {
			t.Errorf("agents after the impersonation attempts: %+v %v", slaves, err)
		}
		if ts := s.tasks(t, "ops"); ts["alice-task"].State != "TASK_RUNNING" {
			t.Errorf("alice's task after a forged update: %+v", ts["alice-task"])
		}
	})

	t.Run("forged executor tokens", func(t *testing.T) {
		a, b := execs["alice-task"], execs["bob-task"]
		key, _ := exectoken.NewKey(s.key)
		other, _ := exectoken.NewKey(bytes.Repeat([]byte("x"), 48))
		mint := func(k exectoken.Key, e agentExecutor, exp time.Time) string {
			tok, err := exectoken.Mint(k, exectoken.Principal{FrameworkID: e.FrameworkID, ExecutorID: e.ID, ContainerID: e.Container}, exp.Add(-time.Hour), exp)
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}
		enc := base64.RawURLEncoding
		unsigned := enc.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." +
			enc.EncodeToString([]byte(fmt.Sprintf(`{"fid":%q,"eid":"alice-task","cid":%q,"exp":%d}`, aliceFw, a.Container, time.Now().Add(time.Hour).Unix()))) + "."
		update := &executorpb.Call{FrameworkId: &mesos.FrameworkID{Value: proto.String(aliceFw)}, ExecutorId: &mesos.ExecutorID{Value: proto.String("alice-task")},
			Type: executorpb.Call_UPDATE.Enum(), Update: &executorpb.Call_Update{Status: &mesos.TaskStatus{
				TaskId: &mesos.TaskID{Value: proto.String("alice-task")}, State: mesos.TaskState_TASK_FINISHED.Enum(),
				Source: mesos.TaskStatus_SOURCE_EXECUTOR.Enum(), Uuid: bytes.Repeat([]byte{7}, 16)}}}
		body, _ := proto.Marshal(update)
		for name, tok := range map[string]string{
			"none":                    "",
			"signed with another key": mint(other, a, time.Now().Add(time.Hour)),
			"bob's executor's token":  mint(key, b, time.Now().Add(time.Hour)),
			"expired":                 mint(key, a, time.Now().Add(-time.Minute)),
			"alg=none":                unsigned,
		} {
			req, _ := http.NewRequest("POST", "http://"+agentAddr+"/api/v1/executor", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/x-protobuf")
			if tok != "" {
				req.Header.Set("Authorization", "Bearer "+tok)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("executor call with %s token: %d, want 401", name, resp.StatusCode)
			}
		}
		if ts := s.tasks(t, "ops"); ts["alice-task"].State != "TASK_RUNNING" {
			t.Errorf("alice's task after forged executor calls: %+v", ts["alice-task"])
		}
	})

	t.Run("secrets in no endpoint's output", func(t *testing.T) {
		const secret = "s3cr3t-Vq8-never-shown"
		sum := sha256.Sum256([]byte(secret + "\n"))
		events := s.watchEvents(t)
		task := fmt.Sprintf(`{"name": "secret-task", "task_id": {"value": "secret-task"},
  "resources": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 0.1}}, {"name": "mem", "type": "SCALAR", "scalar": {"value": 32}}],
  "command": {"shell": true, "user": "nobody", "value": "echo \"$DB_PASSWORD\" | sha256sum; exec sleep 600",
    "environment": {"variables": [{"name": "DB_PASSWORD", "type": "SECRET", "secret": {"type": "VALUE", "value": {"data": %q}}}]}}}`,
			base64.StdEncoding.EncodeToString([]byte(secret)))
		file := writeFile(t, filepath.Join(s.dir, "secret-task.json"), task, 0o600)
		s.startRun(t, "alice", "--checkpoint", "--user=nobody", "--task="+file)
		s.waitRunning(t, "secret-task")
		dir := s.agentExecutors(t, agentAddr)["secret-task"].Directory
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(readOrEmpty(filepath.Join(dir, "stdout")), hex.EncodeToString(sum[:])) {
			if time.Now().After(deadline) {
				t.Fatalf("the task never saw its secret; stdout:\n%s", readOrEmpty(filepath.Join(dir, "stdout")))
			}
			time.Sleep(100 * time.Millisecond) // polling interval, bounded by the deadline
		}
		outputs := map[string]string{"operator event stream": events()}
		for _, p := range []string{"/master/state", "/master/state-summary", "/master/frameworks", "/master/tasks?limit=-1",
			"/master/roles", "/master/flags", "/metrics/snapshot", "/metrics", "/master/maintenance/status",
			"/agent/" + agentID + "/state", "/agent/" + agentID + "/monitor/statistics", "/"} {
			_, _, outputs["master "+p] = call(t, "GET", s.url(p), "ops", "", nil)
		}
		for _, p := range []string{"/state", "/flags", "/metrics/snapshot", "/metrics", "/monitor/statistics", "/files/debug"} {
			_, _, outputs["agent "+p] = call(t, "GET", "http://"+agentAddr+p, "ops", "", nil)
		}
		for _, c := range []string{"GET_STATE", "GET_TASKS", "GET_EXECUTORS", "GET_FRAMEWORKS", "GET_AGENTS", "GET_OPERATIONS", "GET_ROLES", "GET_FLAGS"} {
			_, _, outputs["master "+c] = call(t, "POST", s.url("/api/v1"), "ops", "application/json", []byte(`{"type":"`+c+`"}`))
		}
		for _, c := range []string{"GET_STATE", "GET_TASKS", "GET_EXECUTORS", "GET_FRAMEWORKS", "GET_CONTAINERS", "GET_FLAGS"} {
			_, _, outputs["agent "+c] = call(t, "POST", "http://"+agentAddr+"/api/v1", "ops", "application/json", []byte(`{"type":"`+c+`"}`))
		}
		outputs["cluster log"] = s.logs()
		forms := []string{secret, base64.StdEncoding.EncodeToString([]byte(secret)), base64.RawStdEncoding.EncodeToString([]byte(secret))}
		for where, out := range outputs {
			if len(out) == 0 {
				t.Errorf("%s: empty output", where)
			}
			for _, f := range forms {
				if strings.Contains(out, f) {
					t.Errorf("%s shows the secret (as %q)", where, f)
				}
			}
		}
		if !strings.Contains(outputs["agent GET_EXECUTORS"], "DB_PASSWORD") {
			t.Errorf("the agent's GET_EXECUTORS does not list the secret variable at all (is the search looking in the right place?):\n%s", outputs["agent GET_EXECUTORS"])
		}
	})
}

func readOrEmpty(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// onlyAgent is the cluster's one agent, as ops reads it.
func (s *secured) onlyAgent(t *testing.T) (id, addr string) {
	t.Helper()
	var state struct {
		Slaves []struct{ ID, PID string } `json:"slaves"`
	}
	if err := getJSONWith(s.hc, s.url("/master/state"), &state); err != nil || len(state.Slaves) != 1 {
		t.Fatalf("master state: %v %+v", err, state)
	}
	pid := state.Slaves[0].PID
	return state.Slaves[0].ID, pid[strings.Index(pid, "@")+1:]
}

// watchEvents subscribes to the operator event stream as ops and returns
// a function that stops it and returns everything it carried.
func (s *secured) watchEvents(t *testing.T) func() string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", s.url("/api/v1"), strings.NewReader(`{"type":"SUBSCRIBE"}`))
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("ops", securityCreds["ops"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		cancel()
		t.Fatalf("SUBSCRIBE: %v %v", err, resp)
	}
	var buf lockedWriter
	buf.w = &bytes.Buffer{}
	done := make(chan struct{})
	go func() {
		io.Copy(&buf, resp.Body)
		close(done)
	}()
	return func() string {
		cancel()
		<-done
		resp.Body.Close()
		return buf.w.(*bytes.Buffer).String()
	}
}

// The attacker's try at a master failover (issue 14's follow-up): three
// masters with --authenticate_agents; the leader is killed (-9) while the
// victim agent is frozen, and an impostor holding another valid agent
// credential presents the victim's agent ID to the new leader before the
// victim is back. The new leader knows the ID's principal from the
// registry: the SUBSCRIBE and a forged status update are refused with 403,
// counted, and change nothing; the victim then re-registers under its ID.
func TestSecurityAgentIDAfterFailover(t *testing.T) {
	dir := t.TempDir()
	credentials := writeFile(t, filepath.Join(dir, "credentials"),
		"agent "+securityCreds["agent"]+"\nagent2 "+securityCreds["agent2"]+"\n", 0o600)
	victimCred := writeFile(t, filepath.Join(dir, "agent.cred"), "agent "+securityCreds["agent"]+"\n", 0o600)
	c := startHA(t, "--credentials="+credentials, "--authenticate_agents")
	victim, id := c.startAgent("victim", "--credential="+victimCred)

	victim.signal(syscall.SIGSTOP)
	old := c.awaitLeader("")
	c.masters[old].kill()
	next := c.awaitLeader(c.addrs[old])
	leader := "http://" + c.addrs[next]

	sub := &protocol.AgentCall{Type: protocol.AgentCall_SUBSCRIBE.Enum(), Subscribe: &protocol.AgentCall_Subscribe{
		AgentInfo: &mesos.AgentInfo{Id: &mesos.AgentID{Value: proto.String(id)}, Hostname: proto.String("evil"), Port: proto.Int32(1)},
		Endpoint:  proto.String("127.0.0.1:1"),
		Version:   protocol.Version_VERSION_1.Enum(),
	}}
	body, _ := proto.Marshal(sub)
	for who, want := range map[string]int{"agent2": 403, "": 401} {
		code, _, text := call(t, "POST", leader+"/internal/v1/agent", who, "application/x-protobuf", body)
		if code != want || (code == 403 && !strings.Contains(text, "registered as principal 'agent'")) {
			t.Errorf("SUBSCRIBE with the victim's ID as %q after the failover: %d %s, want %d", who, code, text, want)
		}
	}
	update := &protocol.AgentCall{Type: protocol.AgentCall_STATUS_UPDATE.Enum(), AgentId: &mesos.AgentID{Value: proto.String(id)},
		StatusUpdate: &protocol.AgentCall_StatusUpdate{FrameworkId: &mesos.FrameworkID{Value: proto.String("fw")},
			Status: &mesos.TaskStatus{TaskId: &mesos.TaskID{Value: proto.String("t")}, State: mesos.TaskState_TASK_FINISHED.Enum()}}}
	body, _ = proto.Marshal(update)
	if code, _, text := call(t, "POST", leader+"/internal/v1/agent", "agent2", "application/x-protobuf", body); code != 403 {
		t.Errorf("a forged status update for the victim's ID as agent2: %d %s", code, text)
	}
	var metrics map[string]float64
	if err := getJSON(leader+"/metrics/snapshot", &metrics); err != nil || metrics["master/authorization_denials"] != 2 {
		t.Errorf("refusals counted: %v (%v), want 2", metrics["master/authorization_denials"], err)
	}
	st, err := c.state(next)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Slaves) != 0 || len(st.Recovered) != 1 || st.Recovered[0].ID != id {
		t.Fatalf("the refusals changed the new leader: agents %+v, still expected %+v", st.Slaves, st.Recovered)
	}
	if logs := c.masters[next].logs(); !strings.Contains(logs, "agent impersonation refused") {
		t.Errorf("the new leader did not log the refusal:\n%s", logs)
	}

	victim.signal(syscall.SIGCONT)
	poll(t, "the victim to re-register under its ID", 60*time.Second, func() bool {
		st, err := c.state(next)
		return err == nil && len(st.Slaves) == 1 && st.Slaves[0].ID == id && st.Slaves[0].Hostname == "victim" && st.Slaves[0].Active
	})
}
