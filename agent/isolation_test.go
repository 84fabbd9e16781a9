package agent

import (
	"context"
	"testing"

	"mezzo/agent/containerizer"
	"mezzo/agent/containerizer/cgroups"
)

// cgroupsLike is what a cgroups isolator offers the agent's adapter: a
// Usager and a Killer.
type cgroupsLike struct{ killed []string }

func (*cgroupsLike) Name() string { return "cgroups/test" }
func (*cgroupsLike) Prepare(context.Context, *containerizer.ContainerConfig, *containerizer.LaunchSpec) error {
	return nil
}
func (*cgroupsLike) Isolate(context.Context, string, int) error { return nil }
func (*cgroupsLike) Cleanup(context.Context, string) error      { return nil }
func (*cgroupsLike) Usage(string) (*cgroups.Statistics, error)  { return &cgroups.Statistics{}, nil }
func (c *cgroupsLike) BeforeKill(id string) error               { c.killed = append(c.killed, id); return nil }

// The adapter that turns cgroups statistics into protos keeps the
// isolator's other faces: a wrapper that hid BeforeKill left revocable
// containers at 16 cpu shares while they died (2–3 s beside a busy service).
func TestAdaptIsolatorKeepsKiller(t *testing.T) {
	inner := &cgroupsLike{}
	k, ok := adaptIsolator(inner).(containerizer.Killer)
	if !ok {
		t.Fatal("the adapted isolator is not a containerizer.Killer")
	}
	if err := k.BeforeKill("c1"); err != nil || len(inner.killed) != 1 || inner.killed[0] != "c1" {
		t.Errorf("BeforeKill forwarded %v, err %v", inner.killed, err)
	}
	if _, ok := adaptIsolator(inner).(containerizer.Usager); !ok {
		t.Error("the adapted isolator is not a containerizer.Usager")
	}
}
