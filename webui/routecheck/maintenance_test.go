package routecheck

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/master"
)

func post(t *testing.T, mux http.Handler, path, body string) []byte {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	mux.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

// The maintenance page's data functions (static/js/maintenance.js) read
// what the real master writes: a framework holding an offer on the agent's
// machine gets an inverse offer once the machine is scheduled; node runs
// the page's pure functions on /master/maintenance/schedule,
// /master/maintenance/status and GET_FRAMEWORKS.
func TestMaintenancePageReadsTheMaster(t *testing.T) {
	nodeBin := needNode(t, "node is not installed: the maintenance page's functions are not run")
	m, mux, id := masterWithAgent(t, "cpus:4;mem:1024")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := m.Subscribe(ctx, master.Principal{}, &schedulerpb.Call{Type: schedulerpb.Call_SUBSCRIBE.Enum(),
		Subscribe: &schedulerpb.Call_Subscribe{FrameworkInfo: &mesos.FrameworkInfo{User: proto.String("u"), Name: proto.String("web")}}})
	if err != nil {
		t.Fatal(err)
	}
	fwID := st.FrameworkID()
	go func() { // keep the stream drained
		for {
			select {
			case <-st.Ready():
				if _, ended := st.Drain(); ended {
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	post(t, mux, "/master/maintenance/schedule",
		`{"windows":[{"machine_ids":[{"hostname":"a1"}],"unavailability":{"start":{"nanoseconds":1800000000000000000},"duration":{"nanoseconds":3600000000000}}}]}`)
	var frameworks []byte
	for deadline := time.Now().Add(30 * time.Second); ; {
		frameworks = post(t, mux, "/master/api/v1", `{"type":"GET_FRAMEWORKS"}`)
		if strings.Contains(string(frameworks), "inverse_offers") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no inverse offer in GET_FRAMEWORKS: %s", frameworks)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, bounded by the deadline
	}
	docs := map[string]json.RawMessage{
		"schedule":   get(t, mux, "/master/maintenance/schedule"),
		"status":     get(t, mux, "/master/maintenance/status"),
		"frameworks": frameworks,
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "docs.json")
	b, _ := json.Marshal(docs)
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	script := `
const fs = require("fs"), vm = require("vm");
const ctx = {doc: JSON.parse(fs.readFileSync(process.argv[2], "utf8"))};
vm.createContext(ctx);
vm.runInContext(fs.readFileSync(process.argv[1], "utf8") +
  "\nglobalThis.out = {machines: maintenanceRows(doc.schedule, doc.status), offers: inverseOfferRows(doc.frameworks)};", ctx);
process.stdout.write(JSON.stringify(ctx.out));
`
	out := runNode(t, nodeBin, "-e", script, filepath.Join("..", "ui", "static", "js", "maintenance.js"), in)
	var got struct {
		Machines []map[string]any `json:"machines"`
		Offers   []map[string]any `json:"offers"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node's output %q: %v", out, err)
	}
	if len(got.Machines) != 1 || got.Machines[0]["machine"] != "a1" || got.Machines[0]["mode"] != "DRAINING" ||
		got.Machines[0]["start"] != 1.8e9 || got.Machines[0]["duration"] != 3600.0 {
		t.Fatalf("machines %v", got.Machines)
	}
	if len(got.Offers) != 1 || got.Offers[0]["framework_id"] != fwID || got.Offers[0]["agent_id"] != id ||
		got.Offers[0]["framework"] != "web" || got.Offers[0]["hostname"] != "a1" || got.Offers[0]["start"] != 1.8e9 {
		t.Fatalf("inverse offers %v", got.Offers)
	}

	// The page itself renders (in node over testdata/dom.js) from the
	// same documents: the machine DRAINING for 1h, and the framework's
	// inverse offer for agent a1.
	for name, doc := range docs {
		if err := os.WriteFile(filepath.Join(dir, name+".json"), doc, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out = runNode(t, nodeBin, filepath.Join("testdata", "render_maintenance.js"), dir)
	var page struct {
		Page  string
		Asked []string
	}
	if err := json.Unmarshal(out, &page); err != nil {
		t.Fatalf("node's output %q: %v", out, err)
	}
	for _, want := range []string{"Machines", "a1 | DRAINING", "| 1h |", "Inverse offers by framework", "web | a1 |"} {
		if !strings.Contains(page.Page, want) {
			t.Errorf("the maintenance page lacks %q:\n%s", want, page.Page)
		}
	}
	if got := strings.Join(page.Asked, ", "); !strings.Contains(got, "POST master/api/v1 GET_FRAMEWORKS") ||
		!strings.Contains(got, "GET master/maintenance/status") {
		t.Errorf("the page asked %s", got)
	}
}
