// Package deptest enforces the import rules of DESIGN.md: imports flow
// downward only. The test lists every package of the module with `go list`
// and checks each rule below; a violation fails with the offending import.
package deptest

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "mezzo"

type pkg struct {
	ImportPath string
	Imports    []string
}

// rule says which in-module packages a package (matched by prefix) may import.
type rule struct {
	name  string
	match func(path string) bool
	// allowed reports whether path may import the in-module package dep.
	allowed func(path, dep string) bool
}

func under(prefix string) func(string) bool {
	return func(p string) bool { return p == prefix || strings.HasPrefix(p, prefix+"/") }
}

func anyOf(fs ...func(string) bool) func(string) bool {
	return func(p string) bool {
		for _, f := range fs {
			if f(p) {
				return true
			}
		}
		return false
	}
}

var (
	isAPI       = under(module + "/api")
	isResources = under(module + "/resources")
	isInternal  = under(module + "/internal")
	isMaster    = under(module + "/master")
	isAllocator = under(module + "/master/allocator")
	isAgent     = under(module + "/agent")
	isReplog    = under(module + "/replog")
)

// topLevel is the first-level package of path: mezzo/executor for mezzo/executor/command.
func topLevel(path string) string {
	rest := strings.TrimPrefix(path, module+"/")
	if i := strings.Index(rest, "/"); i >= 0 {
		rest = rest[:i]
	}
	return module + "/" + rest
}

var rules = []rule{
	{"api imports nothing else in the repo", isAPI,
		func(_, dep string) bool { return isAPI(dep) }},
	{"resources imports only api", isResources,
		func(_, dep string) bool { return isAPI(dep) || isResources(dep) }},
	{"master never imports agent", isMaster,
		func(_, dep string) bool { return !isAgent(dep) }},
	{"agent never imports master", isAgent,
		func(_, dep string) bool { return !isMaster(dep) }},
	{"the allocator never imports the master", isAllocator,
		func(_, dep string) bool { return !isMaster(dep) || isAllocator(dep) }},
	{"client libraries import only api, resources and internal", anyOf(under(module+"/scheduler"), under(module+"/executor")),
		func(path, dep string) bool {
			return isAPI(dep) || isResources(dep) || isInternal(dep) || under(topLevel(path))(dep)
		}},
	{"sim speaks the protocols like an external process: no master or agent", under(module + "/sim"),
		func(_, dep string) bool { return !isMaster(dep) && !isAgent(dep) }},
	{"only the HTTP layers import promexp (the counting packages hand timerstat values up)",
		func(p string) bool {
			return !under(module+"/master/endpoints")(p) && !under(module+"/agent/httpapi")(p) && !under(module+"/internal/promexp")(p)
		},
		func(_, dep string) bool { return !under(module + "/internal/promexp")(dep) }},
	{"only cmd wires replog in", func(p string) bool { return !under(module+"/cmd")(p) && !isReplog(p) },
		func(_, dep string) bool { return !isReplog(dep) }},
}

// violations returns one line per import that breaks a rule.
func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		for _, dep := range p.Imports {
			if !under(module)(dep) {
				continue
			}
			for _, r := range rules {
				if r.match(p.ImportPath) && !r.allowed(p.ImportPath, dep) {
					out = append(out, r.name+": "+p.ImportPath+" imports "+dep)
				}
			}
		}
	}
	return out
}

func TestImportRules(t *testing.T) {
	cmd := exec.Command("go", "list", "-e", "-json", module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 5 {
		t.Fatalf("listed only %d packages; is the test running inside the module?", len(pkgs))
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// TestRulesCatchViolations guards the rules themselves: each synthetic
// package below breaks exactly one rule.
func TestRulesCatchViolations(t *testing.T) {
	bad := []pkg{
		{"mezzo/api/codec", []string{"mezzo/resources"}},
		{"mezzo/resources", []string{"mezzo/internal/clock"}},
		{"mezzo/master", []string{"mezzo/agent/files"}},
		{"mezzo/agent", []string{"mezzo/master"}},
		{"mezzo/master/allocator", []string{"mezzo/master"}},
		{"mezzo/scheduler", []string{"mezzo/master/allocator"}},
		{"mezzo/master", []string{"mezzo/replog"}},
		{"mezzo/sim", []string{"mezzo/master"}},
		{"mezzo/master/allocator", []string{"mezzo/internal/promexp"}},
	}
	for _, p := range bad {
		if v := violations([]pkg{p}); len(v) != 1 {
			t.Errorf("%s -> %v: got %d violations %v, want 1", p.ImportPath, p.Imports, len(v), v)
		}
	}
	good := []pkg{
		{"mezzo/master/allocator", []string{"mezzo/resources", "mezzo/master/allocator/sorter"}},
		{"mezzo/cmd/mezzo", []string{"mezzo/replog", "mezzo/master", "mezzo/agent"}},
		{"mezzo/executor/command", []string{"mezzo/executor", "mezzo/api/executorpb"}},
		{"mezzo/master/endpoints", []string{"mezzo/internal/promexp", "mezzo/internal/timerstat"}},
	}
	if v := violations(good); len(v) != 0 {
		t.Errorf("allowed imports flagged: %v", v)
	}
}
