package e2e

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// postJSON sends a v1 operator call in JSON and decodes the answer (nil
// out: the body must be empty).
func postJSON(t *testing.T, url, call string, out any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(call))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s %s: %d %s", url, call, resp.StatusCode, body)
	}
	if out == nil {
		if len(body) != 0 {
			t.Fatalf("%s %s: unexpected body %s", url, call, body)
		}
		return
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(out); err != nil {
		t.Fatalf("%s %s: %v: %s", url, call, err, body)
	}
}

func get404(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 404 {
		t.Fatalf("%s: %d, want 404", url, resp.StatusCode)
	}
	return string(b)
}

// The agent's v1 operator API answers the read calls against a real run:
// the agent's identity, the finished task, its sandbox listed and read;
// the logging level can be raised on agent and master; unknown paths say
// what was not found; the new metrics are there and have moved.
func TestOperatorAPIOfARealCluster(t *testing.T) {
	c := startLocal(t, 1)
	code, out := runCmd(t, 60*time.Second, mezzoBin, "run", "--master="+c.addr, "--name=ops-task", "--task_id=ops-task", "--", "/bin/echo", "ops-marker")
	if code != 0 {
		t.Fatalf("mezzo run: exit %d:\n%s", code, out)
	}
	agentID, agentAddr := onlyAgent(t, c)
	agentURL := "http://" + agentAddr
	api := agentURL + "/api/v1"

	var agent struct {
		Type     string `json:"type"`
		GetAgent struct {
			AgentInfo struct {
				ID struct{ Value string } `json:"id"`
			} `json:"agent_info"`
		} `json:"get_agent"`
	}
	postJSON(t, api, `{"type":"GET_AGENT"}`, &agent)
	if agent.Type != "GET_AGENT" || agent.GetAgent.AgentInfo.ID.Value != agentID {
		t.Errorf("GET_AGENT = %+v, want agent %s", agent, agentID)
	}

	// The task ended; the agent lists it as terminated or completed.
	type taskList []struct {
		TaskID struct{ Value string } `json:"task_id"`
		State  string                 `json:"state"`
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		var tasks struct {
			GetTasks struct {
				Terminated taskList `json:"terminated_tasks"`
				Completed  taskList `json:"completed_tasks"`
			} `json:"get_tasks"`
		}
		postJSON(t, api, `{"type":"GET_TASKS"}`, &tasks)
		found := false
		for _, tk := range append(tasks.GetTasks.Terminated, tasks.GetTasks.Completed...) {
			found = found || tk.TaskID.Value == "ops-task" && tk.State == "TASK_FINISHED"
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET_TASKS never listed ops-task as finished: %+v", tasks)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, bounded by the deadline
	}

	// The sandbox, found through /state, through LIST_FILES and READ_FILE.
	var st struct {
		Frameworks []struct {
			Executors          []struct{ Directory string } `json:"executors"`
			CompletedExecutors []struct{ Directory string } `json:"completed_executors"`
		} `json:"frameworks"`
		CompletedFrameworks []struct {
			Executors          []struct{ Directory string } `json:"executors"`
			CompletedExecutors []struct{ Directory string } `json:"completed_executors"`
		} `json:"completed_frameworks"`
	}
	if err := getJSON(agentURL+"/slave(1)/state", &st); err != nil {
		t.Fatal(err)
	}
	var dir string
	for _, f := range append(st.Frameworks, st.CompletedFrameworks...) {
		for _, e := range append(f.Executors, f.CompletedExecutors...) {
			dir = e.Directory
		}
	}
	if dir == "" {
		t.Fatalf("no sandbox directory in the agent's state")
	}
	var list struct {
		ListFiles struct {
			FileInfos []struct {
				Path string `json:"path"`
				Size uint64 `json:"size"`
			} `json:"file_infos"`
		} `json:"list_files"`
	}
	postJSON(t, api, `{"type":"LIST_FILES","list_files":{"path":"`+dir+`"}}`, &list)
	hasStdout := false
	for _, f := range list.ListFiles.FileInfos {
		hasStdout = hasStdout || f.Path == dir+"/stdout" && f.Size > 0
	}
	if !hasStdout {
		t.Fatalf("LIST_FILES %s = %+v, want a non-empty stdout", dir, list)
	}
	var read struct {
		ReadFile struct {
			Size uint64 `json:"size"`
			Data string `json:"data"`
		} `json:"read_file"`
	}
	postJSON(t, api, `{"type":"READ_FILE","read_file":{"path":"`+dir+`/stdout","offset":0}}`, &read)
	data, err := base64.StdEncoding.DecodeString(read.ReadFile.Data)
	if err != nil || !strings.Contains(string(data), "ops-marker") || read.ReadFile.Size < uint64(len(data)) {
		t.Errorf("READ_FILE stdout = %q (size %d, %v), want ops-marker", data, read.ReadFile.Size, err)
	}

	// Logging level on both processes.
	for _, url := range []string{api, c.url("/api/v1")} {
		postJSON(t, url, `{"type":"SET_LOGGING_LEVEL","set_logging_level":{"level":1,"duration":{"nanoseconds":60000000000}}}`, nil)
		var lvl struct {
			GetLoggingLevel struct{ Level int } `json:"get_logging_level"`
		}
		postJSON(t, url, `{"type":"GET_LOGGING_LEVEL"}`, &lvl)
		if lvl.GetLoggingLevel.Level != 1 {
			t.Errorf("%s: logging level %d after SET 1", url, lvl.GetLoggingLevel.Level)
		}
	}

	// 404 bodies name the path.
	if b := get404(t, agentURL+"/slave(1)/nope"); !strings.Contains(b, "No endpoint '/slave(1)/nope'") {
		t.Errorf("agent 404 body %q", b)
	}
	if b := get404(t, c.url("/master/nope")); !strings.Contains(b, "No endpoint '/master/nope'") {
		t.Errorf("master 404 body %q", b)
	}

	// Metrics: system/* on both, and the master's counters moved.
	var am, mm map[string]float64
	if err := getJSON(agentURL+"/metrics/snapshot", &am); err != nil {
		t.Fatal(err)
	}
	if err := getJSON(c.url("/metrics/snapshot"), &mm); err != nil {
		t.Fatal(err)
	}
	for _, m := range []map[string]float64{am, mm} {
		if m["system/cpus_total"] < 1 || m["system/mem_total_bytes"] <= 0 {
			t.Errorf("system metrics missing: cpus %v mem %v", m["system/cpus_total"], m["system/mem_total_bytes"])
		}
	}
	for _, k := range []string{"master/messages_register_framework", "master/messages_launch_tasks",
		"master/messages_register_slave", "master/messages_status_update", "master/messages_unregister_framework",
		"registrar/state_store_ms/count"} {
		if mm[k] < 1 {
			t.Errorf("master %s = %v, want >= 1", k, mm[k])
		}
	}
	for _, k := range []string{"master/event_queue_messages", "master/event_queue_dispatches", "master/event_queue_http_requests",
		"master/dropped_messages", "system/load_1min", "registrar/queued_operations", "registrar/registry_size_bytes"} {
		if _, ok := mm[k]; !ok {
			t.Errorf("master metrics lack %s", k)
		}
	}
	for _, k := range []string{"slave/valid_framework_messages", "system/load_15min"} {
		if _, ok := am[k]; !ok {
			t.Errorf("agent metrics lack %s", k)
		}
	}
	finished := false
	for k, v := range mm {
		finished = finished || strings.HasPrefix(k, "master/task_finished/source_") && v >= 1
	}
	if !finished {
		t.Error("no master/task_finished/source_*/reason_* counter moved")
	}
}
