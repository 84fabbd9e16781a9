package e2e

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestOperationsDocMonitoring: the Prometheus configuration and alert
// rules in docs/operations.md are valid for promtool, and every mezzo
// metric the alerts use is one a running master serves (a renamed metric
// would leave an alert that can never fire).
func TestOperationsDocMonitoring(t *testing.T) {
	promtool := promtoolPath(t)
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The YAML blocks each start with a comment naming their file.
	dir := t.TempDir()
	files := map[string]string{}
	for _, block := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		first, _, _ := strings.Cut(block[1], "\n")
		name := strings.TrimSpace(strings.TrimPrefix(first, "#"))
		files[name] = block[1]
		if err := os.WriteFile(filepath.Join(dir, name), []byte(block[1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rules, ok := files["mezzo-alerts.yml"]
	if _, okc := files["prometheus.yml"]; !ok || !okc {
		t.Fatalf("docs/operations.md: want a prometheus.yml and a mezzo-alerts.yml block, found %v", files)
	}
	// check config also checks the rule files it names.
	if out, err := exec.Command(promtool, "check", "config", filepath.Join(dir, "prometheus.yml")).CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}

	c := startLocal(t, 1)
	var exposition string
	poll(t, "the master's /metrics", 30*time.Second, func() bool {
		resp, err := http.Get(c.url("/metrics"))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		exposition = string(b)
		return resp.StatusCode == http.StatusOK
	})
	for _, name := range regexp.MustCompile(`\bmezzo_[a-z0-9_]+`).FindAllString(rules, -1) {
		if !regexp.MustCompile(`(?m)^` + name + `[{ ]`).MatchString(exposition) {
			t.Errorf("docs/operations.md's alerts use %s, which the master's /metrics does not serve", name)
		}
	}
}
