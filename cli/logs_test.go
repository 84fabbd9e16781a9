package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"mezzo/internal/clock"
)

const (
	runDir  = "/w/slaves/m1-S0/frameworks/m1-0000/executors/e1/runs/c1"
	doneDir = "/w/slaves/m1-S0/frameworks/m1-0000/executors/t-done/runs/c0"
)

// agentStateJSON is an agent /state with a live executor running t-run and
// a completed command executor (ID = task ID) that ran t-done.
const agentStateJSON = `{"id": "m1-S0", "frameworks": [{"id": "m1-0000",
  "executors": [{"id": "e1", "directory": "` + runDir + `", "tasks": [{"id": "t-run"}], "queued_tasks": [], "completed_tasks": []}],
  "completed_executors": [{"id": "t-done", "directory": "` + doneDir + `", "tasks": [], "queued_tasks": [], "completed_tasks": [{"id": "t-done"}]}]}],
 "completed_frameworks": []}`

func logsCluster(t *testing.T) (*fakeMaster, *fakeAgent) {
	m := newFakeMaster(t)
	a := newFakeAgent(t, agentStateJSON)
	m.setAgentPID("m1-S0", a.addr())
	m.setAgentPID("m1-S1", deadAddr(t))
	a.write(runDir+"/stdout", "line 1\nline 2\nhéllo wörld ✓ 😀\nline 4\n")
	a.write(runDir+"/stderr", "warning: x\n")
	a.write(doneDir+"/stdout", "done\n")
	return m, a
}

func TestLogs(t *testing.T) {
	m, a := logsCluster(t)
	a.maxRead = 5 // many small reads, cutting multi-byte characters
	tests := []struct {
		name string
		args []string
		code int
		out  string
		err  string
	}{
		{"stdout", []string{"t-run"}, 0, "line 1\nline 2\nhéllo wörld ✓ 😀\nline 4\n", ""},
		{"stderr", []string{"t-run", "--stderr"}, 0, "warning: x\n", ""},
		{"tail", []string{"--tail=2", "t-run"}, 0, "héllo wörld ✓ 😀\nline 4\n", ""},
		{"tail more than the file", []string{"--tail=50", "t-run"}, 0, "line 1\nline 2\nhéllo wörld ✓ 😀\nline 4\n", ""},
		{"completed command executor", []string{"t-done"}, 0, "done\n", ""},
		{"unknown task", []string{"nope"}, 1, "", `the master knows no task "nope"`},
		{"agent down", []string{"t-old"}, 1, "", "agent m1-S1 at "},
		{"framework filter", []string{"--framework=m1-0001", "t-run"}, 1, "", `the master knows no task "t-run"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := testEnv()
			code, out, errs := run(e, "logs", append(tc.args, "--master="+m.addr())...)
			if code != tc.code || out != tc.out || !strings.Contains(errs, tc.err) {
				t.Errorf("exit %d out %q err %q; want %d %q %q", code, out, errs, tc.code, tc.out, tc.err)
			}
		})
	}
}

// syncBuffer is a bytes.Buffer safe to read while the command writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startLogs runs `logs` in a goroutine; the returned channel yields its
// exit code.
func startLogs(e *env, out, errw *syncBuffer, args ...string) <-chan int {
	done := make(chan int, 1)
	go func() { done <- e.commands()["logs"].Run(args, out, errw) }()
	return done
}

// tick waits until the follow loop sleeps on the fake clock, then wakes it.
func tick(t *testing.T, fc *clock.Fake, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for fc.Pending() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("logs --follow never waited on the clock")
		}
		time.Sleep(time.Millisecond) // polling a condition with a deadline
	}
	fc.Advance(d)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestLogsFollow(t *testing.T) {
	m, a := logsCluster(t)
	a.maxRead = 7
	e, fc := testEnv()
	e.maxPolls = 4
	var out, errw syncBuffer
	path := runDir + "/stdout"
	done := startLogs(e, &out, &errw, "t-run", "--follow", "--tail=1", "--interval=2s", "--master="+m.addr())

	waitFor(t, "the tail", func() bool { return out.String() == "line 4\n" })
	a.write(path, "line 5\n")
	tick(t, fc, 2*time.Second)
	waitFor(t, "line 5", func() bool { return out.String() == "line 4\nline 5\n" })

	// A poll with nothing new, then the file is truncated (log rotation):
	// the command starts over from the beginning.
	tick(t, fc, 2*time.Second)
	a.truncate(path)
	a.write(path, "new\n")
	tick(t, fc, 2*time.Second) // notices the truncation
	tick(t, fc, 2*time.Second) // reads from 0
	if code := <-done; code != 0 {
		t.Fatalf("exit %d: %s", code, errw.String())
	}
	if got := out.String(); got != "line 4\nline 5\nnew\n" {
		t.Errorf("output %q", got)
	}
	if !strings.Contains(errw.String(), "was truncated") {
		t.Errorf("stderr %q", errw.String())
	}
}

func TestLogsFollowStopsWhenTaskEnded(t *testing.T) {
	m, _ := logsCluster(t)
	e, fc := testEnv()
	var out, errw syncBuffer
	done := startLogs(e, &out, &errw, "t-done", "--follow", "--master="+m.addr())
	tick(t, fc, time.Second)
	select {
	case code := <-done:
		if code != 0 || out.String() != "done\n" {
			t.Errorf("exit %d out %q err %q", code, out.String(), errw.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("logs --follow kept following a finished task")
	}
}

// jsonRoundTrip is what a client decodes from the agent's JSON string of b:
// encoding/json replaces each byte that is not valid UTF-8 with U+FFFD.
func jsonRoundTrip(b []byte) string {
	enc, _ := json.Marshal(string(b))
	var s string
	json.Unmarshal(enc, &s)
	return s
}

// TestConsumedReassemblesChunks checks, against the whole file decoded at
// once, that reading any file in chunks of at least 4 bytes through
// consumed prints the same text and ends at the file's size.
func TestConsumedReassemblesChunks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		alphabet := rapid.SampledFrom([][]byte{
			[]byte("a"), []byte("\n"), []byte("é"), []byte("✓"), []byte("😀"),
			{0xF0, 0x9F}, {0x80}, {0xC3}, {0xFF}, {0xE2, 0x9C},
		})
		parts := rapid.SliceOf(alphabet).Draw(t, "parts")
		file := bytes.Join(parts, nil)
		if bytes.Contains(file, []byte("\uFFFD")) {
			t.Skip("a literal U+FFFD is miscounted by design")
		}
		chunk := rapid.IntRange(4, 16).Draw(t, "chunk")
		var got strings.Builder
		var off int64
		for steps := 0; off < int64(len(file)); steps++ {
			if steps > 4*len(file)+4 {
				t.Fatalf("no progress at offset %d", off)
			}
			end := min(int64(len(file)), off+int64(chunk))
			text, n := consumed(jsonRoundTrip(file[off:end]))
			if n <= 0 {
				t.Fatalf("consumed %d bytes at offset %d", n, off)
			}
			got.WriteString(text)
			off += n
		}
		if off != int64(len(file)) {
			t.Fatalf("ended at %d of %d", off, len(file))
		}
		if want := jsonRoundTrip(file); got.String() != want {
			t.Fatalf("got %q want %q", got.String(), want)
		}
	})
}

func FuzzConsumed(f *testing.F) {
	for _, s := range []string{"", "abc", "\uFFFD", "a\uFFFD\uFFFD\uFFFD\uFFFD", "😀\uFFFD", "\n\uFFFD\uFFFD"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		text, n := consumed(data)
		if len(data) > 0 && n <= 0 {
			t.Fatalf("no progress on %q", data)
		}
		if !strings.HasPrefix(data, text) || n > int64(len(data)) {
			t.Fatalf("consumed(%q) = %q, %d", data, text, n)
		}
	})
}
