package agent

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/executorpb"
	"mezzo/api/mesos"
	"mezzo/internal/authn"
	"mezzo/internal/authorizer"
	"mezzo/internal/exectoken"
)

// reachable makes dir and its parents up to the temp root traversable by
// every user: a task running as its user must reach its sandbox.
func reachable(t *testing.T, dir string) {
	t.Helper()
	for d := dir; d != os.TempDir() && d != "/" && d != "."; d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
}

func nobody(t *testing.T) (uid, gid int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("switching users needs root")
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody on this host")
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid
}

// With --switch_user, a task runs as CommandInfo.user (else
// FrameworkInfo.user) and its sandbox is that user's; an unknown user
// fails the task naming the user; without --switch_user everything runs
// as the agent's user.
func TestSwitchUser(t *testing.T) {
	uid, gid := nobody(t)
	for _, tc := range []struct {
		name       string
		switchUser bool
		cmdUser    string
		fwUser     string
		wantUID    int
		wantFailed string
	}{
		{"command user", true, "nobody", "root", uid, ""},
		{"framework user", true, "", "nobody", uid, ""},
		{"unknown user", true, "no-such-user-x1", "root", 0, "user 'no-such-user-x1' does not exist on agent agent.test"},
		{"switch_user off", false, "nobody", "nobody", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newFakeMaster(t)
			ta := startTestAgent(t, m, func(c *Config) { c.SwitchUser = tc.switchUser })
			reachable(t, ta.dir)
			sub := register(t, m, 1)
			fw := frameworkInfo("F1")
			fw.User = proto.String(tc.fwUser)
			task := commandTask("t1", "keep")
			if tc.cmdUser != "" {
				task.Command.User = proto.String(tc.cmdUser)
			}
			sub.send(runTask(fw, task, 1))
			if tc.wantFailed != "" {
				c := m.waitCall(t, "TASK_FAILED", updateFor("t1", mesos.TaskState_TASK_FAILED))
				st := c.GetStatusUpdate().GetStatus()
				if st.GetReason() != mesos.TaskStatus_REASON_CONTAINER_LAUNCH_FAILED || !strings.Contains(st.GetMessage(), tc.wantFailed) {
					t.Fatalf("unknown user: %v %q", st.GetReason(), st.GetMessage())
				}
				return
			}
			m.waitCall(t, "TASK_RUNNING", updateFor("t1", mesos.TaskState_TASK_RUNNING))
			dir := executorDirectory(t, ta, "t1")
			out := readFile(t, filepath.Join(dir, "stdout"))
			if want := "testexec uid " + strconv.Itoa(tc.wantUID) + " "; !strings.Contains(out, want) {
				t.Fatalf("executor output lacks %q:\n%s", want, out)
			}
			var st syscall.Stat_t
			if err := syscall.Stat(dir, &st); err != nil {
				t.Fatal(err)
			}
			wantGID := gid
			if tc.wantUID == 0 {
				wantGID = 0
			}
			if int(st.Uid) != tc.wantUID || int(st.Gid) != wantGID {
				t.Fatalf("sandbox owned by %d:%d, want %d:%d", st.Uid, st.Gid, tc.wantUID, wantGID)
			}
			if err := syscall.Stat(filepath.Join(dir, "stdout"), &st); err != nil || int(st.Uid) != tc.wantUID {
				t.Fatalf("stdout owned by %d (%v), want %d", st.Uid, err, tc.wantUID)
			}
		})
	}
}

// forge signs a JWT of header and claims with key, the way an attacker
// who has a key (or none) would.
func forge(header, claims string, key []byte) string {
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(claims))
	if key == nil {
		return signing + "."
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(signing))
	return signing + "." + enc.EncodeToString(mac.Sum(nil))
}

// With --authenticate_http_executors the built-in path works (the
// executor presents the token the agent minted for it), and every call
// with a missing, forged, foreign, expired or unsigned token is refused
// 401 and changes nothing.
func TestExecutorTokens(t *testing.T) {
	keyBytes := bytes.Repeat([]byte("k"), 32)
	key, err := exectoken.NewKey(keyBytes)
	if err != nil {
		t.Fatal(err)
	}
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, func(c *Config) {
		c.ExecutorSecretKey = &key
		c.AuthenticateExecutors = true
	})
	sub := register(t, m, 1)
	sub.send(runTask(frameworkInfo("F1"), commandTask("t1", "keep"), 1))
	sub.send(runTask(frameworkInfo("F1"), commandTask("t2", "keep"), 1))
	m.waitCall(t, "t1 TASK_RUNNING", updateFor("t1", mesos.TaskState_TASK_RUNNING))
	m.waitCall(t, "t2 TASK_RUNNING", updateFor("t2", mesos.TaskState_TASK_RUNNING))
	env := readFile(t, filepath.Join(executorDirectory(t, ta, "t1"), "env.txt"))
	if !strings.Contains(env, exectoken.EnvVar+"=") {
		t.Fatalf("the executor got no token:\n%s", env)
	}
	var cid string
	ta.query(func() { cid = ta.frameworks["F1"].executors["t1"].containerID })

	now := ta.clock.Now()
	mint := func(k exectoken.Key, p exectoken.Principal, exp time.Time) string {
		tok, err := exectoken.Mint(k, p, now.Add(-2*time.Hour), exp)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	other, _ := exectoken.NewKey(bytes.Repeat([]byte("x"), 32))
	self := exectoken.Principal{FrameworkID: "F1", ExecutorID: "t1", ContainerID: cid}
	claims := `{"fid":"F1","eid":"t1","cid":"` + cid + `","exp":` + strconv.FormatInt(now.Add(time.Hour).Unix(), 10) + `}`
	var t2cid string
	ta.query(func() { t2cid = ta.frameworks["F1"].executors["t2"].containerID })
	for _, tc := range []struct{ name, auth string }{
		{"no token", ""},
		{"basic instead of bearer", "Basic " + base64.StdEncoding.EncodeToString([]byte("a:b"))},
		{"signed with another key", "Bearer " + mint(other, self, now.Add(time.Hour))},
		{"another executor's token", "Bearer " + mint(key, exectoken.Principal{FrameworkID: "F1", ExecutorID: "t2", ContainerID: t2cid}, now.Add(time.Hour))},
		{"another container's token", "Bearer " + mint(key, exectoken.Principal{FrameworkID: "F1", ExecutorID: "t1", ContainerID: "old"}, now.Add(time.Hour))},
		{"expired", "Bearer " + mint(key, self, now.Add(-time.Hour))},
		{"alg none", "Bearer " + forge(`{"alg":"none","typ":"JWT"}`, claims, nil)},
		{"alg HS512 with the right key", "Bearer " + forge(`{"alg":"HS512","typ":"JWT"}`, claims, keyBytes)},
		{"garbage", "Bearer not.a.token"},
	} {
		// A terminal update for t1 from someone who is not t1's executor.
		call := &executorpb.Call{
			FrameworkId: &mesos.FrameworkID{Value: proto.String("F1")},
			ExecutorId:  &mesos.ExecutorID{Value: proto.String("t1")},
			Type:        executorpb.Call_UPDATE.Enum(),
			Update: &executorpb.Call_Update{Status: &mesos.TaskStatus{
				TaskId: &mesos.TaskID{Value: proto.String("t1")}, State: mesos.TaskState_TASK_FINISHED.Enum(),
				Source: mesos.TaskStatus_SOURCE_EXECUTOR.Enum(), Uuid: bytes.Repeat([]byte{1}, 16)}},
		}
		body, _ := proto.Marshal(call)
		req, _ := http.NewRequest(http.MethodPost, ta.srv.URL+"/api/v1/executor", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/x-protobuf")
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != `Bearer realm="mesos-agent-executor"` {
			t.Errorf("%s: %d %q, want 401 with a Bearer challenge", tc.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	m.noCall(t, "t1 TASK_FINISHED", updateFor("t1", mesos.TaskState_TASK_FINISHED))
	if n := ta.metric(t, "slave/http_authentication_failures"); n != 9 {
		t.Errorf("slave/http_authentication_failures = %v, want 9", n)
	}
}

// With --acls, the agent's /files and /state show a principal only the
// sandboxes and tasks it may see; with --authenticate_http_readonly a
// caller without credentials gets 401.
func TestAgentReadsAuthorized(t *testing.T) {
	acls, err := authorizer.ParseACLs([]byte(`{"permissive": false,
	  "access_sandboxes": [{"principals": {"values": ["alice"]}, "users": {"values": ["alice"]}}],
	  "view_frameworks":  [{"principals": {"values": ["alice"]}, "users": {"values": ["alice"]}}],
	  "view_executors":   [{"principals": {"values": ["alice"]}, "users": {"values": ["alice"]}}],
	  "view_tasks":       [{"principals": {"values": ["alice"]}, "users": {"values": ["alice"]}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	guard := &authn.Guard{
		Authenticator: authn.NewAuthenticator([]authn.Credential{{Principal: "alice", Secret: "a"}, {Principal: "bob", Secret: "b"}}),
		Required:      map[authn.Realm]bool{authn.AgentReadonly: true},
	}
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, func(c *Config) {
		c.Authorizer = authorizer.NewLocal(acls)
		c.HTTPAuth = guard
	})
	sub := register(t, m, 1)
	fa, fb := frameworkInfo("FA"), frameworkInfo("FB")
	fa.User, fb.User = proto.String("alice"), proto.String("bob")
	sub.send(runTask(fa, commandTask("ta", "keep"), 1))
	sub.send(runTask(fb, commandTask("tb", "keep"), 1))
	m.waitCall(t, "ta TASK_RUNNING", updateFor("ta", mesos.TaskState_TASK_RUNNING))
	m.waitCall(t, "tb TASK_RUNNING", updateFor("tb", mesos.TaskState_TASK_RUNNING))
	get := func(who, path string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, ta.srv.URL+path, nil)
		if who != "" {
			req.SetBasicAuth(who, who[:1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	if code, _ := get("", "/state"); code != http.StatusUnauthorized {
		t.Fatalf("anonymous /state: %d", code)
	}
	if code, _ := get("", "/health"); code != http.StatusOK {
		t.Fatalf("anonymous /health: %d", code)
	}
	code, state := get("alice", "/state")
	if code != 200 || !strings.Contains(state, `"FA"`) || strings.Contains(state, `"FB"`) || strings.Contains(state, `"tb"`) {
		t.Fatalf("alice's /state (%d) shows the wrong frameworks:\n%s", code, state)
	}
	var dirA, dirB string
	ta.query(func() {
		dirA = ta.frameworks["FA"].executors["ta"].directory
		dirB = ta.frameworks["FB"].executors["tb"].directory
	})
	for _, tc := range []struct {
		who, path string
		want      int
	}{
		{"alice", "/files/read?offset=0&path=" + dirA + "/stdout", 200},
		{"alice", "/files/read?offset=0&path=" + dirB + "/stdout", 403},
		{"alice", "/files/browse?path=/frameworks/FB/executors/tb/runs/latest", 403},
		{"alice", "/files/read?offset=0&path=" + dirA + "/../../../../FB/executors/tb/runs/latest/stdout", 400},
		{"bob", "/files/read?offset=0&path=" + dirB + "/stdout", 403},
		{"alice", "/files/debug", 403},
	} {
		if code, body := get(tc.who, tc.path); code != tc.want {
			t.Errorf("%s GET %s: %d %s, want %d", tc.who, tc.path, code, body, tc.want)
		}
	}
}
