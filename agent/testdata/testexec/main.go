// Command testexec is a minimal v1 HTTP executor for the agent's tests. It
// records its environment in the sandbox (env.txt), subscribes, answers
// LAUNCH with TASK_RUNNING and then acts on the task's command value (or
// data): "finish" sends TASK_FINISHED and exits after its acknowledgement,
// "exit3" exits with status 3 at once, anything else keeps running. KILL
// sends TASK_KILLED and exits once it is acknowledged; SHUTDOWN exits.
// MESSAGE is echoed back.
package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"mezzo/api/executorpb"
	"mezzo/api/mesos"
	"mezzo/api/recordio"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"
)

var (
	fwID, execID, url string
	exitOnAck         = map[string]int{} // uuid -> exit code once acknowledged
	unacked           = map[string]*mesos.TaskStatus{}
)

func main() {
	env := os.Environ()
	sort.Strings(env)
	sandbox := os.Getenv("MESOS_SANDBOX")
	os.WriteFile(filepath.Join(sandbox, "env.txt"), []byte(strings.Join(env, "\n")+"\n"), 0o644)
	fmt.Println("testexec started", strings.Join(os.Args[1:], " "))
	fmt.Printf("testexec uid %d gid %d\n", os.Getuid(), os.Getgid())
	fmt.Fprintln(os.Stderr, "testexec stderr")
	fwID, execID = os.Getenv("MESOS_FRAMEWORK_ID"), os.Getenv("MESOS_EXECUTOR_ID")
	url = "http://" + os.Getenv("MESOS_AGENT_ENDPOINT") + "/api/v1/executor"

	sub := &executorpb.Call{
		Type:      executorpb.Call_SUBSCRIBE.Enum(),
		Subscribe: &executorpb.Call_Subscribe{},
	}
	resp, err := post(sub)
	if err != nil || resp.StatusCode != http.StatusOK {
		fmt.Fprintln(os.Stderr, "subscribe failed:", err, status(resp))
		os.Exit(2)
	}
	r := recordio.NewReader(resp.Body, 0)
	for {
		rec, err := r.Next()
		if err != nil {
			fmt.Fprintln(os.Stderr, "stream ended:", err)
			os.Exit(4)
		}
		ev := &executorpb.Event{}
		if err := proto.Unmarshal(rec, ev); err != nil {
			os.Exit(5)
		}
		fmt.Println("event", ev.GetType().String())
		handle(ev)
	}
}

func handle(ev *executorpb.Event) {
	switch ev.GetType() {
	case executorpb.Event_LAUNCH:
		t := ev.GetLaunch().GetTask()
		update(t.GetTaskId(), mesos.TaskState_TASK_RUNNING, -1)
		what := t.GetCommand().GetValue()
		if len(t.GetData()) > 0 {
			what = string(t.GetData())
		}
		switch what {
		case "finish":
			update(t.GetTaskId(), mesos.TaskState_TASK_FINISHED, 0)
		case "exit3":
			pending.Wait()
			os.Exit(3)
		}
	case executorpb.Event_LAUNCH_GROUP:
		for _, t := range ev.GetLaunchGroup().GetTaskGroup().GetTasks() {
			update(t.GetTaskId(), mesos.TaskState_TASK_RUNNING, -1)
		}
	case executorpb.Event_KILL:
		update(ev.GetKill().GetTaskId(), mesos.TaskState_TASK_KILLED, 0)
	case executorpb.Event_ACKNOWLEDGED:
		id := string(ev.GetAcknowledged().GetUuid())
		delete(unacked, id)
		if code, ok := exitOnAck[id]; ok {
			os.Exit(code)
		}
	case executorpb.Event_MESSAGE:
		call(&executorpb.Call{
			Type:    executorpb.Call_MESSAGE.Enum(),
			Message: &executorpb.Call_Message{Data: append([]byte("echo:"), ev.GetMessage().GetData()...)},
		})
	case executorpb.Event_SHUTDOWN:
		os.Exit(0)
	}
}

func update(task *mesos.TaskID, state mesos.TaskState, exitCode int) {
	id := uuid.New()
	st := &mesos.TaskStatus{
		TaskId:     task,
		State:      state.Enum(),
		Source:     mesos.TaskStatus_SOURCE_EXECUTOR.Enum(),
		ExecutorId: &mesos.ExecutorID{Value: proto.String(execID)},
		Uuid:       id[:],
	}
	unacked[string(id[:])] = st
	if exitCode >= 0 {
		exitOnAck[string(id[:])] = exitCode
	}
	call(&executorpb.Call{Type: executorpb.Call_UPDATE.Enum(), Update: &executorpb.Call_Update{Status: st}})
}

// calls are sent in order by one goroutine (the event loop must keep
// reading: ACKNOWLEDGED arrives before the 202).
var (
	calls   = make(chan *executorpb.Call, 100)
	pending sync.WaitGroup
)

func init() {
	go func() {
		for c := range calls {
			resp, err := post(c)
			if err != nil || resp.StatusCode != http.StatusAccepted {
				fmt.Fprintln(os.Stderr, "call", c.GetType().String(), "failed:", err, status(resp))
			} else {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			pending.Done()
		}
	}()
}

func call(c *executorpb.Call) {
	pending.Add(1)
	calls <- c
}

func post(c *executorpb.Call) (*http.Response, error) {
	c.FrameworkId = &mesos.FrameworkID{Value: proto.String(fwID)}
	c.ExecutorId = &mesos.ExecutorID{Value: proto.String(execID)}
	b, err := proto.Marshal(c)
	if err != nil {
		return nil, err
	}
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Accept", "application/x-protobuf")
	if tok := os.Getenv("MESOS_EXECUTOR_AUTHENTICATION_TOKEN"); tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return http.DefaultClient.Do(req)
}

func status(r *http.Response) string {
	if r == nil {
		return ""
	}
	b, _ := io.ReadAll(r.Body)
	return r.Status + " " + string(b)
}
