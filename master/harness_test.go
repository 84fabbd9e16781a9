package master

import (
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/schedulerpb"
	"mezzo/master/allocator"
	"mezzo/resources"
)

// recordingAllocator is an allocator.Allocator that records every call
// (a recording harness rather than a mock): tests read what the master
// told it and drive offers themselves.
type recordingAllocator struct {
	mu    sync.Mutex
	calls []string
	recov []recovery
	opts  map[string]allocator.FrameworkOptions // the last, by framework
}

type recovery struct {
	fw, agent string
	res       resources.Resources
	refuse    float64 // -1: no filter
}

var _ allocator.Allocator = (*recordingAllocator)(nil)

func (r *recordingAllocator) rec(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf(format, args...))
}

func (r *recordingAllocator) Start() {}
func (r *recordingAllocator) Stop()  {}
func (r *recordingAllocator) AddFramework(id string, info *mesos.FrameworkInfo, used map[string]resources.Resources, active bool, opts allocator.FrameworkOptions) {
	r.setOpts(id, opts)
	r.rec("AddFramework %s active=%v", id, active)
}
func (r *recordingAllocator) RemoveFramework(id string)     { r.rec("RemoveFramework %s", id) }
func (r *recordingAllocator) ActivateFramework(id string)   { r.rec("ActivateFramework %s", id) }
func (r *recordingAllocator) DeactivateFramework(id string) { r.rec("DeactivateFramework %s", id) }
func (r *recordingAllocator) UpdateFramework(id string, info *mesos.FrameworkInfo, opts allocator.FrameworkOptions) {
	r.setOpts(id, opts)
	r.rec("UpdateFramework %s", id)
}
func (r *recordingAllocator) AddAgent(id string, info *mesos.AgentInfo, total resources.Resources, used map[string]resources.Resources) {
	var fws []string
	for fw, u := range used {
		fws = append(fws, fw+"="+u.String())
	}
	sort.Strings(fws)
	r.rec("AddAgent %s %s used=%v", id, total.String(), fws)
}
func (r *recordingAllocator) RemoveAgent(id string) { r.rec("RemoveAgent %s", id) }
func (r *recordingAllocator) UpdateAgent(id string, info *mesos.AgentInfo, total resources.Resources) {
	r.rec("UpdateAgent %s", id)
}
func (r *recordingAllocator) UpdateOversubscribed(id string, o resources.Resources) {
	r.rec("UpdateOversubscribed %s", id)
}
func (r *recordingAllocator) ActivateAgent(id string)   { r.rec("ActivateAgent %s", id) }
func (r *recordingAllocator) DeactivateAgent(id string) { r.rec("DeactivateAgent %s", id) }
func (r *recordingAllocator) RecoverResources(fw, agent string, res resources.Resources, f *mesos.Filters) {
	refuse := -1.0
	if f != nil {
		refuse = f.GetRefuseSeconds()
	}
	r.mu.Lock()
	r.recov = append(r.recov, recovery{fw, agent, res, refuse})
	r.mu.Unlock()
	r.rec("RecoverResources %s %s %s refuse=%g", fw, agent, res.String(), refuse)
}
func (r *recordingAllocator) UpdateAllocation(fw, agent string, from, to resources.Resources) {
	r.rec("UpdateAllocation %s %s %s -> %s", fw, agent, from.String(), to.String())
}
func (r *recordingAllocator) SuppressOffers(fw string, roles []string) {
	r.rec("SuppressOffers %s %v", fw, roles)
}
func (r *recordingAllocator) RequestResources(fw string, reqs []allocator.Request) {
	parts := make([]string, len(reqs))
	for i, q := range reqs {
		parts[i] = fmt.Sprintf("{%s %s %s}", q.Role, q.AgentID, q.Resources.String())
	}
	r.rec("RequestResources %s %v", fw, parts)
}
func (r *recordingAllocator) ReviveOffers(fw string, roles []string) {
	r.rec("ReviveOffers %s %v", fw, roles)
}
func (r *recordingAllocator) UpdateWeights(map[string]float64)    {}
func (r *recordingAllocator) UpdateQuota(string, allocator.Quota) {}
func (r *recordingAllocator) Allocate()                           {}
func (r *recordingAllocator) Pause()                              { r.rec("Pause") }
func (r *recordingAllocator) Resume()                             { r.rec("Resume") }

func (r *recordingAllocator) setOpts(id string, opts allocator.FrameworkOptions) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.opts == nil {
		r.opts = map[string]allocator.FrameworkOptions{}
	}
	r.opts[id] = opts
}

func (r *recordingAllocator) optsOf(id string) allocator.FrameworkOptions {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.opts[id]
}

func (r *recordingAllocator) has(prefix string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.calls {
		if strings.HasPrefix(c, prefix) {
			return true
		}
	}
	return false
}

func (r *recordingAllocator) recorded() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

func (r *recordingAllocator) recoveries() []recovery {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.recov
	r.recov = nil
	return out
}

// heldRegistrar completes registrar writes only when the test says so,
// so tests can check that the master acts only once a write is durable.
type heldRegistrar struct {
	inner *MemoryRegistrar
	hold  bool
	held  []func()
}

func (h *heldRegistrar) do(op func(done func(error)), done func(error)) {
	run := func() {
		ch := make(chan error, 1)
		op(func(err error) { ch <- err })
		done(<-ch)
	}
	if h.hold {
		h.held = append(h.held, run)
		return
	}
	run()
}

func (h *heldRegistrar) release() {
	held := h.held
	h.held = nil
	for _, f := range held {
		f()
	}
}

func (h *heldRegistrar) Admit(info *mesos.AgentInfo, principal string, done func(error)) {
	h.do(func(d func(error)) { h.inner.Admit(info, principal, d) }, done)
}
func (h *heldRegistrar) Readmit(info *mesos.AgentInfo, principal string, done func(error)) {
	h.do(func(d func(error)) { h.inner.Readmit(info, principal, d) }, done)
}
func (h *heldRegistrar) MarkUnreachable(id string, at time.Time, done func(error)) {
	h.do(func(d func(error)) { h.inner.MarkUnreachable(id, at, d) }, done)
}
func (h *heldRegistrar) MarkReachable(info *mesos.AgentInfo, principal string, done func(error)) {
	h.do(func(d func(error)) { h.inner.MarkReachable(info, principal, d) }, done)
}
func (h *heldRegistrar) Remove(id string, done func(error)) {
	h.do(func(d func(error)) { h.inner.Remove(id, d) }, done)
}

// harness drives the state directly: no goroutine, explicit time.
type harness struct {
	t       *testing.T
	s       *state
	now     time.Time
	alloc   *recordingAllocator
	reg     *heldRegistrar
	mu      sync.Mutex
	pending []event
}

var epoch0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

func newHarness(t *testing.T, mod ...func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, now: epoch0, alloc: &recordingAllocator{}, reg: &heldRegistrar{inner: NewMemoryRegistrar()}}
	cfg := Config{ID: "M", Hostname: "master.test", IP: "10.0.0.1", Port: 5050, Version: "test",
		Registrar: h.reg, Allocator: h.alloc, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, f := range mod {
		f(&cfg)
	}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	h.s = newState(cfg, h.alloc, func(ev event) {
		h.mu.Lock()
		h.pending = append(h.pending, ev)
		h.mu.Unlock()
	}, h.now)
	return h
}

// settle runs posted events (registrar completions, stream closes) until none remain.
func (h *harness) settle() {
	for {
		h.mu.Lock()
		evs := h.pending
		h.pending = nil
		h.mu.Unlock()
		if len(evs) == 0 {
			return
		}
		for _, ev := range evs {
			ev(h.s, h.now)
		}
	}
}

func (h *harness) advance(d time.Duration) {
	h.now = h.now.Add(d)
	h.s.advance(h.now)
	h.settle()
}

// fakeFramework records what the master sends one scheduler subscription.
type fakeFramework struct {
	h      *harness
	st     *FrameworkStream
	id     string
	events []*schedulerpb.Event
}

func fwInfo(name string, caps ...mesos.FrameworkInfo_Capability_Type) *mesos.FrameworkInfo {
	info := &mesos.FrameworkInfo{User: proto.String("root"), Name: proto.String(name)}
	for _, c := range caps {
		info.Capabilities = append(info.Capabilities, &mesos.FrameworkInfo_Capability{Type: c.Enum()})
	}
	return info
}

func (h *harness) subscribe(info *mesos.FrameworkInfo) *fakeFramework {
	h.t.Helper()
	st, err := h.s.subscribe(Principal{}, &schedulerpb.Call_Subscribe{FrameworkInfo: info}, h.now)
	if err != nil {
		h.t.Fatalf("subscribe: %v", err)
	}
	h.settle()
	f := &fakeFramework{h: h, st: st, id: st.FrameworkID()}
	evs := f.drain()
	if len(evs) < 2 || evs[0].GetType() != schedulerpb.Event_SUBSCRIBED || evs[1].GetType() != schedulerpb.Event_HEARTBEAT {
		h.t.Fatalf("subscribe: want SUBSCRIBED, HEARTBEAT; got %v", eventTypes(evs))
	}
	return f
}

func (f *fakeFramework) drain() []*schedulerpb.Event {
	evs, _ := f.st.Drain()
	f.events = append(f.events, evs...)
	return evs
}

// call makes a scheduler call on this subscription.
func (f *fakeFramework) call(c *schedulerpb.Call) error {
	c.FrameworkId = frameworkID(f.id)
	if err := ValidateCall(c); err != nil {
		return err
	}
	err := f.h.s.schedulerCall(Principal{}, c, f.st.ID(), f.h.now)
	f.h.settle()
	return err
}

func (f *fakeFramework) mustCall(c *schedulerpb.Call) {
	f.h.t.Helper()
	if err := f.call(c); err != nil {
		f.h.t.Fatalf("%v: %v", c.GetType(), err)
	}
}

// offers drains and returns the offers received.
func (f *fakeFramework) offers() []*mesos.Offer {
	var out []*mesos.Offer
	for _, ev := range f.drain() {
		out = append(out, ev.GetOffers().GetOffers()...)
	}
	return out
}

// updates drains and returns the task statuses received.
func (f *fakeFramework) updates() []*mesos.TaskStatus {
	var out []*mesos.TaskStatus
	for _, ev := range f.drain() {
		if ev.GetType() == schedulerpb.Event_UPDATE {
			out = append(out, ev.GetUpdate().GetStatus())
		}
	}
	return out
}

func eventTypes[T interface{ GetType() E }, E fmt.Stringer](evs []T) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.GetType().String())
	}
	return out
}

// fakeAgent records what the master sends one agent.
type fakeAgent struct {
	h      *harness
	st     *AgentStream
	id     string
	events []*protocol.AgentEvent
}

func agentSub(host, res string) *protocol.AgentCall_Subscribe {
	return &protocol.AgentCall_Subscribe{
		AgentInfo: &mesos.AgentInfo{Hostname: proto.String(host), Port: proto.Int32(5051),
			Resources: resources.MustParse(res).Proto()},
		Endpoint: proto.String("10.0.0.2:5051"),
		Version:  protocol.Version_VERSION_1.Enum(),
	}
}

func (h *harness) addAgent(host, res string) *fakeAgent {
	h.t.Helper()
	return h.agentSubscribe(agentSub(host, res))
}

func (h *harness) agentSubscribe(sub *protocol.AgentCall_Subscribe) *fakeAgent {
	h.t.Helper()
	st, err := h.s.agentSubscribe(sub, "", h.now)
	if err != nil {
		h.t.Fatalf("agent subscribe: %v", err)
	}
	h.settle()
	a := &fakeAgent{h: h, st: st}
	evs := a.drain()
	if len(evs) > 0 && evs[0].GetType() == protocol.AgentEvent_SUBSCRIBED {
		a.id = evs[0].GetSubscribed().GetAgentId().GetValue()
	}
	return a
}

func (a *fakeAgent) drain() []*protocol.AgentEvent {
	evs, _ := a.st.Drain()
	a.events = append(a.events, evs...)
	return evs
}

func (a *fakeAgent) call(c *protocol.AgentCall) error {
	c.AgentId = agentID(a.id)
	err := a.h.s.agentCall(c, a.h.now)
	a.h.settle()
	return err
}

// update sends a status update as the agent's update manager would.
func (a *fakeAgent) update(fwID, taskID string, st mesos.TaskState, withUUID bool) []byte {
	a.h.t.Helper()
	var id []byte
	if withUUID {
		u := uuid.New()
		id = u[:]
	}
	err := a.call(&protocol.AgentCall{Type: protocol.AgentCall_STATUS_UPDATE.Enum(),
		StatusUpdate: &protocol.AgentCall_StatusUpdate{
			FrameworkId: frameworkID(fwID),
			Status: &mesos.TaskStatus{TaskId: &mesos.TaskID{Value: proto.String(taskID)}, State: st.Enum(),
				Source: mesos.TaskStatus_SOURCE_EXECUTOR.Enum(), Uuid: id},
		}})
	if err != nil {
		a.h.t.Fatalf("status update: %v", err)
	}
	return id
}

// offer makes the allocator offer res on agent to the framework.
func (h *harness) offer(f *fakeFramework, a *fakeAgent, role, res string) *mesos.Offer {
	h.t.Helper()
	h.s.allocated(f.id, allocator.Offers{role: {a.id: resources.MustParse(res)}}, h.now)
	h.settle()
	offers := f.offers()
	if len(offers) != 1 {
		h.t.Fatalf("want 1 offer, got %d", len(offers))
	}
	return offers[0]
}

func cmdTask(id, agent, res string) *mesos.TaskInfo {
	return &mesos.TaskInfo{
		Name:      proto.String("task " + id),
		TaskId:    &mesos.TaskID{Value: proto.String(id)},
		AgentId:   agentID(agent),
		Resources: resources.ToPreRefinement(resources.MustParse(res).Proto()),
		Command:   &mesos.CommandInfo{Value: proto.String("sleep 1")},
	}
}

func acceptCall(offers []*mesos.Offer, ops ...*mesos.Offer_Operation) *schedulerpb.Call {
	acc := &schedulerpb.Call_Accept{Operations: ops}
	for _, o := range offers {
		acc.OfferIds = append(acc.OfferIds, o.GetId())
	}
	return &schedulerpb.Call{Type: schedulerpb.Call_ACCEPT.Enum(), Accept: acc}
}

func launch(tasks ...*mesos.TaskInfo) *mesos.Offer_Operation {
	return &mesos.Offer_Operation{Type: mesos.Offer_Operation_LAUNCH.Enum(),
		Launch: &mesos.Offer_Operation_Launch{TaskInfos: tasks}}
}

func (h *harness) task(fwID, taskID string) *mesos.Task {
	if fw := h.s.frameworks[fwID]; fw != nil {
		if t := fw.tasks[taskID]; t != nil {
			return t.proto
		}
	}
	return nil
}

func (r *recordingAllocator) UpdateUnavailability(agent string, u *mesos.Unavailability) {
	if u == nil {
		r.rec("UpdateUnavailability %s none", agent)
		return
	}
	r.rec("UpdateUnavailability %s start=%d duration=%d", agent, u.GetStart().GetNanoseconds(), u.GetDuration().GetNanoseconds())
}
func (r *recordingAllocator) UpdateInverseOffer(agent, fw string, f *mesos.Filters) {
	if f == nil {
		r.rec("UpdateInverseOffer %s %s none", agent, fw)
		return
	}
	r.rec("UpdateInverseOffer %s %s refuse=%g", agent, fw, f.GetRefuseSeconds())
}
