package registrar

import (
	"bytes"
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	pb "mezzo/api/registrypb"
)

// The registry binds each agent ID to the principal it registered as
// (--authenticate_agents), so that every leader refuses the ID to another
// principal, also right after a failover, before the agent is back.

// TestPrincipalBinding: an agent admitted as p is bound to p in the
// registry, through unreachability, a snapshot and a replica; another
// principal (or none) is refused with ErrPrincipal and changes nothing;
// p's own re-registrations apply (an unchanged one without a write).
func TestPrincipalBinding(t *testing.T) {
	r, st, m := newRecovered(t, Config{})
	c := ctx(t)
	for _, op := range []Operation{Admit(agent("a"), "p"), Admit(agent("u"), "p"), Admit(agent("anon"), ""), MarkUnreachable("u", t0)} {
		if err := r.Apply(c, op); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
	}
	if got := m.Registry().Principals(); len(got) != 2 || got["a"] != "p" || got["u"] != "p" {
		t.Fatalf("bindings = %v, want a and u bound to p", got)
	}
	p := protoOf(t, m.Registry())
	if a := p.GetAgents()[0]; a.GetInfo().GetId().GetValue() != "a" || a.GetPrincipal() != "p" {
		t.Fatalf("registry agent entry = %v", a)
	}
	if u := p.GetUnreachable()[0]; u.GetPrincipal() != "p" {
		t.Fatalf("registry unreachable entry = %v", u)
	}

	// A new leader's registry, restored from a snapshot.
	r2, m2 := restored(t, m)
	for _, op := range []Operation{Readmit(agent("a"), "q"), Readmit(agent("a"), ""), MarkReachable(agent("u"), "q"), Readmit(agent("u"), "")} {
		before := m2.Version()
		err := r2.Apply(c, op)
		if !errors.Is(err, ErrPrincipal) || !contains(err.Error(), "'p'") {
			t.Fatalf("%s as another principal = %v, want ErrPrincipal naming the bound principal", op, err)
		}
		if m2.Version() != before {
			t.Fatalf("refused %s changed the registry", op)
		}
	}
	if m2.Registry().Status("u") != AgentUnreachable || m2.Registry().Principal("a") != "p" {
		t.Fatal("a refused re-registration changed an agent's status or binding")
	}
	// The agent's own re-registrations apply; an unchanged one writes
	// nothing (every agent re-registers after a failover).
	base, _ := st.count()
	if err := r.Apply(c, Readmit(agent("a"), "p")); err != nil {
		t.Fatal(err)
	}
	if n, _ := st.count(); n != base {
		t.Fatalf("an unchanged re-admission wrote %d entries", n-base)
	}
	for _, op := range []Operation{Readmit(agent("a"), "p"), MarkReachable(agent("u"), "p")} {
		if err := r2.Apply(c, op); err != nil {
			t.Fatalf("%s as its own principal: %v", op, err)
		}
	}
	if got := m2.Registry().Principals(); len(got) != 2 || got["a"] != "p" || got["u"] != "p" {
		t.Fatalf("bindings after re-registration = %v", got)
	}

	// An anonymous registration binds nothing: its next registration as a
	// principal binds it (turning --authenticate_agents on later works).
	if err := r2.Apply(c, Readmit(agent("anon"), "q")); err != nil {
		t.Fatal(err)
	}
	if err := r2.Apply(c, Readmit(agent("anon"), "p")); !errors.Is(err, ErrPrincipal) {
		t.Fatalf("anon, bound to q, re-registering as p = %v", err)
	}
}

// TestPrincipalBindingLegacyEntries: a registry written before principals
// were recorded (log entries and snapshots without them) loads with its
// agents unbound; each binds on its next registration, as it did when the
// binding lived in the leader's memory. An anonymous registration encodes
// exactly as those entries did.
func TestPrincipalBindingLegacyEntries(t *testing.T) {
	ops := []*pb.Operation{
		{Op: &pb.Operation_Admit{Admit: &pb.Operation_AdmitAgent{Info: agent("old")}}},
		{Op: &pb.Operation_Admit{Admit: &pb.Operation_AdmitAgent{Info: agent("old2")}}},
		{Op: &pb.Operation_MarkUnreachable_{MarkUnreachable: &pb.Operation_MarkUnreachable{Id: agentID("old2"), Timestamp: timeInfo(t0)}}},
	}
	legacy, err := proto.Marshal(&pb.Batch{Operations: ops})
	if err != nil {
		t.Fatal(err)
	}
	if first, _ := proto.Marshal(ops[0]); !bytes.Equal(Admit(agent("old"), "").enc, first) {
		t.Fatal("an anonymous Admit does not encode as a legacy one")
	}
	m := NewMachine()
	if err := m.Apply(encodeEntry(legacy)); err != nil {
		t.Fatal(err)
	}
	if m.Registry().Status("old") != AgentAdmitted || len(m.Registry().Principals()) != 0 {
		t.Fatalf("legacy registry: status %v, bindings %v", m.Registry().Status("old"), m.Registry().Principals())
	}
	r, m2 := restored(t, m) // and through a snapshot
	c := ctx(t)
	for _, op := range []Operation{Readmit(agent("old"), "q"), MarkReachable(agent("old2"), "q")} {
		if err := r.Apply(c, op); err != nil {
			t.Fatalf("first registration of a legacy entry, %s: %v", op, err)
		}
	}
	if got := m2.Registry().Principals(); len(got) != 2 || got["old"] != "q" || got["old2"] != "q" {
		t.Fatalf("legacy entries after their first registration: %v", got)
	}
	if err := r.Apply(c, Readmit(agent("old"), "p")); !errors.Is(err, ErrPrincipal) {
		t.Fatalf("legacy entry, once bound, re-registering as another principal = %v", err)
	}
}

// TestPrincipalBindingInOneBatch: two re-registrations of an unbound ID
// as different principals in one batch: the first binds it, the second
// is refused.
func TestPrincipalBindingInOneBatch(t *testing.T) {
	r, st, m := newRecovered(t, Config{})
	if err := r.Apply(ctx(t), Admit(agent("x"), "")); err != nil {
		t.Fatal(err)
	}
	st.hold(t)
	r.Submit(Admit(agent("head"), ""), func(error) {}) // the write the others queue behind
	<-st.started
	results := make([]chan error, 2)
	for i, principal := range []string{"p", "q"} {
		results[i] = make(chan error, 1)
		r.Submit(Readmit(agent("x"), principal), func(err error) { results[i] <- err })
	}
	eventually(t, "queued", func() bool { return r.Stats().Queued == 2 })
	st.proceed <- nil
	<-st.started
	st.proceed <- nil
	if err := <-results[0]; err != nil {
		t.Fatalf("first: %v", err)
	}
	if err := <-results[1]; !errors.Is(err, ErrPrincipal) {
		t.Fatalf("second, as another principal in the same batch = %v", err)
	}
	if got := m.Registry().Principal("x"); got != "p" {
		t.Fatalf("x bound to %q, want p", got)
	}
}

// TestPrincipalBindingEndsWithTheAgent: removing an agent drops its
// binding (its ID is refused to everyone, ErrGone), and so does pruning
// it while unreachable: an ID the registry forgot is admitted again as
// anyone, as Mesos readmits a pruned agent.
func TestPrincipalBindingEndsWithTheAgent(t *testing.T) {
	r, _, m := newRecovered(t, Config{})
	c := ctx(t)
	for _, op := range []Operation{
		Admit(agent("gone"), "p"), Admit(agent("pruned"), "p"), Admit(agent("kept"), "p"),
		Remove("gone", t0), MarkUnreachable("pruned", t0), MarkUnreachable("kept", t0),
		Prune([]string{"pruned"}, nil),
	} {
		if err := r.Apply(c, op); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
	}
	if got := m.Registry().Principals(); len(got) != 1 || got["kept"] != "p" {
		t.Fatalf("bindings = %v, want only kept's", got)
	}
	for _, principal := range []string{"p", "q"} {
		if err := r.Apply(c, Readmit(agent("gone"), principal)); !errors.Is(err, ErrGone) {
			t.Fatalf("gone agent re-registering as %q = %v, want ErrGone", principal, err)
		}
	}
	if err := r.Apply(c, Readmit(agent("pruned"), "q")); err != nil || m.Registry().Principal("pruned") != "q" {
		t.Fatalf("pruned ID re-registering as q: %v, bound to %q", err, m.Registry().Principal("pruned"))
	}
}
