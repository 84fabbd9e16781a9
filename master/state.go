package master

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/schedulerpb"
	"mezzo/master/allocator"
	"mezzo/master/allocator/longtask"
	"mezzo/resources"
)

// event is one unit of work applied by the loop to the state.
type event func(s *state, now time.Time)

// state is everything the master knows. It is owned by one goroutine (see
// the package doc); its methods are synchronous and take the current time.
// Outputs are effects on small sinks that never block: subscriber queues,
// the allocator (whose methods only enqueue), the registrar (whose
// completions come back through post), and watchers.
type state struct {
	cfg  Config
	info *mesos.MasterInfo
	log  *slog.Logger

	alloc allocator.Allocator
	// long is the allocator's long-task books (longtasks.go); nil unless
	// Config.LongTaskFraction bounds long tasks.
	long *longtask.Ledger
	reg  Registrar
	// post schedules an event on the loop; safe from any goroutine, never blocks.
	post func(event)

	startTime time.Time

	frameworks map[string]*framework
	// completed holds views of removed frameworks, oldest first, bounded.
	completed    []*FrameworkView
	completedIDs map[string]bool

	agents map[string]*agent
	// agentIDCache is agents' IDs, sorted; nil when stale (agentIDs).
	agentIDCache []string
	unreachable  map[string]*unreachableAgent
	gone         map[string]bool

	offers map[string]*offer
	// deadlines indexes agent pings and offer expiries (deadlines.go).
	deadlines deadlineHeap

	nextFramework int
	nextAgent     int
	nextOffer     int

	counters map[string]float64
	watchers map[*watcher]struct{}

	// roles holds weights, quota and revocation bookkeeping (state_roles.go).
	roles *roleState
	// operations are the operations with feedback awaiting the framework's
	// acknowledgement, by framework ID and operation ID
	// (operation_feedback.go); nil until the first.
	operations map[string]map[string]*operationRec
	// maintenance holds the schedule, DOWN machines and inverse offers
	// (state_maintenance.go); nil until first needed.
	maintenance *maintState

	// Leadership (state_leader.go). leader is the leading master (info
	// when leading), nil if unknown; epoch stamps every agent event.
	leading     bool
	epoch       uint64
	leader      *mesos.MasterInfo
	electedTime time.Time
	// recovered holds the admitted agents loaded from the registry that
	// have not re-registered since this master was elected; they are
	// marked unreachable at reregisterDeadline.
	recovered          map[string]bool
	reregisterDeadline time.Time
	// allocPause is set while allocation is paused after the election:
	// it resumes once allocPause.agents agents are registered or at
	// allocPause.until (allocator recovery).
	allocPause *allocPause
	// admitting holds agent streams waiting for a registrar write;
	// readmitting counts, by agent ID, re-admissions in flight.
	admitting   map[*AgentStream]bool
	readmitting map[string]int
	// agentPrincipals binds agent IDs to the principal they registered
	// with (api_agent.go): another principal may not act for them. Loaded
	// from the registry on election (which records every authenticated
	// registration, so a new leader refuses an impostor before the agent
	// is back); an ID the registry holds unbound binds on its next
	// registration, held here from the SUBSCRIBE on. Gone agents' bindings
	// are dropped: their IDs are refused to everyone.
	agentPrincipals map[string]string
	// undelivered holds, by framework ID, the agents whose status updates
	// for it could not be forwarded (the framework was not subscribed to
	// this master): they are told when it subscribes, so that they retry
	// at once (state_tasks.go).
	undelivered map[string]map[string]bool
	// removals wait for --agent_removal_rate_limit; nextRemoval is when
	// the next may run.
	removals    []pendingRemoval
	nextRemoval time.Time
	// drains is the agents' drain bookkeeping (state_drain.go); nil
	// until the first drain.
	drains *drainBook
	// onDepose answers callers still waiting on this state when it is
	// deposed.
	onDepose []func()

	// dirty is set by any change a Snapshot would show.
	dirty bool
	// after holds work to run once this batch's snapshot is published.
	after []func()
}

type unreachableAgent struct {
	info *mesos.AgentInfo
	at   time.Time
}

// framework is one registered framework (connected or not).
type framework struct {
	id   string
	info *mesos.FrameworkInfo // replaced, never mutated, after publication
	caps map[mesos.FrameworkInfo_Capability_Type]bool

	stream    *FrameworkStream // nil when disconnected
	connected bool
	active    bool
	recovered bool // known only from agents' reports

	registeredTime   time.Time
	reregisteredTime time.Time
	failoverAt       time.Time // removal deadline while disconnected; zero if none

	suppressed map[string]bool
	// offerConstraints are the constraints of its last SUBSCRIBE or
	// UPDATE_FRAMEWORK (nil: none), as reported by the state endpoints.
	offerConstraints *schedulerpb.OfferConstraints

	tasks            map[string]*task       // by task ID: not yet completed
	unreachableTasks map[string]*mesos.Task // tasks on unreachable agents (partition-aware)
	completedTasks   []*mesos.Task          // oldest first, bounded
	offers           map[string]*offer
	executors        map[string]map[string]*executor // agent ID -> executor ID

	// metrics are the framework's own counters (metrics_count.go), named
	// as under Mesos's master/frameworks/<name>/<id>/.
	metrics map[string]float64
}

func (f *framework) has(c mesos.FrameworkInfo_Capability_Type) bool { return f.caps[c] }

func (f *framework) partitionAware() bool {
	return f.has(mesos.FrameworkInfo_Capability_PARTITION_AWARE)
}

// roles returns the framework's roles: FrameworkInfo.roles for MULTI_ROLE
// frameworks, otherwise FrameworkInfo.role (default "*").
func (f *framework) roles() []string { return frameworkRoles(f.info) }

func frameworkRoles(info *mesos.FrameworkInfo) []string {
	for _, c := range info.GetCapabilities() {
		if c.GetType() == mesos.FrameworkInfo_Capability_MULTI_ROLE {
			return info.GetRoles()
		}
	}
	return []string{info.GetRole()}
}

func capabilitySet(info *mesos.FrameworkInfo) map[mesos.FrameworkInfo_Capability_Type]bool {
	caps := map[mesos.FrameworkInfo_Capability_Type]bool{}
	for _, c := range info.GetCapabilities() {
		caps[c.GetType()] = true
	}
	return caps
}

// task is a task the master tracks until it is completed.
type task struct {
	proto      *mesos.Task // replaced on every change (copy-on-write)
	res        resources.Resources
	fwID       string
	agentID    string
	executorID string // "" for command tasks
	// recovered is set once the task's resources went back to the
	// allocator (its latest state is terminal).
	recovered bool
	// allocRole caches allocationRole(res, ""): res never changes.
	allocRole *string
	// With long-task bounds (longtasks.go): longHeld, the task's
	// resources count on its agent's long-task books (a long task, or a
	// short one that overran); shortUntil, the end of a running short
	// task's declaration (zero once it ended or overran).
	longHeld   bool
	overran    bool
	shortUntil time.Time
	// ackedUUID is the last status update of the task its scheduler
	// acknowledged (nil: none yet).
	ackedUUID []byte
}

func (t *task) id() string { return t.proto.GetTaskId().GetValue() }

// executor is a custom or default executor the master knows of on an agent.
type executor struct {
	info    *mesos.ExecutorInfo
	res     resources.Resources
	fwID    string
	agentID string
	// allocRole caches allocationRole(res, ""): res never changes.
	allocRole *string
}

// agent is a registered agent.
type agent struct {
	id       string
	info     *mesos.AgentInfo
	endpoint string
	version  string
	caps     []*mesos.AgentInfo_Capability

	stream      *AgentStream
	connected   bool
	deactivated bool
	// drain is the agent's DrainInfo while an operator drains it
	// (state_drain.go); replaced, never mutated.
	drain *mesos.DrainInfo

	registeredTime   time.Time
	reregisteredTime time.Time

	// total is set only through setTotal, which keeps the derived views
	// below in step.
	total resources.Resources
	// totalProto is total.Proto(), shared by every snapshot until total
	// changes (a snapshot must not rebuild it per agent per publish).
	totalProto []*mesos.Resource
	// reserved is total's reservations by role (the role of each
	// resource's last reservation), for role views.
	reserved map[string]resources.Resources
	// oversubscribed is the agent's last estimate (UPDATE_RESOURCES),
	// revocable with throttle_info (state_oversub.go).
	oversubscribed resources.Resources
	// oversubGen counts changes of oversubscribed (snapshot cache key).
	oversubGen uint64
	// converted is set once an operator's operation changed total: an
	// offer the allocator made before it learned the new total may still
	// be on its way, so offers on this agent are checked (allocated).
	converted bool
	tasks     map[string]map[string]*task     // framework ID -> task ID
	executors map[string]map[string]*executor // framework ID -> executor ID
	offers    map[string]*offer

	nextPing    time.Time
	pongPending bool
	misses      int
	pingSeq     uint64
	// leaving is set while a registrar write that removes the agent from
	// the registered set (unreachable, removal) is in flight.
	leaving bool
	// view is the agent's last snapshot view (snapshot_cache.go).
	view *agentViewCache
}

func (a *agent) active() bool { return a.connected && !a.deactivated && !a.leaving }

func (a *agent) pid() string { return "slave(1)@" + a.endpoint }

// offer is an outstanding offer.
type offer struct {
	id      string
	fwID    string
	agentID string
	role    string
	res     resources.Resources // allocated form (allocation_info set)
	proto   *mesos.Offer        // as sent to the framework
	expires time.Time           // zero: never
	// long is the offer's part set aside for long tasks (nil without
	// long-task bounds, or once given back).
	long longtask.Quantities
}

func newState(cfg Config, alloc allocator.Allocator, post func(event), now time.Time) *state {
	s := &state{
		cfg:          cfg,
		log:          cfg.Logger,
		alloc:        alloc,
		reg:          cfg.Registrar,
		post:         post,
		startTime:    now,
		frameworks:   map[string]*framework{},
		completedIDs: map[string]bool{},
		agents:       map[string]*agent{},
		unreachable:  map[string]*unreachableAgent{},
		gone:         map[string]bool{},
		offers:       map[string]*offer{},
		counters:     map[string]float64{},
		watchers:     map[*watcher]struct{}{},
		recovered:    map[string]bool{},
		admitting:    map[*AgentStream]bool{},
		readmitting:  map[string]int{},
		undelivered:  map[string]map[string]bool{},

		agentPrincipals: map[string]string{},
		dirty:           true,
		// Without an Election the master leads from the start (tests,
		// embedded use); Master.New clears this when it has one.
		leading:     true,
		epoch:       cfg.Epoch,
		electedTime: now,
	}
	s.info = masterInfo(cfg)
	s.leader = s.info
	if cfg.LongTaskFraction > 0 {
		s.long, _ = longtask.New(cfg.LongTaskFraction) // validated by Config.validate
		s.counters["master/tasks_short_overrun"] = 0
	}
	return s
}

// masterInfo builds MasterInfo. Mesos packs the IPv4 address in network
// byte order into a uint32 read as a little-endian integer.
func masterInfo(cfg Config) *mesos.MasterInfo {
	var ip uint32
	if v4 := net.ParseIP(cfg.IP).To4(); v4 != nil {
		ip = binary.LittleEndian.Uint32(v4)
	}
	addr := net.JoinHostPort(cfg.IP, strconv.Itoa(cfg.Port))
	return &mesos.MasterInfo{
		Id:       proto.String(cfg.ID),
		Ip:       proto.Uint32(ip),
		Port:     proto.Uint32(uint32(cfg.Port)),
		Pid:      proto.String("master@" + addr),
		Hostname: proto.String(cfg.Hostname),
		Version:  proto.String(cfg.Version),
		Address: &mesos.Address{
			Hostname: proto.String(cfg.Hostname),
			Ip:       proto.String(cfg.IP),
			Port:     proto.Int32(int32(cfg.Port)),
		},
	}
}

func (s *state) newFrameworkID() string {
	id := fmt.Sprintf("%s-%04d", s.cfg.ID, s.nextFramework)
	s.nextFramework++
	return id
}

func (s *state) newAgentID() string {
	id := fmt.Sprintf("%s-S%d", s.cfg.ID, s.nextAgent)
	s.nextAgent++
	return id
}

func (s *state) newOfferID() string {
	id := fmt.Sprintf("%s-O%d", s.cfg.ID, s.nextOffer)
	s.nextOffer++
	return id
}

func (s *state) count(key string) { s.counters[key]++; s.dirty = true }

// countTerminal bumps master/tasks_<state>: Mesos keeps the terminal task
// states as counters of transitions, so tasks trimmed from the bounded
// completed lists still count.
func (s *state) countTerminal(st mesos.TaskState) {
	s.count("master/tasks_" + strings.ToLower(strings.TrimPrefix(st.String(), "TASK_")))
}

// rejectTask reports a task the master refused to launch (it never existed
// in the master's state) and counts its terminal state.
func (s *state) rejectTask(fw *framework, st *mesos.TaskStatus) {
	s.countTerminal(st.GetState())
	s.countTerminalStatus(fw.id, st, st.GetState())
	s.forwardStatus(fw, st)
}

// sendFramework queues an event for the framework's subscriber, if any.
// A subscriber too far behind is disconnected.
func (s *state) sendFramework(fw *framework, ev *schedulerpb.Event) {
	if fw.stream == nil {
		return
	}
	if fw.stream.send(ev) {
		s.countEvent(fw, ev)
	} else {
		if fw.stream.q.isClosed() {
			return // the connection ended; frameworkStreamClosed follows
		}
		s.log.Warn("framework stream backlog full; disconnecting", "framework", fw.id)
		st := fw.stream
		s.post(func(s *state, now time.Time) { s.frameworkStreamClosed(st, now) })
		st.q.close()
	}
}

// sendAgent stamps the epoch and queues an event for the agent.
func (s *state) sendAgent(a *agent, ev *protocol.AgentEvent) {
	if a.stream == nil {
		return
	}
	ev.Epoch = proto.Uint64(s.epoch)
	if !a.stream.send(ev) {
		if a.stream.q.isClosed() {
			return // the connection ended; agentStreamClosed follows
		}
		s.log.Warn("agent stream backlog full; disconnecting", "agent", a.id)
		st := a.stream
		s.post(func(s *state, now time.Time) { s.agentStreamClosed(st, now) })
		st.q.close()
	}
}

func (s *state) agentEvent(t protocol.AgentEvent_Type) *protocol.AgentEvent {
	return &protocol.AgentEvent{Type: t.Enum(), Epoch: proto.Uint64(s.epoch)}
}

// emit delivers an operator-stream event, made by build, to every
// watcher; a watcher whose buffer is full is disconnected rather than
// slowing the loop. With no watcher, the usual case, nothing is built:
// agent and framework protos are not cheap, and a failover builds one for
// every returning agent.
func (s *state) emit(build func() *masterpb.Event) {
	if len(s.watchers) == 0 {
		return
	}
	ev := build()
	for w := range s.watchers {
		select {
		case w.ch <- ev:
		default:
			s.log.Warn("operator event subscriber too slow; disconnecting")
			s.dropWatcher(w)
		}
	}
}

func timeInfo(t time.Time) *mesos.TimeInfo {
	if t.IsZero() {
		return nil
	}
	return &mesos.TimeInfo{Nanoseconds: proto.Int64(t.UnixNano())}
}

func seconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// stateFor maps a state to what a framework without PARTITION_AWARE may see.
func stateFor(fw *framework, st mesos.TaskState) mesos.TaskState {
	if fw != nil && fw.partitionAware() {
		return st
	}
	switch st {
	case mesos.TaskState_TASK_DROPPED, mesos.TaskState_TASK_UNREACHABLE, mesos.TaskState_TASK_GONE,
		mesos.TaskState_TASK_GONE_BY_OPERATOR, mesos.TaskState_TASK_UNKNOWN:
		return mesos.TaskState_TASK_LOST
	}
	return st
}

func frameworkID(id string) *mesos.FrameworkID { return &mesos.FrameworkID{Value: proto.String(id)} }
func agentID(id string) *mesos.AgentID         { return &mesos.AgentID{Value: proto.String(id)} }
func offerID(id string) *mesos.OfferID         { return &mesos.OfferID{Value: proto.String(id)} }
