package httpapi

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
)

// A queued task's command in /state shows its SECRET variable, without the
// secret's data.
func TestQueuedTaskSecretRedacted(t *testing.T) {
	task := &mesos.TaskInfo{
		TaskId:  &mesos.TaskID{Value: proto.String("t")},
		AgentId: &mesos.AgentID{Value: proto.String("S1")},
		Command: &mesos.CommandInfo{Value: proto.String("true"), Environment: &mesos.Environment{Variables: []*mesos.Environment_Variable{{
			Name: proto.String("DB_PASSWORD"), Type: mesos.Environment_Variable_SECRET.Enum(),
			Secret: &mesos.Secret{Type: mesos.Secret_VALUE.Enum(), Value: &mesos.Secret_Value{Data: []byte("hunter2")}},
		}}}},
	}
	b, err := json.Marshal(renderTaskInfo(task))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "aHVudGVyMg") || strings.Contains(string(b), "hunter2") || !strings.Contains(string(b), "DB_PASSWORD") {
		t.Errorf("rendered %s", b)
	}
	if string(task.GetCommand().GetEnvironment().GetVariables()[0].GetSecret().GetValue().GetData()) != "hunter2" {
		t.Error("rendering changed the task")
	}
}
