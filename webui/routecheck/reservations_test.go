package routecheck

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"mezzo/api/codec"
	"mezzo/api/mesos"
	"mezzo/master"
	"mezzo/master/endpoints"
	"mezzo/master/mastertest"
)

// The reservations page's data functions (static/js/reservations.js) read
// what the real master writes: a real master with one agent gets a
// dynamic reservation with labels and a persistent volume through
// ApplyOperation; node runs the page's pure functions on the master's
// /master/slaves and the rows must say what was done. Needs node (the UI
// has no build step, so there is no other JavaScript engine at hand).
// reservedCluster is a real master with one agent holding a static
// reservation, a dynamic one with labels (made through ApplyOperation) and
// a persistent volume on it. It returns the master's endpoints, the agent's
// ID and the volume as JSON.
func reservedCluster(t *testing.T) (*http.ServeMux, string, string) {
	t.Helper()
	m, mux, id := masterWithAgent(t, "cpus:4;mem:1024;disk:2000;disk(static):100")
	res := `"reservations":[{"type":"DYNAMIC","role":"db","principal":"ops","labels":{"labels":[{"key":"team","value":"storage"}]}}]`
	apply := func(typ mesos.Offer_Operation_Type, rs string) {
		t.Helper()
		op := &mesos.Offer_Operation{}
		js := `{"type":"` + typ.String() + `",` + rs + `}`
		if err := codec.Unmarshal(codec.JSON, []byte(js), op); err != nil {
			t.Fatal(err)
		}
		if err := m.ApplyOperation(context.Background(), master.Principal{}, id, op); err != nil {
			t.Fatalf("%s: %v", typ, err)
		}
	}
	scalar := func(name string, v string) string {
		return `{"name":"` + name + `","type":"SCALAR","scalar":{"value":` + v + `},` + res + `}`
	}
	apply(mesos.Offer_Operation_RESERVE, `"reserve":{"resources":[`+scalar("cpus", "1")+`,`+scalar("mem", "256")+`,`+scalar("disk", "1000")+`]}`)
	volume := `{"name":"disk","type":"SCALAR","scalar":{"value":500},` + res +
		`,"disk":{"persistence":{"id":"pg","principal":"ops"},"volume":{"container_path":"data","mode":"RW"}}}`
	apply(mesos.Offer_Operation_CREATE, `"create":{"volumes":[`+volume+`]}`)
	return mux, id, volume
}

// get reads a master endpoint.
func get(t *testing.T, mux http.Handler, path string) []byte {
	t.Helper()
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

// withVolumeInUse adds the volume to the agent's used resources in a
// /master/slaves document, as a task holding it makes the master show.
func withVolumeInUse(t *testing.T, slaves []byte, volume string) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(slaves, &doc); err != nil {
		t.Fatal(err)
	}
	agent := doc["slaves"].([]any)[0].(map[string]any)
	var vol map[string]any
	json.Unmarshal([]byte(volume), &vol)
	vol["allocation_info"] = map[string]any{"role": "db"}
	agent["used_resources_full"] = append(agent["used_resources_full"].([]any), vol)
	body, _ := json.Marshal(doc)
	return body
}

// The reservations page's data functions (static/js/reservations.js) read
// what the real master writes: node runs the page's pure functions on the
// master's /master/slaves and the rows must say what was done. Needs node
// (the UI has no build step, so there is no other JavaScript engine at
// hand).
func TestReservationsPageReadsTheMastersSlaves(t *testing.T) {
	nodeBin := needNode(t, "node is not installed: the reservations page's functions are not run")
	mux, id, volume := reservedCluster(t)
	slaves := get(t, mux, "/master/slaves")
	got := runPage(t, nodeBin, slaves)
	want := pageRows{
		Reservations: []map[string]any{
			{"agent_id": id, "hostname": "a1", "port": 5051.0, "role": "db", "type": "dynamic", "principal": "ops", "labels": "team=storage",
				"resources": map[string]any{"cpus": 1.0, "mem": 256.0, "disk": 1000.0}, "volumes": 1.0},
			{"agent_id": id, "hostname": "a1", "port": 5051.0, "role": "static", "type": "static", "principal": "", "labels": "",
				"resources": map[string]any{"disk": 100.0}, "volumes": 0.0},
		},
		Roles: []map[string]any{
			{"role": "db", "resources": map[string]any{"cpus": 1.0, "mem": 256.0, "disk": 1000.0}, "agents": 1.0, "principals": []any{"ops"}, "volumes": 1.0},
			{"role": "static", "resources": map[string]any{"disk": 100.0}, "agents": 1.0, "principals": []any{}, "volumes": 0.0},
		},
		Volumes: []map[string]any{
			{"agent_id": id, "hostname": "a1", "port": 5051.0, "role": "db", "id": "pg", "size": 500.0, "path": "data", "mode": "RW",
				"principal": "ops", "shared": false, "source": "", "in_use": false},
		},
	}
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Fatalf("page rows\n%s\nwant\n%s", g, w)
	}

	// A task holding the volume shows in the agent's used resources: the
	// volume is "in use".
	if got := runPage(t, nodeBin, withVolumeInUse(t, slaves, volume)); len(got.Volumes) != 1 || got.Volumes[0]["in_use"] != true {
		t.Fatalf("volume used by a task: %v", got.Volumes)
	}
}

// The reservations page and an agent's page render (in node over a small
// DOM, testdata/dom.js) from a real master's /master/state and
// /master/slaves: by role, by agent with principal and labels, and the
// volume with its path, size and use. This runs the views' code, which the
// static checks of package webui cannot.
func TestReservationsPagesRender(t *testing.T) {
	nodeBin := needNode(t, "node is not installed: the pages are not rendered")
	mux, id, volume := reservedCluster(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "state.json"), get(t, mux, "/master/state"), 0o644)
	os.WriteFile(filepath.Join(dir, "slaves.json"), withVolumeInUse(t, get(t, mux, "/master/slaves"), volume), 0o644)
	out := runNode(t, nodeBin, filepath.Join("testdata", "render.js"), dir)
	var pages struct {
		Reservations, Agent string
		Asked               []string
	}
	if err := json.Unmarshal(out, &pages); err != nil {
		t.Fatalf("node's output %q: %v", out, err)
	}
	for _, want := range []string{
		"By role", "db | cpus 1 · disk 1000 MB · mem 256 MB | 1 | ops | 1",
		"static | disk 100 MB | 1 | – | 0",
		"a1:5051 | db | cpus 1 · disk 1000 MB · mem 256 MB | dynamic | ops | team=storage | 1",
		"a1:5051 | static | disk 100 MB | static | – | – | 0",
		"a1:5051 | pg | db | 500 MB | data | ops | in use | no",
	} {
		if !strings.Contains(pages.Reservations, want) {
			t.Errorf("the reservations page lacks %q:\n%s", want, pages.Reservations)
		}
	}
	for _, want := range []string{
		"Reservations", "db | cpus 1 · disk 1000 MB · mem 256 MB | dynamic | ops | team=storage | 1",
		"Persistent volumes", "pg | db | 500 MB | data | ops | in use | no",
	} {
		if !strings.Contains(pages.Agent, want) {
			t.Errorf("the agent's page lacks %q:\n%s", want, pages.Agent)
		}
	}
	if want := `master/slaves{"slave_id":"` + id + `"}`; !strings.Contains(strings.Join(pages.Asked, " "), want) {
		t.Errorf("the agent's page asked %v, want %s", pages.Asked, want)
	}
}

type pageRows struct {
	Reservations []map[string]any `json:"reservations"`
	Roles        []map[string]any `json:"roles"`
	Volumes      []map[string]any `json:"volumes"`
}

// runPage runs reservations.js's pure functions in node on a
// /master/slaves document.
func runPage(t *testing.T, nodeBin string, slaves []byte) pageRows {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "slaves.json")
	if err := os.WriteFile(in, slaves, 0o644); err != nil {
		t.Fatal(err)
	}
	script := `
const fs = require("fs"), vm = require("vm");
const ctx = {doc: JSON.parse(fs.readFileSync(process.argv[2], "utf8"))};
vm.createContext(ctx);
vm.runInContext(fs.readFileSync(process.argv[1], "utf8") +
  "\nglobalThis.out = {reservations: reservationRows(doc.slaves), roles: roleReservations(doc.slaves), volumes: volumeRows(doc.slaves)};", ctx);
process.stdout.write(JSON.stringify(ctx.out));
`
	out := runNode(t, nodeBin, "-e", script, filepath.Join("..", "ui", "static", "js", "reservations.js"), in)
	var rows pageRows
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("node's output %q: %v", out, err)
	}
	return rows
}

// masterWithAgent starts a real master with one agent subscribed
// in-process and the master's endpoints on a mux.
func masterWithAgent(t *testing.T, agentRes string) (*master.Master, *http.ServeMux, string) {
	t.Helper()
	m, err := master.New(master.Config{ID: "m1", Hostname: "m", IP: "127.0.0.1", Port: 5050, Version: "test",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	t.Cleanup(m.Stop)
	id, _ := mastertest.SubscribeAgent(t, m, agentRes)
	for end := time.Now().Add(10 * time.Second); !strings.Contains(agentIDs(m), id); {
		if time.Now().After(end) {
			t.Fatal("the agent never showed in the snapshot")
		}
		time.Sleep(time.Millisecond) // polling interval, bounded by the deadline
	}
	mux := http.NewServeMux()
	endpoints.Register(mux, m, endpoints.Options{})
	return m, mux, id
}

func agentIDs(m *master.Master) string {
	var ids []string
	for _, a := range m.Snapshot().Agents {
		ids = append(ids, a.Info.GetId().GetValue())
	}
	return strings.Join(ids, ",")
}
