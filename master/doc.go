// Package master is the Mesos master's brain: frameworks, agents, offers and
// tasks, and the rules that move them from one state to the next. The HTTP
// layer (master/httpapi) turns scheduler calls and agent-protocol calls into
// method calls on *Master; the allocator (master/allocator) answers with
// offers through a callback; the Registrar makes agent admission durable.
// cmd/mezzo builds a Config, calls New, Start and, on exit, Stop.
//
// # One goroutine owns the state
//
// Every piece of mutable master state (frameworks, agents, offers, tasks,
// counters, operator-stream subscribers) is owned by a single goroutine, the
// event loop in loop.go. Scheduler calls, agent calls, allocator offers,
// registrar completions and timer expiries all arrive as closures posted to
// one mailbox and are applied one after another. The alternative, a lock
// around the state, looks cheaper but is not: an ACCEPT must see the offers,
// the agent and the framework in one consistent instant (otherwise two
// ACCEPTs on overlapping offers could both pass validation and over-commit an
// agent), a status update must update the task, the agent's accounting and
// the allocator together, and a registrar completion must find the agent in
// the state the master left it in when the write began. A lock would have to
// be held across all of that anyway, and every reader (/master/state, the
// operator API) would then contend with offers. With one owner, invariants
// hold by construction between events, readers use an immutable Snapshot
// the loop builds when they ask for one (throttled by the build's cost;
// publish.go; a caller that got its reply always reads a snapshot showing
// its change), and slow work (HTTP writes, disk, JSON
// rendering) happens off the loop: the loop only enqueues outbound events on
// per-subscriber queues that never block it.
//
// The state logic (state*.go) is plain synchronous code that takes `now` as
// an argument; tests drive it without goroutines or sleeps.
//
// # Entry points and the write path
//
// The public methods of *Master are filed by caller: api_scheduler.go,
// api_agent.go, api_operator.go and api_allocator.go. Every write takes the
// caller's Principal, where authorization will plug in. master/endpoints
// reaches the master only through its Source interface. An ACCEPT's
// operations run through the offer-operation table (offer_ops.go);
// reservations and volumes (operations.go, state_operator_ops.go) change an
// agent's total, which the agent checkpoints (CHECKPOINT_RESOURCES) and
// reports back when it subscribes; operations with an id get feedback
// (operation_feedback.go). docs/architecture.md draws the whole path.
//
// # Task lifecycle (as the master records it)
//
//	ACCEPT ──validate──► TASK_ERROR / TASK_LOST|DROPPED (never stored)
//	   │ ok
//	   ▼
//	STAGING ──RUN_TASK to agent──► STARTING ─► RUNNING ─► (KILLING) ─┐
//	   │                                                             │
//	   └──────────────────────────────────────────────────────────────┤
//	                                                                  ▼
//	 terminal latest_state (FINISHED, FAILED, KILLED, ERROR, LOST, DROPPED, GONE…):
//	   resources go back to the allocator at once;
//	   the task moves to completed once its terminal update is acknowledged
//	   (or immediately if the update needs no acknowledgement).
//	 agent unreachable: TASK_UNREACHABLE (partition-aware) → unreachable tasks,
//	                    TASK_LOST (others) → completed tasks.
//	 framework removed: TASK_KILLED (REASON_FRAMEWORK_REMOVED) → completed.
//
// # Agent lifecycle
//
//	(every SUBSCRIBE: total = agent_info.resources with its checkpointed
//	 reservations and volumes applied; a conflict is refused with 400)
//	SUBSCRIBE (no id) ──Registrar.Admit──► registered (connected, active)
//	SUBSCRIBE (known id) ─────────────────► registered (new stream, RECONCILE sent)
//	SUBSCRIBE (id unknown to this master) ──Registrar.Readmit──► registered,
//	                                         frameworks/tasks rebuilt from its report
//	SUBSCRIBE (id of a removed agent) ─────► SHUTDOWN event, never readmitted
//
//	registered ──stream closes──► disconnected (no offers; pings count as missed)
//	     │                             │ re-SUBSCRIBE ──► registered
//	     │ MaxAgentPingTimeouts pings unanswered
//	     ▼
//	Registrar.MarkUnreachable ──► unreachable (tasks UNREACHABLE/LOST)
//	     │ re-SUBSCRIBE: Registrar.MarkReachable ──► registered
//	UNREGISTER: Registrar.Remove ──► gone (SHUTDOWN on any later SUBSCRIBE)
//
//	Orthogonally, an operator may deactivate or drain an agent (registered,
//	recovered or unreachable): Registrar.UpdateDrain, then no offers and,
//	when draining, KILL_TASK for every task, DRAINED once none is left
//	(state_drain.go draws it). The entry outlives failovers and
//	unreachability and is acted on whenever the agent (re-)registers.
//
// # Leadership
//
// With Config.Election (Raft, wired by cmd/), a master starts as a
// follower (307 to the leader, 503 while none is known) and leads only
// after recovering the registry in the current term (leader.go,
// state_leader.go); when deposed its whole state is replaced by a fresh
// follower state, so soft state, streams and offers die with the
// leadership. ReplicatedRegistrar adapts master/registrar. docs/ha.md
// has the details.
//
// # Offer lifetime
//
//	allocator Offer callback ──► outstanding (OFFERS event to the framework)
//	     ├── ACCEPT   : used by operations; the unused rest recovered with the ACCEPT's filters
//	     ├── DECLINE  : recovered with filters (refuse_seconds, default 5, capped at one year)
//	     ├── OfferTimeout expiry, framework disconnect/failover, agent disconnect or
//	     │   removal : RESCIND event (if the framework is connected), recovered without filter
//	     └── framework removed : recovered with the framework
package master
