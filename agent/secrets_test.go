package agent

import (
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
)

// SECRET environment variables: a VALUE secret's data is in the executor's
// environment (and nowhere in the agent's logs or /state); a REFERENCE
// secret, which this agent cannot resolve, and a malformed one fail the
// task TASK_FAILED with REASON_CONTAINER_LAUNCH_FAILED before anything is
// started, as a failing secret resolver does in Mesos.
func TestSecretEnvironment(t *testing.T) {
	const data = "hunter2-ZpQ7"
	logs := &syncBuffer{}
	m := newFakeMaster(t)
	ta := startTestAgent(t, m, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	sub := register(t, m, 1)
	secretVar := func(name string, s *mesos.Secret) *mesos.Environment_Variable {
		return &mesos.Environment_Variable{Name: proto.String(name), Type: mesos.Environment_Variable_SECRET.Enum(), Secret: s}
	}
	withEnv := func(id string, vars ...*mesos.Environment_Variable) *mesos.TaskInfo {
		task := commandTask(id, "finish")
		task.Command.Environment = &mesos.Environment{Variables: vars}
		return task
	}

	ok := withEnv("t1", &mesos.Environment_Variable{Name: proto.String("PLAIN"), Value: proto.String("p")},
		secretVar("DB_PASSWORD", &mesos.Secret{Type: mesos.Secret_VALUE.Enum(), Value: &mesos.Secret_Value{Data: []byte(data)}}))
	sub.send(runTask(frameworkInfo("F1"), ok, 1))
	m.waitCall(t, "TASK_RUNNING", updateFor("t1", mesos.TaskState_TASK_RUNNING))
	env := readFile(t, filepath.Join(executorDirectory(t, ta, "t1"), "env.txt"))
	for _, want := range []string{"PLAIN=p\n", "DB_PASSWORD=" + data + "\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("executor environment lacks %q:\n%s", want, env)
		}
	}

	for _, tc := range []struct {
		id   string
		v    *mesos.Environment_Variable
		want []string
	}{
		{"t2", secretVar("TOKEN", &mesos.Secret{Type: mesos.Secret_REFERENCE.Enum(),
			Reference: &mesos.Secret_Reference{Name: proto.String("db/password"), Key: proto.String("pw")}}),
			[]string{"Failed to launch container: task t2: environment variable 'TOKEN'", `cannot resolve secret reference "db/password" (key "pw")`, "no secret resolver"}},
		{"t3", secretVar("BROKEN", nil), []string{"task t3: environment variable 'BROKEN' of type 'SECRET' must have a secret set"}},
	} {
		sub.send(runTask(frameworkInfo("F1"), withEnv(tc.id, tc.v), 1))
		c := m.waitCall(t, "TASK_FAILED", updateFor(tc.id, mesos.TaskState_TASK_FAILED))
		st := c.GetStatusUpdate().GetStatus()
		if st.GetReason() != mesos.TaskStatus_REASON_CONTAINER_LAUNCH_FAILED || st.GetSource() != mesos.TaskStatus_SOURCE_AGENT {
			t.Errorf("%s: status %v", tc.id, st)
		}
		for _, w := range tc.want {
			if !strings.Contains(st.GetMessage(), w) {
				t.Errorf("%s: message %q lacks %q", tc.id, st.GetMessage(), w)
			}
		}
	}
	for _, f := range ta.state(t)["frameworks"].([]any) {
		for _, e := range f.(map[string]any)["executors"].([]any) {
			if id := e.(map[string]any)["id"]; id != "t1" {
				t.Errorf("executor %v was started for a task whose secret does not resolve", id)
			}
		}
	}
	_, state := ta.get(t, "/state")
	if strings.Contains(string(state), data) {
		t.Error("/state shows the secret's data")
	}
	b64 := base64.StdEncoding.EncodeToString([]byte(data))
	for _, call := range []string{"GET_EXECUTORS", "GET_STATE"} {
		resp, err := http.Post(ta.srv.URL+"/api/v1", "application/json", strings.NewReader(`{"type":"`+call+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "DB_PASSWORD") {
			t.Fatalf("%s: %d %s", call, resp.StatusCode, body)
		}
		if strings.Contains(string(body), data) || strings.Contains(string(body), b64[:12]) {
			t.Errorf("%s shows the secret's data: %s", call, body)
		}
	}
	if strings.Contains(logs.String(), data) {
		t.Errorf("the agent logged the secret's data:\n%s", logs)
	}
}
