package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"mezzo/api/mesos"
)

// Recovery modes (--recover), as Mesos's.
const (
	// RecoverReconnect re-attaches to the executors a previous agent
	// process left running (the default).
	RecoverReconnect = "reconnect"
	// RecoverCleanup kills them and starts as a new agent.
	RecoverCleanup = "cleanup"
)

// recovered is what an agent restart finds under <work_dir>/meta.
type recovered struct {
	info       *mesos.AgentInfo // nil: register as a new agent
	epoch      uint64
	bootID     string // boot id of the checkpoint ("" if none)
	rebooted   bool   // the checkpoint is from another boot of the host
	frameworks []*recoveredFramework
}

// containerIDs lists the containers of every checkpointed executor.
func (r *recovered) containerIDs() []string {
	var out []string
	for _, fw := range r.frameworks {
		for _, e := range fw.executors {
			out = append(out, e.containerID)
		}
	}
	return out
}

type recoveredFramework struct {
	info      *mesos.FrameworkInfo
	executors []*recoveredExecutor
}

type recoveredExecutor struct {
	info        *mesos.ExecutorInfo
	kind        executorKind
	containerID string
	tasks       []*mesos.TaskInfo
}

// recoveryErrs decides what a checkpoint that cannot be read does to
// recovery, as Mesos's --strict: strict (the default), it stops the agent
// with an error naming the file; lenient (--strict=false), the entity the
// file describes (a framework, an executor, a task) is left out, the error
// is kept (logged and counted in slave/recovery_errors) and everything
// else is recovered. Files a crash may leave half-made (a directory
// without its info file) are skipped in both modes, as before.
type recoveryErrs struct {
	lenient bool
	skipped []error
}

// check passes nil through; otherwise, lenient, it records err (saying
// that what was skipped) and returns nil, and strict it returns err with
// the way forward.
func (r *recoveryErrs) check(err error, what string) error {
	if err == nil {
		return nil
	}
	var se *strictError
	if errors.As(err, &se) {
		return err // a part's error, already final
	}
	if r != nil && r.lenient {
		r.skipped = append(r.skipped, fmt.Errorf("skipped %s: %w", what, err))
		return nil
	}
	return &strictError{err: err, what: what}
}

// strictError is a recovery error that stopped a strict agent.
type strictError struct {
	err  error
	what string
}

func (e *strictError) Error() string {
	return fmt.Sprintf("recovering agent: %v; restart with --strict=false to skip this %s and recover the rest "+
		"(counted in slave/recovery_errors), or remove the file", e.err, e.what)
}

func (e *strictError) Unwrap() error { return e.err }

// recoverMeta reads the checkpointed agent: its identity and the
// frameworks, executors and tasks it ran. A different boot id (the host
// rebooted) or no checkpoint means starting as a new agent, as Mesos does.
// A checkpoint file that exists but cannot be read goes to errs (see
// recoveryErrs; nil is strict).
func recoverMeta(m, rt metaDir, bootID string, errs *recoveryErrs) (*recovered, error) {
	r := &recovered{}
	if b, err := os.ReadFile(m.epochPath()); err == nil {
		e, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			// Lenient: epoch 0, so the first master's epoch is accepted.
			if err := errs.check(&CorruptCheckpointError{File: m.epochPath(), Reason: err.Error()}, "master epoch"); err != nil {
				return nil, err
			}
		}
		r.epoch = e
	}
	target, err := os.Readlink(m.latestPath())
	if errors.Is(err, os.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return nil, fmt.Errorf("recovering agent: %w", err)
	}
	if prev, err := os.ReadFile(m.bootIDPath()); err == nil {
		r.bootID = strings.TrimSpace(string(prev))
		if bootID != "" && r.bootID != bootID {
			// The host rebooted: the old agent's executors are gone.
			r.rebooted = true
			return r, nil
		}
	}
	agentDir := filepath.Join(m.slavesDir(), target)
	infoPath := filepath.Join(agentDir, "slave.info")
	info := &mesos.AgentInfo{}
	err = readProto(infoPath, info)
	if err == nil && info.GetId().GetValue() == "" {
		err = &CorruptCheckpointError{File: infoPath, Reason: "no agent id"}
	}
	if err != nil {
		// Lenient: without its identity the agent registers as a new one
		// (and the containers of the old one are destroyed as unclaimed).
		return r, errs.check(err, "agent identity")
	}
	r.info = info
	fwDirs, err := readDirNames(filepath.Join(agentDir, "frameworks"))
	if err := errs.check(err, "list of frameworks"); err != nil {
		return nil, err
	}
	for _, d := range fwDirs {
		fw, err := recoverFramework(filepath.Join(agentDir, "frameworks", d), errs)
		if err != nil {
			return nil, err
		}
		if fw == nil {
			continue
		}
		if rt != m {
			// Executors of frameworks that do not checkpoint are recorded
			// in the runtime directory.
			more, err := recoverExecutors(filepath.Join(rt.slavesDir(), target, "frameworks", d, "executors"), errs)
			if err != nil {
				return nil, err
			}
			fw.executors = append(fw.executors, more...)
		}
		r.frameworks = append(r.frameworks, fw)
	}
	return r, nil
}

// recoverFramework reads one framework directory; nil if it holds no
// framework.info (a crash while it was being created) or, lenient, an
// unreadable one.
func recoverFramework(dir string, errs *recoveryErrs) (*recoveredFramework, error) {
	fi := &mesos.FrameworkInfo{}
	path := filepath.Join(dir, "framework.info")
	err := readProto(path, fi)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err == nil && fi.GetId().GetValue() == "" {
		err = &CorruptCheckpointError{File: path, Reason: "no framework id"}
	}
	if err != nil {
		return nil, errs.check(err, "framework")
	}
	executors, err := recoverExecutors(filepath.Join(dir, "executors"), errs)
	if err != nil {
		return nil, err
	}
	return &recoveredFramework{info: fi, executors: executors}, nil
}

// recoverExecutors reads every executor directory under dir.
func recoverExecutors(dir string, errs *recoveryErrs) ([]*recoveredExecutor, error) {
	exDirs, err := readDirNames(dir)
	if err := errs.check(err, "list of executors"); err != nil {
		return nil, err
	}
	var out []*recoveredExecutor
	for _, d := range exDirs {
		e, err := recoverExecutor(filepath.Join(dir, d), errs)
		if err := errs.check(err, "executor"); err != nil {
			return nil, err
		}
		if e != nil {
			out = append(out, e)
		}
	}
	return out, nil
}

// recoverExecutor reads one executor directory. An unreadable task.info
// goes to errs (lenient: that task is left out); any other error is the
// whole executor's, for the caller to check.
func recoverExecutor(dir string, errs *recoveryErrs) (*recoveredExecutor, error) {
	info := &mesos.ExecutorInfo{}
	if err := readProto(filepath.Join(dir, "executor.info"), info); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	if info.GetExecutorId().GetValue() == "" {
		return nil, &CorruptCheckpointError{File: filepath.Join(dir, "executor.info"), Reason: "no executor id"}
	}
	kindPath := filepath.Join(dir, "executor.kind")
	b, err := os.ReadFile(kindPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	e := &recoveredExecutor{info: info, kind: -1}
	for k, name := range executorKindName {
		if strings.TrimSpace(string(b)) == name {
			e.kind = k
		}
	}
	if e.kind < 0 {
		return nil, &CorruptCheckpointError{File: kindPath, Reason: fmt.Sprintf("unknown executor kind %q", strings.TrimSpace(string(b)))}
	}
	cid, err := os.Readlink(filepath.Join(dir, "runs", "latest"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	e.containerID = cid
	taskDirs, err := readDirNames(filepath.Join(dir, "runs", cid, "tasks"))
	if err != nil {
		return nil, err
	}
	for _, d := range taskDirs {
		ti := &mesos.TaskInfo{}
		path := filepath.Join(dir, "runs", cid, "tasks", d, "task.info")
		err := readProto(path, ti)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err == nil && ti.GetTaskId().GetValue() == "" {
			err = &CorruptCheckpointError{File: path, Reason: "no task id"}
		}
		if err != nil {
			if err := errs.check(err, "task"); err != nil {
				return nil, err
			}
			continue
		}
		e.tasks = append(e.tasks, ti)
	}
	return e, nil
}

// readDirNames lists the directories in dir, sorted; none if dir does not
// exist.
func readDirNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// readBootID returns this boot's id ("" where the kernel does not say).
func readBootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// checkpointedStreams lists the (framework, task) of every status update
// stream checkpointed under dir, before the manager's Recover deletes the
// finished ones: a task whose stream was there and is gone after Recover
// had its terminal update acknowledged, so it is complete. The directory
// names are statusupdate's escaped IDs (bytes outside [A-Za-z0-9._-] as
// %XX, "" as "%").
func checkpointedStreams(dir string) map[[2]string]bool {
	out := map[[2]string]bool{}
	fws, _ := readDirNames(dir)
	for _, fw := range fws {
		tasks, _ := readDirNames(filepath.Join(dir, fw))
		for _, t := range tasks {
			out[[2]string{unescapeStreamName(fw), unescapeStreamName(t)}] = true
		}
	}
	return out
}

func unescapeStreamName(s string) string {
	if s == "%" {
		return ""
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
