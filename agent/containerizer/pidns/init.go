package pidns

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unsafe"
)

// The init step. A process started through Wrap runs this binary with
// ExecEnv naming the real program. Before main it makes its mount
// namespace private and mounts a /proc of its new pid namespace
// (MountProcEnv), and execs the program in its own place, so the program
// is pid 1 and `ps` lists only the container.
//
// When the program is this very binary (the agent's built-in executors,
// `mezzo executor` and `mezzo default-executor`), the step does not exec:
// it removes its settings from the environment and lets this process go
// on into main as the program. That saves a second start of the binary
// per container (about a sixth of a command task's CPU).
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
	mountProc, volumes := os.Getenv(MountProcEnv) == "1", os.Getenv(VolumesEnv)
	if mountProc && os.Getpid() != 1 {
		return fmt.Errorf("%s is set but this process is not pid 1 of a new pid namespace", MountProcEnv)
	}
	if mountProc || volumes != "" {
		// Keep our mounts from propagating back to the host's namespace.
		if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("making / private: %w", err)
		}
	}
	if mountProc {
		if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("mounting /proc: %w", err)
		}
	}
	if volumes != "" {
		if err := mountVolumes(volumes); err != nil {
			return err
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
var stepEnv = [...]string{ExecEnv, MountProcEnv, VolumesEnv}

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
