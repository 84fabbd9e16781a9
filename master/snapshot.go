package master

import (
	"time"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
)

// Snapshot is an immutable view of the master's state. The event loop
// builds and publishes a new one (atomically) when a reader asks for it
// after changes or when leadership changes (publish.go); HTTP readers
// (classic endpoints, operator GET_* calls, the web UI) render from it and
// never touch loop-owned state, so a large /master/state never delays offers.
//
// Nothing reachable from a Snapshot is mutated after publication: readers may
// hold it as long as they like but must not modify it.
type Snapshot struct {
	// Info describes this master (id, ip, port, pid "master@ip:port", hostname, version).
	Info *mesos.MasterInfo
	// Leader is the leading master's info, nil if none is known. Equal to
	// Info on the leader.
	Leader *mesos.MasterInfo
	// Elected reports whether this master leads.
	Elected bool

	StartTime   time.Time
	ElectedTime time.Time // zero if not elected
	// Flags are the master's effective flags, by Mesos name ("work_dir"),
	// values in Mesos's string forms ("15secs").
	Flags []Flag

	Frameworks          []*FrameworkView // registered (connected or not), ID order
	CompletedFrameworks []*FrameworkView // removed, most recent last, bounded
	Agents              []*AgentView     // registered, ID order
	UnreachableAgents   []*UnreachableAgent
	// RecoveredAgents are agents admitted in the registry that have not
	// re-registered with this master since it was elected, sorted.
	RecoveredAgents []string
	// Orphan tasks belong to frameworks that have not re-subscribed after a failover.
	OrphanTasks []*mesos.Task

	// Roles known to the master: those with frameworks, reservations, a
	// configured weight or a quota.
	Roles []*RoleView
	// Weights are the configured role weights (--weights and
	// UPDATE_WEIGHTS); roles not listed weigh 1.
	Weights map[string]float64

	// Operations are the offer operations with an id whose latest status
	// the framework has not acknowledged yet (operation feedback), by
	// framework and operation ID: GET_OPERATIONS. Each carries its
	// framework, agent, info (the operation as normalized: post-refinement
	// resources), latest status and statuses.
	Operations []*mesos.Operation

	// Maintenance is the maintenance schedule, the machines' modes, the
	// frameworks' answers to inverse offers and the outstanding inverse
	// offers (never nil on a leading master's snapshot).
	Maintenance *MaintenanceView

	// Counters are the master's monotonically increasing metrics by Mesos
	// key (e.g. "master/slave_registrations", "master/valid_status_updates").
	// Gauges derived from the views above are computed by the renderer.
	Counters map[string]float64
}

// Flag is one effective command-line flag.
type Flag struct{ Name, Value string }

// FrameworkView is one framework as the master sees it.
type FrameworkView struct {
	// Info carries the assigned ID in Info.Id.
	Info      *mesos.FrameworkInfo
	Active    bool // subscribed and not deactivated
	Connected bool // has a live subscription stream
	Recovered bool // known only from re-registering agents (after failover)

	RegisteredTime   time.Time
	ReregisteredTime time.Time // zero if never
	UnregisteredTime time.Time // zero unless removed

	Tasks            []*mesos.Task // non-terminal, including STAGING
	UnreachableTasks []*mesos.Task
	CompletedTasks   []*mesos.Task // terminal, most recent last, bounded
	Offers           []*mesos.Offer
	Executors        []*ExecutorView

	// Used is the sum of the framework's task and executor resources;
	// Offered the sum of its outstanding offers.
	Used    []*mesos.Resource
	Offered []*mesos.Resource

	SuppressedRoles []string
	// OfferConstraints are those of the framework's last SUBSCRIBE or
	// UPDATE_FRAMEWORK (nil: none).
	OfferConstraints *schedulerpb.OfferConstraints

	// Metrics are the framework's counters, keyed as under Mesos's
	// master/frameworks/<name>/<id>/ (calls/<type>, events/<type>,
	// offers/*, operations/<type>, tasks/terminal/<state>); absent keys
	// are 0.
	Metrics map[string]float64
}

// ExecutorView is an executor of a framework on an agent.
type ExecutorView struct {
	AgentID string
	Info    *mesos.ExecutorInfo
}

// AgentView is one registered agent.
type AgentView struct {
	// Info carries the agent ID, hostname, port, total resources and attributes.
	Info *mesos.AgentInfo
	// PID is "slave(1)@ip:port"; Endpoint is "ip:port" of its HTTP server.
	PID      string
	Endpoint string
	Version  string

	Capabilities []*mesos.AgentInfo_Capability
	Active       bool // registered, connected and not deactivated
	Connected    bool
	Deactivated  bool // deactivated by an operator (maintenance, DEACTIVATE_AGENT)
	// DrainInfo is the agent's drain (DRAIN_AGENT): DRAINING or DRAINED
	// and its config; nil if not drained. Shared: do not modify.
	DrainInfo *mesos.DrainInfo

	RegisteredTime   time.Time
	ReregisteredTime time.Time // zero if never

	// Total is the agent's total: its flag resources with its static and
	// dynamic reservations and persistent volumes (post-refinement form),
	// and its revocable resources, as Mesos counts them in an agent's
	// total: its estimate (UPDATE_RESOURCES, with throttle_info) and,
	// with Config.LendIdleReservations, its reservations that could be
	// lent now (without throttle_info; they are also in the regular part,
	// as reservations).
	Total []*mesos.Resource
	// Reserved is Total's reserved part by role (the role of each
	// resource's last reservation), persistent volumes included;
	// Unreserved the rest (revocable resources included).
	Reserved   map[string][]*mesos.Resource
	Unreserved []*mesos.Resource
	Used       []*mesos.Resource // allocated to tasks and executors
	Offered    []*mesos.Resource

	// Frameworks with tasks or executors on this agent, by ID.
	FrameworkIDs []string
	// Task counts by state name ("TASK_RUNNING") for state-summary.
	TaskCounts map[string]int
}

// UnreachableAgent is an agent the master stopped hearing from.
type UnreachableAgent struct {
	ID   string
	Time time.Time
}

// RoleView is one role's weight, quota, frameworks and resources.
type RoleView struct {
	Name       string
	Weight     float64
	Frameworks []string
	Allocated  []*mesos.Resource // used by tasks and executors
	Offered    []*mesos.Resource
	Reserved   []*mesos.Resource
	// Quota is the role's quota and consumption; never nil in snapshots
	// the master builds (empty Guarantees and Limits: no quota).
	Quota *RoleQuota
}

// RoleQuota is a role's quota as scalar quantities by resource name.
type RoleQuota struct {
	// Guarantees are offered to the role before fair sharing.
	Guarantees map[string]float64
	// Limits bound what the role is allocated; names absent are unlimited.
	Limits map[string]float64
	// Consumed is what counts against the quota, as Mesos counts it:
	// non-revocable resources used in the role and its subroles plus their
	// reservations not in use.
	Consumed map[string]float64
}

// HasQuota reports whether the role has a guarantee or a limit.
func (q *RoleQuota) HasQuota() bool {
	return q != nil && (len(q.Guarantees) > 0 || len(q.Limits) > 0)
}
