package containerizer

import (
	"strconv"
	"testing"
)

func TestTerminatedBound(t *testing.T) {
	tests := []struct {
		name      string
		added     int
		forgotten int // the first this many are dropped
	}{
		{"empty", 0, 0},
		{"under the bound", 3, 0},
		{"at the bound", maxTerminated, 0},
		{"over the bound drops the oldest", maxTerminated + 5, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var term Terminated[int]
			for i := range tt.added {
				term.Add(strconv.Itoa(i), i)
			}
			for i := range tt.added {
				id := strconv.Itoa(i)
				v, ok := term.Get(id)
				want := i >= tt.forgotten
				if ok != want || term.Has(id) != want || (ok && v != i) {
					t.Errorf("container %s: Get = %d, %v; Has = %v; want remembered=%v", id, v, ok, term.Has(id), want)
				}
			}
			if term.Has("never") {
				t.Error("Has reports a container never added")
			}
		})
	}
}
