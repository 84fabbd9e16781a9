// Package pidns owns the `namespaces/pid` isolator of the mesos
// containerizer, which runs each container in its own pid namespace, the
// `filesystem/posix` isolator (sandboxes are plain directories owned by
// the agent's user, as with Mesos's posix filesystem isolator when no task
// user is given; the containerizer links persistent volumes into them) and
// the `filesystem/linux` isolator (fslinux.go: a mount namespace per
// container, persistent volumes bind-mounted in it by the init step).
//
// Callers: the agent's wiring imports this package for its init-time
// registration (containerizer.RegisterIsolator). Importing it also installs
// the namespace init step (see init.go) in the binary: the containerizer
// re-executes the agent's own binary (/proc/self/exe) as the container's
// first process, which mounts a private /proc and then execs the real
// program, so that program is pid 1 of its namespace and sees and can
// signal only its own processes.
package pidns

import (
	"context"
	"errors"
	"slices"
	"strings"
	"syscall"

	"mezzo/agent/containerizer"
)

// Environment of the init step; none of it reaches the program.
const (
	// ExecEnv carries the real program's path.
	ExecEnv = "MEZZO_PIDNS_EXEC"
	// MountProcEnv ("1") asks for a private /proc (pid 1 of a new pid and
	// mount namespace only).
	MountProcEnv = "MEZZO_PIDNS_MOUNT_PROC"
)

// selfExe is what the containerizer runs instead of the program: this very
// binary, which contains the init step because it imports this package.
const selfExe = "/proc/self/exe"

// Isolator is `namespaces/pid`.
type Isolator struct {
	// RemountProc makes the container's first process this binary's init
	// step, which mounts a private /proc before exec'ing the program. When
	// false the program is started directly with CLONE_NEWPID only: it is
	// pid 1 and can signal only its own processes, but /proc (and so ps)
	// still shows the host's.
	RemountProc bool
}

var _ containerizer.Isolator = (*Isolator)(nil)

// Name implements containerizer.Isolator.
func (*Isolator) Name() string { return "namespaces/pid" }

// Prepare implements containerizer.Isolator: new pid and mount namespaces
// for the process, and (RemountProc) the init step in front of the
// program.
func (i *Isolator) Prepare(_ context.Context, cfg *containerizer.ContainerConfig, spec *containerizer.LaunchSpec) error {
	if cfg.Path == "" {
		return errors.New("namespaces/pid: no program to run")
	}
	if spec.SysProcAttr == nil {
		spec.SysProcAttr = &syscall.SysProcAttr{}
	}
	spec.SysProcAttr.Cloneflags |= syscall.CLONE_NEWPID
	if !i.RemountProc {
		return nil
	}
	spec.SysProcAttr.Cloneflags |= syscall.CLONE_NEWNS
	Wrap(cfg, spec, MountProcEnv+"=1")
	return nil
}

// Wrap makes the container start with this binary's init step in front of
// its program, with the step's settings env ("K=V", e.g. MountProcEnv)
// added. It is idempotent, so several isolators can each
// ask for a step of their own, in any order. Only binaries that import
// this package contain the step; the agent's does.
func Wrap(cfg *containerizer.ContainerConfig, spec *containerizer.LaunchSpec, env ...string) {
	if !wrapped(cfg, spec) {
		if len(cfg.Args) == 0 {
			cfg.Args = []string{cfg.Path}
		}
		spec.Env = append(spec.Env, ExecEnv+"="+cfg.Path)
		cfg.Path = selfExe
	}
	for _, kv := range env {
		if !slices.Contains(spec.Env, kv) {
			spec.Env = append(spec.Env, kv)
		}
	}
}

func wrapped(cfg *containerizer.ContainerConfig, spec *containerizer.LaunchSpec) bool {
	if cfg.Path != selfExe {
		return false
	}
	for _, kv := range spec.Env {
		if strings.HasPrefix(kv, ExecEnv+"=") {
			return true
		}
	}
	return false
}

// Isolate implements containerizer.Isolator; nothing to do once started.
func (*Isolator) Isolate(context.Context, string, int) error { return nil }

// Cleanup implements containerizer.Isolator. The kernel kills every
// process of a pid namespace when its pid 1 exits, so nothing is left.
func (*Isolator) Cleanup(context.Context, string) error { return nil }

// posixFS is `filesystem/posix`: the sandbox is a plain directory the
// containerizer already made the working directory.
type posixFS struct{}

func (posixFS) Name() string { return "filesystem/posix" }
func (posixFS) Prepare(context.Context, *containerizer.ContainerConfig, *containerizer.LaunchSpec) error {
	return nil
}
func (posixFS) Isolate(context.Context, string, int) error { return nil }
func (posixFS) Cleanup(context.Context, string) error      { return nil }

func init() {
	containerizer.RegisterIsolator("namespaces/pid", func(containerizer.Options) (containerizer.Isolator, error) {
		if err := checkNamespaces(); err != nil {
			return nil, err
		}
		return &Isolator{RemountProc: true}, nil
	})
	containerizer.RegisterIsolator("filesystem/posix", func(containerizer.Options) (containerizer.Isolator, error) {
		return posixFS{}, nil
	})
	containerizer.RegisterIsolator("filesystem/linux", func(containerizer.Options) (containerizer.Isolator, error) {
		if err := checkMountNamespaces(); err != nil {
			return nil, err
		}
		return LinuxFS{}, nil
	})
}

// checkNamespaces fails early when pid namespaces are unavailable (not root,
// or a kernel without CONFIG_PID_NS).
func checkNamespaces() error {
	if syscall.Geteuid() != 0 {
		return errors.New("namespaces/pid: the agent must run as root to create pid namespaces")
	}
	if _, err := syscall.Readlink("/proc/self/ns/pid", make([]byte, 64)); err != nil {
		return errors.New("namespaces/pid: the kernel has no pid namespaces (/proc/self/ns/pid)")
	}
	return nil
}
