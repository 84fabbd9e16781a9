package registrar

import (
	"testing"
	"time"
)

// The registrar's metrics exist under Mesos's names and move: a write adds
// a state_store_ms sample and grows the registry; queued operations show
// while a write is in flight.
func TestMetrics(t *testing.T) {
	r, st, _ := newRecovered(t, Config{})
	m := r.Metrics()
	for _, k := range []string{
		"registrar/queued_operations", "registrar/registry_size_bytes", "registrar/log/recovered",
		"registrar/state_fetch_ms", "registrar/state_store_ms", "registrar/state_store_ms/count",
		"registrar/state_store_ms/min", "registrar/state_store_ms/max", "registrar/state_store_ms/p50",
		"registrar/state_store_ms/p90", "registrar/state_store_ms/p95", "registrar/state_store_ms/p99",
		"registrar/state_store_ms/p999", "registrar/state_store_ms/p9999",
	} {
		if _, ok := m[k]; !ok {
			t.Errorf("missing %s", k)
		}
	}
	if m["registrar/log/recovered"] != 1 || m["registrar/state_store_ms/count"] != 1 {
		t.Fatalf("after recovery (one SetMaster write): %v", m)
	}
	size := m["registrar/registry_size_bytes"]
	if size <= 0 {
		t.Fatalf("registry size %v", size)
	}

	if err := r.Apply(ctx(t), Admit(agent("a1"), "")); err != nil {
		t.Fatal(err)
	}
	m = r.Metrics()
	if m["registrar/state_store_ms/count"] != 2 || m["registrar/registry_size_bytes"] <= size {
		t.Errorf("after a write: count %v, size %v (was %v)", m["registrar/state_store_ms/count"], m["registrar/registry_size_bytes"], size)
	}

	st.hold(t)
	errs := make(chan error, 2)
	go func() { errs <- r.Apply(ctx(t), Admit(agent("a2"), "")) }()
	<-st.started
	go func() { errs <- r.Apply(ctx(t), Admit(agent("a3"), "")) }()
	eventually(t, "one queued operation", func() bool { return r.Metrics()["registrar/queued_operations"] == 1 })
	st.proceed <- nil
	<-st.started
	st.proceed <- nil
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if q := r.Metrics()["registrar/queued_operations"]; q != 0 {
		t.Errorf("queued %v after the writes", q)
	}
}

// Percentiles interpolate between ranks over the window, and the window
// keeps only the newest samples.
func TestTimerPercentiles(t *testing.T) {
	var tm timer
	m := map[string]float64{}
	tm.put(m, "x")
	if len(m) != 0 {
		t.Fatalf("an empty timer wrote %v", m)
	}
	for i := 1; i <= 101; i++ {
		tm.add(time.Duration(i) * time.Millisecond)
	}
	tm.put(m, "x")
	want := map[string]float64{"x": 101, "x/count": 101, "x/min": 1, "x/max": 101, "x/p50": 51, "x/p90": 91, "x/p99": 100}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	for i := 0; i < timerWindow; i++ {
		tm.add(time.Second)
	}
	m = map[string]float64{}
	tm.put(m, "x")
	if m["x/min"] != 1000 || m["x/count"] != timerWindow {
		t.Errorf("window did not roll over: %v", m)
	}
}
