package registrar

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"
)

// oracle is the naive model of agent lifecycles the registry must match.
type oracle map[string]string // id -> "admitted" | "unreachable" | "gone"

func (o oracle) apply(kind, id string) error {
	st := o[id]
	switch kind {
	case "admit":
		switch st {
		case "":
			o[id] = "admitted"
			return nil
		case "gone":
			return ErrGone
		}
		return ErrAlreadyAdmitted
	case "readmit", "reachable":
		if st == "gone" {
			return ErrGone
		}
		o[id] = "admitted"
	case "unreachable":
		switch st {
		case "":
			return ErrUnknownAgent
		case "unreachable":
			return ErrAlreadyUnreachable
		case "gone":
			return ErrGone
		}
		o[id] = "unreachable"
	case "remove":
		if st == "" {
			return ErrUnknownAgent
		}
		o[id] = "gone"
	case "prune":
		if st == "unreachable" || st == "gone" {
			delete(o, id)
		}
	}
	return nil
}

// TestLifecycleMatchesOracle drives random operation sequences through a
// registrar and checks every outcome and the final registry against the
// oracle; a replica applying the same entries, and a machine restored from
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
		o := oracle{}
		pool := []string{"a", "b", "c", "d"}
		n := rapid.IntRange(1, 60).Draw(rt, "n")
		for i := range n {
			kind := rapid.SampledFrom([]string{"admit", "readmit", "reachable", "unreachable", "remove", "prune"}).Draw(rt, "kind")
			id := rapid.SampledFrom(pool).Draw(rt, "id")
			at := time.Unix(int64(i), 0)
			var op Operation
			switch kind {
			case "admit":
				op = Admit(agent(id))
			case "readmit":
				op = Readmit(agent(id))
			case "reachable":
				op = MarkReachable(agent(id))
			case "unreachable":
				op = MarkUnreachable(id, at)
			case "remove":
				op = Remove(id, at)
			case "prune":
				op = Prune([]string{id}, []string{id})
			}
			want := o.apply(kind, id)
			got := r.Apply(c, op)
			if (want == nil) != (got == nil) || (want != nil && !errors.Is(got, want)) {
				rt.Fatalf("step %d %s: got %v, want %v", i, op, got, want)
			}
		}
		reg := protoOf(rt, m.Registry())
		seen := map[string]string{}
		for _, a := range reg.GetAgents() {
			seen[a.GetInfo().GetId().GetValue()] = "admitted"
		}
		for _, u := range reg.GetUnreachable() {
			seen[u.GetId().GetValue()] = "unreachable"
		}
		for _, g := range reg.GetGone() {
			seen[g.GetId().GetValue()] = "gone"
		}
		if len(seen) != len(o) {
			rt.Fatalf("registry %v, oracle %v", seen, o)
		}
		for id, st := range o {
			if seen[id] != st {
				rt.Fatalf("agent %s: registry %q, oracle %q", id, seen[id], st)
			}
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
