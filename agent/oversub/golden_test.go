package oversub

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"mezzo/resources"
)

var update = flag.Bool("update", false, "rewrite testdata/*.txt with the current output")

// TestEvictionTranscripts replays testdata/evict-*.txt. Each file is a
// scenario on one agent: lines starting with "> " are commands, the lines
// after a command are its output, "#" lines are comments (each file cites
// the seed sentences it covers). Commands:
//
//	> total RES                       the agent's regular total
//	> regular ID RES                  a regular container runs
//	> tenant ID RES started=SECS      a tenant on a lent reservation runs
//	> ending ID                       the container is ending by itself
//	> launch ID RES                   a regular launch: PlanEviction; its
//	                                  victims become evicting, the launch
//	                                  a regular container
//	> gone ID                         the container has ended
//	> fits                            does the design's inequality hold
//	                                  now, i.e. may the launches start?
//
// go test -run TestEvictionTranscripts -update rewrites the outputs.
func TestEvictionTranscripts(t *testing.T) {
	files, _ := filepath.Glob("testdata/evict-*.txt")
	if len(files) == 0 {
		t.Fatal("no transcripts")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			got := replay(t, string(b))
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got != string(b) {
				t.Errorf("transcript differs; got:\n%s", got)
			}
		})
	}
}

// replay runs the commands of a transcript and returns it with fresh
// outputs.
func replay(t *testing.T, text string) string {
	var out strings.Builder
	var total resources.Resources
	var holders []Holder
	pending := map[string]resources.Resources{}
	find := func(id string) int {
		for i, h := range holders {
			if h.ContainerID == id {
				return i
			}
		}
		t.Fatalf("no container %q", id)
		return -1
	}
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if !strings.HasPrefix(line, "> ") {
			if strings.HasPrefix(line, "#") || line == "" {
				out.WriteString(line + "\n")
			}
			continue // an old output line: regenerated below
		}
		out.WriteString(line + "\n")
		f := strings.Fields(strings.TrimPrefix(line, "> "))
		switch f[0] {
		case "total":
			total = resources.MustParse(f[1])
		case "regular":
			holders = append(holders, regularHolder(f[1], f[2]))
		case "tenant":
			secs, err := strconv.Atoi(strings.TrimPrefix(f[3], "started="))
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			holders = append(holders, tenant(f[1], f[2], secs, false))
		case "ending":
			holders[find(f[1])].Evicting = true
		case "gone":
			i := find(f[1])
			holders = append(holders[:i], holders[i+1:]...)
		case "launch":
			launch := resources.MustParse(f[2])
			e, err := PlanEviction(EvictionRequest{Total: total, Holders: holders, Launch: launch})
			if errors.Is(err, ErrLaunchDoesNotFit) {
				out.WriteString("refused: does not fit\n")
				continue
			} else if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			ids := evictedIDs(e)
			for _, id := range ids {
				holders[find(id)].Evicting = true
			}
			holders = append(holders, Holder{ContainerID: f[1], Resources: launch, Started: t0.Add(time.Hour)})
			pending[f[1]] = launch
			fmt.Fprintf(&out, "evict [%s]; %s\n", strings.Join(ids, " "), startText(e.StartNow))
		case "fits":
			// The launch is already counted among the holders: ask for
			// nothing more and read the inequality.
			e, err := PlanEviction(EvictionRequest{Total: total, Holders: holders})
			if err != nil || len(e.Evict) != 0 {
				t.Fatalf("%q: %v %v", line, evictedIDs(e), err)
			}
			fmt.Fprintf(&out, "%s\n", startText(e.StartNow))
		default:
			t.Fatalf("unknown command %q", line)
		}
	}
	return out.String()
}

func startText(now bool) string {
	if now {
		return "start now"
	}
	return "wait"
}
