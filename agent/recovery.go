package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"mezzo/agent/containerizer"
	"mezzo/agent/statusupdate"
	"mezzo/api/mesos"
	"mezzo/internal/atomicfile"
	"mezzo/internal/stout"

	"google.golang.org/protobuf/proto"
)

// recoverCheckpoint runs in New, before the loop: it reads the checkpoint,
// refuses an incompatible reconfiguration, builds the containerizer and
// lets it re-attach to the containers a previous agent process left, and
// recovers the status update streams. The loop then rebuilds the
// executors (recoverState).
func (a *Agent) recoverCheckpoint() error {
	errs := &recoveryErrs{lenient: a.cfg.LenientRecovery}
	rec, err := recoverMeta(a.meta, a.runtime, a.bootID, errs)
	if err != nil {
		return err
	}
	for _, err := range errs.skipped {
		a.metrics.recoveryErrors++
		a.log.Error("recovery left out a checkpoint it cannot read (--strict=false)", "err", err)
	}
	runtimeDir := a.runtime.containersDir()
	if rec.rebooted {
		// The containers checkpointed there died with the previous boot,
		// and so did the executors recorded in the runtime directory (a
		// tmpfs is empty after a reboot anyway).
		if err := os.RemoveAll(runtimeDir); err != nil {
			return fmt.Errorf("recovering agent: %w", err)
		}
		if a.runtime != a.meta {
			for _, dir := range []string{a.runtime.slavesDir(), a.meta.containersDir()} {
				if err := os.RemoveAll(dir); err != nil {
					return fmt.Errorf("recovering agent: %w", err)
				}
			}
		}
		a.log.Info("the host rebooted since the agent's checkpoint; registering as a new agent",
			"checkpointed_boot_id", rec.bootID, "boot_id", a.bootID)
	}
	if a.runtime != a.meta {
		if err := moveTree(a.meta.containersDir(), runtimeDir); err != nil {
			return fmt.Errorf("recovering agent: moving container records to the runtime directory: %w", err)
		}
	}
	if rec.info != nil && a.cfg.Recover == RecoverReconnect {
		if err := checkReconfiguration(a.cfg.ReconfigurationPolicy, rec.info, a.agentInfo()); err != nil {
			return err
		}
	}
	if a.cz == nil {
		if a.cz, a.docker, err = buildContainerizer(a.cfg, runtimeDir, a.meta.dockerDir(), a.bootID); err != nil {
			return err
		}
	}
	containers, err := a.recoverContainers(rec)
	if err != nil {
		return fmt.Errorf("recovering agent: %w", err)
	}
	if a.cfg.Recover == RecoverCleanup && (rec.info != nil || len(containers) > 0) {
		a.log.Info("--recover=cleanup: killing the executors of the previous agent and starting as a new agent",
			"containers", len(containers))
		a.destroyAll(containers)
		rec.info, rec.frameworks, containers = nil, nil, nil
	}
	a.rec = rec
	a.recoveredContainers = map[string]containerizer.Recovered{}
	for _, c := range containers {
		a.recoveredContainers[c.ID] = c
	}
	a.sumManager = statusupdate.New(statusupdate.Options{Forward: a.forward, Clock: a.clock, MetaDir: a.meta.updatesDir()})
	a.sum = a.sumManager
	if rec.info == nil {
		// A new agent: updates checkpointed for an old identity are moot.
		_ = removeAll(a.meta.updatesDir())
	} else {
		a.sess.agentID = rec.info.GetId().GetValue()
		a.streamsBefore = checkpointedStreams(a.meta.updatesDir())
		if err := a.sumManager.Recover(); err != nil {
			// Torn tails are cut back to their valid prefix; the rest of
			// the streams are recovered.
			a.metrics.recoveryErrors++
			a.log.Error("recovering status updates", "err", err)
		}
	}
	a.recovering.Store(true)
	return nil
}

// recoverContainers lets the containerizer re-attach to the containers a
// previous agent process left. The docker containerizer is told which
// containers the checkpoint lists (RecoverKnown): its other containers are
// orphans and are removed (--docker_kill_orphans).
func (a *Agent) recoverContainers(rec *recovered) ([]containerizer.Recovered, error) {
	ctx := context.Background()
	if a.docker != nil {
		if kr, ok := a.cz.(knownRecoverer); ok {
			return kr.RecoverKnown(ctx, rec.containerIDs())
		}
	}
	if r, ok := a.cz.(containerizer.Recoverer); ok {
		return r.Recover(ctx)
	}
	return nil, nil
}

// knownRecoverer is the docker containerizer's (and its composite's)
// recovery of the containers the agent's checkpoint lists.
type knownRecoverer interface {
	RecoverKnown(ctx context.Context, known []string) ([]containerizer.Recovered, error)
}

// destroyAll kills containers and waits for them (recovery, before the
// loop runs).
func (a *Agent) destroyAll(cs []containerizer.Recovered) {
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := a.cz.Destroy(ctx, c.ID, 0); err != nil && !errors.Is(err, containerizer.ErrUnknownContainer) {
				a.log.Warn("destroying container", "container", c.ID, "err", err)
			}
		}()
	}
	wg.Wait()
}

// recoverState is the loop's first step: it rebuilds the frameworks,
// executors and tasks of the checkpoint. Executors of checkpointing
// frameworks whose process still runs wait up to
// --executor_reregistration_timeout to re-subscribe; executors of other
// frameworks are killed and each of their tasks gets one terminal update
// (REASON_AGENT_RESTARTED); executors that ended while the agent was down
// report their tasks' end. Containers no executor claims are destroyed.
// The agent registers with the master once this is settled.
func (a *Agent) recoverState() {
	defer a.recovering.Store(false)
	containers := a.recoveredContainers
	a.recoveredContainers = nil
	a.reregWait = map[*executor]bool{}
	claimed := map[string]bool{}
	if a.rec.info != nil {
		for _, rf := range a.rec.frameworks {
			fw := a.frameworks[rf.info.GetId().GetValue()]
			if fw == nil {
				fw = &framework{id: rf.info.GetId().GetValue(), info: rf.info, executors: map[string]*executor{}}
				a.frameworks[fw.id] = fw
				a.fwOrder = append(a.fwOrder, fw.id)
			}
			for _, re := range rf.executors {
				claimed[re.containerID] = true
				c, found := containers[re.containerID]
				a.recoverExecutor(fw, re, c, found)
			}
			a.maybeRemoveFramework(fw)
		}
	}
	a.streamsBefore = nil
	for id := range containers {
		if !claimed[id] {
			a.log.Warn("destroying a container no executor claims", "container", id)
			a.destroy(id, 0)
		}
	}
	if len(a.reregWait) > 0 {
		a.log.Info("waiting for executors to re-subscribe", "executors", len(a.reregWait),
			"timeout", a.cfg.ExecutorReregistrationTimeout)
		a.reregTimer = a.after(a.cfg.ExecutorReregistrationTimeout, a.reregistrationTimeout)
		return
	}
	a.finishRecovery()
}

// recoverExecutor rebuilds one executor and decides its fate.
func (a *Agent) recoverExecutor(fw *framework, re *recoveredExecutor, c containerizer.Recovered, found bool) {
	e := &executor{
		fw: fw, id: re.info.GetExecutorId().GetValue(), info: re.info, kind: re.kind, containerID: re.containerID,
		tasks: map[string]*task{}, killsSent: map[string]bool{}, recovered: true,
		docker: re.kind == kindCommand && isDocker(re.info.GetContainer()) && a.docker != nil,
	}
	// A direct task of the mesos containerizer belongs to a framework
	// that does not checkpoint, which recovery ends below like any of its
	// executors; only Docker tasks run on as direct tasks.
	e.direct = e.docker
	if old := fw.executors[e.id]; old != nil {
		a.log.Warn("ignoring a second checkpointed executor with the same id", "framework", fw.id, "executor", e.id)
		return
	}
	e.directory = a.sandboxDir(fw.id, e.id, e.containerID)
	a.attachSandbox(e)
	fw.executors[e.id] = e
	fw.order = append(fw.order, e.id)
	for _, ti := range re.tasks {
		tid := ti.GetTaskId().GetValue()
		latest, hasStream := a.sum.Latest(fw.id, tid)
		if !hasStream && a.streamsBefore[[2]string{fw.id, tid}] {
			// Its terminal update was acknowledged just before the crash.
			a.forgetTask(e, tid)
			continue
		}
		t := e.addTask(ti, fw.id, a.sess.agentID)
		t.queued = false
		if hasStream {
			for _, u := range a.sum.Pending(fw.id, tid) {
				st := proto.Clone(u.GetStatus()).(*mesos.TaskStatus)
				st.Data = nil
				t.t.Statuses = append(t.t.Statuses, st)
			}
			t.t.State = latest.State
			if mesos.IsTerminal(latest.GetState()) {
				t.terminal = true
			}
		}
	}
	alive := found && !c.Ended
	if !fw.checkpoint() {
		e.pending = &termination{a.goneState(fw), mesos.TaskStatus_REASON_AGENT_RESTARTED,
			"Agent restarted; the framework does not checkpoint, so its executor was killed"}
	}
	switch {
	case !found:
		a.log.Info("recovered executor has no container; it ended while the agent was down",
			"framework", fw.id, "executor", e.id, "container", e.containerID)
		a.executorExited(e, nil)
	case !alive:
		e.pid = c.Pid
		e.phase = phaseTerminating
		a.waitContainer(e)
	case !fw.checkpoint():
		e.pid = c.Pid
		a.log.Info("killing the executor of a non-checkpointing framework", "framework", fw.id, "executor", e.id, "pid", c.Pid)
		e.phase = phaseTerminating
		a.waitContainer(e)
		a.destroyContainer(e, 0)
	case e.docker:
		// A Docker task has no executor to re-subscribe: it runs on, and
		// its container's end reports it.
		e.pid = c.Pid
		e.phase = phaseRunning
		a.waitContainer(e)
		e.healthRecovered = true
		for _, t := range e.liveTasks() {
			a.startDirectHealth(e, t, a.clock.Now())
		}
		a.log.Info("recovered Docker task", "framework", fw.id, "executor", e.id, "container", e.containerID)
	default:
		e.pid = c.Pid
		e.phase = phaseRegistering
		a.reregWait[e] = true
		a.waitContainer(e)
		a.log.Info("recovered executor", "framework", fw.id, "executor", e.id, "pid", c.Pid, "tasks", len(e.tasks))
	}
}

// goneState is the state of a task the agent knows is no longer running
// though it never saw it end: TASK_GONE for partition-aware frameworks,
// TASK_LOST for the others.
func (a *Agent) goneState(fw *framework) mesos.TaskState {
	if fw != nil && fw.hasCapability(mesos.FrameworkInfo_Capability_PARTITION_AWARE) {
		return mesos.TaskState_TASK_GONE
	}
	return mesos.TaskState_TASK_LOST
}

// waitContainer reports the end of the executor's container to the loop.
func (a *Agent) waitContainer(e *executor) {
	id := e.containerID
	go func() {
		term, err := a.cz.Wait(context.Background(), id)
		if err != nil {
			term = containerizer.Termination{ExitCode: -1, Message: err.Error()}
		}
		a.post(func() { a.executorExited(e, &term) })
	}()
}

// executorReregistered notes that a recovered executor re-subscribed (or
// ended); recovery completes once none is awaited.
func (a *Agent) executorReregistered(e *executor) {
	if !a.reregWait[e] {
		return
	}
	delete(a.reregWait, e)
	if len(a.reregWait) == 0 && !a.recovered {
		a.reregTimer.Stop()
		a.finishRecovery()
	}
}

// reregistrationTimeout kills the recovered executors that did not
// re-subscribe in time.
func (a *Agent) reregistrationTimeout() {
	for e := range a.reregWait {
		if e.phase != phaseRegistering {
			continue
		}
		a.log.Warn("executor did not re-subscribe in time; killing it", "framework", e.fw.id, "executor", e.id,
			"timeout", a.cfg.ExecutorReregistrationTimeout)
		e.pending = &termination{a.goneState(e.fw), mesos.TaskStatus_REASON_EXECUTOR_REREGISTRATION_TIMEOUT,
			"Executor did not re-register within " + stout.FormatDuration(a.cfg.ExecutorReregistrationTimeout)}
		e.phase = phaseTerminating
		a.destroyContainer(e, 0)
	}
	a.reregWait = map[*executor]bool{}
	a.finishRecovery()
}

// finishRecovery ends recovery and registers with the master.
func (a *Agent) finishRecovery() {
	if a.recovered {
		return
	}
	a.recovered = true
	a.recoveryTime = a.clock.Now().Sub(a.startTime)
	a.rec.frameworks = nil
	a.log.Info("recovery complete", "agent_id", a.sess.agentID, "frameworks", len(a.frameworks), "took", a.recoveryTime)
	a.connect()
}

// forgetTask removes a completed task's checkpoint.
func (a *core) forgetTask(e *executor, taskID string) {
	if a.sess.agentID == "" {
		return
	}
	if err := a.cp.forgetTask(a.sess.agentID, e, taskID); err != nil {
		a.log.Warn("removing task checkpoint", "task", taskID, "err", err)
	}
}

// destroy kills a container through the container sink.
func (a *core) destroy(id string, grace time.Duration) { a.containers.destroy(id, grace) }

// moveTree moves the files under from (container records an agent without
// a runtime directory left under meta/) to the same paths under to, then
// removes from, so that a restart with a runtime directory still finds the
// containers the previous agent ran. Files already present under to win.
// The two may be on different file systems, so files are copied.
func moveTree(from, to string) error {
	if _, err := os.Stat(from); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if _, err := os.Stat(dst); err == nil {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return atomicfile.WriteFile(dst, data)
	})
	if err != nil {
		return err
	}
	return os.RemoveAll(from)
}
