package sim

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"mezzo/sim/internal/mastertest"
)

// mezzoBin is the mezzo binary built by TestMain; the integration tests
// run real `mezzo master` processes from it. buildErr is why it could not
// be built: those tests then fail with it, while the unit tests (against
// an in-test fake master) still run.
var (
	mezzoBin string
	buildErr error
)

func TestMain(m *testing.M) {
	root, err := filepath.Abs("..")
	if err == nil {
		mezzoBin, buildErr = mastertest.Build(root)
	} else {
		buildErr = err
	}
	os.Exit(m.Run())
}

func freePort(t *testing.T) int { return mastertest.FreePort(t) }

// startMaster runs a real `mezzo master` on port with its registry under
// workDir ("" for in memory).
func startMaster(t *testing.T, port int, workDir string, extra ...string) *mastertest.Master {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return mastertest.Start(t, mezzoBin, port, workDir, extra...)
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %s: %s", what, d, detail)
		}
		time.Sleep(20 * time.Millisecond) // poll interval, bounded by the deadline
	}
}

// newDeadline is a test deadline of secs seconds.
func newDeadline(secs int) *time.Timer { return time.NewTimer(time.Duration(secs) * time.Second) }
