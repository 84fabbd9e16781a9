package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The walk-through of docs/reservations.md on the real binaries: three
// masters, one agent. Reserve through the operator API, create a volume with
// `mezzo volumes create`, a writer task (`mezzo run --role=db --task=…`)
// writes a file into it, a reader task finds it; kill -9 the agent and
// restart it, kill -9 the leading master; the new leader learns the
// reservation and the volume from the agent, and a new task still reads the
// data. Bad requests get a clear 4xx and change nothing. Then destroy and
// unreserve: everything is back to "*".

const (
	rvRole      = "db"
	rvPrincipal = "ops"
	rvVolume    = "walkthrough"
)

// reservation is the JSON of a dynamic reservation for db by ops.
const reservation = `"reservations":[{"type":"DYNAMIC","role":"db","principal":"ops"}]`

func scalarJSON(name string, v float64, extra string) string {
	return fmt.Sprintf(`{"name":%q,"type":"SCALAR","scalar":{"value":%g},%s%s}`, name, v, reservation, extra)
}

// volumeJSON is the persistent volume as the agent holds it.
var volumeJSON = scalarJSON("disk", 512,
	`,"disk":{"persistence":{"id":"`+rvVolume+`","principal":"ops"},"volume":{"container_path":"data","mode":"RW"}}`)

// taskJSON is a task on the reservation that uses the volume.
func taskJSON(id, command string) string {
	return `{"name":"` + id + `","task_id":{"value":"` + id + `"},"command":{"value":` + fmt.Sprintf("%q", command) + `},` +
		`"resources":[` + scalarJSON("cpus", 0.25, "") + `,` + scalarJSON("mem", 32, "") + `,` + volumeJSON + `]}`
}

// agentView is one agent of /master/slaves.
type agentView struct {
	ID           string                       `json:"id"`
	Hostname     string                       `json:"hostname"`
	Active       bool                         `json:"active"`
	Resources    map[string]any               `json:"resources"`
	Reserved     map[string]map[string]any    `json:"reserved_resources"`
	Unreserved   map[string]any               `json:"unreserved_resources"`
	ReservedFull map[string][]json.RawMessage `json:"reserved_resources_full"`
}

// volumes lists the persistence IDs the agent holds for role.
func (a *agentView) volumes(role string) []string {
	var out []string
	for _, raw := range a.ReservedFull[role] {
		var r struct {
			Disk struct {
				Persistence struct{ ID string } `json:"persistence"`
			} `json:"disk"`
		}
		if json.Unmarshal(raw, &r) == nil && r.Disk.Persistence.ID != "" {
			out = append(out, r.Disk.Persistence.ID)
		}
	}
	return out
}

// fingerprint is what must not change when a request is refused: the
// agent's reservations and volumes as the leader shows them.
func (a *agentView) fingerprint() string {
	b, _ := json.Marshal(struct {
		R map[string]map[string]any
		F map[string][]json.RawMessage
		U map[string]any
	}{a.Reserved, a.ReservedFull, a.Unreserved})
	return string(b)
}

// agentOn reads the agent from the master at addr's /master/slaves.
func agentOn(addr, id string) (*agentView, error) {
	var doc struct {
		Slaves []agentView `json:"slaves"`
	}
	if err := getJSON("http://"+addr+"/master/slaves", &doc); err != nil {
		return nil, err
	}
	for i := range doc.Slaves {
		if doc.Slaves[i].ID == id {
			return &doc.Slaves[i], nil
		}
	}
	return nil, fmt.Errorf("agent %s is not registered with %s", id, addr)
}

// post sends a body to the master at addr and returns the status and body.
func post(t *testing.T, addr, path, contentType, body string) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Post("http://"+addr+path, contentType, strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// restart starts a killed process again with the same arguments.
func (c *haCluster) restart(p *proc) *proc {
	c.t.Helper()
	n := startProc(c.t, p.name, p.args...)
	for i, a := range c.agents {
		if a == p {
			c.agents[i] = n
		}
	}
	return n
}

// awaitAgent waits until the leader lists the agent as active and returns
// the leader's index and its view of the agent.
func (c *haCluster) awaitAgent(id, what string) (int, *agentView) {
	c.t.Helper()
	var leader int
	var view *agentView
	poll(c.t, what, 60*time.Second, func() bool {
		leader = c.awaitLeader("")
		a, err := agentOn(c.addrs[leader], id)
		if err != nil || !a.Active {
			return false
		}
		view = a
		return true
	})
	return leader, view
}

// runTask runs `mezzo run --role=db --task=FILE` against all masters.
func (c *haCluster) runTask(t *testing.T, name, task string) (int, string) {
	t.Helper()
	file := filepath.Join(t.TempDir(), name+".json")
	if err := os.WriteFile(file, []byte(task), 0o644); err != nil {
		t.Fatal(err)
	}
	return runCmd(t, 90*time.Second, mezzoBin, "run", "--master="+strings.Join(c.addrs, ","), "--name="+name,
		"--role="+rvRole, "--task="+file)
}

// requireDB requires the agent to hold the reservation and the volume.
func requireDB(t *testing.T, a *agentView, where string) {
	t.Helper()
	db := a.Reserved[rvRole]
	if num(db["cpus"]) != 1 || num(db["mem"]) != 256 || num(db["disk"]) != 1024 {
		t.Fatalf("%s: reserved to db = %v, want cpus 1, mem 256, disk 1024", where, db)
	}
	if v := a.volumes(rvRole); len(v) != 1 || v[0] != rvVolume {
		t.Fatalf("%s: volumes of db = %v, want [%s]", where, v, rvVolume)
	}
}

func TestReservationsWalkthrough(t *testing.T) {
	c := startHA(t)
	agent, id := c.startAgent("rv-a1")
	leader := c.awaitLeader("")
	addr := c.addrs[leader]
	initial, err := agentOn(addr, id)
	if err != nil {
		t.Fatal(err)
	}

	// 1. Reserve through the operator API.
	reserve := `{"type":"RESERVE_RESOURCES","reserve_resources":{"agent_id":{"value":"` + id + `"},"resources":[` +
		scalarJSON("cpus", 1, "") + `,` + scalarJSON("mem", 256, "") + `,` + scalarJSON("disk", 1024, "") + `]}}`
	if code, body := post(t, addr, "/api/v1", "application/json", reserve); code != http.StatusAccepted {
		t.Fatalf("RESERVE_RESOURCES: %d %s", code, body)
	}

	// 2. Create the volume with the CLI.
	code, out := runCmd(t, 30*time.Second, mezzoBin, "volumes", "create", "--master="+strings.Join(c.addrs, ","),
		"--agent="+id, "--role="+rvRole, "--id="+rvVolume, "--size=512", "--path=data")
	if code != 0 {
		t.Fatalf("mezzo volumes create: exit %d\n%s", code, out)
	}
	a, err := agentOn(addr, id)
	if err != nil {
		t.Fatal(err)
	}
	requireDB(t, a, "after CREATE")

	// 3. A writer task writes into the volume; 4. a reader finds the data.
	if code, out := c.runTask(t, "writer", taskJSON("writer", "echo hello-from-writer > data/hello.txt")); code != 0 {
		t.Fatalf("writer: exit %d\n%s", code, out)
	}
	reader := taskJSON("reader", `test "$(cat data/hello.txt)" = hello-from-writer`)
	if code, out := c.runTask(t, "reader", reader); code != 0 {
		t.Fatalf("reader: exit %d\n%s", code, out)
	}

	// Bad requests against the real binary: a clear 4xx, nothing changes.
	c.badRequests(t, id)

	// 5. kill -9 the agent and restart it: it comes back with its
	// reservation and volume (from its checkpoint).
	agent.kill()
	restarted := c.restart(agent)
	poll(t, "the restarted agent to register again under its ID", 60*time.Second, func() bool {
		return strings.Contains(restarted.logs(), `msg="registered with the master" agent_id=`+id)
	})
	_, a = c.awaitAgent(id, "the leader to list the restarted agent")
	requireDB(t, a, "after the agent's restart")

	// 6. kill -9 the leading master: the new leader learns the reservation
	// and the volume from the agent's re-registration.
	leader = c.awaitLeader("")
	c.masters[leader].kill()
	next := c.awaitLeader(c.addrs[leader])
	var st *agentView
	poll(t, "the agent to re-register with the new leader", 60*time.Second, func() bool {
		st, err = agentOn(c.addrs[next], id)
		return err == nil && st.Active
	})
	requireDB(t, st, "on the new leader")
	t.Logf("new leader %s learned the reservation and volume %s from agent %s", c.addrs[next], rvVolume, id)
	var state struct {
		Slaves []struct {
			ID       string                    `json:"id"`
			Reserved map[string]map[string]any `json:"reserved_resources"`
		} `json:"slaves"`
	}
	if err := getJSON("http://"+c.addrs[next]+"/master/state", &state); err != nil || len(state.Slaves) != 1 ||
		num(state.Slaves[0].Reserved[rvRole]["disk"]) != 1024 {
		t.Fatalf("/master/state on the new leader: %+v (%v)", state, err)
	}
	// 7. The data is still there for a new task.
	if code, out := c.runTask(t, "reader2", taskJSON("reader2", `test "$(cat data/hello.txt)" = hello-from-writer`)); code != 0 {
		t.Fatalf("reader after the failovers: exit %d\n%s", code, out)
	}

	// 8. Destroy (CLI) and unreserve (classic endpoint): back to "*".
	code, out = runCmd(t, 30*time.Second, mezzoBin, "volumes", "destroy", "--master="+strings.Join(c.addrs, ","),
		"--agent="+id, "--id="+rvVolume)
	if code != 0 {
		t.Fatalf("mezzo volumes destroy: exit %d\n%s", code, out)
	}
	addr = c.addrs[c.awaitLeader("")]
	form := url.Values{"slaveId": {id}, "resources": {"[" + scalarJSON("cpus", 1, "") + "," + scalarJSON("mem", 256, "") + "," +
		scalarJSON("disk", 1024, "") + "]"}}
	if code, body := post(t, addr, "/master/unreserve", "application/x-www-form-urlencoded", form.Encode()); code != http.StatusAccepted {
		t.Fatalf("/master/unreserve: %d %s", code, body)
	}
	final, err := agentOn(addr, id)
	if err != nil {
		t.Fatal(err)
	}
	if len(final.Reserved) != 0 || len(final.ReservedFull) != 0 {
		t.Fatalf("still reserved after UNRESERVE: %v", final.Reserved)
	}
	for _, k := range []string{"cpus", "mem", "disk"} {
		if num(final.Unreserved[k]) != num(initial.Unreserved[k]) || num(final.Unreserved[k]) == 0 {
			t.Fatalf("unreserved %s = %v, want %v as at the start", k, final.Unreserved[k], initial.Unreserved[k])
		}
	}
	// The agent dropped the volume's directory with the DESTROY.
	dir := filepath.Join(c.dir, "rv-a1", "volumes", "roles", rvRole, rvVolume)
	poll(t, "the agent to remove the destroyed volume's directory", 30*time.Second, func() bool {
		_, err := os.Stat(dir)
		return os.IsNotExist(err)
	})
}

// badRequests sends what must be refused, each against the leader, and
// checks the answer and that the agent's reservations and volumes did not
// change.
func (c *haCluster) badRequests(t *testing.T, id string) {
	t.Helper()
	addr := c.addrs[c.awaitLeader("")]
	before, err := agentOn(addr, id)
	if err != nil {
		t.Fatal(err)
	}
	freeVolume := `{"name":"disk","type":"SCALAR","scalar":{"value":10},"disk":{"persistence":{"id":"loose"},"volume":{"container_path":"x","mode":"RW"}}}`
	cases := []struct {
		name, path, ctype, body string
		status                  int
		want                    string
	}{
		{"unknown agent", "/api/v1", "application/json",
			`{"type":"RESERVE_RESOURCES","reserve_resources":{"agent_id":{"value":"no-such-agent"},"resources":[` + scalarJSON("cpus", 1, "") + `]}}`,
			400, "No agent found"},
		{"resources not available", "/master/reserve", "application/x-www-form-urlencoded",
			url.Values{"slaveId": {id}, "resources": {"[" + scalarJSON("cpus", 64, "") + "]"}}.Encode(), 409, "not available"},
		{"volume on unreserved disk", "/api/v1", "application/json",
			`{"type":"CREATE_VOLUMES","create_volumes":{"agent_id":{"value":"` + id + `"},"volumes":[` + freeVolume + `]}}`,
			400, "unreserved"},
		{"duplicate persistence ID", "/master/create-volumes", "application/x-www-form-urlencoded",
			url.Values{"slaveId": {id}, "volumes": {"[" + strings.Replace(volumeJSON, `512`, `100`, 1) + "]"}}.Encode(), 400, rvVolume},
		{"GET on a write endpoint", "", "", "", 405, "POST"},
	}
	for _, tc := range cases {
		var code int
		var body string
		if tc.path == "" {
			resp, err := http.Get("http://" + addr + "/master/create-volumes")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			code, body = resp.StatusCode, string(b)
		} else {
			code, body = post(t, addr, tc.path, tc.ctype, tc.body)
		}
		if code != tc.status || !strings.Contains(body, tc.want) {
			t.Fatalf("%s: %d %q, want %d containing %q", tc.name, code, body, tc.status, tc.want)
		}
		c.requireUnchanged(t, addr, id, before, tc.name)
	}

	// DESTROY of a volume a running task uses.
	holderFile := filepath.Join(t.TempDir(), "holder.json")
	if err := os.WriteFile(holderFile, []byte(taskJSON("holder", "sleep 120")), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	holder := exec.CommandContext(ctx, mezzoBin, "run", "--master="+strings.Join(c.addrs, ","), "--name=holder",
		"--role="+rvRole, "--task="+holderFile)
	var out bytes.Buffer
	holder.Stdout, holder.Stderr = &out, &out
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	poll(t, "the holder task to run", 60*time.Second, func() bool {
		st, err := c.state(c.awaitLeader(""))
		if err != nil {
			return false
		}
		for _, fw := range st.Frameworks {
			for _, tk := range fw.Tasks {
				if tk.ID == "holder" && tk.State == "TASK_RUNNING" {
					return true
				}
			}
		}
		return false
	})
	destroy := `{"type":"DESTROY_VOLUMES","destroy_volumes":{"agent_id":{"value":"` + id + `"},"volumes":[` + volumeJSON + `]}}`
	if code, body := post(t, addr, "/api/v1", "application/json", destroy); code != http.StatusBadRequest || !strings.Contains(body, "holder") {
		t.Fatalf("DESTROY of a volume in use: %d %q, want 400 naming the task", code, body)
	}
	c.requireUnchanged(t, addr, id, before, "DESTROY of a volume in use")
	// SIGTERM: `mezzo run` tears its framework down, which kills the task.
	holder.Process.Signal(syscall.SIGTERM)
	holder.Wait()
	poll(t, "the holder task to end", 60*time.Second, func() bool {
		st, err := c.state(c.awaitLeader(""))
		if err != nil {
			return false
		}
		for _, fw := range st.Frameworks {
			for _, tk := range fw.Tasks {
				if tk.ID == "holder" {
					return false
				}
			}
		}
		return true
	})
}

func (c *haCluster) requireUnchanged(t *testing.T, addr, id string, before *agentView, what string) {
	t.Helper()
	after, err := agentOn(addr, id)
	if err != nil {
		t.Fatal(err)
	}
	if after.fingerprint() != before.fingerprint() {
		t.Fatalf("%s changed the agent's resources:\nbefore %s\nafter  %s", what, before.fingerprint(), after.fingerprint())
	}
}

// sharedVolumeJSON is a shared persistent volume of 256 MB on disk
// reserved to db by ops.
var sharedVolumeJSON = scalarJSON("disk", 256,
	`,"disk":{"persistence":{"id":"shared-data","principal":"ops"},"volume":{"container_path":"data","mode":"RW"}},"shared":{}`)

// sharedTaskJSON is a task on the reservation that uses the shared volume.
func sharedTaskJSON(id, command string) string {
	return `{"name":"` + id + `","task_id":{"value":"` + id + `"},"command":{"value":` + fmt.Sprintf("%q", command) + `},` +
		`"resources":[` + scalarJSON("cpus", 0.25, "") + `,` + scalarJSON("mem", 32, "") + `,` + sharedVolumeJSON + `]}`
}

// waitFor is a shell loop that waits (at most 60 s) for a file in the
// volume: the tasks' own handshake, so that one can only finish while the
// other runs.
func waitFor(file string) string {
	return `i=0; while [ ! -f data/` + file + ` ]; do i=$((i+1)); [ $i -gt 600 ] && exit 3; sleep 0.1; done`
}

// Two users of one shared persistent volume at once, on the real binary
// (docs/reservations.md, "Shared volumes"): two `mezzo run` frameworks of
// the role db (each declares SHARED_RESOURCES, its task naming a shared
// volume) run tasks on the volume together: task a writes a file and
// waits for b's; b, launched while a runs (the volume is offered again
// while in use), waits for a's file and writes its own. Each can only
// succeed if both ran at the same time. DESTROY is refused while a task
// uses the volume and accepted once both ended.
func TestSharedVolumeConcurrentUsers(t *testing.T) {
	c := startLocal(t, 1)
	id, _ := onlyAgent(t, c)
	reserve := `{"type":"RESERVE_RESOURCES","reserve_resources":{"agent_id":{"value":"` + id + `"},"resources":[` +
		scalarJSON("cpus", 1, "") + `,` + scalarJSON("mem", 256, "") + `,` + scalarJSON("disk", 512, "") + `]}}`
	if code, body := post(t, c.addr, "/api/v1", "application/json", reserve); code != http.StatusAccepted {
		t.Fatalf("RESERVE_RESOURCES: %d %s", code, body)
	}
	create := `{"type":"CREATE_VOLUMES","create_volumes":{"agent_id":{"value":"` + id + `"},"volumes":[` + sharedVolumeJSON + `]}}`
	if code, body := post(t, c.addr, "/api/v1", "application/json", create); code != http.StatusAccepted {
		t.Fatalf("CREATE_VOLUMES (shared): %d %s", code, body)
	}

	runIn := func(name, task string) *exec.Cmd {
		file := filepath.Join(t.TempDir(), name+".json")
		if err := os.WriteFile(file, []byte(task), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		t.Cleanup(cancel)
		cmd := exec.CommandContext(ctx, mezzoBin, "run", "--master="+c.addr, "--name="+name, "--role="+rvRole, "--task="+file)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("mezzo run %s:\n%s", name, out.String())
			}
		})
		return cmd
	}
	running := func(task string) bool {
		var v struct {
			Tasks []struct{ ID, State string }
		}
		if err := getJSON(c.url("/master/tasks?limit=-1"), &v); err != nil {
			return false
		}
		for _, tk := range v.Tasks {
			if tk.ID == task && tk.State == "TASK_RUNNING" {
				return true
			}
		}
		return false
	}

	a := runIn("shared-a", sharedTaskJSON("shared-a", "echo a > data/a; "+waitFor("b")))
	poll(t, "task shared-a to run on the shared volume", 60*time.Second, func() bool { return running("shared-a") })
	destroy := `{"type":"DESTROY_VOLUMES","destroy_volumes":{"agent_id":{"value":"` + id + `"},"volumes":[` + sharedVolumeJSON + `]}}`
	if code, body := post(t, c.addr, "/api/v1", "application/json", destroy); code != http.StatusBadRequest || !strings.Contains(body, "shared-a") {
		t.Fatalf("DESTROY of the shared volume in use: %d %q, want 400 naming the task", code, body)
	}
	b := runIn("shared-b", sharedTaskJSON("shared-b", waitFor("a")+"; echo b > data/b"))
	for name, cmd := range map[string]*exec.Cmd{"shared-a": a, "shared-b": b} {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("mezzo run %s: %v (each task waits for the other's file: both must run at once)", name, err)
		}
	}
	poll(t, "the tasks' copies of the volume to come back", 30*time.Second, func() bool {
		code, _ := post(t, c.addr, "/api/v1", "application/json", destroy)
		return code == http.StatusAccepted
	})
	var slaves struct {
		Slaves []agentView `json:"slaves"`
	}
	if err := getJSON(c.url("/master/slaves"), &slaves); err != nil || len(slaves.Slaves) != 1 {
		t.Fatalf("/master/slaves: %v %+v", err, slaves)
	}
	if v := slaves.Slaves[0].volumes(rvRole); len(v) != 0 {
		t.Fatalf("volumes after DESTROY: %v", v)
	}
}
