package registrar

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
)

func drainInfo(st mesos.DrainState, grace time.Duration, gone bool) *mesos.DrainInfo {
	return &mesos.DrainInfo{State: st.Enum(), Config: &mesos.DrainConfig{
		MaxGracePeriod: &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(grace))}, MarkGone: proto.Bool(gone)}}
}

// TestUpdateDrainValidation: each drain entry against a registry with an
// admitted agent a, an unreachable u and a gone g (Mesos keeps drain and
// deactivation for registered and unreachable agents only).
func TestUpdateDrainValidation(t *testing.T) {
	draining := drainInfo(mesos.DrainState_DRAINING, time.Second, false)
	cases := []struct {
		name string
		id   string
		d    Drain
		want error
	}{
		{"deactivate admitted", "a", Drain{Deactivated: true}, nil},
		{"drain admitted", "a", Drain{Deactivated: true, Info: draining}, nil},
		{"drain unreachable", "u", Drain{Deactivated: true, Info: draining}, nil},
		{"reactivate", "a", Drain{}, nil},
		{"gone", "g", Drain{Deactivated: true}, ErrGone},
		{"unknown", "x", Drain{Deactivated: true}, ErrUnknownAgent},
		{"no id", "", Drain{Deactivated: true}, ErrInvalid},
		{"draining but active", "a", Drain{Info: draining}, ErrInvalid},
		{"no state", "a", Drain{Deactivated: true, Info: &mesos.DrainInfo{Config: &mesos.DrainConfig{}}}, ErrInvalid},
		{"no config", "a", Drain{Deactivated: true, Info: &mesos.DrainInfo{State: mesos.DrainState_DRAINING.Enum()}}, ErrInvalid},
		{"negative grace", "a", Drain{Deactivated: true, Info: drainInfo(mesos.DrainState_DRAINING, -time.Second, false)}, ErrInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, _, m := newRecovered(t, Config{})
			for _, op := range []Operation{Admit(agent("a"), ""), Admit(agent("u"), ""), Admit(agent("g"), ""), MarkUnreachable("u", t0), Remove("g", t0)} {
				if err := r.Apply(ctx(t), op); err != nil {
					t.Fatal(err)
				}
			}
			before := m.Version()
			err := r.Apply(ctx(t), UpdateDrain(c.id, c.d))
			if c.want == nil {
				if err != nil {
					t.Fatalf("UpdateDrain = %v", err)
				}
				got, ok := m.Registry().Drains()[c.id]
				if ok == c.d.IsZero() || got.Deactivated != c.d.Deactivated || !proto.Equal(got.Info, c.d.Info) {
					t.Fatalf("stored %+v (present %v), want %+v", got, ok, c.d)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("UpdateDrain = %v, want %v", err, c.want)
			}
			if m.Version() != before || len(m.Registry().Drains()) != 0 {
				t.Fatalf("a refused entry changed the registry (version %d -> %d, drains %v)", before, m.Version(), m.Registry().Drains())
			}
		})
	}
}

// TestDrainSurvivesSnapshotAndEndsWithAgent: entries come back from a
// snapshot (a new leader's recovery), follow an agent into and out of
// unreachability, and go with it when it is removed or pruned.
func TestDrainSurvivesSnapshotAndEndsWithAgent(t *testing.T) {
	r, _, m := newRecovered(t, Config{})
	c := ctx(t)
	drained := drainInfo(mesos.DrainState_DRAINED, 5*time.Second, true)
	for _, op := range []Operation{
		Admit(agent("a"), ""), Admit(agent("b"), ""), Admit(agent("c"), ""),
		UpdateDrain("a", Drain{Deactivated: true, Info: drained}),
		UpdateDrain("b", Drain{Deactivated: true}),
		UpdateDrain("c", Drain{Deactivated: true}),
		MarkUnreachable("a", t0), MarkUnreachable("c", t0),
	} {
		if err := r.Apply(c, op); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
	}
	r2, m2 := restored(t, m)
	got := m2.Registry().Drains()
	if len(got) != 3 || !proto.Equal(got["a"].Info, drained) || !got["a"].Deactivated || !got["b"].Deactivated || got["b"].Info != nil {
		t.Fatalf("restored drains = %+v", got)
	}
	if p := protoOf(t, m2.Registry()); len(p.GetDrains()) != 3 || p.GetDrains()[0].GetId().GetValue() != "a" {
		t.Fatalf("registry proto drains = %v", p.GetDrains())
	}
	for _, op := range []Operation{MarkReachable(agent("a"), ""), Remove("b", t0), Prune([]string{"c"}, nil)} {
		if err := r2.Apply(c, op); err != nil {
			t.Fatalf("%s: %v", op, err)
		}
	}
	got = m2.Registry().Drains()
	if len(got) != 1 || !proto.Equal(got["a"].Info, drained) {
		t.Fatalf("after reachable/remove/prune: drains = %+v (want only a, still drained)", got)
	}
}
