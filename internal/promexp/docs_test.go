package promexp

import (
	"os"
	"strings"
	"testing"
)

// docs/metrics.md names every family the rules can produce (a name
// template such as mezzo_master_agents_{state} is documented with its
// values in braces, so only its fixed prefix is looked for).
func TestFamiliesDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, f := range Families() {
		name, _, _ := strings.Cut(f, "{")
		if !strings.Contains(doc, "`"+name) {
			t.Errorf("docs/metrics.md does not list %s", f)
		}
	}
}
