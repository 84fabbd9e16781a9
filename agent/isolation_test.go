package agent

import (
	"context"
	"testing"

	"mezzo/agent/containerizer"
	"mezzo/agent/containerizer/cgroups"
	"mezzo/api/mesos"
)

// cgroupsLike is what a cgroups isolator offers the agent's adapter: a
// Usager, a Killer and an UpdatingIsolator.
type cgroupsLike struct{ killed, updated []string }

func (*cgroupsLike) Name() string { return "cgroups/test" }
func (*cgroupsLike) Prepare(context.Context, *containerizer.ContainerConfig, *containerizer.LaunchSpec) error {
	return nil
}
func (*cgroupsLike) Isolate(context.Context, string, int) error { return nil }
func (*cgroupsLike) Cleanup(context.Context, string) error      { return nil }
func (*cgroupsLike) Usage(string) (*cgroups.Statistics, error)  { return &cgroups.Statistics{}, nil }
func (c *cgroupsLike) BeforeKill(id string) error               { c.killed = append(c.killed, id); return nil }
func (c *cgroupsLike) Update(_ context.Context, id string, _ []*mesos.Resource) error {
	c.updated = append(c.updated, id)
	return nil
}

// The adapter that turns cgroups statistics into protos keeps the
// isolator's other faces: a wrapper that hid BeforeKill left revocable
// containers at 16 cpu shares while they died (2–3 s beside a busy service),
// and one that hid Update would leave a container at its first task's size.
func TestAdaptIsolatorKeepsHooks(t *testing.T) {
	inner := &cgroupsLike{}
	k, ok := adaptIsolator(inner).(containerizer.Killer)
	if !ok {
		t.Fatal("the adapted isolator is not a containerizer.Killer")
	}
	if err := k.BeforeKill("c1"); err != nil || len(inner.killed) != 1 || inner.killed[0] != "c1" {
		t.Errorf("BeforeKill forwarded %v, err %v", inner.killed, err)
	}
	u, ok := adaptIsolator(inner).(containerizer.UpdatingIsolator)
	if !ok {
		t.Fatal("the adapted isolator is not a containerizer.UpdatingIsolator")
	}
	if err := u.Update(context.Background(), "c2", nil); err != nil || len(inner.updated) != 1 || inner.updated[0] != "c2" {
		t.Errorf("Update forwarded %v, err %v", inner.updated, err)
	}
	if _, ok := adaptIsolator(inner).(containerizer.Usager); !ok {
		t.Error("the adapted isolator is not a containerizer.Usager")
	}
}
