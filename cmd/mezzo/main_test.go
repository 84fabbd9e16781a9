package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"mezzo/internal/version"
)

// Every subcommand builds its flag set and answers --help with exit 0;
// this catches duplicate flag definitions, which panic at run time.
func TestEverySubcommandHelp(t *testing.T) {
	for name := range commands {
		if name == "executor" || name == "default-executor" || name == "version" || name == "completion" {
			continue // configured by environment, or no flags
		}
		t.Run(name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := []string{name, "--help"}
			if name == "bench" {
				args = []string{"bench", "allocator", "--help"}
			}
			if code := dispatch(args, &out, &errb); code != 0 {
				t.Fatalf("mezzo %s --help: exit %d; stderr:\n%s", name, code, errb.String())
			}
			if !strings.Contains(errb.String(), "-") {
				t.Fatalf("mezzo %s --help printed no flags:\n%s", name, errb.String())
			}
		})
	}
}

func TestUnknownCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if code := dispatch([]string{"frobnicate"}, &out, &errb); code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	if !strings.Contains(errb.String(), `unknown command "frobnicate"`) {
		t.Fatalf("stderr = %q", errb.String())
	}
}

func TestFlagParsers(t *testing.T) {
	w, err := parseWeights("web=2, batch=0.5")
	if err != nil || w["web"] != 2 || w["batch"] != 0.5 {
		t.Fatalf("parseWeights = %v, %v", w, err)
	}
	for _, bad := range []string{"web", "web=-1", "=2", "web=x"} {
		if _, err := parseWeights(bad); err == nil {
			t.Errorf("parseWeights(%q) accepted", bad)
		}
	}
	m, err := parseMinAllocatable("cpus:0.01|mem:32;disk:1")
	if err != nil || len(m) != 2 || m[0]["cpus"] != 0.01 || m[1]["mem"] != 32 || m[1]["disk"] != 1 {
		t.Fatalf("parseMinAllocatable = %v, %v", m, err)
	}
	if _, err := parseMinAllocatable("cpus"); err == nil {
		t.Error("parseMinAllocatable(cpus) accepted")
	}
}

// `mezzo version` names the release and when and by whom the binary was
// built (never the zero date).
func TestVersionCommand(t *testing.T) {
	var out bytes.Buffer
	if code := runVersion(nil, &out, io.Discard); code != 0 {
		t.Fatalf("exit %d", code)
	}
	v := version.Get()
	want := "mezzo " + v.Version
	if !strings.HasPrefix(out.String(), want) || !strings.Contains(out.String(), "built "+v.BuildDate()+" UTC by "+v.BuildUser) ||
		strings.Contains(out.String(), "0001-01-01") {
		t.Errorf("mezzo version: %q", out.String())
	}
}
