// Package transcript replays golden transcripts for tests: text files of
// commands, each followed by the answers of the code under test on lines
// starting with "> ". A test gives the commands to an executor of its
// own and compares the whole regenerated file with the one on disk, or
// rewrites it (-update) once the new answers are checked by eye.
package transcript

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Exec runs one command (a trimmed line, neither blank nor a "#" comment)
// and returns its answer lines, each starting with "> ".
type Exec func(line string) ([]string, error)

// Run replays every file matching glob as a subtest, each with a fresh
// executor from newExec. Answer lines in the files are ignored and
// regenerated; blank and comment lines are kept. With update it rewrites
// the files; otherwise a file that differs fails, naming the first
// different line. An executor's error fails the file at its line.
func Run(t *testing.T, glob string, update bool, newExec func(t *testing.T) Exec) {
	t.Helper()
	files, err := filepath.Glob(glob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts match %s: %v", glob, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			exec := newExec(t)
			var got []string
			for i, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
				if strings.HasPrefix(line, "> ") || line == ">" {
					continue
				}
				got = append(got, line)
				trimmed := strings.TrimSpace(line)
				if trimmed == "" || strings.HasPrefix(trimmed, "#") {
					continue
				}
				out, err := exec(trimmed)
				if err != nil {
					t.Fatalf("%s:%d: %v", file, i+1, err)
				}
				got = append(got, out...)
			}
			text := strings.Join(got, "\n") + "\n"
			if update {
				if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if text != string(data) {
				t.Errorf("%s differs (rerun with -update to accept):\n%s", file, firstDiff(string(data), text))
			}
		})
	}
}

// firstDiff shows the first differing line.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n  want %q\n  got  %q", i+1, a, b)
		}
	}
	return ""
}
