package paper

import (
	"context"
	"net/http"
	"testing"
	"time"

	"mezzo/api/mesos"
	"mezzo/frameworks/elastic"
	"mezzo/frameworks/loop"
	"mezzo/sim"
)

// The elastic service on revocable resources: emulated agents report a
// fixed revocable estimate (sim's stand-in for the agent's `fixed`
// resource estimator), the master's revocable stage offers it to the
// service (REVOCABLE_RESOURCES), whose replicas beyond --min take it; the
// master's own account shows revocable cpus in use.
func TestElasticOnRevocableResources(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real masters")
	}
	env := testEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := startCluster(ctx, env, sim.FleetConfig{Agents: 8, Agent: sim.AgentConfig{
		Resources: "cpus:2;mem:4096;ports:[31000-31100]", Oversubscribed: "cpus:2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	fw, err := elastic.New(elastic.Config{Config: loop.Config{Masters: []string{c.addr}, Name: "web", User: "sim"},
		TaskResources: "cpus:1;mem:256;ports:1", Target: 100, Min: 2, Max: 8, Interval: 200 * time.Millisecond,
		Revocable: true, Load: func(time.Time) float64 { return 600 },
		Decorate: func(ti *mesos.TaskInfo) { ti.Labels = sim.DurationLabels(sim.Never) }})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *elastic.Result, 1)
	go func() {
		r, err := fw.Run(ctx)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	client := &http.Client{Timeout: 5 * time.Second}
	var revocableCPUs float64
	deadline := time.Now().Add(time.Minute)
	for {
		u := fw.Usage()
		if u.Running == 6 && u.Revocable == 4 {
			var m map[string]float64
			if err := getJSON(ctx, client, "http://"+c.addr+"/metrics/snapshot", &m); err != nil {
				t.Fatal(err)
			}
			if revocableCPUs = m["master/cpus_revocable_used"]; revocableCPUs == 4 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("usage %+v, master's revocable cpus in use %g; want 6 replicas, 4 of them on 4 revocable cpus", u, revocableCPUs)
		}
		time.Sleep(50 * time.Millisecond) // polling interval, bounded by the deadline
	}
	fw.Stop()
	r := <-done
	if r.RevocableLaunched != 4 || r.Lost != 0 {
		t.Fatalf("result: %d launched on revocable resources, %d lost", r.RevocableLaunched, r.Lost)
	}
}
