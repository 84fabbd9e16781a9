package browsertest

import (
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// TestEachPrincipalSeesItsOwn: behind --authenticate_http_readonly the UI
// asks for credentials (401 with a Basic challenge, which makes a browser
// prompt), and once alice is signed in it shows her framework and task,
// her task's log, and nothing of bob's (--acls view_frameworks and
// view_tasks by user).
func TestEachPrincipalSeesItsOwn(t *testing.T) {
	need(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	creds := write("credentials", "alice alice-pw\nops ops-pw\nagent agent-pw\n")
	agentCred := write("agent.cred", "agent agent-pw\n")
	acls := write("acls.json", `{
  "view_frameworks": [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}},
                      {"principals": {"values": ["alice"]}, "users": {"values": ["nobody"]}},
                      {"principals": {"values": ["alice"]}, "users": {"type": "NONE"}}],
  "view_tasks":      [{"principals": {"values": ["ops"]}, "users": {"type": "ANY"}},
                      {"principals": {"values": ["alice"]}, "users": {"values": ["nobody"]}},
                      {"principals": {"values": ["alice"]}, "users": {"type": "NONE"}}]}`)
	// Tasks keep the agent's user (--switch_user=false): what is tested is
	// what the UI shows, by the frameworks' users.
	c := startCluster(t, 1, 1, "--credentials="+creds, "--credential="+agentCred, "--acls="+acls,
		"--authenticate_http_readonly", "--switch_user=false")
	basic := func(p string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(p+":"+p+"-pw")) }
	run := func(name, user string) {
		start(t, "mezzo run "+name, nil, "run", "--master="+c.masters[0], "--name="+name, "--user="+user,
			"--resources=cpus:0.1;mem:32", "--shell", "--", "echo "+name+"-output; sleep 600")
	}
	run("alice-fw", "nobody")
	run("bob-fw", "daemon")
	c.auth = basic("ops") // sees both: both run before alice looks
	c.awaitTask("bob-fw", "TASK_RUNNING")
	mine := c.awaitTask("alice-fw", "TASK_RUNNING")
	c.auth = basic("alice")

	resp, err := client.Get("http://" + c.masters[0] + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") {
		t.Fatalf("the UI without credentials: %s %q", resp.Status, resp.Header.Get("WWW-Authenticate"))
	}

	tb := newTab(t)
	// As a browser resends the credentials its user typed at the prompt.
	if _, err := chromedp.Call(tb.ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": c.auth}}); err != nil {
		t.Fatal(err)
	}
	tb.open(url(c.masters[0], "#/frameworks"))
	tb.wait("alice's framework", settled+" && "+h1Is("Frameworks")+" && "+hasCell("alice-fw"))
	tb.goTo("#/tasks")
	tb.wait("alice's task", settled+" && "+h1Is("Tasks")+" && "+hasCell(mine.ID))
	for _, h := range []string{"#/frameworks", "#/tasks", "#/"} {
		tb.goTo(h)
		tb.wait("page "+h, settled)
		if text := tb.text(); strings.Contains(text, "bob-fw") {
			t.Errorf("page %s shows bob's framework to alice:\n%s", h, text)
		}
	}
	tb.open(url(c.masters[0], "#/tasks/"+mine.FrameworkID+"/"+mine.ID))
	tb.wait("alice's task log", logShows("alice-fw-output"))
	tb.checkConsole("as alice")
}
