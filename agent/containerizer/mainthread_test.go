package containerizer

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
)

// The test binary's main goroutine keeps the main thread, so TestMain can
// run startLocked there as a goroutine that landed on it would.
func init() { runtime.LockOSThread() }

// forkedFrom is the thread the launch in TestMain set up and forked from.
var forkedFrom int

func TestMain(m *testing.M) {
	cmd := exec.Command("/bin/true")
	err := startLocked(cmd, []func(int) (func(), error){func(tid int) (func(), error) {
		forkedFrom = tid
		return func() {}, nil
	}})
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// A launch started on the main thread forks from another thread, which Go
// ends afterwards; the main thread never gets the container's cgroups.
func TestLaunchNeverForksFromTheMainThread(t *testing.T) {
	if forkedFrom == 0 || forkedFrom == syscall.Getpid() {
		t.Fatalf("forked from thread %d; the main thread is %d", forkedFrom, syscall.Getpid())
	}
}
