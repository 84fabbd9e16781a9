package e2e

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// twoAgentCluster is `mezzo local` with one agent holding blocks b0,b1
// on ports 31000-31100, plus a second `mezzo agent` process holding
// b2,b3 on ports 32000-32100 (two agents on one host need apart ports:
// the elastic service's replicas bind them).
func twoAgentCluster(t *testing.T) *cluster {
	t.Helper()
	c := startLocal(t, 1, "--attributes=blocks:b0,b1", "--resources=cpus:2;mem:2048;disk:1000;ports:[31000-31100]")
	startProc(t, "agent2", "agent", "--master="+c.addr, "--ip=127.0.0.1", "--port="+strconv.Itoa(freePort(t)),
		"--work_dir="+filepath.Join(t.TempDir(), "agent2"), "--attributes=blocks:b2,b3",
		"--resources=cpus:2;mem:2048;disk:1000;ports:[32000-32100]")
	poll(t, "two agents registered", 30*time.Second, func() bool {
		var s struct {
			Slaves []json.RawMessage `json:"slaves"`
		}
		return getJSON(c.url("/master/slaves"), &s) == nil && len(s.Slaves) == 2
	})
	return c
}

// `mezzo batch` (paper §5.1): each task waits for the agent holding its
// block, and the task itself checks it was told it runs local (a task
// that is not exits 1, fails and is retried: the job would then report
// fewer local tasks).
func TestBatchFrameworkOnRealAgents(t *testing.T) {
	c := twoAgentCluster(t)
	code, out := runCmd(t, 90*time.Second, mezzoBin, "batch", "--master="+c.addr, "--blocks=b0,b1,b2,b3", "--delay=30s",
		"--resources=cpus:0.5;mem:64", "--json", "--",
		`test "$MEZZO_BATCH_LOCAL" = 1 && echo "scanned $MEZZO_BATCH_BLOCK"`)
	if code != 0 {
		t.Fatalf("mezzo batch: exit %d\n%s", code, out)
	}
	var res struct {
		Tasks, Local, Attempts int
		Locality               float64
		Jobs                   []struct{ Failed bool }
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &res); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	if res.Tasks != 4 || res.Local != 4 || res.Locality != 1 || res.Attempts != 4 || len(res.Jobs) != 1 || res.Jobs[0].Failed {
		t.Fatalf("result %+v\n%s", res, out)
	}
}

// `mezzo gang` (paper §4.4): a gang that fits starts whole, every rank
// told the others' hosts; one that cannot fit never starts a rank and
// gives its offers back after --hold.
func TestGangFrameworkOnRealAgents(t *testing.T) {
	c := twoAgentCluster(t)
	code, out := runCmd(t, 90*time.Second, mezzoBin, "gang", "--master="+c.addr, "--size=6", "--resources=cpus:0.5;mem:64",
		"--json", "--", `test "$MEZZO_GANG_SIZE" = 6 && test "$(echo $MEZZO_GANG_HOSTS | tr , '\n' | wc -l)" = 6`)
	if code != 0 {
		t.Fatalf("mezzo gang: exit %d\n%s", code, out)
	}
	var res struct {
		Jobs []struct {
			Tasks, Attempts int
			Failed          bool
		}
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &res); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	if len(res.Jobs) != 1 || res.Jobs[0].Tasks != 6 || res.Jobs[0].Attempts != 1 || res.Jobs[0].Failed {
		t.Fatalf("result %+v\n%s", res, out)
	}

	// 20 ranks of 0.5 cpus need 10 cpus; the cluster has 4.
	code, out = runCmd(t, 60*time.Second, mezzoBin, "gang", "--master="+c.addr, "--name=too-big", "--size=20",
		"--resources=cpus:0.5;mem:64", "--hold=1s", "--backoff=1s", "--timeout=5s", "--", "true")
	if code == 0 {
		t.Fatalf("a gang bigger than the cluster finished:\n%s", out)
	}
	var state struct {
		Frameworks []struct {
			Name  string            `json:"name"`
			Tasks []json.RawMessage `json:"tasks"`
		} `json:"frameworks"`
		CompletedFrameworks []struct {
			Name           string            `json:"name"`
			CompletedTasks []json.RawMessage `json:"completed_tasks"`
		} `json:"completed_frameworks"`
	}
	if err := getJSON(c.url("/master/state"), &state); err != nil {
		t.Fatal(err)
	}
	for _, f := range state.Frameworks {
		if f.Name == "too-big" && len(f.Tasks) > 0 {
			t.Fatalf("the gang that could not fit launched %d ranks", len(f.Tasks))
		}
	}
	for _, f := range state.CompletedFrameworks {
		if f.Name == "too-big" && len(f.CompletedTasks) > 0 {
			t.Fatalf("the gang that could not fit launched %d ranks", len(f.CompletedTasks))
		}
	}
}

// `mezzo elastic` (TR §5.4, §6.5): replicas (this binary's `elastic
// replica`, real processes) behind the balancer follow a load that rises
// and falls; requests are answered throughout. The last, low stretch is
// long enough for the balancer's 5 s meter to see the fall and for the
// 2 s scale-down delay to pass.
func TestElasticFrameworkOnRealAgents(t *testing.T) {
	c := twoAgentCluster(t)
	lb := "127.0.0.1:" + strconv.Itoa(freePort(t))
	code, out := runCmd(t, 120*time.Second, mezzoBin, "elastic", "--master="+c.addr, "--listen="+lb,
		"--resources=cpus:0.5;mem:64;ports:1", "--target=20", "--max=2", "--interval=500ms", "--scale_down_after=2s",
		"--replica_work=1ms", "--load=5:4s,50:8s,5:10s", "--json")
	if code != 0 {
		t.Fatalf("mezzo elastic: exit %d\n%s", code, out)
	}
	var res struct {
		Samples []struct {
			Running, Desired int
			Load             float64
		}
		Launched, Lost int
		Load           struct{ Sent, OK, Failed int }
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &res); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	peak, end := 0, res.Samples[len(res.Samples)-1].Running
	for _, s := range res.Samples {
		peak = max(peak, s.Running)
	}
	if peak != 2 || end != 1 || res.Lost != 0 {
		t.Fatalf("replicas: peak %d, at the end %d, lost %d; want 2, 1, 0\n%s", peak, end, res.Lost, out)
	}
	// Requests before the first replica runs fail with 503; after that
	// every one is answered.
	if res.Load.Sent == 0 || float64(res.Load.OK) < 0.9*float64(res.Load.Sent) {
		t.Fatalf("load: %+v", res.Load)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
