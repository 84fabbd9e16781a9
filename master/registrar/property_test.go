package registrar

import (
	"bytes"
	"errors"
	"maps"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"
)

// oracle is the naive model of agent lifecycles the registry must match:
// each agent's status and the principal it is bound to.
type oracle struct {
	status    map[string]string // id -> "admitted" | "unreachable" | "gone"
	principal map[string]string // id -> principal; no entry: unbound
}

func (o oracle) apply(kind, id, principal string) error {
	st := o.status[id]
	bind := func() {
		o.status[id] = "admitted"
		if principal != "" {
			o.principal[id] = principal
		}
	}
	switch kind {
	case "admit":
		switch st {
		case "":
			bind()
			return nil
		case "gone":
			return ErrGone
		}
		return ErrAlreadyAdmitted
	case "readmit", "reachable":
		if st == "gone" {
			return ErrGone
		}
		if p, ok := o.principal[id]; ok && p != principal {
			return ErrPrincipal
		}
		bind()
	case "unreachable":
		switch st {
		case "":
			return ErrUnknownAgent
		case "unreachable":
			return ErrAlreadyUnreachable
		case "gone":
			return ErrGone
		}
		o.status[id] = "unreachable"
	case "remove":
		if st == "" {
			return ErrUnknownAgent
		}
		o.status[id] = "gone"
		delete(o.principal, id)
	case "prune":
		if st == "unreachable" || st == "gone" {
			delete(o.status, id)
			delete(o.principal, id)
		}
	}
	return nil
}

// TestLifecycleMatchesOracle drives random operation sequences (as random
// principals) through a registrar and checks every outcome and the final
// registry, bindings included, against the oracle; a replica applying the same entries, and a machine restored from
// a snapshot, hold the same registry.
func TestLifecycleMatchesOracle(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		m := NewMachine()
		var entries [][]byte
		store := &recordingStore{MemoryStore: NewMemoryStore(m), entries: &entries}
		r, _ := New(Config{Store: store, Machine: m})
		defer r.Close()
		c := ctx(t)
		if _, err := r.Recover(c, testMaster()); err != nil {
			rt.Fatal(err)
		}
		o := oracle{status: map[string]string{}, principal: map[string]string{}}
		pool := []string{"a", "b", "c", "d"}
		n := rapid.IntRange(1, 60).Draw(rt, "n")
		for i := range n {
			kind := rapid.SampledFrom([]string{"admit", "readmit", "reachable", "unreachable", "remove", "prune"}).Draw(rt, "kind")
			id := rapid.SampledFrom(pool).Draw(rt, "id")
			principal := rapid.SampledFrom([]string{"", "p", "q"}).Draw(rt, "principal")
			at := time.Unix(int64(i), 0)
			var op Operation
			switch kind {
			case "admit":
				op = Admit(agent(id), principal)
			case "readmit":
				op = Readmit(agent(id), principal)
			case "reachable":
				op = MarkReachable(agent(id), principal)
			case "unreachable":
				op = MarkUnreachable(id, at)
			case "remove":
				op = Remove(id, at)
			case "prune":
				op = Prune([]string{id}, []string{id})
			}
			want := o.apply(kind, id, principal)
			got := r.Apply(c, op)
			if (want == nil) != (got == nil) || (want != nil && !errors.Is(got, want)) {
				rt.Fatalf("step %d %s: got %v, want %v", i, op, got, want)
			}
		}
		reg := protoOf(rt, m.Registry())
		seen, bound := map[string]string{}, map[string]string{}
		for _, a := range reg.GetAgents() {
			seen[a.GetInfo().GetId().GetValue()] = "admitted"
			if a.Principal != nil {
				bound[a.GetInfo().GetId().GetValue()] = a.GetPrincipal()
			}
		}
		for _, u := range reg.GetUnreachable() {
			seen[u.GetId().GetValue()] = "unreachable"
			if u.Principal != nil {
				bound[u.GetId().GetValue()] = u.GetPrincipal()
			}
		}
		for _, g := range reg.GetGone() {
			seen[g.GetId().GetValue()] = "gone"
		}
		if !maps.Equal(seen, o.status) {
			rt.Fatalf("registry %v, oracle %v", seen, o.status)
		}
		if !maps.Equal(bound, o.principal) || !maps.Equal(m.Registry().Principals(), o.principal) {
			rt.Fatalf("bindings: registry %v (view %v), oracle %v", bound, m.Registry().Principals(), o.principal)
		}
		if m.Skipped() != 0 {
			rt.Fatalf("machine skipped %d operations", m.Skipped())
		}

		replica := NewMachine()
		for _, e := range entries {
			if err := replica.Apply(e); err != nil {
				rt.Fatal(err)
			}
		}
		if !proto.Equal(protoOf(rt, replica.Registry()), reg) {
			rt.Fatalf("replica differs:\n%v\n%v", protoOf(rt, replica.Registry()), reg)
		}
		var buf bytes.Buffer
		write, _ := m.Snapshot()
		if err := write(&buf); err != nil {
			rt.Fatal(err)
		}
		restored := NewMachine()
		if err := restored.Restore(&buf); err != nil {
			rt.Fatal(err)
		}
		if !proto.Equal(protoOf(rt, restored.Registry()), reg) {
			rt.Fatalf("restored snapshot differs")
		}
	})
}

type recordingStore struct {
	*MemoryStore
	entries *[][]byte
}

func (s *recordingStore) Append(ctx contextContext, entry []byte) error {
	*s.entries = append(*s.entries, append([]byte(nil), entry...))
	return s.MemoryStore.Append(ctx, entry)
}
