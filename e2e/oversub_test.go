package e2e

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"mezzo/sim"
)

// The master's and the client's side of oversubscription with the real
// binary (docs/oversubscription.md). The agent is an emulated one (sim)
// that sends a fixed estimate in UPDATE_RESOURCES, as the real agent's
// `fixed` estimator does; the real agent's estimate loop is tested on its
// own side. A master with --lend_idle_reservations shows the agent's
// revocable total (estimate and idle reservation), `mezzo run --revocable`
// runs its task on revocable cpus with regular memory, and a framework
// without REVOCABLE_RESOURCES is never offered them.
func TestRevocableRunOnEstimatedSlack(t *testing.T) {
	promtool := promtoolPath(t)
	port := freeMasterPort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	startProc(t, "master", "master", "--ip=127.0.0.1", "--port="+strconv.Itoa(port), "--registry=in_memory",
		"--allocation_interval=100ms", "--lend_idle_reservations")
	poll(t, "the master to lead", 30*time.Second, func() bool { return leads(addr) })

	agent, err := sim.NewAgent(sim.AgentConfig{Masters: []string{addr}, Hostname: "slacky",
		Resources: "cpus:1;mem:1024;cpus(owner):1", Oversubscribed: "cpus:2"})
	if err != nil {
		t.Fatal(err)
	}
	agent.Start()
	t.Cleanup(agent.Stop)

	var flags struct {
		Flags map[string]string `json:"flags"`
	}
	if err := getJSON("http://"+addr+"/master/flags", &flags); err != nil || flags.Flags["lend_idle_reservations"] != "true" {
		t.Fatalf("/master/flags: %v, lend_idle_reservations=%q", err, flags.Flags["lend_idle_reservations"])
	}
	// 2 estimated, 1 lent (the idle cpus(owner):1).
	var slaves struct {
		Slaves []struct {
			Resources map[string]float64 `json:"resources"`
		} `json:"slaves"`
	}
	poll(t, "the agent's revocable cpus in /master/slaves", 30*time.Second, func() bool {
		return getJSON("http://"+addr+"/master/slaves", &slaves) == nil && len(slaves.Slaves) == 1 &&
			slaves.Slaves[0].Resources["cpus_revocable"] == 3
	})
	var metrics map[string]float64
	if err := getJSON("http://"+addr+"/metrics/snapshot", &metrics); err != nil || metrics["master/cpus_revocable_total"] != 3 || metrics["master/cpus_total"] != 2 {
		t.Fatalf("/metrics/snapshot: %v; cpus_total %v, cpus_revocable_total %v, want 2 and 3", err,
			metrics["master/cpus_total"], metrics["master/cpus_revocable_total"])
	}
	promtoolCheck(t, promtool, "master", scrape(t, "http://"+addr+"/metrics"))
	if code, out := runCmd(t, 30*time.Second, mezzoBin, "agents", "--master="+addr, "-o", "wide"); code != 0 ||
		!strings.Contains(out, "REV CPUS") || !strings.Contains(out, "0/3") {
		t.Fatalf("mezzo agents -o wide: exit %d, want a REV CPUS column with 0/3:\n%s", code, out)
	}

	// More cpus than the agent's regular unreserved ones: only revocable
	// cpus can hold it.
	code, out := runCmd(t, 60*time.Second, mezzoBin, "run", "--master="+addr, "--revocable", "--stream=false",
		"--resources=cpus:1.5;mem:32", "--env=SIM_DURATION=0s", "--", "/bin/true")
	if code != 0 || !strings.Contains(out, "TASK_FINISHED") {
		t.Fatalf("mezzo run --revocable: exit %d; output:\n%s", code, out)
	}
	if !strings.Contains(out, "cpus{REV") || !strings.Contains(out, "mem:32") {
		t.Fatalf("mezzo run --revocable launched without revocable cpus and regular mem; output:\n%s", out)
	}

	// Without --revocable the same need waits: the framework is offered
	// the regular cpus:1 only.
	code, out = runCmd(t, 60*time.Second, mezzoBin, "run", "--master="+addr, "--stream=false", "--timeout=4s",
		"--resources=cpus:1.5;mem:32", "--", "/bin/true")
	if code != 124 || strings.Contains(out, "Launching task") {
		t.Fatalf("mezzo run without --revocable: exit %d, want 124 (timed out waiting); output:\n%s", code, out)
	}
}
