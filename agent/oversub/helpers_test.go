package oversub

import (
	"context"
	"errors"
	"testing"
	"time"

	"mezzo/api/mesos"
	"mezzo/resources"

	"google.golang.org/protobuf/proto"
)

// t0 is the fake clock's origin; tests pass now explicitly.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// at is t0 plus secs seconds.
func at(secs float64) time.Time { return t0.Add(time.Duration(secs * float64(time.Second))) }

// script is a UsageSource that replays snapshots, one per call, and fails
// once it runs out (a test asking more often than it scripted is a bug).
type script struct {
	snaps []Snapshot
	errs  []error
	calls int
}

func (s *script) Usage(context.Context) (Snapshot, error) {
	i := s.calls
	s.calls++
	if i < len(s.errs) && s.errs[i] != nil {
		return Snapshot{}, s.errs[i]
	}
	if i >= len(s.snaps) {
		return Snapshot{}, errors.New("script: no more snapshots")
	}
	return s.snaps[i], nil
}

// rev parses text and marks it revocable.
func rev(text string) resources.Resources {
	r, err := makeRevocable(resources.MustParse(text))
	if err != nil {
		panic(err)
	}
	return r
}

// ctr is a container holding alloc (revocable when revoc).
func ctr(id, alloc string, revoc bool, st *mesos.ResourceStatistics) ContainerUsage {
	a := resources.MustParse(alloc)
	if revoc {
		a = rev(alloc)
	}
	return ContainerUsage{ContainerID: id, FrameworkID: "fw-" + id, ExecutorID: "ex-" + id, Allocated: a, Statistics: st}
}

// cpu is a measurement at ts seconds with cumulative cpu seconds used.
func cpu(ts, used float64) *mesos.ResourceStatistics {
	return &mesos.ResourceStatistics{
		Timestamp:          proto.Float64(ts),
		CpusUserTimeSecs:   proto.Float64(used * 0.75),
		CpusSystemTimeSecs: proto.Float64(used * 0.25),
	}
}

// throttledCPU adds cgroups cpu.stat counters to cpu(ts, used).
func throttledCPU(ts, used float64, periods, throttled uint32) *mesos.ResourceStatistics {
	st := cpu(ts, used)
	st.CpusNrPeriods = proto.Uint32(periods)
	st.CpusNrThrottled = proto.Uint32(throttled)
	st.CpusThrottledTimeSecs = proto.Float64(float64(throttled) * 0.05)
	return st
}

// withRSS adds a resident memory measurement in MB.
func withRSS(st *mesos.ResourceStatistics, mb uint64) *mesos.ResourceStatistics {
	st.MemRssBytes = proto.Uint64(mb << 20)
	return st
}

func snap(total string, cs ...ContainerUsage) Snapshot {
	return Snapshot{Total: resources.MustParse(total), Containers: cs}
}

func mustValidate(t *testing.T, c Config) Config {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	return c
}

func f64(v float64) *float64 { return &v }
