package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/scheduler"
)

// Oversubscription (issue 13) with the real binary: estimators turn into
// revocable offers for capable frameworks only, a shrinking estimate
// rescinds them, QoS controllers evict revocable containers and never
// regular ones, a lender gets its reservation back from a tenant, and an
// agent restart recomputes the estimate and recovers revocable tasks.
// Intervals are short (flags), and every wait is on a condition with a
// deadline. Tasks that burn CPU are shells named after the test (their $0)
// and wrapped in `timeout`; each test checks at its end that none is left.

// ovsFW is a framework written with the scheduler SDK that keeps its
// outstanding offers, every offer it was sent, the rescinds and the task
// updates, for the tests to wait on.
type ovsFW struct {
	name   string
	client *scheduler.Client

	mu        sync.Mutex
	live      map[string]*mesos.Offer // outstanding offers by id
	all       []*mesos.Offer
	rescinded map[string]bool
	updates   map[string][]*mesos.TaskStatus
	changed   chan struct{} // closed and replaced on every event
}

type ovsFWOpts struct {
	role           string
	revocable      bool // REVOCABLE_RESOURCES
	checkpoint     bool
	partitionAware bool
	id             *mesos.FrameworkID // re-subscribe
	failover       float64
}

func startOvsFW(ctx context.Context, t *testing.T, addr, name string, o ovsFWOpts) *ovsFW {
	t.Helper()
	caps := []*mesos.FrameworkInfo_Capability{{Type: mesos.FrameworkInfo_Capability_MULTI_ROLE.Enum()}}
	if o.revocable {
		caps = append(caps, &mesos.FrameworkInfo_Capability{Type: mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES.Enum()})
	}
	if o.partitionAware {
		caps = append(caps, &mesos.FrameworkInfo_Capability{Type: mesos.FrameworkInfo_Capability_PARTITION_AWARE.Enum()})
	}
	role := o.role
	if role == "" {
		role = "*"
	}
	info := &mesos.FrameworkInfo{User: proto.String("root"), Name: proto.String(name), Roles: []string{role},
		Capabilities: caps, Checkpoint: proto.Bool(o.checkpoint), Id: o.id}
	if o.failover > 0 {
		info.FailoverTimeout = proto.Float64(o.failover)
	}
	f := &ovsFW{name: name, live: map[string]*mesos.Offer{}, rescinded: map[string]bool{},
		updates: map[string][]*mesos.TaskStatus{}, changed: make(chan struct{})}
	f.client = scheduler.New(scheduler.Config{Masters: []string{addr}, Framework: info})
	events, err := f.client.Subscribe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for ev := range events {
			f.mu.Lock()
			switch ev.GetType() {
			case schedulerpb.Event_OFFERS:
				for _, o := range ev.GetOffers().GetOffers() {
					f.live[o.GetId().GetValue()] = o
					f.all = append(f.all, o)
				}
			case schedulerpb.Event_RESCIND:
				id := ev.GetRescind().GetOfferId().GetValue()
				f.rescinded[id] = true
				delete(f.live, id)
			case schedulerpb.Event_UPDATE:
				st := ev.GetUpdate().GetStatus()
				f.updates[st.GetTaskId().GetValue()] = append(f.updates[st.GetTaskId().GetValue()], st)
				go f.client.Acknowledge(ctx, st)
			}
			close(f.changed)
			f.changed = make(chan struct{})
			f.mu.Unlock()
		}
	}()
	return f
}

// wait blocks until cond (called with f.mu held) holds, failing after
// timeout.
func (f *ovsFW) wait(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.After(timeout)
	for {
		f.mu.Lock()
		ok, ch := cond(), f.changed
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%s: timed out after %v waiting for %s", f.name, timeout, what)
		}
	}
}

// offer waits for an outstanding offer keep accepts and takes it.
func (f *ovsFW) offer(t *testing.T, what string, timeout time.Duration, keep func(*mesos.Offer) bool) *mesos.Offer {
	t.Helper()
	var got *mesos.Offer
	f.wait(t, what, timeout, func() bool {
		for id, o := range f.live {
			if keep(o) {
				got = o
				delete(f.live, id)
				return true
			}
		}
		return false
	})
	return got
}

// state is the task's latest state (0 and false before any update).
func (f *ovsFW) state(task string) (*mesos.TaskStatus, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	us := f.updates[task]
	if len(us) == 0 {
		return nil, false
	}
	return us[len(us)-1], true
}

// await waits for the task to reach one of states and returns that update.
func (f *ovsFW) await(t *testing.T, task string, timeout time.Duration, states ...mesos.TaskState) *mesos.TaskStatus {
	t.Helper()
	var got *mesos.TaskStatus
	f.wait(t, fmt.Sprintf("%s to reach %v", task, states), timeout, func() bool {
		for _, st := range f.updates[task] {
			for _, s := range states {
				if st.GetState() == s {
					got = st
					return true
				}
			}
		}
		return false
	})
	return got
}

// everState reports whether the task was ever reported in a state other
// than those allowed.
func (f *ovsFW) otherStates(task string, allowed ...mesos.TaskState) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, st := range f.updates[task] {
		ok := false
		for _, a := range allowed {
			ok = ok || st.GetState() == a
		}
		if !ok {
			out = append(out, fmt.Sprintf("%v (%v: %s)", st.GetState(), st.GetReason(), st.GetMessage()))
		}
	}
	return out
}

// revocableWithMem waits for an offer of at least cpus revocable cpus
// (of the kind keep accepts) and returns it with an offer holding mem
// regular memory on the same agent: the same offer if it has both, else a
// second one (the master offers the two kinds apart).
func (f *ovsFW) revocableWithMem(t *testing.T, cpus, mem float64, keep func(*mesos.Resource) bool) (rev, regular *mesos.Offer) {
	t.Helper()
	rev = f.offer(t, fmt.Sprintf("an offer of %g revocable cpus", cpus), 30*time.Second, func(o *mesos.Offer) bool {
		return scalar(o, "cpus", keep) >= cpus-1e-9
	})
	if scalar(rev, "mem", isRegular) >= mem {
		return rev, rev
	}
	regular = f.offer(t, fmt.Sprintf("an offer of %g MB regular memory", mem), 30*time.Second, func(o *mesos.Offer) bool {
		return o.GetAgentId().GetValue() == rev.GetAgentId().GetValue() && scalar(o, "mem", isRegular) >= mem
	})
	return rev, regular
}

// offersOf lists distinct offers.
func offersOf(os ...*mesos.Offer) []*mesos.Offer {
	var out []*mesos.Offer
	seen := map[string]bool{}
	for _, o := range os {
		if !seen[o.GetId().GetValue()] {
			seen[o.GetId().GetValue()] = true
			out = append(out, o)
		}
	}
	return out
}

// declineAll declines every outstanding offer for refuse seconds.
func (f *ovsFW) declineAll(ctx context.Context, refuse float64) {
	f.mu.Lock()
	var ids []*mesos.OfferID
	for id, o := range f.live {
		ids = append(ids, o.GetId())
		delete(f.live, id)
	}
	f.mu.Unlock()
	if len(ids) > 0 {
		f.client.Decline(ctx, ids, scheduler.RefuseFor(refuse))
	}
}

func (f *ovsFW) launch(ctx context.Context, t *testing.T, offers []*mesos.Offer, tasks ...*mesos.TaskInfo) {
	t.Helper()
	ids := make([]*mesos.OfferID, len(offers))
	for i, o := range offers {
		ids[i] = o.GetId()
	}
	if err := f.client.Launch(ctx, ids, tasks, scheduler.RefuseFor(1)); err != nil {
		t.Fatalf("%s: launch: %v", f.name, err)
	}
}

// scalar sums the offer's resource name that keep accepts.
func scalar(o *mesos.Offer, name string, keep func(*mesos.Resource) bool) float64 {
	var v float64
	for _, r := range o.GetResources() {
		if r.GetName() == name && keep(r) {
			v += r.GetScalar().GetValue()
		}
	}
	return v
}

func isRevocable(r *mesos.Resource) bool    { return r.GetRevocable() != nil }
func isRegular(r *mesos.Resource) bool      { return r.GetRevocable() == nil }
func isThrottleable(r *mesos.Resource) bool { return r.GetRevocable().GetThrottleInfo() != nil }
func isLent(r *mesos.Resource) bool {
	return r.GetRevocable() != nil && r.GetRevocable().GetThrottleInfo() == nil
}

// reservedToRole keeps regular resources reserved to role, in either
// format (without RESERVATION_REFINEMENT offers carry Resource.role).
func reservedToRole(role string) func(*mesos.Resource) bool {
	return func(r *mesos.Resource) bool {
		if r.GetRevocable() != nil {
			return false
		}
		if rs := r.GetReservations(); len(rs) > 0 {
			return rs[len(rs)-1].GetRole() == role
		}
		return r.GetRole() == role
	}
}

// res copies from the offer the first resource name that keep accepts,
// with the scalar v.
func res(t *testing.T, o *mesos.Offer, name string, v float64, keep func(*mesos.Resource) bool) *mesos.Resource {
	t.Helper()
	for _, r := range o.GetResources() {
		if r.GetName() == name && keep(r) && r.GetScalar().GetValue() >= v-1e-9 {
			c := proto.CloneOf(r)
			c.Scalar = &mesos.Value_Scalar{Value: proto.Float64(v)}
			return c
		}
	}
	t.Fatalf("offer %s has no %g %s of the wanted kind: %v", o.GetId().GetValue(), v, name, o.GetResources())
	return nil
}

// shellTask runs script under sh, its $0 the marker (so leftovers can be
// found), bounded by `timeout`.
func shellTask(id string, agent *mesos.AgentID, marker, script string, rs ...*mesos.Resource) *mesos.TaskInfo {
	return &mesos.TaskInfo{
		Name: proto.String(id), TaskId: &mesos.TaskID{Value: proto.String(id)}, AgentId: agent, Resources: rs,
		Command: &mesos.CommandInfo{Shell: proto.Bool(false), Value: proto.String("timeout"),
			Arguments: []string{"timeout", "120", "sh", "-c", script, marker}},
	}
}

const spin = "while :; do :; done"

// noLeftovers fails the test if a process whose command line holds marker
// outlived the cluster, and kills it.
func noLeftovers(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := markedPids(marker)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, p := range pids {
				syscall.Kill(p, syscall.SIGKILL)
			}
			t.Errorf("processes %v (%s) outlived the cluster", pids, marker)
			return
		}
		time.Sleep(50 * time.Millisecond) // polling interval, bounded by the deadline
	}
}

func markedPids(marker string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(b), marker) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			s := string(st)
			if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] == 'Z' {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}

// metric reads one key of a /metrics/snapshot.
func metric(t *testing.T, url, key string) (float64, bool) {
	var snap map[string]any
	if err := getJSON(url, &snap); err != nil {
		return 0, false
	}
	v, ok := snap[key].(float64)
	return v, ok
}

// ovsMarker is a name unique to this test process and test.
func ovsMarker(t *testing.T) string {
	return fmt.Sprintf("ovs-e2e-%d-%s", os.Getpid(), t.Name())
}

// startOvsLocal starts `mezzo local` with one agent and the flags, and
// registers the leftover check (which runs after the cluster stopped).
func startOvsLocal(t *testing.T, marker string, flags ...string) *cluster {
	t.Helper()
	t.Cleanup(func() { noLeftovers(t, marker) })
	return startLocal(t, 1, flags...)
}

// A fixed estimate is offered as revocable cpus (throttle-able: estimator
// slack, not a lent reservation) to a framework with REVOCABLE_RESOURCES,
// and never to one without, though both are offered the agent's regular
// resources; the master counts the agent's revocable total.
func TestOversubscriptionRevocableOffersOnlyToCapable(t *testing.T) {
	marker := ovsMarker(t)
	c := startOvsLocal(t, marker, "--resources=cpus:2;mem:1024;disk:1000",
		"--resource_estimator=fixed", "--fixed_resource_estimator_resources=cpus:3",
		"--oversubscribed_resources_interval=200ms")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	capable := startOvsFW(ctx, t, c.addr, "capable", ovsFWOpts{revocable: true})
	plain := startOvsFW(ctx, t, c.addr, "plain", ovsFWOpts{})

	poll(t, "master/cpus_revocable_total = 3", 30*time.Second, func() bool {
		v, ok := metric(t, c.url("/metrics/snapshot"), "master/cpus_revocable_total")
		return ok && v == 3
	})
	o := capable.offer(t, "a revocable offer", 30*time.Second, func(o *mesos.Offer) bool {
		return scalar(o, "cpus", isRevocable) > 0
	})
	if got := scalar(o, "cpus", isRevocable); got != 3 {
		t.Errorf("revocable cpus offered = %g, want the fixed estimate 3", got)
	}
	if got := scalar(o, "cpus", isThrottleable); got != scalar(o, "cpus", isRevocable) {
		t.Errorf("estimator slack offered without throttle_info: %v", o.GetResources())
	}
	// The capable framework gives back what else it holds (its regular
	// offers), so that the plain one is offered the agent.
	capable.declineAll(ctx, 3600)
	// The plain framework must have been offered the agent more than once
	// after the estimate reached the master; none of it revocable.
	var seen int
	plain.wait(t, "two offers to the framework without REVOCABLE_RESOURCES", 30*time.Second, func() bool {
		seen = len(plain.all)
		for id := range plain.live { // declined at once: offers keep coming
			go plain.client.Decline(ctx, []*mesos.OfferID{{Value: proto.String(id)}}, scheduler.RefuseFor(0.1))
			delete(plain.live, id)
		}
		return seen >= 2
	})
	plain.mu.Lock()
	defer plain.mu.Unlock()
	for _, o := range plain.all {
		if r := scalar(o, "cpus", isRevocable); r > 0 {
			t.Errorf("framework without REVOCABLE_RESOURCES was offered %g revocable cpus: %v", r, o.GetResources())
		}
	}
}

// The slack estimator lends what a regular task does not use; when the
// task starts using its cpus the estimate shrinks and the master rescinds
// the outstanding revocable offer.
func TestOversubscriptionShrinkingEstimateRescinds(t *testing.T) {
	marker := ovsMarker(t)
	trigger := filepath.Join(t.TempDir(), "busy")
	c := startOvsLocal(t, marker, "--resources=cpus:2;mem:1024;disk:1000",
		"--resource_estimator=slack", "--slack_estimator_window=1secs", "--slack_estimator_margin=0.1",
		"--oversubscribed_resources_interval=200ms")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	service := startOvsFW(ctx, t, c.addr, "service", ovsFWOpts{})
	tenant := startOvsFW(ctx, t, c.addr, "tenant", ovsFWOpts{revocable: true})

	o := service.offer(t, "an offer", 30*time.Second, func(o *mesos.Offer) bool { return scalar(o, "cpus", isRegular) >= 1.5 })
	// Idle until the trigger file appears, then burn two cpus.
	service.launch(ctx, t, []*mesos.Offer{o}, shellTask("svc", o.GetAgentId(), marker,
		"while [ ! -e "+trigger+" ]; do sleep 0.05; done; ("+spin+") & "+spin,
		res(t, o, "cpus", 1.5, isRegular), res(t, o, "mem", 64, isRegular)))
	service.await(t, "svc", 30*time.Second, mesos.TaskState_TASK_RUNNING)

	// Idle, the task leaves 1.5 × 0.9 of slack (less what the estimator
	// has yet to see); the tenant holds a revocable offer of at least 1 cpu.
	held := tenant.offer(t, "a revocable offer of >= 1 cpu", 30*time.Second, func(o *mesos.Offer) bool {
		return scalar(o, "cpus", isRevocable) >= 1
	})
	poll(t, "master/cpus_revocable_total >= 1 while the task idles", 30*time.Second, func() bool {
		v, ok := metric(t, c.url("/metrics/snapshot"), "master/cpus_revocable_total")
		return ok && v >= 1
	})
	if err := os.WriteFile(trigger, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tenant.wait(t, "the held revocable offer to be rescinded", 30*time.Second, func() bool {
		return tenant.rescinded[held.GetId().GetValue()]
	})
	poll(t, "master/cpus_revocable_total < 1", 30*time.Second, func() bool {
		v, ok := metric(t, c.url("/metrics/snapshot"), "master/cpus_revocable_total")
		return ok && v < 1
	})
	if other := service.otherStates("svc", mesos.TaskState_TASK_STARTING, mesos.TaskState_TASK_RUNNING); len(other) > 0 {
		t.Errorf("the regular task was reported %v", other)
	}
}

// The load controller with a threshold every machine exceeds evicts the
// revocable task (TASK_GONE for a partition-aware framework, reason
// REASON_CONTAINER_PREEMPTED) and leaves the regular task running.
func TestOversubscriptionLoadControllerEvictsOnlyRevocable(t *testing.T) {
	marker := ovsMarker(t)
	c := startOvsLocal(t, marker, "--resources=cpus:2;mem:1024;disk:1000",
		"--resource_estimator=fixed", "--fixed_resource_estimator_resources=cpus:2",
		"--oversubscribed_resources_interval=200ms",
		"--qos_controller=load", "--load_qos_controller_threshold_5min=0.000001")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fw := startOvsFW(ctx, t, c.addr, "mixed", ovsFWOpts{revocable: true, partitionAware: true})

	reg := fw.offer(t, "a regular offer", 30*time.Second, func(o *mesos.Offer) bool { return scalar(o, "cpus", isRegular) >= 1 })
	fw.launch(ctx, t, []*mesos.Offer{reg}, shellTask("regular", reg.GetAgentId(), marker, "sleep 100",
		res(t, reg, "cpus", 1, isRegular), res(t, reg, "mem", 64, isRegular)))
	fw.await(t, "regular", 30*time.Second, mesos.TaskState_TASK_RUNNING)
	rev, mem := fw.revocableWithMem(t, 1, 64, isRevocable)
	fw.launch(ctx, t, offersOf(rev, mem), shellTask("best-effort", rev.GetAgentId(), marker, spin,
		res(t, rev, "cpus", 1, isRevocable), res(t, mem, "mem", 64, isRegular)))

	st := fw.await(t, "best-effort", 30*time.Second, mesos.TaskState_TASK_GONE, mesos.TaskState_TASK_LOST)
	if st.GetState() != mesos.TaskState_TASK_GONE || st.GetReason() != mesos.TaskStatus_REASON_CONTAINER_PREEMPTED {
		t.Errorf("revocable task ended %v (%v), want TASK_GONE (REASON_CONTAINER_PREEMPTED) for a partition-aware framework", st.GetState(), st.GetReason())
	}
	if !strings.Contains(st.GetMessage(), "load") {
		t.Errorf("preemption message %q does not name the load controller", st.GetMessage())
	}
	poll(t, "slave/executors_preempted >= 1", 10*time.Second, func() bool {
		_, addr := onlyAgent(t, c)
		v, ok := metric(t, "http://"+addr+"/metrics/snapshot", "slave/executors_preempted")
		return ok && v >= 1
	})
	if other := fw.otherStates("regular", mesos.TaskState_TASK_STARTING, mesos.TaskState_TASK_RUNNING); len(other) > 0 {
		t.Errorf("the regular task was reported %v", other)
	}
}

// The interference controller (cgroups, CFS quota): a regular task
// throttled by its quota counts its whole allocation as demand; holding
// all the agent's cpus, any CPU the revocable tenant uses beside it is
// demand the agent cannot meet, and the tenant is evicted (TASK_LOST,
// reason REASON_CONTAINER_PREEMPTED) while the regular task keeps
// running. Sizes are small so that the tenant alone fits and the regular
// task (three spinning shells) reaches its quota even on a busy machine.
func TestOversubscriptionInterferenceEvictsOnlyRevocable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the interference controller reads CFS throttling: needs root and cgroups")
	}
	if _, err := os.Stat("/sys/fs/cgroup/cpu/cgroup.procs"); err != nil {
		t.Skip("needs the cgroups v1 cpu controller")
	}
	marker := ovsMarker(t)
	trigger := filepath.Join(t.TempDir(), "busy")
	// After the cluster stopped (cleanups run last-registered first): the
	// agent leaves its --cgroups_root (as Mesos does); remove it, and
	// fail if a process is still in it.
	t.Cleanup(func() {
		// Deepest first; mezzo local's agent leaves the cgroups of the
		// containers it killed on exit (empty; noted, not failed).
		dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", marker, "*"))
		for _, d := range dirs {
			if fi, err := os.Stat(d); err == nil && fi.IsDir() {
				if err := os.Remove(d); err != nil {
					t.Errorf("removing the test's cgroup %s: %v", d, err)
				} else {
					t.Logf("removed container cgroup %s left after the cluster stopped", d)
				}
			}
		}
		dirs, _ = filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", marker))
		for _, d := range dirs {
			if err := os.Remove(d); err != nil {
				t.Errorf("removing the test's cgroup %s: %v", d, err)
			}
		}
	})
	c := startOvsLocal(t, marker, "--resources=cpus:0.3;mem:1024;disk:1000",
		"--isolation=cgroups/cpu,cgroups/mem", "--cgroups_enable_cfs", "--cgroups_root="+marker,
		"--resource_estimator=fixed", "--fixed_resource_estimator_resources=cpus:0.1",
		"--oversubscribed_resources_interval=200ms", "--qos_controller=interference")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	service := startOvsFW(ctx, t, c.addr, "service", ovsFWOpts{})
	tenant := startOvsFW(ctx, t, c.addr, "tenant", ovsFWOpts{revocable: true})

	o := service.offer(t, "an offer", 30*time.Second, func(o *mesos.Offer) bool { return scalar(o, "cpus", isRegular) >= 0.3 })
	service.launch(ctx, t, []*mesos.Offer{o}, shellTask("svc", o.GetAgentId(), marker,
		"while [ ! -e "+trigger+" ]; do sleep 0.05; done; ("+spin+") & ("+spin+") & "+spin,
		res(t, o, "cpus", 0.3, isRegular), res(t, o, "mem", 64, isRegular)))
	service.await(t, "svc", 30*time.Second, mesos.TaskState_TASK_RUNNING)

	rev, mem := tenant.revocableWithMem(t, 0.1, 64, isRevocable)
	tenant.launch(ctx, t, offersOf(rev, mem), shellTask("tenant", rev.GetAgentId(), marker, spin,
		res(t, rev, "cpus", 0.1, isRevocable), res(t, mem, "mem", 64, isRegular)))
	tenant.await(t, "tenant", 30*time.Second, mesos.TaskState_TASK_RUNNING)
	// The tenant alone fits (0.1 of 0.3 cpus): wait for the controller to
	// have looked at it a few times without evicting it.
	_, agentAddr := onlyAgent(t, c)
	tenantAlone := time.Now()
	poll(t, "the tenant to run 1 s alone", 10*time.Second, func() bool { return time.Since(tenantAlone) >= time.Second })
	if st, _ := tenant.state("tenant"); st.GetState() != mesos.TaskState_TASK_RUNNING {
		t.Fatalf("the tenant was evicted while it fit: %v %v %s", st.GetState(), st.GetReason(), st.GetMessage())
	}

	busy := time.Now()
	if err := os.WriteFile(trigger, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	st := tenant.await(t, "tenant", 30*time.Second, mesos.TaskState_TASK_LOST, mesos.TaskState_TASK_GONE)
	if st.GetState() != mesos.TaskState_TASK_LOST || st.GetReason() != mesos.TaskStatus_REASON_CONTAINER_PREEMPTED {
		t.Errorf("tenant ended %v (%v), want TASK_LOST (REASON_CONTAINER_PREEMPTED)", st.GetState(), st.GetReason())
	}
	if !strings.Contains(st.GetMessage(), "interference") {
		t.Errorf("preemption message %q does not name the interference controller", st.GetMessage())
	}
	t.Logf("tenant evicted %v after the regular task got busy", time.Since(busy).Round(time.Millisecond))
	if v, ok := metric(t, "http://"+agentAddr+"/metrics/snapshot", "slave/executors_preempted"); !ok || v != 1 {
		t.Errorf("slave/executors_preempted = %v (%v), want 1", v, ok)
	}
	if other := service.otherStates("svc", mesos.TaskState_TASK_STARTING, mesos.TaskState_TASK_RUNNING); len(other) > 0 {
		t.Errorf("the regular task was reported %v", other)
	}
}

// With --lend_idle_reservations the master lends a reservation nobody
// uses to a tenant (revocable, without throttle_info). When the lender
// launches on its reservation the agent evicts just enough tenants: of
// two tenant tasks of 1 cpu on a 2-cpu reservation, a 1-cpu launch
// evicts exactly one; the lender's task runs.
func TestOversubscriptionLenderReclaimsReservation(t *testing.T) {
	marker := ovsMarker(t)
	c := startOvsLocal(t, marker, "--resources=cpus(lender):2;mem(lender):512;cpus:0.5;mem:1024;disk:1000",
		"--lend_idle_reservations")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lender := startOvsFW(ctx, t, c.addr, "lender", ovsFWOpts{role: "lender"})
	tenant := startOvsFW(ctx, t, c.addr, "tenant", ovsFWOpts{role: "tenant", revocable: true})

	// The lender declines its reservation: reserved and unallocated, it
	// is lent.
	lo := lender.offer(t, "the lender's reservation", 30*time.Second, func(o *mesos.Offer) bool {
		return scalar(o, "cpus", reservedToRole("lender")) >= 2
	})
	if err := lender.client.Decline(ctx, []*mesos.OfferID{lo.GetId()}, scheduler.RefuseFor(3600)); err != nil {
		t.Fatal(err)
	}
	rev, mem := tenant.revocableWithMem(t, 2, 128, isLent)
	if scalar(rev, "cpus", isThrottleable) > 0 {
		t.Errorf("lent reservation offered with throttle_info: %v", rev.GetResources())
	}
	tenant.launch(ctx, t, offersOf(rev, mem),
		shellTask("tenant-1", rev.GetAgentId(), marker, "sleep 100", res(t, rev, "cpus", 1, isLent), res(t, mem, "mem", 64, isRegular)),
		shellTask("tenant-2", rev.GetAgentId(), marker, "sleep 100", res(t, rev, "cpus", 1, isLent), res(t, mem, "mem", 64, isRegular)))
	tenant.await(t, "tenant-1", 30*time.Second, mesos.TaskState_TASK_RUNNING)
	tenant.await(t, "tenant-2", 30*time.Second, mesos.TaskState_TASK_RUNNING)

	// The lender wants 1 cpu of its reservation back.
	if err := lender.client.Revive(ctx, "lender"); err != nil {
		t.Fatal(err)
	}
	lo = lender.offer(t, "the lender's reservation again", 30*time.Second, func(o *mesos.Offer) bool {
		return scalar(o, "cpus", reservedToRole("lender")) >= 1
	})
	lender.launch(ctx, t, []*mesos.Offer{lo}, shellTask("owner", lo.GetAgentId(), marker, "sleep 100",
		res(t, lo, "cpus", 1, reservedToRole("lender")), res(t, lo, "mem", 64, reservedToRole("lender"))))
	lender.await(t, "owner", 30*time.Second, mesos.TaskState_TASK_RUNNING)

	var evicted, running int
	tenant.wait(t, "exactly one tenant evicted", 30*time.Second, func() bool {
		evicted, running = 0, 0
		for _, id := range []string{"tenant-1", "tenant-2"} {
			us := tenant.updates[id]
			switch us[len(us)-1].GetState() {
			case mesos.TaskState_TASK_LOST, mesos.TaskState_TASK_GONE, mesos.TaskState_TASK_KILLED:
				evicted++
			case mesos.TaskState_TASK_RUNNING:
				running++
			}
		}
		return evicted >= 1
	})
	// No over-eviction: the other tenant is still running once the
	// owner's task runs and the agent's accounting settled.
	_, agentAddr := onlyAgent(t, c)
	poll(t, "the agent to report the lender's task", 10*time.Second, func() bool {
		var st struct {
			Frameworks []struct {
				Executors []struct {
					Tasks []struct{ ID string } `json:"tasks"`
				} `json:"executors"`
			} `json:"frameworks"`
		}
		if getJSON("http://"+agentAddr+"/state", &st) != nil {
			return false
		}
		for _, f := range st.Frameworks {
			for _, e := range f.Executors {
				for _, tk := range e.Tasks {
					if tk.ID == "owner" {
						return true
					}
				}
			}
		}
		return false
	})
	tenant.mu.Lock()
	evicted, running = 0, 0
	for _, id := range []string{"tenant-1", "tenant-2"} {
		us := tenant.updates[id]
		switch us[len(us)-1].GetState() {
		case mesos.TaskState_TASK_RUNNING:
			running++
		default:
			evicted++
		}
	}
	tenant.mu.Unlock()
	if evicted != 1 || running != 1 {
		t.Errorf("after the lender's 1-cpu launch %d tenants were evicted and %d run, want 1 and 1", evicted, running)
	}
	if other := lender.otherStates("owner", mesos.TaskState_TASK_STARTING, mesos.TaskState_TASK_RUNNING); len(other) > 0 {
		t.Errorf("the lender's task was reported %v", other)
	}
}

// An agent restarted (SIGKILL, same work dir) with a different fixed
// estimate recovers the revocable task of a checkpointing framework (no
// terminal update, still RUNNING in the master) and recomputes its
// estimate: the agent reports the new total and the master offers the new
// estimate less what the recovered task holds.
func TestOversubscriptionSurvivesAgentRestart(t *testing.T) {
	marker := ovsMarker(t)
	t.Cleanup(func() { noLeftovers(t, marker) })
	dir := t.TempDir()
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	startProc(t, "master", "master", "--ip=127.0.0.1", "--port="+strconv.Itoa(port),
		"--work_dir="+filepath.Join(dir, "master"), "--allocation_interval=100ms")
	// The same port after the restart: the agent's checkpointed info
	// must match its flags.
	agentPort := strconv.Itoa(freePort(t))
	agentAddr := "127.0.0.1:" + agentPort
	agentArgs := func(estimate string) []string {
		return []string{"agent", "--master=" + addr, "--ip=127.0.0.1", "--port=" + agentPort,
			"--hostname=ovs", "--work_dir=" + filepath.Join(dir, "agent"), "--resources=cpus:2;mem:1024;disk:1000",
			"--resource_estimator=fixed", "--fixed_resource_estimator_resources=cpus:" + estimate,
			"--oversubscribed_resources_interval=200ms"}
	}
	agent := startProc(t, "agent", agentArgs("3")...)
	agentTotal := func(want float64) func() bool {
		return func() bool {
			v, ok := metric(t, "http://"+agentAddr+"/metrics/snapshot", "slave/cpus_revocable_total")
			return ok && v == want
		}
	}
	poll(t, "slave/cpus_revocable_total = 3", 30*time.Second, agentTotal(3))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fw := startOvsFW(ctx, t, addr, "checkpointing", ovsFWOpts{revocable: true, checkpoint: true})
	rev, mem := fw.revocableWithMem(t, 3, 64, isRevocable)
	fw.launch(ctx, t, offersOf(rev, mem), shellTask("best-effort", rev.GetAgentId(), marker, "sleep 100",
		res(t, rev, "cpus", 1, isRevocable), res(t, mem, "mem", 64, isRegular)))
	fw.await(t, "best-effort", 30*time.Second, mesos.TaskState_TASK_RUNNING)
	// The task outlives the agent process (that is the point): kill it
	// through the master before the cluster goes.
	defer func() {
		fw.client.Kill(context.Background(), &mesos.TaskID{Value: proto.String("best-effort")}, rev.GetAgentId())
		fw.await(t, "best-effort", 30*time.Second, mesos.TaskState_TASK_KILLED, mesos.TaskState_TASK_LOST, mesos.TaskState_TASK_GONE)
	}()
	before := fw.offer(t, "the rest of the estimate offered", 30*time.Second, func(o *mesos.Offer) bool { return scalar(o, "cpus", isRevocable) > 0 })
	if got := scalar(before, "cpus", isRevocable); got != 2 {
		t.Errorf("before the restart %g revocable cpus were offered beside the task, want 2 (3 less its 1)", got)
	}
	fw.client.Decline(ctx, []*mesos.OfferID{before.GetId()}, scheduler.RefuseFor(0.1))

	syscall.Kill(agent.cmd.Process.Pid, syscall.SIGKILL)
	<-agent.done
	startProc(t, "agent-restarted", agentArgs("4")...)
	poll(t, "slave/cpus_revocable_total = 4 after the restart", 30*time.Second, agentTotal(4))
	c := &haCluster{t: t, addrs: []string{addr}}
	poll(t, "the master to list the revocable task running on the re-registered agent", 30*time.Second, func() bool {
		st, err := c.state(0)
		if err != nil || len(st.Slaves) != 1 || !st.Slaves[0].Active {
			return false
		}
		for _, f := range st.Frameworks {
			for _, tk := range f.Tasks {
				if tk.ID == "best-effort" && tk.State == "TASK_RUNNING" {
					return true
				}
			}
		}
		return false
	})
	// The recovered task still holds its revocable cpu: what is offered
	// now is the new estimate less it.
	// Offers made before the new estimate arrived may still come: wait
	// for the first with the new estimate's 3 and 4 and 2 from before.
	var offered []float64
	fw.wait(t, "3 revocable cpus offered after the restart (the new estimate 4 less the recovered task's 1)", 30*time.Second, func() bool {
		for id, o := range fw.live {
			v := scalar(o, "cpus", isRevocable)
			if v == 0 {
				continue
			}
			offered = append(offered, v)
			delete(fw.live, id)
			if v == 3 {
				return true
			}
			go fw.client.Decline(ctx, []*mesos.OfferID{o.GetId()}, scheduler.RefuseFor(0.1))
		}
		return false
	})
	// Never more than the estimate less what the recovered task holds
	// (less is safe: the agent's estimate reaches the master after it
	// re-registered).
	for _, v := range offered {
		if v > 3 {
			t.Errorf("revocable cpus offered after the restart: %v; more than 3 counts the recovered task's cpu as free", offered)
			break
		}
	}
	t.Logf("revocable cpus offered after the restart: %v", offered)
	if other := fw.otherStates("best-effort", mesos.TaskState_TASK_STARTING, mesos.TaskState_TASK_RUNNING); len(other) > 0 {
		t.Errorf("the recovered revocable task was reported %v", other)
	}
}
