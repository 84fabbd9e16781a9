package authorizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
)

// EntityType is an ACL entity's type: a list of values, anyone, or no one.
type EntityType int

// Mesos's ACL::Entity::Type.
const (
	Some EntityType = iota
	Any
	None
)

func (t EntityType) String() string {
	switch t {
	case Any:
		return "ANY"
	case None:
		return "NONE"
	}
	return "SOME"
}

// Entity is the subjects or the objects of an ACL.
type Entity struct {
	Type   EntityType
	Values []string // only for Some
}

// ACL is one rule: these principals may (or, with an object of type
// NONE, may not) perform the action on these objects.
type ACL struct {
	Principals Entity
	Objects    Entity
}

// ACLs are the parsed --acls: the rules of each action, in the order
// given, and whether a request no rule matches is allowed.
type ACLs struct {
	// Permissive allows requests that no ACL matches (Mesos's default: true).
	Permissive bool
	// Rules are each action's ACLs, in the order given.
	Rules map[Action][]ACL
	// Ignored are the ACL keys of Mesos actions that mezzo has no call
	// for (nested containers, resource providers, …): accepted so that a
	// Mesos ACL file loads, reported so that the operator knows they
	// govern nothing here.
	Ignored []string
}

// objectFields names each action's object field in the ACL JSON.
var objectFields = map[Action]string{
	RegisterFramework:         "roles",
	RunTask:                   "users",
	TeardownFramework:         "framework_principals",
	ReserveResources:          "roles",
	UnreserveResources:        "reserver_principals",
	CreateVolume:              "roles",
	DestroyVolume:             "creator_principals",
	ResizeVolume:              "roles",
	UpdateWeight:              "roles",
	UpdateQuota:               "roles",
	GetQuota:                  "roles",
	ViewRole:                  "roles",
	GetEndpoint:               "paths",
	ViewFramework:             "users",
	ViewTask:                  "users",
	ViewExecutor:              "users",
	AccessSandbox:             "users",
	AccessMesosLog:            "logs",
	ViewFlags:                 "flags",
	SetLogLevel:               "level",
	RegisterAgent:             "agents",
	UpdateMaintenanceSchedule: "machines",
	GetMaintenanceSchedule:    "machines",
	StartMaintenance:          "machines",
	StopMaintenance:           "machines",
	GetMaintenanceStatus:      "machines",
	MarkAgentGone:             "agents",
	DrainAgent:                "agents",
	DeactivateAgent:           "agents",
	ReactivateAgent:           "agents",
}

// Actions lists every action mezzo authorizes, sorted.
func Actions() []Action {
	out := make([]Action, 0, len(objectFields))
	for a := range objectFields {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// ObjectField is the name of a's object field in the ACL JSON ("roles",
// "users", …); "" for an unknown action.
func ObjectField(a Action) string { return objectFields[a] }

// mesosOnly are ACL keys Mesos knows that govern nothing in mezzo.
var mesosOnly = map[string]bool{
	"launch_nested_containers_as_user":                        true,
	"launch_nested_containers_under_parent_with_user":         true,
	"kill_nested_containers":                                  true,
	"wait_nested_containers":                                  true,
	"launch_nested_container_sessions_as_user":                true,
	"launch_nested_container_sessions_under_parent_with_user": true,
	"attach_containers_input":                                 true,
	"attach_containers_output":                                true,
	"view_containers":                                         true,
	"remove_nested_containers":                                true,
	"launch_standalone_containers":                            true,
	"kill_standalone_containers":                              true,
	"wait_standalone_containers":                              true,
	"remove_standalone_containers":                            true,
	"view_standalone_containers":                              true,
	"modify_resource_provider_configs":                        true,
	"mark_resource_providers_gone":                            true,
	"view_resource_providers":                                 true,
	"prune_images":                                            true,
	"create_block_disks":                                      true,
	"destroy_block_disks":                                     true,
	"create_mount_disks":                                      true,
	"destroy_mount_disks":                                     true,
	"destroy_raw_disks":                                       true,
	"set_quotas":                                              true,
	"remove_quotas":                                           true,
}

// ParseACLs parses ACLs in Mesos's JSON format:
//
//	{"permissive": false,
//	 "run_tasks": [{"principals": {"values": ["marathon"]}, "users": {"type": "ANY"}}],
//	 ...}
//
// Every ACL needs both its "principals" and its object field; an entity is
// {"values": [...]} (type SOME, the default), {"type": "ANY"} or
// {"type": "NONE"}. Keys that are not Mesos ACL fields are errors (a typo
// must not silently leave an action unguarded); errors name the key and
// the ACL's index.
func ParseACLs(data []byte) (*ACLs, error) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("acls: not a JSON object: %v", err)
	}
	if dec.More() {
		return nil, errors.New("acls: trailing data after the JSON object")
	}
	if raw == nil {
		return nil, errors.New("acls: not a JSON object")
	}
	out := &ACLs{Permissive: true, Rules: map[Action][]ACL{}}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		v := raw[key]
		if key == "permissive" {
			if err := json.Unmarshal(v, &out.Permissive); err != nil {
				return nil, errors.New("acls: 'permissive' must be true or false")
			}
			continue
		}
		if mesosOnly[key] {
			out.Ignored = append(out.Ignored, key)
			continue
		}
		action := Action(key)
		field, ok := objectFields[action]
		if !ok {
			return nil, fmt.Errorf("acls: unknown key %q (not a Mesos ACL action)", key)
		}
		var list []map[string]json.RawMessage
		if err := json.Unmarshal(v, &list); err != nil {
			return nil, fmt.Errorf("acls: %q must be a list of ACL objects", key)
		}
		for i, m := range list {
			where := fmt.Sprintf("acls: %s[%d]", key, i)
			for k := range m {
				if k != "principals" && k != field {
					return nil, fmt.Errorf("%s: unknown key %q (expecting 'principals' and '%s')", where, k, field)
				}
			}
			var acl ACL
			var err error
			if acl.Principals, err = parseEntity(m, "principals", where); err != nil {
				return nil, err
			}
			if acl.Objects, err = parseEntity(m, field, where); err != nil {
				return nil, err
			}
			out.Rules[action] = append(out.Rules[action], acl)
		}
	}
	return out, nil
}

func parseEntity(m map[string]json.RawMessage, field, where string) (Entity, error) {
	v, ok := m[field]
	if !ok {
		return Entity{}, fmt.Errorf("%s: '%s' is required", where, field)
	}
	var e struct {
		Type   *string   `json:"type"`
		Values *[]string `json:"values"`
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return Entity{}, fmt.Errorf("%s.%s: expecting {\"values\": [...]} or {\"type\": \"ANY\"|\"NONE\"}: %v", where, field, err)
	}
	out := Entity{Type: Some}
	if e.Type != nil {
		switch *e.Type {
		case "SOME":
		case "ANY":
			out.Type = Any
		case "NONE":
			out.Type = None
		default:
			return Entity{}, fmt.Errorf("%s.%s.type: %q is not SOME, ANY or NONE", where, field, *e.Type)
		}
	}
	if e.Values != nil {
		if out.Type != Some {
			return Entity{}, fmt.Errorf("%s.%s: 'values' given with type %s (values are only for SOME)", where, field, out.Type)
		}
		out.Values = append([]string{}, *e.Values...)
	}
	return out, nil
}

// LoadACLs reads --acls: the JSON itself, or a file's path (optionally
// file:///path) holding it.
func LoadACLs(value string) (*ACLs, error) {
	data := []byte(value)
	if t := strings.TrimSpace(value); !strings.HasPrefix(t, "{") {
		path := strings.TrimPrefix(t, "file://")
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("--acls: %w", err)
		}
		data = b
	}
	acls, err := ParseACLs(data)
	if err != nil {
		return nil, fmt.Errorf("--acls: %w", err)
	}
	return acls, nil
}
