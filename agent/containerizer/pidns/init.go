package pidns

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// cgroupWaitTimeout bounds the wait for the agent to move the process into
// its cgroups; the agent kills the container if that fails, so running out
// means something is wrong and the program must not run unconfined.
const cgroupWaitTimeout = 30 * time.Second

// The init step. A process started through Wrap runs this binary with
// ExecEnv naming the real program. Before main it waits until the agent
// has placed it in its cgroups (CgroupWaitEnv), makes its mount namespace
// private and mounts a /proc of its new pid namespace (MountProcEnv), and
// execs the program in its own place, so the program is pid 1 and `ps`
// lists only the container.
func init() {
	path := os.Getenv(ExecEnv)
	if path == "" {
		return
	}
	if err := enter(path); err != nil {
		fmt.Fprintf(os.Stderr, "mezzo: container init: %v\n", err)
		os.Exit(127)
	}
}

func enter(path string) error {
	if want := os.Getenv(CgroupWaitEnv); want != "" {
		if err := waitCgroup(want, time.Now().Add(cgroupWaitTimeout)); err != nil {
			return err
		}
	}
	if os.Getenv(MountProcEnv) == "1" {
		if os.Getpid() != 1 {
			return fmt.Errorf("%s is set but this process is not pid 1 of a new pid namespace", MountProcEnv)
		}
		// Keep our mounts from propagating back to the host's namespace.
		if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("making / private: %w", err)
		}
		if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("mounting /proc: %w", err)
		}
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if isStepEnv(kv) {
			continue
		}
		env = append(env, kv)
	}
	if err := syscall.Exec(path, os.Args, env); err != nil {
		return fmt.Errorf("exec %s: %w", path, err)
	}
	return nil
}

func isStepEnv(kv string) bool {
	for _, k := range []string{ExecEnv, MountProcEnv, CgroupWaitEnv} {
		if strings.HasPrefix(kv, k+"=") {
			return true
		}
	}
	return false
}

// waitCgroup polls /proc/self/cgroup until the hierarchy of a controller
// lists a cgroup path, or until deadline; want is "<controller>:<path>",
// the controller the agent writes last (so all others are done).
func waitCgroup(want string, deadline time.Time) error {
	for {
		data, err := os.ReadFile("/proc/self/cgroup")
		if err != nil {
			return fmt.Errorf("reading /proc/self/cgroup: %w", err)
		}
		if inCgroup(string(data), want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not placed in cgroup %s within %v", want, cgroupWaitTimeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// inCgroup tells whether a /proc/<pid>/cgroup text places the process,
// for the controller of want ("<controller>:<path>"), at that path.
func inCgroup(text, want string) bool {
	ctrl, path, ok := strings.Cut(want, ":")
	if !ok {
		return false
	}
	for _, line := range strings.Split(text, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || parts[2] != path {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == ctrl {
				return true
			}
		}
	}
	return false
}
