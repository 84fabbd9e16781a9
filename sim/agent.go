package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/resources"
)

// Agent is one emulated agent. It registers with the master under its
// hostname, keeps its event stream open, answers PINGs, runs fake tasks,
// and after losing the stream re-registers (with its agent ID, its tasks
// and its unacknowledged updates) at the next master that will have it.
//
// Its state is owned by its shard's loop; the exported methods may be
// called from any goroutine.
type Agent struct {
	rt       *simRuntime
	sh       *shard
	index    int
	hostname string
	own      bool // a lone agent: Stop also stops its runtime
	// res and attrs, when set, replace the fleet's template for this
	// agent (FleetConfig.Vary); read-only once the agent exists.
	res   []*mesos.Resource
	attrs []*mesos.Attribute
	// preload are tasks it runs from the start (FleetConfig.Vary),
	// adopted on its loop at Start.
	preload []RunningTask

	// Published for other goroutines.
	pubID     atomic.Pointer[string]
	regAt     atomic.Int64 // unix nanos of the latest SUBSCRIBED; 0 if none
	firstAt   atomic.Int64 // unix nanos of the first SUBSCRIBED
	online    atomic.Bool  // registered right now
	pubEpoch  atomic.Uint64
	subscribe atomic.Int64 // unix nanos of the latest SUBSCRIBE sent

	// Loop-owned.
	agentID     string
	started     bool
	stopped     bool
	attempt     uint64 // current connection attempt; others' reports are stale
	cancel      context.CancelFunc
	master      string // master the current stream is open to
	leader      string // last master that accepted us
	registered  bool
	backoff     time.Duration
	retry       *loopTimer
	epoch       uint64 // highest master epoch accepted
	lastEvent   time.Time
	pingTimeout time.Duration
	pingTimer   *loopTimer
	fws         map[string]*fwState // lazily allocated
	// warm are the preloaded tasks whose end is armed at the first
	// registration.
	warm []warmTask
}

// warmTask is a preloaded task waiting for the agent's registration.
type warmTask struct {
	t *simTask
	d time.Duration
}

// NewAgent returns a lone emulated agent with its own connection, loop and
// poster; Start starts it. Fleets share those among many agents instead.
func NewAgent(cfg AgentConfig) (*Agent, error) {
	rt, err := newRuntime(cfg, 1, 1, 2)
	if err != nil {
		return nil, err
	}
	a := newAgent(rt, rt.shards[0], 0)
	a.own = true
	return a, nil
}

func newAgent(rt *simRuntime, sh *shard, index int) *Agent {
	h := rt.cfg.Hostname
	if h == "" {
		h = "sim-" + strconv.Itoa(index)
	} else if index > 0 {
		h += "-" + strconv.Itoa(index)
	}
	return &Agent{rt: rt, sh: sh, index: index, hostname: h}
}

// Start begins registration (the first SUBSCRIBE goes out at once).
func (a *Agent) Start() {
	a.sh.post(func() {
		if a.started || a.stopped {
			return
		}
		a.started = true
		a.adoptPreload()
		a.connect()
	})
}

// Stop drops the connection and every timer, as a crashed agent would:
// the master sees the stream end. For a lone agent it also releases the
// runtime and waits for its goroutines.
func (a *Agent) Stop() {
	done := make(chan struct{})
	a.sh.post(func() {
		a.halt()
		close(done)
	})
	select {
	case <-done:
	case <-a.sh.done:
	}
	if a.own {
		a.rt.shutdown()
	}
}

// halt stops the agent (loop).
func (a *Agent) halt() {
	if a.stopped {
		return
	}
	a.stopped = true
	a.disconnect()
	for _, fw := range a.fws {
		for _, t := range fw.tasks {
			t.finish.Stop()
			t.retry.Stop()
		}
	}
}

// Index is the agent's position in its fleet.
func (a *Agent) Index() int { return a.index }

// Hostname is the hostname the agent advertises.
func (a *Agent) Hostname() string { return a.hostname }

// ID is the agent ID the master assigned, "" before the first
// registration.
func (a *Agent) ID() string {
	if p := a.pubID.Load(); p != nil {
		return *p
	}
	return ""
}

// Registered reports whether the agent holds an accepted subscription now.
func (a *Agent) Registered() bool { return a.online.Load() }

// RegisteredAt is when the agent last became registered (SUBSCRIBED
// received); zero if never.
func (a *Agent) RegisteredAt() time.Time { return unixTime(a.regAt.Load()) }

// FirstRegisteredAt is when the agent first registered; zero if never.
func (a *Agent) FirstRegisteredAt() time.Time { return unixTime(a.firstAt.Load()) }

// Epoch is the highest master epoch the agent has accepted.
func (a *Agent) Epoch() uint64 { return a.pubEpoch.Load() }

func unixTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// AgentState is a consistent view of one agent, read on its loop.
type AgentState struct {
	ID         string
	Hostname   string
	Registered bool
	Master     string // master holding the stream, "" if none
	Epoch      uint64
	// Tasks by framework ID, task ID → current state.
	Tasks map[string]map[string]mesos.TaskState
	// Unacknowledged counts status updates awaiting acknowledgement.
	Unacknowledged int
}

// State reads the agent's state on its loop; ok is false if the loop has
// stopped.
func (a *Agent) State() (st AgentState, ok bool) {
	done := make(chan struct{})
	a.sh.post(func() {
		st = AgentState{ID: a.agentID, Hostname: a.hostname, Registered: a.registered, Epoch: a.epoch,
			Tasks: map[string]map[string]mesos.TaskState{}}
		if a.registered {
			st.Master = a.master
		}
		for fid, fw := range a.fws {
			for tid, t := range fw.tasks {
				st.Unacknowledged += len(t.pending)
				if t.task == nil {
					continue
				}
				if st.Tasks[fid] == nil {
					st.Tasks[fid] = map[string]mesos.TaskState{}
				}
				st.Tasks[fid][tid] = t.state
			}
		}
		close(done)
	})
	select {
	case <-done:
		return st, true
	case <-a.sh.done:
		return st, false
	}
}

func agentIDProto(id string) *mesos.AgentID { return &mesos.AgentID{Value: proto.String(id)} }

// connect starts a subscription attempt (loop).
func (a *Agent) connect() {
	if a.stopped {
		return
	}
	a.retry.Stop()
	if a.cancel != nil {
		a.cancel()
	}
	a.attempt++
	id := a.attempt
	ctx, cancel := context.WithCancel(a.rt.ctx)
	a.cancel = cancel
	call := &protocol.AgentCall{
		Type:      protocol.AgentCall_SUBSCRIBE.Enum(),
		Subscribe: a.subscribeMessage(),
	}
	if a.agentID != "" {
		call.AgentId = agentIDProto(a.agentID)
	}
	body, err := proto.Marshal(call)
	if err != nil {
		// Only a bug makes our own message unencodable.
		a.rt.log.Error("encoding SUBSCRIBE", "agent", a.hostname, "err", err)
		return
	}
	a.rt.counters.subscribeAttempts.Add(1)
	a.subscribe.Store(a.rt.clk.Now().UnixNano())
	leader := a.leader
	a.rt.wg.Add(1)
	a.rt.streams.run(func() { a.stream(ctx, id, body, leader) })
}

// stream is the goroutine of one connection attempt: it dials, then
// delivers the stream's events to the loop until the stream ends.
func (a *Agent) stream(ctx context.Context, id uint64, body []byte, leader string) {
	defer a.rt.wg.Done()
	resp, master, err := a.rt.dial(ctx, a.index, body, leader)
	if err != nil {
		a.sh.post(func() { a.onStreamClosed(id, err) })
		return
	}
	defer resp.Body.Close()
	a.sh.post(func() { a.onStreamOpened(id, master) })
	err = readEvents(resp.Body, func(ev *protocol.AgentEvent) {
		a.sh.post(func() { a.onEvent(id, ev) })
	})
	a.sh.post(func() { a.onStreamClosed(id, err) })
}

// subscribeMessage describes the agent and everything it runs.
func (a *Agent) subscribeMessage() *protocol.AgentCall_Subscribe {
	info := &mesos.AgentInfo{
		Hostname:   proto.String(a.hostname),
		Port:       proto.Int32(a.rt.cfg.Port),
		Resources:  a.rt.res,
		Attributes: a.rt.attrs,
	}
	if a.res != nil {
		info.Resources = a.res
	}
	if a.attrs != nil {
		info.Attributes = a.attrs
	}
	if a.agentID != "" {
		info.Id = agentIDProto(a.agentID)
	}
	s := &protocol.AgentCall_Subscribe{
		AgentInfo:    info,
		Version:      protocol.Version_VERSION_1.Enum(),
		AgentVersion: proto.String(Version),
		Endpoint:     proto.String(a.hostname + ":" + strconv.Itoa(int(a.rt.cfg.Port))),
		Epoch:        proto.Uint64(a.epoch),
		Capabilities: capabilities,
	}
	a.report(s)
	return s
}

// capabilities are the agent capabilities the real agent advertises.
var capabilities = func() []*mesos.AgentInfo_Capability {
	var out []*mesos.AgentInfo_Capability
	for _, t := range []mesos.AgentInfo_Capability_Type{
		mesos.AgentInfo_Capability_MULTI_ROLE,
		mesos.AgentInfo_Capability_HIERARCHICAL_ROLE,
		mesos.AgentInfo_Capability_RESERVATION_REFINEMENT,
		mesos.AgentInfo_Capability_TASK_RESOURCE_LIMITS,
	} {
		out = append(out, &mesos.AgentInfo_Capability{Type: t.Enum()})
	}
	return out
}()

func (a *Agent) onStreamOpened(id uint64, master string) {
	if id != a.attempt {
		return
	}
	a.master = master
}

func (a *Agent) onStreamClosed(id uint64, err error) {
	if id != a.attempt || a.stopped {
		return
	}
	a.rt.log.Debug("master connection lost", "agent", a.hostname, "master", a.master, "err", err)
	a.disconnect()
	a.scheduleReconnect()
}

func (a *Agent) onCallRefused(id uint64, msg string) {
	if id != a.attempt || !a.registered || a.stopped {
		return
	}
	a.rt.log.Debug("the master refused a call; re-registering", "agent", a.hostname, "master", a.master, "reason", msg)
	a.disconnect()
	a.scheduleReconnect()
}

// disconnect tears the current connection down (loop).
func (a *Agent) disconnect() {
	if a.cancel != nil {
		a.cancel()
		a.cancel = nil
	}
	if a.registered {
		a.rt.counters.disconnects.Add(1)
	}
	a.attempt++ // whatever the old goroutine still reports is stale
	a.pingTimer.Stop()
	a.retry.Stop()
	a.setRegistered(false)
}

func (a *Agent) setRegistered(v bool) {
	if a.registered == v {
		return
	}
	a.registered = v
	a.online.Store(v)
	if v {
		a.rt.registered.Add(1)
	} else {
		a.rt.registered.Add(-1)
	}
	a.rt.changed.notify()
}

// scheduleReconnect arms the next attempt after a random delay in
// [0, backoff], doubling backoff up to the maximum, as the real agent
// (and Mesos's) does, so that a fleet does not stampede a new leader.
func (a *Agent) scheduleReconnect() {
	if a.stopped {
		return
	}
	b := a.backoff
	if b <= 0 {
		b = a.rt.cfg.RegistrationBackoff
	}
	d := time.Duration(rand.Int64N(int64(b) + 1))
	a.backoff = min(2*b, a.rt.cfg.MaxRegistrationBackoff)
	a.retry = a.sh.after(d, a.connect)
}

// onEvent handles one event of the subscription stream (loop).
func (a *Agent) onEvent(id uint64, ev *protocol.AgentEvent) {
	if id != a.attempt || a.stopped {
		return
	}
	if e := ev.GetEpoch(); e < a.epoch {
		a.rt.counters.staleEvents.Add(1)
		a.rt.log.Debug("dropping event from a stale master", "agent", a.hostname, "type", ev.GetType().String(), "epoch", e, "highest", a.epoch)
		return
	} else if e > a.epoch {
		a.epoch = e
		a.pubEpoch.Store(e)
	}
	a.lastEvent = a.rt.clk.Now()
	switch ev.GetType() {
	case protocol.AgentEvent_SUBSCRIBED:
		a.onSubscribed(ev.GetSubscribed())
		return
	case protocol.AgentEvent_SHUTDOWN:
		// The master removed this agent: it may never come back under
		// this ID. A real agent exits; the emulated one stops.
		a.rt.counters.shutdowns.Add(1)
		a.rt.log.Info("the master shut the agent down", "agent", a.hostname, "message", ev.GetShutdown().GetMessage())
		a.halt()
		return
	case protocol.AgentEvent_ERROR:
		a.rt.log.Debug("master error; reconnecting", "agent", a.hostname, "message", ev.GetError().GetMessage())
		a.disconnect()
		a.scheduleReconnect()
		return
	}
	if !a.registered {
		return // nothing but SUBSCRIBED is valid before SUBSCRIBED
	}
	switch ev.GetType() {
	case protocol.AgentEvent_PING:
		a.rt.counters.pings.Add(1)
		a.send(&protocol.AgentCall{
			Type: protocol.AgentCall_PONG.Enum(),
			Pong: &protocol.AgentCall_Pong{Sequence: proto.Uint64(ev.GetPing().GetSequence())},
		})
	case protocol.AgentEvent_RUN_TASK:
		a.runTask(ev.GetRunTask())
	case protocol.AgentEvent_RUN_TASK_GROUP:
		a.runTaskGroup(ev.GetRunTaskGroup())
	case protocol.AgentEvent_KILL_TASK:
		m := ev.GetKillTask()
		a.killTask(m.GetFrameworkId().GetValue(), m.GetTaskId().GetValue())
	case protocol.AgentEvent_SHUTDOWN_EXECUTOR:
		m := ev.GetShutdownExecutor()
		a.shutdownExecutor(m.GetFrameworkId().GetValue(), m.GetExecutorId().GetValue())
	case protocol.AgentEvent_SHUTDOWN_FRAMEWORK:
		a.shutdownFramework(ev.GetShutdownFramework().GetFrameworkId().GetValue())
	case protocol.AgentEvent_ACKNOWLEDGE:
		m := ev.GetAcknowledge()
		a.acknowledge(m.GetFrameworkId().GetValue(), m.GetTaskId().GetValue(), m.GetUuid())
	case protocol.AgentEvent_UPDATE_FRAMEWORK:
		a.updateFramework(ev.GetUpdateFramework().GetFrameworkInfo())
	case protocol.AgentEvent_RECONCILE:
		a.reconcile(ev.GetReconcile().GetTasks())
	case protocol.AgentEvent_FRAMEWORK_MESSAGE:
		// Fake tasks have no executor to hand data to.
	}
}

// onSubscribed completes (re-)registration.
func (a *Agent) onSubscribed(s *protocol.AgentEvent_Subscribed) {
	id := s.GetAgentId().GetValue()
	if id == "" {
		a.rt.log.Warn("SUBSCRIBED without an agent id; reconnecting", "agent", a.hostname)
		a.disconnect()
		a.scheduleReconnect()
		return
	}
	if a.agentID != "" && id != a.agentID {
		// A master that lost us entirely assigned a new identity: the old
		// tasks belong to the old identity and are gone.
		a.rt.log.Warn("the master assigned a new agent id", "agent", a.hostname, "old", a.agentID, "new", id)
		a.forgetTasks()
	}
	if a.agentID != id {
		a.agentID = id
		a.pubID.Store(&id)
	}
	a.leader = a.master
	a.backoff = 0
	interval := time.Duration(s.GetPingIntervalSeconds() * float64(time.Second))
	if interval <= 0 {
		interval = DefaultPingInterval
	}
	missed := s.GetMaxMissed()
	if missed == 0 {
		missed = DefaultMaxMissed
	}
	a.pingTimeout = interval * time.Duration(missed)
	a.armPingCheck(a.pingTimeout)
	now := a.rt.clk.Now().UnixNano()
	a.regAt.Store(now)
	a.firstAt.CompareAndSwap(0, now)
	a.rt.counters.registrations.Add(1)
	a.setRegistered(true)
	for _, w := range a.warm {
		w.t.task.AgentId = agentIDProto(id)
		a.finishAfter(w.t, w.d)
	}
	a.warm = nil
	if len(a.rt.over) > 0 {
		// A (re-)registered agent tells the master its estimate at once,
		// as the real agent's forwarder does after registering.
		a.send(&protocol.AgentCall{
			Type:            protocol.AgentCall_UPDATE_RESOURCES.Enum(),
			UpdateResources: &protocol.AgentCall_UpdateResources{Oversubscribed: a.rt.over},
		})
	}
	a.resumeUpdates()
}

// armPingCheck declares the master lost when no event arrived for the
// ping timeout (the master pings every interval).
func (a *Agent) armPingCheck(d time.Duration) {
	a.pingTimer.Stop()
	a.pingTimer = a.sh.after(d, func() {
		if !a.registered {
			return
		}
		silent := a.rt.clk.Now().Sub(a.lastEvent)
		if silent < a.pingTimeout {
			a.armPingCheck(a.pingTimeout - silent)
			return
		}
		a.rt.log.Debug("no word from the master; reconnecting", "agent", a.hostname, "master", a.master, "silent", silent)
		a.disconnect()
		a.scheduleReconnect()
	})
}

// send queues a call to the master of the current stream (loop); false if
// the agent is not registered.
func (a *Agent) send(c *protocol.AgentCall) bool {
	if !a.registered {
		return false
	}
	c.AgentId = agentIDProto(a.agentID)
	a.rt.posts.push(postJob{a: a, attempt: a.attempt, master: a.master, call: c})
	return true
}

// errStopped is reported by waits on a stopped agent or fleet.
var errStopped = errors.New("sim: stopped")

// String names the agent in logs.
func (a *Agent) String() string { return fmt.Sprintf("%s(%s)", a.hostname, a.ID()) }

// vary applies a fleet's per-agent variant before the agent starts.
func (a *Agent) vary(v AgentVariant) error {
	if v.Resources != "" {
		rs, err := resources.Parse(v.Resources, "*")
		if err != nil {
			return fmt.Errorf("sim: agent %d: invalid variant 'Resources': %w", a.index, err)
		}
		a.res = rs.Proto()
	}
	if v.Attributes != nil {
		a.attrs = textAttributes(v.Attributes)
	}
	for i, rt := range v.Tasks {
		if rt.Framework.GetId().GetValue() == "" || rt.TaskID == "" {
			return fmt.Errorf("sim: agent %d: variant task %d needs a framework id and a task id", a.index, i)
		}
	}
	a.preload = v.Tasks
	return nil
}
