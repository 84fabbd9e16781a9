package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"mezzo/api/codec"
	"mezzo/api/mesos"
	"mezzo/resources"
)

// LoadTask reads a TaskInfo in Mesos's JSON mapping as mesos-execute's
// --task value gives it: the JSON itself (a value starting with '{'), or a
// file's path, plain or as file:///path. ParseTask's rules apply; a file's
// errors are prefixed with its name.
func LoadTask(value string) (*mesos.TaskInfo, error) {
	if strings.HasPrefix(strings.TrimSpace(value), "{") {
		return ParseTask([]byte(value))
	}
	path := strings.TrimPrefix(value, "file://")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	t, err := ParseTask(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// placeholders stand in for the required TaskInfo fields a task file may
// leave out (Run fills them: name and task_id from Options, agent_id from
// the offer), so that the decoder's required-field check still names every
// other missing field.
var placeholders = map[string]json.RawMessage{
	"name":     json.RawMessage(`""`),
	"task_id":  json.RawMessage(`{"value":""}`),
	"agent_id": json.RawMessage(`{"value":""}`),
}

// ParseTask decodes a TaskInfo from JSON and checks what the master would
// refuse, naming the field: name, task_id and agent_id may be absent (Run
// fills them); resources must be present and valid; exactly one of command
// and executor must be set; a command needs a value.
func ParseTask(data []byte) (*mesos.TaskInfo, error) {
	var top map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&top); err != nil || top == nil {
		if err == nil {
			err = errors.New("null")
		}
		return nil, fmt.Errorf("not a JSON object (a TaskInfo): %v", err)
	}
	absent := map[string]bool{}
	for k, v := range placeholders {
		if _, ok := top[k]; !ok {
			absent[k] = true
			top[k] = v
		}
	}
	filled, err := json.Marshal(top)
	if err != nil {
		return nil, err
	}
	t := &mesos.TaskInfo{}
	// The decoder skips unknown fields, as Mesos's does; in a file a person
	// wrote, an unknown field is a typo that would silently change the
	// task, so it is refused.
	if err := knownFields(filled, t.ProtoReflect().Descriptor(), ""); err != nil {
		return nil, err
	}
	if err := codec.UnmarshalJSON(filled, t); err != nil {
		return nil, err
	}
	if absent["name"] {
		t.Name = nil
	}
	if absent["task_id"] {
		t.TaskId = nil
	} else if t.GetTaskId().GetValue() == "" {
		return nil, errors.New("'task_id.value' is empty")
	}
	if absent["agent_id"] {
		t.AgentId = nil
	}
	if len(t.GetResources()) == 0 {
		return nil, errors.New("'resources' is missing: a task needs resources (e.g. cpus and mem)")
	}
	if err := resources.Validate(t.GetResources()); err != nil {
		return nil, fmt.Errorf("invalid 'resources': %v", err)
	}
	if _, err := resources.FromProto(t.GetResources()); err != nil {
		return nil, fmt.Errorf("invalid 'resources': %v", err)
	}
	switch {
	case t.Command == nil && t.Executor == nil:
		return nil, errors.New("expecting one of 'command' or 'executor'")
	case t.Command != nil && t.Executor != nil:
		return nil, errors.New("expecting one of 'command' or 'executor', not both")
	case t.Command != nil && t.GetCommand().GetValue() == "" && (t.Container == nil || t.GetContainer().GetType() != mesos.ContainerInfo_DOCKER):
		return nil, errors.New("'command.value' is missing")
	}
	return t, nil
}

// knownFields checks that every key of every JSON object in data names a
// field of the message md describes (by its proto or JSON name), recursing
// into message fields and lists of messages. path names the object.
func knownFields(data []byte, md protoreflect.MessageDescriptor, path string) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil // not an object: the decoder reports the type error
	}
	for k, v := range obj {
		fd := md.Fields().ByName(protoreflect.Name(k))
		if fd == nil {
			fd = md.Fields().ByJSONName(k)
		}
		name := k
		if path != "" {
			name = path + "." + k
		}
		if fd == nil {
			return fmt.Errorf("unknown field '%s'", name)
		}
		if fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind {
			continue
		}
		if fd.IsList() {
			var items []json.RawMessage
			if json.Unmarshal(v, &items) != nil {
				continue
			}
			for i, it := range items {
				if err := knownFields(it, fd.Message(), fmt.Sprintf("%s[%d]", name, i)); err != nil {
					return err
				}
			}
			continue
		}
		if fd.IsMap() {
			continue
		}
		if err := knownFields(v, fd.Message(), name); err != nil {
			return err
		}
	}
	return nil
}
