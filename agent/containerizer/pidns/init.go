package pidns

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"mezzo/agent/containerizer"
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
//
// When the program is this very binary (the agent's built-in executors,
// `mezzo executor` and `mezzo default-executor`), the step does not exec:
// it removes its settings from the environment and lets this process go
// on into main as the program. That saves a second start of the binary
// per container (about a sixth of a command task's CPU) and keeps the
// guarantee the exec gives: everything up to here ran in the step either
// way, and nothing after it runs before the placement. Package inits
// ordered before this one ran before the wait in both cases too; none of
// them starts processes.
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
	deadline := time.Now().Add(cgroupWaitTimeout)
	if fd := os.Getenv(containerizer.ReleaseFDEnv); fd != "" {
		// Block until the containerizer says every isolator placed us (no
		// polling: a loaded agent may take many milliseconds), then check
		// the placement once below.
		if err := awaitRelease(fd, deadline); err != nil {
			return err
		}
	}
	if want := os.Getenv(CgroupWaitEnv); want != "" {
		if err := waitCgroup(want, deadline); err != nil {
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
	if isSelf(path) {
		return continueInProcess(path)
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

// stepEnv lists the init step's settings, none of which reaches the
// program.
var stepEnv = [...]string{ExecEnv, MountProcEnv, CgroupWaitEnv, containerizer.ReleaseFDEnv}

// awaitRelease reads the containerizer's release pipe (descriptor fdText,
// see containerizer.LaunchSpec.HoldUntilIsolated) until its byte arrives,
// and closes it so that neither the program nor its children inherit it.
// End of file without the byte means the launch was aborted.
func awaitRelease(fdText string, deadline time.Time) error {
	fd, err := strconv.Atoi(fdText)
	if err != nil || fd < 0 {
		return fmt.Errorf("%s=%q is not a descriptor", containerizer.ReleaseFDEnv, fdText)
	}
	// Non-blocking, so the runtime's poller waits and the deadline holds.
	if err := syscall.SetNonblock(fd, true); err != nil {
		return fmt.Errorf("release pipe: %w", err)
	}
	f := os.NewFile(uintptr(fd), "release")
	defer f.Close()
	if err := f.SetReadDeadline(deadline); err != nil {
		return fmt.Errorf("release pipe: %w", err)
	}
	var b [1]byte
	for {
		n, err := f.Read(b[:])
		switch {
		case n == 1:
			return nil
		case errors.Is(err, io.EOF):
			return errors.New("the launch was aborted before the container was isolated")
		case errors.Is(err, os.ErrDeadlineExceeded):
			return fmt.Errorf("not released by the containerizer within %v", cgroupWaitTimeout)
		case err != nil:
			return fmt.Errorf("release pipe: %w", err)
		}
	}
}

// isSelf tells whether path names the file this process runs
// (/proc/self/exe), compared by device and inode so that a rebuilt binary
// at the same path (the running one deleted or replaced) counts as
// another program and is exec'd.
func isSelf(path string) bool {
	want, err := os.Stat(path)
	if err != nil {
		return false
	}
	self, err := os.Stat(selfExe)
	if err != nil {
		return false
	}
	return os.SameFile(want, self)
}

// continueInProcess makes this process the program without an exec: it
// drops the step's settings from the environment (os.Environ, and so
// every process the program starts, no longer has them) and names the
// process after the program as exec would have (the step was started as
// /proc/self/exe, so `ps` would otherwise list it as "exe").
func continueInProcess(path string) error {
	for _, k := range stepEnv {
		if err := os.Unsetenv(k); err != nil {
			return fmt.Errorf("unsetting %s: %w", k, err)
		}
	}
	setComm(filepath.Base(path))
	return nil
}

// setComm sets the calling thread's name, which for the main thread (the
// one package inits run on) is the process's name in /proc/<pid>/comm
// and ps. Best effort: it is cosmetic.
func setComm(name string) {
	b := make([]byte, 16) // TASK_COMM_LEN, NUL-terminated
	copy(b[:15], name)
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_NAME, uintptr(unsafe.Pointer(&b[0])), 0)
}

func isStepEnv(kv string) bool {
	for _, k := range stepEnv {
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
