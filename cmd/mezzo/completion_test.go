package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestBashCompletion sources the generated script in a real bash and asks
// it for completions, with a stub `mezzo` on PATH standing in for the
// cluster queries.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal("bash is needed to test the completion script: ", err)
	}
	var script bytes.Buffer
	if code := runCompletion([]string{"bash"}, &script, os.Stderr); code != 0 {
		t.Fatalf("completion bash: exit %d", code)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "completion.bash"), script.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// The stub answers `tasks -o name` and records the --master it got.
	stub := "#!/bin/sh\necho \"$@\" >> " + filepath.Join(dir, "calls") + "\ncase \"$1\" in tasks) echo task-one; echo task-two;; frameworks) echo fw-1;; esac\n"
	if err := os.WriteFile(filepath.Join(dir, "mezzo"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		line string // the command line; completion happens at its end
		want string
	}{
		{"mezzo t", "tasks teardown"},
		{"mezzo compl", "completion"},
		{"mezzo tasks --al", "--all"},
		{"mezzo tasks -", "--all --credential --framework --json --master --output --state --timeout --tls_ca_file --tls_cert_file --tls_key_file -o"},
		{"mezzo run --docker", "--docker_image"},
		{"mezzo logs --master=10.0.0.1:5050 task-", "task-one task-two"},
		{"mezzo explain ", "fw-1"},
		{"mezzo completion ", "bash zsh"},
		{"mezzo bench al", "allocator"},
	}
	for _, tt := range tests {
		words := strings.Fields(tt.line)
		if strings.HasSuffix(tt.line, " ") {
			words = append(words, "")
		}
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, "'"+w+"'")
		}
		prog := "source " + filepath.Join(dir, "completion.bash") + "\n" +
			"COMP_WORDS=(" + strings.Join(quoted, " ") + ")\n" +
			"COMP_CWORD=" + strconv.Itoa(len(words)-1) + "\n" +
			"COMP_LINE='" + tt.line + "'\n" +
			"_mezzo\necho \"${COMPREPLY[*]}\"\n"
		cmd := exec.Command(bash, "--norc", "-c", prog)
		cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%q: %v\n%s", tt.line, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != tt.want {
			t.Errorf("%q completes to %q, want %q", tt.line, got, tt.want)
		}
	}
	calls, _ := os.ReadFile(filepath.Join(dir, "calls"))
	if !strings.Contains(string(calls), "tasks --all -o name --master=10.0.0.1:5050") {
		t.Errorf("the task query did not carry --master: %q", calls)
	}
	var zsh bytes.Buffer
	if code := runCompletion([]string{"zsh"}, &zsh, os.Stderr); code != 0 || !strings.HasPrefix(zsh.String(), "#compdef mezzo\n") {
		t.Errorf("completion zsh: exit %d, %q…", code, zsh.String()[:min(40, zsh.Len())])
	}
	if code := runCompletion([]string{"fish"}, &bytes.Buffer{}, &bytes.Buffer{}); code != 2 {
		t.Errorf("completion fish: exit %d, want 2", code)
	}
}
