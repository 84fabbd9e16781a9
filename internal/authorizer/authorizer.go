// Package authorizer decides whether a principal may perform an action on
// an object, as Mesos's authorizer interface does, and holds the
// name → factory registry through which --authorizers picks the
// implementation; "local" (Mesos's local authorizer, driven by the --acls
// ACLs) is built in.
//
// Who calls what:
//
//   - The master consults its Authorizer on its event loop, at the public
//     entry points (every write, each launch of an ACCEPT) and while
//     rendering its read endpoints (to show each principal only what it may
//     view). The agent consults its own for /files and its /state.
//   - An Authorizer is called from many goroutines at once and must answer
//     from memory, at once: it never blocks (the master's loop waits on
//     it). Local is immutable once built.
//
// The objects of each action are derived from the Mesos messages exactly
// as Mesos's local authorizer derives them (objects.go); callers build
// them with those helpers rather than picking fields themselves.
package authorizer

import (
	"fmt"
	"sort"
	"sync"
)

// Action is an authorizable action, named by its ACL key in --acls.
type Action string

// The actions mezzo authorizes (Mesos's names; docs/security.md lists
// which endpoint and call each governs).
const (
	RegisterFramework         Action = "register_frameworks"
	RunTask                   Action = "run_tasks"
	TeardownFramework         Action = "teardown_frameworks"
	ReserveResources          Action = "reserve_resources"
	UnreserveResources        Action = "unreserve_resources"
	CreateVolume              Action = "create_volumes"
	DestroyVolume             Action = "destroy_volumes"
	ResizeVolume              Action = "resize_volumes"
	UpdateWeight              Action = "update_weights"
	UpdateQuota               Action = "update_quotas"
	GetQuota                  Action = "get_quotas"
	ViewRole                  Action = "view_roles"
	GetEndpoint               Action = "get_endpoints"
	ViewFramework             Action = "view_frameworks"
	ViewTask                  Action = "view_tasks"
	ViewExecutor              Action = "view_executors"
	AccessSandbox             Action = "access_sandboxes"
	AccessMesosLog            Action = "access_mesos_logs"
	ViewFlags                 Action = "view_flags"
	SetLogLevel               Action = "set_log_level"
	RegisterAgent             Action = "register_agents"
	UpdateMaintenanceSchedule Action = "update_maintenance_schedules"
	GetMaintenanceSchedule    Action = "get_maintenance_schedules"
	StartMaintenance          Action = "start_maintenances"
	StopMaintenance           Action = "stop_maintenances"
	GetMaintenanceStatus      Action = "get_maintenance_statuses"
	MarkAgentGone             Action = "mark_agents_gone"
	DrainAgent                Action = "drain_agents"
	DeactivateAgent           Action = "deactivate_agents"
	ReactivateAgent           Action = "reactivate_agents"
)

// Object is what an action is performed on, as the local authorizer sees
// it: one value (a role, a user, a principal, a path) or ANY (the action
// has no object, or the object does not say).
type Object struct {
	// Value is the object; used unless Any.
	Value string
	// Any: the object is unspecified (Mesos's ACL::Entity::ANY request).
	Any bool
}

// Value returns an Object naming v.
func Value(v string) Object { return Object{Value: v} }

// AnyObject is the object of an action that has none.
var AnyObject = Object{Any: true}

func (o Object) String() string {
	if o.Any {
		return "ANY"
	}
	return fmt.Sprintf("%q", o.Value)
}

// Request asks whether Subject may perform Action on Object.
type Request struct {
	// Subject is the authenticated principal; "" for an unauthenticated
	// caller, who matches only ACLs whose principals are ANY (or NONE).
	Subject string
	Action  Action
	Object  Object
}

// Authorizer decides requests. Safe for concurrent use; never blocks.
type Authorizer interface {
	// Authorized reports whether r is allowed; an error means the
	// authorizer could not decide (callers refuse then, as Mesos does).
	Authorized(r Request) (bool, error)
}

// Params configures an Authorizer built from the registry.
type Params struct {
	// ACLs are the --acls (nil: none given, which the local authorizer
	// takes as permissive with no ACLs).
	ACLs *ACLs
}

// Factory builds an Authorizer.
type Factory func(Params) (Authorizer, error)

// Local is the name of the built-in local authorizer (Mesos's default
// --authorizers value).
const Local = "local"

var (
	mu       sync.RWMutex
	registry = map[string]Factory{}
)

// Register makes an authorizer available under name (from an init
// function). It panics on a duplicate name: two implementations cannot
// answer to one --authorizers value.
func Register(name string, f Factory) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[name]; dup {
		panic("authorizer: " + name + " registered twice")
	}
	registry[name] = f
}

// New builds the authorizer registered as name.
func New(name string, p Params) (Authorizer, error) {
	mu.RLock()
	f, ok := registry[name]
	mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("--authorizers=%q: no such authorizer (have %v)", name, Names())
	}
	return f(p)
}

// Names lists the registered authorizers, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func init() {
	Register(Local, func(p Params) (Authorizer, error) { return NewLocal(p.ACLs), nil })
}

// Allowed asks a for r and folds an error into a refusal: what Mesos does
// when an authorizer fails. A nil a allows everything (no authorizer
// configured).
func Allowed(a Authorizer, r Request) bool {
	if a == nil {
		return true
	}
	ok, err := a.Authorized(r)
	return err == nil && ok
}
