package oversub

import (
	"context"
	"errors"
	"testing"

	"mezzo/agent/containerizer"
	"mezzo/api/mesos"
)

// The containerizer already measures containers for /monitor/statistics;
// it is the Meter Measure wants, with no adapter.
var (
	_ Meter = (*containerizer.Mesos)(nil)
	_ Meter = containerizer.UsageReporter(nil)
)

// fakeMeter answers from a table; a missing id is a container that ended.
type fakeMeter map[string]*mesos.ResourceStatistics

func (m fakeMeter) Usage(_ context.Context, id string) (*mesos.ResourceStatistics, error) {
	if st, ok := m[id]; ok {
		return st, nil
	}
	return nil, errors.New("unknown container")
}

func TestMeasureFillsStatistics(t *testing.T) {
	list := func(context.Context) (Snapshot, error) {
		return snap("cpus:4", ctr("a", "cpus:1", false, nil), ctr("gone", "cpus:1", true, nil)), nil
	}
	st := cpu(5, 2)
	got, err := Measure(list, fakeMeter{"a": st}).Usage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Containers) != 2 || got.Containers[0].Statistics != st || got.Containers[1].Statistics != nil {
		t.Fatalf("snapshot %+v: want a measured and gone unmeasured", got.Containers)
	}
	if got.Total.Scalar("cpus") != 4 || got.Containers[0].Revocable() || !got.Containers[1].Revocable() {
		t.Fatalf("snapshot lost its total or revocability: %+v", got)
	}
	failing := func(context.Context) (Snapshot, error) { return Snapshot{}, errors.New("agent stopping") }
	if _, err := Measure(failing, fakeMeter{}).Usage(context.Background()); err == nil {
		t.Fatal("a failing list gave a snapshot")
	}
}
