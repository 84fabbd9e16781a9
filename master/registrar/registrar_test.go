package registrar

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/maintenancepb"
	"mezzo/api/mesos"
	"mezzo/api/quotapb"
)

var t0 = time.Unix(1700000000, 0)

// TestBatching: while one write is in flight, N concurrent Applies are
// queued and go out together as exactly one more write.
func TestBatching(t *testing.T) {
	r, st, m := newRecovered(t, Config{})
	base, _ := st.count()

	const n = 50
	st.hold(t)
	errs := make(chan error, n)
	go func() { errs <- r.Apply(ctx(t), Admit(agent("first"), "")) }()
	<-st.started // the first write is in flight
	for _, id := range ids(n-1, "a") {
		go func() { errs <- r.Apply(ctx(t), Admit(agent(id), "")) }()
	}
	eventually(t, "49 queued operations", func() bool { return r.Stats().Queued == n-1 })
	st.proceed <- nil
	<-st.started // the second write, with everything queued
	st.proceed <- nil
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	got, batches := st.count()
	if got-base != 2 {
		t.Fatalf("writes = %d, want 2 (batches %v)", got-base, batches[base:])
	}
	if want := []int{1, n - 1}; batches[base] != want[0] || batches[base+1] != want[1] {
		t.Fatalf("batch sizes = %v, want %v", batches[base:], want)
	}
	if a, _, _ := m.Counts(); a != n {
		t.Fatalf("admitted = %d, want %d", a, n)
	}
}

// TestMaxBatch: a long queue is split into writes of at most MaxBatch.
func TestMaxBatch(t *testing.T) {
	r, st, _ := newRecovered(t, Config{MaxBatch: 10})
	base, _ := st.count()
	var wg sync.WaitGroup
	for _, id := range ids(35, "b") {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Apply(ctx(t), Admit(agent(id), "")); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	_, batches := st.count()
	for _, b := range batches[base:] {
		if b > 10 {
			t.Fatalf("batch of %d > MaxBatch 10: %v", b, batches[base:])
		}
	}
}

// TestWriteFailure: a failed write fails every operation in its batch,
// leaves the registry unchanged, and the registrar refuses writes until it
// recovers again.
func TestWriteFailure(t *testing.T) {
	r, st, m := newRecovered(t, Config{})
	if err := r.Apply(ctx(t), Admit(agent("keep"), "")); err != nil {
		t.Fatal(err)
	}
	before := protoOf(t, m.Registry())

	st.hold(t)
	errs := make(chan error, 10)
	go func() { errs <- r.Apply(ctx(t), Admit(agent("first"), "")) }()
	<-st.started
	for _, id := range ids(9, "f") {
		go func() { errs <- r.Apply(ctx(t), Admit(agent(id), "")) }()
	}
	eventually(t, "9 queued", func() bool { return r.Stats().Queued == 9 })
	boom := errors.New("disk on fire")
	st.proceed <- boom
	failed, refused := 0, 0
	for range 10 {
		switch err := <-errs; {
		case errors.Is(err, boom):
			failed++
		case errors.Is(err, ErrNotRecovered):
			refused++
		default:
			t.Fatalf("Apply = %v, want the write's error or ErrNotRecovered", err)
		}
	}
	if failed != 1 || refused != 9 {
		t.Fatalf("failed %d (want 1: the batch in flight), refused %d (want 9: the queue)", failed, refused)
	}
	if after := protoOf(t, m.Registry()); !proto.Equal(before, after) {
		t.Fatalf("registry changed by a failed write:\nbefore %v\nafter  %v", before, after)
	}
	if s := r.Stats(); s.Recovered || s.FailedWrites != 1 {
		t.Fatalf("stats after failure = %+v", s)
	}

	recovered := make(chan error, 1)
	go func() { _, err := r.Recover(ctx(t), testMaster()); recovered <- err }()
	<-st.started
	st.proceed <- nil
	if err := <-recovered; err != nil {
		t.Fatal(err)
	}
	go func() { errs <- r.Apply(ctx(t), Admit(agent("first"), "")) }()
	<-st.started
	st.proceed <- nil
	if err := <-errs; err != nil {
		t.Fatalf("Apply after recovery: %v", err)
	}
}

// TestFailedBatchOfMany: every operation of a failing batch gets the error.
func TestFailedBatchOfMany(t *testing.T) {
	r, st, m := newRecovered(t, Config{})
	st.hold(t)
	errs := make(chan error, 21)
	go func() { errs <- r.Apply(ctx(t), Admit(agent("head"), "")) }()
	<-st.started
	for _, id := range ids(20, "m") {
		go func() { errs <- r.Apply(ctx(t), Admit(agent(id), "")) }()
	}
	eventually(t, "20 queued", func() bool { return r.Stats().Queued == 20 })
	// The head succeeds; the second write (20 operations) fails.
	st.proceed <- nil
	if err := <-errs; err != nil {
		t.Fatalf("head: %v", err)
	}
	<-st.started
	boom := errors.New("boom")
	st.proceed <- boom
	for range 20 {
		if err := <-errs; !errors.Is(err, boom) {
			t.Fatalf("Apply = %v, want %v", err, boom)
		}
	}
	if a, _, _ := m.Counts(); a != 1 {
		t.Fatalf("admitted = %d, want 1", a)
	}
}

func TestNotRecovered(t *testing.T) {
	m := NewMachine()
	r, err := New(Config{Store: NewMemoryStore(m), Machine: m})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Apply(ctx(t), Admit(agent("a"), "")); !errors.Is(err, ErrNotRecovered) {
		t.Fatalf("Apply before Recover = %v, want ErrNotRecovered", err)
	}
}

func TestStrict(t *testing.T) {
	m := NewMachine()
	r, _ := New(Config{Store: NewMemoryStore(m), Machine: m, Strict: true})
	if _, err := r.Recover(ctx(t), testMaster()); !errors.Is(err, ErrEmptyRegistry) {
		t.Fatalf("strict Recover of an empty registry = %v, want ErrEmptyRegistry", err)
	}
	r.Close()

	// Non-strict initializes it; strict then accepts it.
	r, _ = New(Config{Store: NewMemoryStore(m), Machine: m})
	reg, err := r.Recover(ctx(t), testMaster())
	if err != nil {
		t.Fatal(err)
	}
	if reg.Version() != 1 || reg.Master().GetId() != "master-1" {
		t.Fatalf("registry after first recovery = %v", reg)
	}
	r.Close()
	r, _ = New(Config{Store: NewMemoryStore(m), Machine: m, Strict: true})
	defer r.Close()
	next := testMaster()
	next.Id = proto.String("master-2")
	reg, err = r.Recover(ctx(t), next)
	if err != nil {
		t.Fatalf("strict Recover of an initialized registry: %v", err)
	}
	if reg.Version() != 2 || reg.Master().GetId() != "master-2" {
		t.Fatalf("registry after second recovery = %v", reg)
	}
}

func TestClose(t *testing.T) {
	r, st, _ := newRecovered(t, Config{})
	st.hold(t)
	errs := make(chan error, 2)
	go func() { errs <- r.Apply(ctx(t), Admit(agent("a"), "")) }()
	<-st.started
	go func() { errs <- r.Apply(ctx(t), Admit(agent("b"), "")) }()
	eventually(t, "queued", func() bool { return r.Stats().Queued == 1 })
	closed := make(chan struct{})
	go func() { r.Close(); close(closed) }()
	eventually(t, "closing", func() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.closed })
	st.proceed <- nil
	<-closed
	got := []error{<-errs, <-errs}
	if !(got[0] == nil && errors.Is(got[1], ErrClosed)) && !(got[1] == nil && errors.Is(got[0], ErrClosed)) {
		t.Fatalf("results = %v, want the in-flight write to finish and the queued op to fail with ErrClosed", got)
	}
	if err := r.Apply(ctx(t), Admit(agent("c"), "")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Apply after Close = %v", err)
	}
}

// TestPartitionScenario is registrar-design's partition: an agent is
// partitioned away, marked unreachable, then removed; a new master fails
// over (recovering the registry from a snapshot); the partition heals and
// the agent tries to come back under its old ID: it is refused, every way.
func TestPartitionScenario(t *testing.T) {
	r, _, m := newRecovered(t, Config{})
	c := ctx(t)
	for _, op := range []Operation{Admit(agent("s1"), ""), Admit(agent("s2"), ""), MarkUnreachable("s1", t0), Remove("s1", t0.Add(time.Minute))} {
		if err := r.Apply(c, op); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
	}
	// Failover: a new master's machine restored from a snapshot of the old.
	m2 := restoredMachine(t, m)
	r2, _ := New(Config{Store: NewMemoryStore(m2), Machine: m2, Strict: true})
	defer r2.Close()
	next := testMaster()
	next.Id = proto.String("master-2")
	reg, err := r2.Recover(c, next)
	if err != nil {
		t.Fatal(err)
	}
	if g := reg.Gone(); len(g) != 1 || g[0].ID != "s1" || reg.Status("s1") != AgentGone {
		t.Fatalf("recovered gone list = %v", g)
	}
	for _, op := range []Operation{Readmit(agent("s1"), ""), MarkReachable(agent("s1"), ""), Admit(agent("s1"), ""), MarkUnreachable("s1", t0)} {
		err := r2.Apply(c, op)
		if !errors.Is(err, ErrGone) {
			t.Fatalf("%s after removal = %v, want ErrGone", op, err)
		}
		if want := "must register anew"; !contains(err.Error(), want) {
			t.Fatalf("%s error %q does not say %q", op, err, want)
		}
	}
	// The surviving agent re-registers fine.
	if err := r2.Apply(c, Readmit(agent("s2"), "")); err != nil {
		t.Fatal(err)
	}
}

// TestValidation: each operation against a registry in a known state.
func TestValidation(t *testing.T) {
	mid := func(h string) *mesos.MachineID { return &mesos.MachineID{Hostname: proto.String(h)} }
	window := func(hs ...string) *maintenancepb.Window {
		w := &maintenancepb.Window{Unavailability: &mesos.Unavailability{Start: &mesos.TimeInfo{Nanoseconds: proto.Int64(1)}}}
		for _, h := range hs {
			w.MachineIds = append(w.MachineIds, mid(h))
		}
		return w
	}
	scalar := func(v float64) *mesos.Value_Scalar { return &mesos.Value_Scalar{Value: proto.Float64(v)} }
	// Setup: admitted a, unreachable u, gone g; m1 scheduled, m2 down.
	setup := []Operation{
		Admit(agent("a"), ""), Admit(agent("u"), ""), Admit(agent("g"), ""),
		MarkUnreachable("u", t0), Remove("g", t0),
		UpdateSchedule(&maintenancepb.Schedule{Windows: []*maintenancepb.Window{window("m1", "m2")}}),
		StartMaintenance([]*mesos.MachineID{mid("m2")}),
	}
	noID := agent("")
	noHost := agent("h")
	noHost.Hostname = nil
	cases := []struct {
		name string
		op   Operation
		want error // nil: applies
	}{
		{"admit new", Admit(agent("n"), ""), nil},
		{"admit admitted", Admit(agent("a"), ""), ErrAlreadyAdmitted},
		{"admit unreachable", Admit(agent("u"), ""), ErrAlreadyAdmitted},
		{"admit gone", Admit(agent("g"), ""), ErrGone},
		{"admit without id", Admit(noID, ""), ErrInvalid},
		{"admit without hostname", Admit(noHost, ""), ErrInvalid},
		{"admit nil", Admit(nil, ""), ErrInvalid},
		{"readmit admitted", Readmit(agent("a"), ""), nil},
		{"readmit unknown", Readmit(agent("n"), ""), nil},
		{"readmit unreachable", Readmit(agent("u"), ""), nil},
		{"readmit gone", Readmit(agent("g"), ""), ErrGone},
		{"unreachable admitted", MarkUnreachable("a", t0), nil},
		{"unreachable unreachable", MarkUnreachable("u", t0), ErrAlreadyUnreachable},
		{"unreachable unknown", MarkUnreachable("n", t0), ErrUnknownAgent},
		{"unreachable gone", MarkUnreachable("g", t0), ErrGone},
		{"unreachable no id", MarkUnreachable("", t0), ErrInvalid},
		{"reachable unreachable", MarkReachable(agent("u"), ""), nil},
		{"reachable gone", MarkReachable(agent("g"), ""), ErrGone},
		{"remove admitted", Remove("a", t0), nil},
		{"remove unreachable", Remove("u", t0), nil},
		{"remove gone again", Remove("g", t0), nil},
		{"remove unknown", Remove("n", t0), ErrUnknownAgent},
		{"prune", Prune([]string{"u", "zz"}, []string{"g"}), nil},
		{"weights", UpdateWeights([]*mesos.WeightInfo{{Role: proto.String("web"), Weight: proto.Float64(2)}}), nil},
		{"weights zero", UpdateWeights([]*mesos.WeightInfo{{Role: proto.String("web"), Weight: proto.Float64(0)}}), ErrInvalid},
		{"weights no role", UpdateWeights([]*mesos.WeightInfo{{Weight: proto.Float64(2)}}), ErrInvalid},
		{"quota", UpdateQuota([]*quotapb.QuotaConfig{{Role: proto.String("web"), Guarantees: map[string]*mesos.Value_Scalar{"cpus": scalar(2)}}}), nil},
		{"quota negative", UpdateQuota([]*quotapb.QuotaConfig{{Role: proto.String("web"), Limits: map[string]*mesos.Value_Scalar{"cpus": scalar(-1)}}}), ErrInvalid},
		{"quota no role", UpdateQuota([]*quotapb.QuotaConfig{{}}), ErrInvalid},
		{"schedule keeps down", UpdateSchedule(&maintenancepb.Schedule{Windows: []*maintenancepb.Window{window("m2", "m3")}}), nil},
		{"schedule drops down", UpdateSchedule(&maintenancepb.Schedule{Windows: []*maintenancepb.Window{window("m1")}}), ErrMaintenance},
		{"schedule duplicate", UpdateSchedule(&maintenancepb.Schedule{Windows: []*maintenancepb.Window{window("m2"), window("m2")}}), ErrInvalid},
		{"schedule empty machine", UpdateSchedule(&maintenancepb.Schedule{Windows: []*maintenancepb.Window{{MachineIds: []*mesos.MachineID{{}}, Unavailability: window().Unavailability}}}), ErrInvalid},
		{"start scheduled", StartMaintenance([]*mesos.MachineID{mid("M1")}), nil},
		{"start unscheduled", StartMaintenance([]*mesos.MachineID{mid("m9")}), ErrMaintenance},
		{"start down", StartMaintenance([]*mesos.MachineID{mid("m2")}), ErrMaintenance},
		{"start none", StartMaintenance(nil), ErrInvalid},
		{"stop down", StopMaintenance([]*mesos.MachineID{mid("m2")}), nil},
		{"stop up", StopMaintenance([]*mesos.MachineID{mid("m1")}), ErrMaintenance},
		{"set master", SetMaster(testMaster()), nil},
		{"set master without id", SetMaster(&mesos.MasterInfo{}), ErrInvalid},
		{"zero operation", Operation{}, ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, _, m := newRecovered(t, Config{})
			for _, op := range setup {
				if err := r.Apply(ctx(t), op); err != nil {
					t.Fatalf("setup %s: %v", op, err)
				}
			}
			before := protoOf(t, m.Registry())
			err := r.Apply(ctx(t), tc.op)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("%s = %v, want success", tc.op, err)
				}
				if m.Skipped() != 0 {
					t.Fatalf("machine skipped an operation the registrar accepted")
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("%s = %v, want %v", tc.op, err, tc.want)
			}
			if after := protoOf(t, m.Registry()); !proto.Equal(before, after) {
				t.Fatalf("rejected operation changed the registry")
			}
		})
	}
}

// TestStopMaintenanceDropsFromSchedule checks the maintenance bookkeeping.
func TestStopMaintenanceDropsFromSchedule(t *testing.T) {
	r, _, m := newRecovered(t, Config{})
	mid := &mesos.MachineID{Hostname: proto.String("m1"), Ip: proto.String("10.0.0.1")}
	w := &maintenancepb.Window{MachineIds: []*mesos.MachineID{mid}, Unavailability: &mesos.Unavailability{Start: &mesos.TimeInfo{Nanoseconds: proto.Int64(5)}}}
	for _, op := range []Operation{UpdateSchedule(&maintenancepb.Schedule{Windows: []*maintenancepb.Window{w}}), StartMaintenance([]*mesos.MachineID{mid})} {
		if err := r.Apply(ctx(t), op); err != nil {
			t.Fatal(err)
		}
	}
	if got := m.Registry().DownMachines(); len(got) != 1 {
		t.Fatalf("down machines = %v", got)
	}
	if err := r.Apply(ctx(t), StopMaintenance([]*mesos.MachineID{mid})); err != nil {
		t.Fatal(err)
	}
	reg := m.Registry()
	if len(reg.DownMachines()) != 0 || len(reg.Schedule().GetWindows()) != 0 {
		t.Fatalf("after stop: down %v, schedule %v", reg.DownMachines(), reg.Schedule())
	}
}

// TestSameBatchInteractions: operations in one batch see the ones before
// them: a duplicate Admit in the same batch is refused, Admit then
// MarkUnreachable in the same batch applies.
func TestSameBatchInteractions(t *testing.T) {
	r, st, m := newRecovered(t, Config{})
	st.hold(t)
	errs := make(chan error, 1)
	go func() { errs <- r.Apply(ctx(t), Admit(agent("head"), "")) }()
	<-st.started
	results := make([]chan error, 3)
	for i, op := range []Operation{Admit(agent("x"), ""), Admit(agent("x"), ""), MarkUnreachable("x", t0)} {
		results[i] = make(chan error, 1)
		r.Submit(op, func(err error) { results[i] <- err })
		eventually(t, "queued in order", func() bool { return r.Stats().Queued == i+1 })
	}
	st.proceed <- nil
	<-st.started
	st.proceed <- nil
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if err := <-results[0]; err != nil {
		t.Fatalf("first admit: %v", err)
	}
	if err := <-results[1]; !errors.Is(err, ErrAlreadyAdmitted) {
		t.Fatalf("duplicate admit in the same batch = %v", err)
	}
	if err := <-results[2]; err != nil {
		t.Fatalf("mark unreachable after admit in the same batch: %v", err)
	}
	if a, u, _ := m.Counts(); a != 1 || u != 1 {
		t.Fatalf("admitted %d unreachable %d, want 1 and 1", a, u)
	}
}

func TestApplyContext(t *testing.T) {
	r, st, _ := newRecovered(t, Config{})
	st.hold(t)
	c, cancel := context.WithCancel(context.Background())
	go func() { <-st.started; cancel() }()
	if err := r.Apply(c, Admit(agent("a"), "")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Apply with a canceled context = %v", err)
	}
}

// TestUnchangedReadmit: every agent re-registers after a failover; a
// re-admission that changes nothing completes without a write, while one
// with new info, or one after an operation in the same batch that touched
// the agent, is written.
func TestUnchangedReadmit(t *testing.T) {
	r, st, m := newRecovered(t, Config{})
	c := ctx(t)
	if err := r.Apply(c, Admit(agent("s1"), "")); err != nil {
		t.Fatal(err)
	}
	before, _ := st.count()
	if err := r.Apply(c, Readmit(agent("s1"), "")); err != nil {
		t.Fatal(err)
	}
	if n, _ := st.count(); n != before {
		t.Fatalf("an unchanged readmit wrote %d entries", n-before)
	}
	if s := r.Stats(); s.Unchanged != 1 {
		t.Fatalf("Unchanged = %d, want 1", s.Unchanged)
	}

	changed := agent("s1")
	changed.Hostname = proto.String("renamed")
	if err := r.Apply(c, Readmit(changed, "")); err != nil {
		t.Fatal(err)
	}
	if n, _ := st.count(); n != before+1 {
		t.Fatalf("a changed readmit wrote %d entries, want 1", n-before)
	}
	if got, err := m.Registry().Agent("s1"); err != nil || got.GetHostname() != "renamed" {
		t.Fatalf("registry holds %v (%v) after a changed readmit", got, err)
	}

	// In one batch: marked unreachable, then readmitted with the info the
	// registry holds. The readmit must be written (it undoes the first).
	st.hold(t)
	unreach := make(chan error, 1)
	readmit := make(chan error, 1)
	r.Submit(Admit(agent("s2"), ""), func(error) {}) // the write the others queue behind
	<-st.started
	r.Submit(MarkUnreachable("s1", t0), func(err error) { unreach <- err })
	r.Submit(Readmit(changed, ""), func(err error) { readmit <- err })
	eventually(t, "queued", func() bool { return r.Stats().Queued == 2 })
	st.proceed <- nil
	<-st.started
	st.proceed <- nil
	if err := <-unreach; err != nil {
		t.Fatal(err)
	}
	if err := <-readmit; err != nil {
		t.Fatal(err)
	}
	if got := m.Registry().Status("s1"); got != AgentAdmitted {
		t.Fatalf("s1 is %v after unreachable+readmit in one batch, want admitted", got)
	}
	if _, batches := st.count(); batches[len(batches)-1] != 2 {
		t.Fatalf("last batch wrote %d operations, want both", batches[len(batches)-1])
	}
}
