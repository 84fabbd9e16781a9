package master

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/quotapb"
	"mezzo/master/registrar"
)

func newReplicated(t *testing.T, strict bool) (*ReplicatedRegistrar, *registrar.Machine) {
	t.Helper()
	m := registrar.NewMachine()
	r, err := registrar.New(registrar.Config{Store: registrar.NewMemoryStore(m), Machine: m, Strict: strict})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return NewReplicatedRegistrar(r, nil), m
}

func apply(f func(done func(error))) error {
	ch := make(chan error, 1)
	f(func(err error) { ch <- err })
	return <-ch
}

func TestReplicatedRegistrarOperations(t *testing.T) {
	a, _ := newReplicated(t, false)
	info := func(id string) *mesos.AgentInfo {
		return &mesos.AgentInfo{Id: agentID(id), Hostname: proto.String("h-" + id)}
	}
	// Before Recover nothing is written: the master must step down.
	if err := apply(func(d func(error)) { a.Admit(info("x"), "", d) }); !errors.Is(err, ErrRegistryUnavailable) {
		t.Fatalf("write before recovery: %v, want ErrRegistryUnavailable", err)
	}
	rec, err := a.Recover(context.Background(), masterInfo(Config{ID: "M", IP: "127.0.0.1", Port: 5050}))
	if err != nil || len(rec.Agents) != 0 {
		t.Fatalf("recover empty: %+v %v", rec, err)
	}
	at := time.Unix(1700000000, 0)
	steps := []struct {
		name string
		op   func(done func(error))
		want error // nil, ErrAgentGone, or a registrar error matched with errors.Is
	}{
		{"admit a1", func(d func(error)) { a.Admit(info("a1"), "agent-1", d) }, nil},
		{"admit a2", func(d func(error)) { a.Admit(info("a2"), "", d) }, nil},
		{"admit a3", func(d func(error)) { a.Admit(info("a3"), "", d) }, nil},
		{"admit a1 again", func(d func(error)) { a.Admit(info("a1"), "", d) }, registrar.ErrAlreadyAdmitted},
		// Refused, not a registry failure: the master must not step down.
		{"a1 readmit as another principal", func(d func(error)) { a.Readmit(info("a1"), "agent-2", d) }, registrar.ErrPrincipal},
		{"a1 readmit as itself", func(d func(error)) { a.Readmit(info("a1"), "agent-1", d) }, nil},
		{"a2 unreachable", func(d func(error)) { a.MarkUnreachable("a2", at, d) }, nil},
		{"a2 unreachable again", func(d func(error)) { a.MarkUnreachable("a2", at, d) }, registrar.ErrAlreadyUnreachable},
		{"a3 removed", func(d func(error)) { a.Remove("a3", d) }, nil},
		{"a3 readmit", func(d func(error)) { a.Readmit(info("a3"), "", d) }, ErrAgentGone},
		{"a3 reachable", func(d func(error)) { a.MarkReachable(info("a3"), "", d) }, ErrAgentGone},
		{"weights", func(d func(error)) {
			a.UpdateWeights([]*mesos.WeightInfo{{Role: proto.String("web"), Weight: proto.Float64(2.5)}}, d)
		}, nil},
		{"bad weight", func(d func(error)) {
			a.UpdateWeights([]*mesos.WeightInfo{{Role: proto.String("web"), Weight: proto.Float64(-1)}}, d)
		}, registrar.ErrInvalid},
		{"quota", func(d func(error)) {
			a.UpdateQuota([]*quotapb.QuotaConfig{{Role: proto.String("web"),
				Guarantees: map[string]*mesos.Value_Scalar{"cpus": {Value: proto.Float64(4)}}}}, d)
		}, nil},
	}
	for _, s := range steps {
		err := apply(s.op)
		if (s.want == nil) != (err == nil) || (s.want != nil && !errors.Is(err, s.want)) {
			t.Fatalf("%s: got %v, want %v", s.name, err, s.want)
		}
	}
	rec, err = a.Recover(context.Background(), masterInfo(Config{ID: "N", IP: "127.0.0.1", Port: 5060}))
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Agents) != 1 || rec.Agents[0] != "a1" || len(rec.Principals) != 1 || rec.Principals["a1"] != "agent-1" {
		t.Errorf("admitted %v bound %v, want [a1] bound to agent-1", rec.Agents, rec.Principals)
	}
	if u, ok := rec.Unreachable["a2"]; !ok || !u.Equal(at) {
		t.Errorf("unreachable %v, want a2 at %v", rec.Unreachable, at)
	}
	if _, ok := rec.Gone["a3"]; !ok {
		t.Errorf("gone %v, want a3", rec.Gone)
	}
	if rec.Weights["web"] != 2.5 || len(rec.Quotas) != 1 || rec.Quotas[0].GetRole() != "web" {
		t.Errorf("weights %v quotas %v", rec.Weights, rec.Quotas)
	}
	if got := a.Registrar().Registry().Master().GetId(); got != "N" {
		t.Errorf("leading master in the registry = %q, want N", got)
	}
}

func TestReplicatedRegistrarStrict(t *testing.T) {
	a, _ := newReplicated(t, true)
	_, err := a.Recover(context.Background(), masterInfo(Config{ID: "M", IP: "127.0.0.1", Port: 5050}))
	if !errors.Is(err, ErrEmptyRegistry) {
		t.Fatalf("strict recovery of an empty registry: %v", err)
	}
}
