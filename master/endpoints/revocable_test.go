package endpoints

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/internal/clock"
	"mezzo/master"
	"mezzo/master/mastertest"
	"mezzo/resources"
)

// An agent's revocable resources show as Mesos shows an agent's estimate:
// in /master/slaves' (and /master/state's) "resources" as cpus_revocable,
// in GET_AGENTS' total_resources as revocable Resources (the estimate with
// throttle_info), and in master/<resource>_revocable_total. With
// --lend_idle_reservations, the agent's idle reservations count too, lent.
func TestRevocableTotalsInStateAndMetrics(t *testing.T) {
	clk := clock.NewFake(testNow)
	m, err := master.New(master.Config{ID: "m1", Hostname: "m", IP: "127.0.0.1", Port: 5050, Version: "test",
		LendIdleReservations: true, Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	t.Cleanup(m.Stop)
	id, st := mastertest.SubscribeAgent(t, m, "cpus:2;mem:1024;cpus(owner):1;mem(owner):256")
	t.Cleanup(st.Close)
	est := resources.MustParse("cpus:1.5").Proto()
	est[0].Revocable = &mesos.Resource_RevocableInfo{}
	call := &protocol.AgentCall{AgentId: &mesos.AgentID{Value: proto.String(id)}, Type: protocol.AgentCall_UPDATE_RESOURCES.Enum(),
		UpdateResources: &protocol.AgentCall_UpdateResources{Oversubscribed: est}}
	if err := m.AgentCall(context.Background(), master.Principal{}, call); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); ; {
		if inSnapshot(m.Snapshot(), id) && agentTotal(t, m, id).Revocable().Scalar("cpus") == 2.5 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("revocable total never reached the snapshot: %v", agentTotal(t, m, id))
		}
		time.Sleep(time.Millisecond) // polling interval, bounded by the deadline
	}
	mux := http.NewServeMux()
	Register(mux, m, Options{Version: "1.12.0", Clock: clk})

	var slaves struct {
		Slaves []struct {
			Resources           map[string]any `json:"resources"`
			UnreservedResources map[string]any `json:"unreserved_resources"`
		} `json:"slaves"`
	}
	if rec := do(mux, httptest.NewRequest(http.MethodGet, "/master/slaves", nil)); rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &slaves) != nil || len(slaves.Slaves) != 1 {
		t.Fatalf("/master/slaves: %d %s", rec.Code, rec.Body)
	}
	r := slaves.Slaves[0].Resources
	if r["cpus"] != 3.0 || r["cpus_revocable"] != 2.5 || r["mem_revocable"] != 256.0 || slaves.Slaves[0].UnreservedResources["cpus_revocable"] != 2.5 {
		t.Fatalf("/master/slaves resources %v, unreserved %v: want cpus 3, cpus_revocable 2.5 (estimate 1.5, lent 1), mem_revocable 256",
			r, slaves.Slaves[0].UnreservedResources)
	}

	var metrics map[string]float64
	if rec := do(mux, httptest.NewRequest(http.MethodGet, "/metrics/snapshot", nil)); json.Unmarshal(rec.Body.Bytes(), &metrics) != nil {
		t.Fatalf("/metrics/snapshot: %s", rec.Body)
	}
	for k, want := range map[string]float64{"master/cpus_total": 3, "master/cpus_revocable_total": 2.5, "master/mem_revocable_total": 256,
		"master/cpus_revocable_used": 0, "master/cpus_revocable_percent": 0, "master/disk_revocable_total": 0} {
		if got, ok := metrics[k]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, want)
		}
	}

	rec := v1(mux, `{"type":"GET_AGENTS"}`)
	if rec.Code != 200 {
		t.Fatalf("GET_AGENTS: %d %s", rec.Code, rec.Body)
	}
	var agents struct {
		GetAgents struct {
			Agents []struct {
				TotalResources []map[string]any `json:"total_resources"`
			} `json:"agents"`
		} `json:"get_agents"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &agents); err != nil || len(agents.GetAgents.Agents) != 1 {
		t.Fatalf("GET_AGENTS: %v %s", err, rec.Body)
	}
	var throttled, lent int
	for _, res := range agents.GetAgents.Agents[0].TotalResources {
		rev, ok := res["revocable"].(map[string]any)
		if !ok {
			continue
		}
		if _, ok := rev["throttle_info"]; ok {
			throttled++
		} else {
			lent++
		}
	}
	if throttled != 1 || lent != 2 {
		t.Fatalf("GET_AGENTS total_resources: %d throttle-able and %d lent revocable entries, want 1 (the estimate's cpus) and 2 (lent cpus, mem): %s",
			throttled, lent, rec.Body)
	}

	prom := do(mux, httptest.NewRequest(http.MethodGet, "/metrics", nil)).Body.String()
	if !strings.Contains(prom, `mezzo_master_resource_capacity{resource="cpus",revocable="true",unit="cores"} 2.5`) {
		t.Fatalf("/metrics has no revocable cpus capacity of 2.5:\n%s", prom)
	}
	// promtool is checked where it is installed (CI installs it; the e2e
	// test of the real binary requires it there).
	if p, err := exec.LookPath("promtool"); err == nil {
		cmd := exec.Command(p, "check", "metrics")
		cmd.Stdin = strings.NewReader(prom)
		if out, err := cmd.CombinedOutput(); err != nil || len(strings.TrimSpace(string(out))) > 0 {
			t.Errorf("promtool check metrics: %v\n%s", err, out)
		}
	}
}
