package transcript

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A transcript rewritten with update replays unchanged: answers are
// regenerated, comments and blank lines kept, every command answered.
func TestRunRewritesAndReplays(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "echo.txt")
	in := "# echo\nsay a b\n> stale answer\n\nsay c\n"
	if err := os.WriteFile(file, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	calls := 0
	echo := func(*testing.T) Exec {
		return func(line string) ([]string, error) {
			calls++
			return []string{"> " + strings.TrimPrefix(line, "say ")}, nil
		}
	}
	Run(t, filepath.Join(dir, "*.txt"), true, echo)
	got, _ := os.ReadFile(file)
	if want := "# echo\nsay a b\n> a b\n\nsay c\n> c\n"; string(got) != want {
		t.Fatalf("rewritten as %q, want %q", got, want)
	}
	Run(t, filepath.Join(dir, "*.txt"), false, echo)
	if calls != 4 {
		t.Fatalf("%d commands run, want 4", calls)
	}
}

func TestFirstDiff(t *testing.T) {
	if d := firstDiff("a\nb\n", "a\nc\n"); !strings.Contains(d, "line 2") || !strings.Contains(d, `"b"`) || !strings.Contains(d, `"c"`) {
		t.Fatalf("firstDiff = %q", d)
	}
	if d := firstDiff("a\n", "a\n"); d != "" {
		t.Fatalf("equal texts differ: %q", d)
	}
}
