package endpoints

import (
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
)

// An executor's command in /master/state shows a SECRET variable without
// the secret's data.
func TestCommandModelHidesSecretData(t *testing.T) {
	c := &mesos.CommandInfo{Value: proto.String("x"), Environment: &mesos.Environment{Variables: []*mesos.Environment_Variable{{
		Name: proto.String("DB_PASSWORD"), Type: mesos.Environment_Variable_SECRET.Enum(),
		Secret: &mesos.Secret{Type: mesos.Secret_VALUE.Enum(), Value: &mesos.Secret_Value{Data: []byte("hunter2")}},
	}}}}
	b, err := json.Marshal(commandModel(c))
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); strings.Contains(s, "aHVudGVyMg") || strings.Contains(s, "hunter2") || !strings.Contains(s, "DB_PASSWORD") {
		t.Errorf("command model %s", s)
	}
}
