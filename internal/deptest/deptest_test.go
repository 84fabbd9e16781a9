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
	Deps       []string // every package it depends on, transitively (go list)
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
	{"shipped frameworks are clients: api, resources, internal, scheduler and each other only", under(module + "/frameworks"),
		func(_, dep string) bool {
			return isAPI(dep) || isResources(dep) || isInternal(dep) || under(module+"/scheduler")(dep) || under(module+"/frameworks")(dep)
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
	// Executor tokens are a credential check both the agent and tests lean
	// on; keeping the package free of the rest of mezzo keeps it auditable.
	{"internal/exectoken imports nothing of mezzo but internal/clock", under(module + "/internal/exectoken"),
		func(_, dep string) bool { return under(module + "/internal/clock")(dep) }},
	// The same for the credential checks and the ACL decisions: small,
	// self-contained, auditable on their own.
	{"internal/authn imports nothing of mezzo", under(module + "/internal/authn"),
		func(_, dep string) bool { return false }},
	{"internal/authorizer imports only api", under(module + "/internal/authorizer"),
		func(_, dep string) bool { return isAPI(dep) }},
	{"internal/tlsconfig imports nothing of mezzo", under(module + "/internal/tlsconfig"),
		func(_, dep string) bool { return false }},
	// A test helper: golden transcripts of any package.
	{"internal/transcript imports nothing of mezzo", under(module + "/internal/transcript"),
		func(_, dep string) bool { return false }},
	// The long-task policy is pure bookkeeping the master drives.
	{"master/allocator/longtask imports only api and resources", under(module + "/master/allocator/longtask"),
		func(_, dep string) bool { return isAPI(dep) || isResources(dep) }},
}

// forbid bans some imports, in the module or not (rules only see the
// module's), from the packages it matches; a transitive ban also covers
// imports through other packages.
type forbid struct {
	name       string
	match      func(path string) bool
	banned     func(dep string) bool
	transitive bool
}

var isOversub = under(module + "/agent/oversub")

var forbids = []forbid{
	// net/http itself still arrives through resources -> api/codec (content
	// types), so this one holds for direct imports only.
	{"agent/oversub is fed usage and serves nothing: no net/http", isOversub,
		func(dep string) bool { return dep == "net/http" }, false},
	{"agent/oversub never reaches the agent's HTTP layer or the agent itself", isOversub,
		func(dep string) bool { return under(module+"/agent/httpapi")(dep) || dep == module+"/agent" }, true},
}

// violations returns one line per import that breaks a rule.
func violations(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		for _, f := range forbids {
			if !f.match(p.ImportPath) {
				continue
			}
			deps := p.Imports
			if f.transitive {
				deps = append(append([]string(nil), p.Imports...), p.Deps...)
			}
			seen := map[string]bool{}
			for _, dep := range deps {
				if f.banned(dep) && !seen[dep] {
					seen[dep] = true
					out = append(out, f.name+": "+p.ImportPath+" imports "+dep)
				}
			}
		}
	}
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
		{"mezzo/api/codec", []string{"mezzo/resources"}, nil},
		{"mezzo/resources", []string{"mezzo/internal/clock"}, nil},
		{"mezzo/master", []string{"mezzo/agent/files"}, nil},
		{"mezzo/agent", []string{"mezzo/master"}, nil},
		{"mezzo/master/allocator", []string{"mezzo/master"}, nil},
		{"mezzo/scheduler", []string{"mezzo/master/allocator"}, nil},
		{"mezzo/master", []string{"mezzo/replog"}, nil},
		{"mezzo/sim", []string{"mezzo/master"}, nil},
		{"mezzo/master/allocator", []string{"mezzo/internal/promexp"}, nil},
		{"mezzo/agent/oversub", []string{"net/http"}, nil},
		{"mezzo/agent/oversub", []string{"mezzo/agent/containerizer"}, []string{"mezzo/agent/httpapi"}},
		{"mezzo/internal/authn", []string{"mezzo/internal/clock"}, nil},
		{"mezzo/internal/authorizer", []string{"mezzo/resources"}, nil},
	}
	for _, p := range bad {
		if v := violations([]pkg{p}); len(v) != 1 {
			t.Errorf("%s -> %v: got %d violations %v, want 1", p.ImportPath, p.Imports, len(v), v)
		}
	}
	good := []pkg{
		{"mezzo/master/allocator", []string{"mezzo/resources", "mezzo/master/allocator/sorter"}, nil},
		{"mezzo/cmd/mezzo", []string{"mezzo/replog", "mezzo/master", "mezzo/agent"}, nil},
		{"mezzo/executor/command", []string{"mezzo/executor", "mezzo/api/executorpb"}, nil},
		{"mezzo/master/endpoints", []string{"mezzo/internal/promexp", "mezzo/internal/timerstat"}, nil},
		{"mezzo/agent/oversub", []string{"mezzo/resources"}, []string{"net/http", "mezzo/api/codec"}},
	}
	if v := violations(good); len(v) != 0 {
		t.Errorf("allowed imports flagged: %v", v)
	}
}
