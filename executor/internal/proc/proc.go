// Package proc starts and stops the task processes of mezzo's built-in
// executors (executor/command and executor/group): it turns a CommandInfo
// into a child process in its own session and process group, describes how
// it ended in Mesos's words, and escalates kills from SIGTERM to SIGKILL.
package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	mesos "mezzo/api/mesos"
	"mezzo/internal/secrets"
)

// Spec says how to run one task's command.
type Spec struct {
	Command *mesos.CommandInfo
	// Env is the base environment (the executor's own); Extra entries
	// ("K=V") override it, and the command's environment overrides both.
	Env   []string
	Extra []string
	// Dir is the working directory.
	Dir string
	// Stdout and Stderr receive the task's output; nil inherits the
	// executor's own (which the agent points at the sandbox files).
	Stdout, Stderr *os.File
}

// Process is a started task process.
type Process struct {
	Pid   int
	cmd   *exec.Cmd
	done  chan struct{}
	state *os.ProcessState
	err   error
}

// Start launches the command of spec in a new session (so it leads its own
// process group, which kills address as a whole) and reaps it in the
// background; Done is closed when it has exited.
func Start(spec Spec) (*Process, error) {
	if spec.Command == nil {
		return nil, errors.New("task has no command")
	}
	env := MergeEnv(spec.Env, spec.Extra, spec.Command.GetEnvironment())
	path, argv, err := commandLine(spec.Command, env)
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:        path,
		Args:        argv,
		Env:         env,
		Dir:         spec.Dir,
		Stdout:      os.Stdout,
		Stderr:      os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	// Assign only non-nil files: a nil *os.File stored in the io.Writer
	// field is a non-nil interface, and the child would get no descriptor.
	if spec.Stdout != nil {
		cmd.Stdout = spec.Stdout
	}
	if spec.Stderr != nil {
		cmd.Stderr = spec.Stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{Pid: cmd.Process.Pid, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		p.state = cmd.ProcessState
		close(p.done)
	}()
	return p, nil
}

// Done is closed once the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Result describes the exit; valid after Done is closed. ok means exit
// status 0.
func (p *Process) Result() (ok bool, message string) {
	if p.state == nil {
		msg := "Failed to get exit status for Command"
		if p.err != nil {
			msg += ": " + p.err.Error()
		}
		return false, msg
	}
	ws, isWS := p.state.Sys().(syscall.WaitStatus)
	switch {
	case !isWS:
		return p.state.Success(), "Command " + p.state.String()
	case ws.Exited():
		return ws.ExitStatus() == 0, fmt.Sprintf("Command exited with status %d", ws.ExitStatus())
	case ws.Signaled():
		return false, "Command terminated with signal " + SignalName(ws.Signal())
	}
	return false, "Command terminated with unknown status"
}

// Signal sends sig to the task's whole process group, and to the process
// itself should the group be gone (it cannot be while the leader lives).
func (p *Process) Signal(sig syscall.Signal) error {
	err := syscall.Kill(-p.Pid, sig)
	if err == syscall.ESRCH {
		select {
		case <-p.done:
			return nil
		default:
		}
		return p.cmd.Process.Signal(sig)
	}
	return err
}

// SignalName names a signal as strsignal(3) does ("Terminated", "Killed"),
// which is what Mesos puts in "Command terminated with signal ...".
func SignalName(sig syscall.Signal) string {
	s := sig.String()
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}

// MergeEnv builds a task environment: base, then extra, then the variables
// of env (VALUE secrets resolved to their data), later entries replacing
// earlier ones of the same name, order kept.
func MergeEnv(base, extra []string, env *mesos.Environment) []string {
	var order []string
	vals := map[string]string{}
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	for _, list := range [][]string{base, extra} {
		for _, kv := range list {
			if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
				set(k, v)
			}
		}
	}
	for _, v := range env.GetVariables() {
		if v.GetName() == "" {
			continue
		}
		// A VALUE secret's data; the agent refuses to launch a task with
		// a secret it cannot resolve, so ok is false only for input that
		// never came from it.
		if val, ok := secrets.EnvValue(v); ok {
			set(v.GetName(), val)
		}
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vals[k])
	}
	return out
}

// commandLine turns a CommandInfo into an executable path and argv.
// shell (the default) runs `/bin/sh -c value`; otherwise value is the
// executable and arguments the full argv, argv[0] included (Mesos's
// convention), looked up in the task's PATH when value has no slash.
func commandLine(ci *mesos.CommandInfo, env []string) (string, []string, error) {
	if ci.GetShell() {
		if ci.Value == nil || ci.GetValue() == "" {
			return "", nil, errors.New("shell command is not specified (command.value is empty)")
		}
		return "/bin/sh", []string{"sh", "-c", ci.GetValue()}, nil
	}
	if ci.GetValue() == "" {
		return "", nil, errors.New("executable is not specified (command.value is empty)")
	}
	argv := ci.GetArguments()
	if len(argv) == 0 {
		argv = []string{ci.GetValue()}
	}
	path, err := LookPath(ci.GetValue(), env)
	if err != nil {
		return "", nil, err
	}
	return path, append([]string(nil), argv...), nil
}

// LookPath finds name in the PATH of env (the task's, not the executor's
// own; /usr/local/bin:/usr/bin:/bin when env sets none). A name with a
// slash is a path already and is returned as is. The health checker uses it
// too, so that a check resolves its command as the task would.
func LookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	pathVar := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	for _, dir := range filepath.SplitList(pathVar) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("executable %q not found in PATH %q", name, pathVar)
}
