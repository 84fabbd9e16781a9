package browsertest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// page is a UI route and the DOM condition that says it has rendered what
// the master and the agents hold.
type page struct {
	name  string // screenshot file name
	hash  string
	ready string // JavaScript condition
	at    string // the hash the page moves to, when it is not hash (a prefix)
}

// mainText is the text of the page's main area.
const mainText = `document.getElementById("main").innerText`

// settled holds once no placeholder of a pending read is on the page and
// no error banner shows.
const settled = `(document.querySelector("#main h1") !== null &&
  !/Loading…|Reading…|Reading the agent|Locating the sandbox|Locating|measuring…/.test(` + mainText + `) &&
  (document.getElementById("banner").hidden || !document.getElementById("banner").classList.contains("error")))`

// hasCell holds when a table cell of the main area shows exactly text.
func hasCell(text string) string {
	return `[...document.querySelectorAll("#main td, #main td *")].some((n) => n.textContent.trim() === ` + jsString(text) + `)`
}

// h1Is holds when the page's title starts with text.
func h1Is(text string) string {
	return `(document.querySelector("#main h1")?.textContent || "").startsWith(` + jsString(text) + `)`
}

// logShows holds when the log panel shows text.
func logShows(text string) string {
	return `(document.querySelector("pre.log")?.textContent || "").includes(` + jsString(text) + `)`
}

// pagesOf lists every page of the UI for a cluster running tk (a task that
// prints "line N"): the navigation's pages, read from the page itself so
// that a view added later is visited too, and the detail pages.
func pagesOf(tb *tab, tk task, fwName string) []page {
	known := map[string]page{
		"#/":             {"overview", "#/", h1Is("Cluster") + " && " + hasCell(fwName), ""},
		"#/frameworks":   {"frameworks", "#/frameworks", h1Is("Frameworks") + " && " + hasCell(fwName), ""},
		"#/agents":       {"agents", "#/agents", h1Is("Agents") + " && " + hasCell(tk.SlaveID), ""},
		"#/tasks":        {"tasks", "#/tasks", h1Is("Tasks") + " && " + hasCell(tk.ID), ""},
		"#/roles":        {"roles", "#/roles", h1Is("Roles") + " && " + hasCell("*"), ""},
		"#/reservations": {"reservations", "#/reservations", h1Is("Reservations"), ""},
		"#/maintenance":  {"maintenance", "#/maintenance", h1Is("Maintenance"), ""},
	}
	var out []page
	hrefs := eval[[]string](tb, `[...document.querySelectorAll("#nav a")].map((a) => a.getAttribute("href"))`)
	if len(hrefs) < 6 {
		tb.t.Fatalf("the navigation has %d links: %v", len(hrefs), hrefs)
	}
	for _, h := range hrefs {
		p, ok := known[h]
		if !ok {
			// A page this suite does not know yet (maintenance, drain):
			// it must still render without errors.
			p = page{strings.Trim(strings.ReplaceAll(h, "/", "-"), "#-"), h, "true", ""}
		}
		out = append(out, p)
	}
	return append(out,
		page{"framework", "#/frameworks/" + tk.FrameworkID, h1Is(fwName) + ` && document.querySelector(".explain") !== null && ` + hasCell(tk.ID), ""},
		page{"agent", "#/agents/" + tk.SlaveID, hasCell(tk.ID) + " && " + `[...document.querySelectorAll("#main a")].some((a) => a.textContent === "sandbox")`, ""},
		page{"task", "#/tasks/" + tk.FrameworkID + "/" + tk.ID,
			h1Is(tk.Name) + " && " + `document.querySelector("#task-history td") !== null && ` +
				`/CPU/.test(document.getElementById("task-usage").innerText) && ` + logShows("line "), ""},
		page{"sandbox", "#/task/" + tk.SlaveID + "/" + tk.FrameworkID + "/" + tk.ID,
			h1Is("Sandbox of task") + " && " + hasCell("stdout") + " && " + logShows("line "), "#/sandbox/" + tk.SlaveID + "?"},
	)
}

// visit shows a page (a hash route of the loaded UI) and waits until it
// has rendered; a console error fails the test, naming the page.
func visit(tb *tab, p page) {
	tb.t.Helper()
	tb.goTo(p.hash)
	at := `location.hash === ` + jsString(p.hash)
	if p.at != "" {
		at = `location.hash.startsWith(` + jsString(p.at) + `)`
	}
	tb.wait("page "+p.hash, at+` && `+settled+` && (`+p.ready+`)`)
	tb.checkConsole("on " + p.hash)
}

// TestEveryPageLoadsWithoutConsoleErrors opens every page of the UI, with a
// task running, and fails on any console error or uncaught exception.
func TestEveryPageLoadsWithoutConsoleErrors(t *testing.T) {
	need(t)
	c := startCluster(t, 1, 2)
	c.run("pages", counter)
	tk := c.awaitTask("pages", "TASK_RUNNING")
	tb := newTab(t)
	tb.open(url(c.masters[0], "#/"))
	tb.wait("the overview", settled+" && "+h1Is("Cluster"))
	tb.checkConsole("on first load")
	eval[bool](tb, `(performance.setResourceTimingBufferSize(100000), true)`)
	pages := pagesOf(tb, tk, "pages")
	for _, p := range pages {
		visit(tb, p)
	}
	// Every request went to the master, the agents' endpoints through its
	// proxy: the UI works where only the master is reachable.
	foreign := eval[[]string](tb, `performance.getEntriesByType("resource").map((e) => e.name).filter((u) => new URL(u).origin !== location.origin)`)
	if len(foreign) > 0 {
		t.Errorf("the page read other origins than the master: %v", foreign)
	}
	proxied := eval[[]string](tb, `[...new Set(performance.getEntriesByType("resource").map((e) => new URL(e.name).pathname).filter((p) => p.startsWith("/agent/")).map((p) => p.replace(/^\/agent\/[^/]+/, "")))].sort()`)
	for _, want := range []string{"/files/browse", "/files/read", "/monitor/statistics", "/slave(1)/state"} {
		if !contains(proxied, want) {
			t.Errorf("the pages read %v through the master's agent proxy; %s is missing", proxied, want)
		}
	}
	// And each page loaded on its own (a fresh document, not a hash change).
	for _, p := range pages {
		tb.open(url(c.masters[0], p.hash))
		tb.wait("page "+p.hash+" (loaded directly)", settled+" && ("+p.ready+")")
		tb.checkConsole("on " + p.hash + " (loaded directly)")
	}
	// A page that does not exist says so, without an error.
	visit(tb, page{"", "#/no/such/page", h1Is("Not found"), ""})
}

// TestLiveUpdates: a task started after the page loaded appears on it
// without a reload.
func TestLiveUpdates(t *testing.T) {
	need(t)
	c := startCluster(t, 1, 1)
	tb := newTab(t)
	tb.open(url(c.masters[0], "#/tasks"))
	tb.wait("the empty task list", settled+" && "+h1Is("Tasks")+" && "+hasCell("No tasks."))
	eval[bool](tb, `(window.__sameDocument = true)`)
	c.run("late", "sleep 600")
	tk := c.awaitTask("late")
	tb.wait("the task started after the page loaded", hasCell(tk.ID)+" && "+hasCell("late"))
	tb.wait("the task's state to reach RUNNING", `[...document.querySelectorAll("#main .pill")].some((p) => p.textContent === "RUNNING")`)
	if !eval[bool](tb, `window.__sameDocument === true`) {
		t.Fatal("the page was reloaded; the task should have appeared through the live refresh")
	}
	// The overview's counts follow too.
	tb.goTo("#/")
	tb.wait("the overview counting the running task", settled+` && [...document.querySelectorAll(".card")].some((c) => /RUNNING/i.test(c.querySelector(".label")?.textContent || "") && c.querySelector(".value")?.textContent === "1")`)
}

// TestLogTails: the task page shows a task's stdout and keeps showing what
// the task writes, without a reload.
func TestLogTails(t *testing.T) {
	need(t)
	c := startCluster(t, 1, 1)
	c.run("counter", counter)
	tk := c.awaitTask("counter", "TASK_RUNNING")
	tb := newTab(t)
	tb.open(url(c.masters[0], "#/tasks/"+tk.FrameworkID+"/"+tk.ID))
	tb.wait("the first lines of stdout", logShows("line 1\n"))
	eval[bool](tb, `(window.__sameDocument = true)`)
	last := eval[int](tb, `Math.max(...(document.querySelector("pre.log").textContent.match(/line (\d+)/g) || ["line 0"]).map((s) => +s.slice(5)))`)
	want := fmt.Sprintf("line %d\n", last+10)
	tb.wait("later lines ("+strings.TrimSpace(want)+")", logShows(want))
	if !eval[bool](tb, `window.__sameDocument === true`) {
		t.Fatal("the page was reloaded; the log should have grown in place")
	}
	// The history shows the task's statuses with their source.
	tb.wait("the status history", `[...document.querySelectorAll("#task-history tbody tr")].some((r) => /RUNNING/.test(r.textContent) && /EXECUTOR/.test(r.textContent))`)
	tb.checkConsole("while following the log")
}

// TestTaskPageShowsHealth: a task with a health check shows it healthy on
// its page, with the check and a history entry carrying the health.
func TestTaskPageShowsHealth(t *testing.T) {
	need(t)
	c := startCluster(t, 1, 1)
	c.runChecked("checked", "echo checked; sleep 600")
	tk := c.awaitTask("checked", "TASK_RUNNING")
	tb := newTab(t)
	tb.open(url(c.masters[0], "#/tasks/"+tk.FrameworkID+"/"+tk.ID))
	tb.wait("the task healthy, with its check", settled+` && [...document.querySelectorAll("#main .pill.ok")].some((p) => p.textContent === "healthy") && `+
		`/COMMAND true every 1s/.test(`+mainText+`) && `+
		`[...document.querySelectorAll("#task-history tbody tr")].some((r) => /healthy/.test(r.textContent))`)
	tb.checkConsole("on the task page")
}

// TestFollowerRedirectsToLeader: a page opened on a follower master ends up
// on the leader, on the same view, showing the cluster.
func TestFollowerRedirectsToLeader(t *testing.T) {
	need(t)
	c := startCluster(t, 3, 1)
	// Masters are named by port: the leader's address may use its
	// hostname where --masters lists 127.0.0.1.
	_, leaderPort, _ := net.SplitHostPort(c.leader())
	var follower string
	for _, m := range c.masters {
		if _, port, _ := net.SplitHostPort(m); port != leaderPort {
			follower = m
			break
		}
	}
	if follower == "" {
		t.Fatalf("no follower among %v (leader port %s)", c.masters, leaderPort)
	}
	tb := newTab(t)
	tb.open(url(follower, "#/agents"))
	tb.wait("the leader's agents page", `location.port === `+jsString(leaderPort)+` && location.hash === "#/agents" && `+settled+` && `+
		`document.querySelectorAll("#main tbody tr td a").length >= 1`)
	tb.checkConsole("after the redirect")
}

// TestScreenshots writes PNGs of the main pages to -screenshots=DIR
// (`make screenshots`), using the same pages and waits as the tests above.
func TestScreenshots(t *testing.T) {
	if *screenshots == "" {
		t.Skip("screenshots are taken only with -screenshots=DIR (make screenshots)")
	}
	need(t)
	dir, err := filepath.Abs(*screenshots)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, 1, 2)
	c.run("hello", `echo "hello from mezzo"`)
	c.run("fails", `echo "about to fail" >&2; exit 3`)
	c.run("web", `echo "serving on :8080"; while true; do echo "GET / 200 $(date +%T)"; sleep 1; done`)
	c.runChecked("batch", counter)
	c.awaitTask("hello", "TASK_FINISHED")
	failed := c.awaitTask("fails", "TASK_FAILED")
	c.awaitTask("web", "TASK_RUNNING")
	tk := c.awaitTask("batch", "TASK_RUNNING")
	// A machine (not one of the agents) scheduled for maintenance in an
	// hour, for the maintenance page.
	start := time.Now().Add(time.Hour).UnixNano()
	schedule := fmt.Sprintf(`{"windows": [{"machine_ids": [{"hostname": "rack2-node7", "ip": "10.0.2.7"}],
		"unavailability": {"start": {"nanoseconds": %d}, "duration": {"nanoseconds": %d}}}]}`, start, int64(4*time.Hour))
	resp, err := client.Post("http://"+c.leader()+"/master/maintenance/schedule", "application/json", strings.NewReader(schedule))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST /master/maintenance/schedule: %s", resp.Status)
	}
	tb := newTab(t)
	tb.open(url(c.masters[0], "#/"))
	tb.wait("the overview", settled+" && "+h1Is("Cluster"))
	pages := append(pagesOf(tb, tk, "batch"), page{"task-failed", "#/tasks/" + failed.FrameworkID + "/" + failed.ID,
		h1Is("fails") + ` && /REASON|FAILED/.test(document.getElementById("task-history").innerText) && ` + logShows(""), ""})
	for _, p := range pages {
		visit(tb, p)
		if p.name == "task" {
			// Two statistics samples, so the CPU card shows a rate; and
			// the first health check's result.
			tb.wait("a CPU rate and the health", `/ of /.test(document.getElementById("task-usage").innerText) && `+
				`[...document.querySelectorAll("#main .pill.ok")].some((p) => p.textContent === "healthy")`)
		}
		png, err := chromedp.Run(tb.ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot of %s: %v", p.hash, err)
		}
		name := filepath.Join(dir, "webui-"+p.name+".png")
		if err := os.WriteFile(name, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", name)
	}
}
