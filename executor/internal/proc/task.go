package proc

import (
	"syscall"
	"time"

	mesos "mezzo/api/mesos"
	"mezzo/internal/clock"
)

// Loop is how a Task reaches the executor's event loop: the clock it times
// with and a function that runs work on the loop goroutine (Client.Post).
type Loop struct {
	Clock clock.Clock
	Post  func(func()) bool
	Logf  func(format string, args ...any)
}

// After runs fn on the loop after d unless the returned cancel function has
// been called (on the loop) first.
func (l Loop) After(d time.Duration, fn func()) (cancel func()) {
	t := l.Clock.NewTimer(d)
	stop := make(chan struct{})
	cancelled := false // touched only on the loop
	go func() {
		select {
		case <-t.C():
			l.Post(func() {
				if !cancelled {
					cancelled = true
					fn()
				}
			})
		case <-stop:
		}
	}()
	return func() {
		if !cancelled {
			cancelled = true
			t.Stop()
			close(stop)
		}
	}
}

// Task is one running task process and its kill state. All methods run on
// the executor's loop.
type Task struct {
	Info *mesos.TaskInfo
	Proc *Process
	// Killing is set once a kill started (KILL, SHUTDOWN, group kill or
	// max_completion_time); the task then ends TASK_KILLED unless
	// MaxCompletion is set (TASK_FAILED, REASON_MAX_COMPLETION_TIME_REACHED).
	Killing       bool
	MaxCompletion bool
	Exited        bool

	loop         Loop
	killStart    time.Time
	killDeadline time.Time
	cancelKill   func()
	cancelMax    func()
}

// Watch starts tracking a launched process: onExit runs on the loop when it
// has exited, and the max_completion_time timer (if any) starts.
func Watch(loop Loop, info *mesos.TaskInfo, p *Process, onExit func(*Task)) *Task {
	t := &Task{Info: info, Proc: p, loop: loop}
	go func() {
		<-p.Done()
		loop.Post(func() {
			t.Exited = true
			t.stopTimers()
			onExit(t)
		})
	}()
	if ns := info.GetMaxCompletionTime().GetNanoseconds(); ns > 0 {
		t.cancelMax = loop.After(time.Duration(ns), func() {
			t.cancelMax = nil
			if t.Exited || t.Killing {
				return
			}
			loop.Logf("task %s exceeded its max completion time of %v; killing it", t.ID(), time.Duration(ns))
			t.MaxCompletion = true
			t.Kill(0)
		})
	}
	return t
}

// ID is the task's ID.
func (t *Task) ID() string { return t.Info.GetTaskId().GetValue() }

// Kill sends SIGTERM to the task's process group and SIGKILL after grace.
// It reports true for the first kill. A later kill can only bring the
// SIGKILL forward, never push it back: a retried KILL is a no-op and a
// shorter grace period counts from the first SIGTERM (as Mesos does).
func (t *Task) Kill(grace time.Duration) (first bool) {
	if t.Exited {
		return false
	}
	now := t.loop.Clock.Now()
	if t.Killing {
		deadline := t.killStart.Add(grace)
		if !deadline.Before(t.killDeadline) || t.cancelKill == nil {
			return false
		}
		t.cancelKill()
		t.scheduleSIGKILL(deadline, max(deadline.Sub(now), 0))
		return false
	}
	if t.cancelMax != nil {
		t.cancelMax()
		t.cancelMax = nil
	}
	t.Killing = true
	t.killStart = now
	if err := t.Proc.Signal(syscall.SIGTERM); err != nil {
		t.loop.Logf("task %s: SIGTERM: %v", t.ID(), err)
	}
	t.scheduleSIGKILL(now.Add(grace), grace)
	return true
}

func (t *Task) scheduleSIGKILL(deadline time.Time, in time.Duration) {
	t.killDeadline = deadline
	t.cancelKill = t.loop.After(in, func() {
		t.cancelKill = nil
		if t.Exited {
			return
		}
		t.loop.Logf("task %s did not terminate after SIGTERM; sending SIGKILL to its process group", t.ID())
		if err := t.Proc.Signal(syscall.SIGKILL); err != nil {
			t.loop.Logf("task %s: SIGKILL: %v", t.ID(), err)
		}
	})
}

func (t *Task) stopTimers() {
	if t.cancelKill != nil {
		t.cancelKill()
		t.cancelKill = nil
	}
	if t.cancelMax != nil {
		t.cancelMax()
		t.cancelMax = nil
	}
}

// Outcome maps how the task ended to its terminal update, as Mesos does:
// max_completion_time → FAILED with REASON_MAX_COMPLETION_TIME_REACHED; a
// kill → KILLED; exit 0 → FINISHED; else FAILED. The message says how the
// command ended ("Command exited with status 1").
func (t *Task) Outcome() (mesos.TaskState, *mesos.TaskStatus_Reason, string) {
	ok, msg := t.Proc.Result()
	switch {
	case t.MaxCompletion:
		return mesos.TaskState_TASK_FAILED, mesos.TaskStatus_REASON_MAX_COMPLETION_TIME_REACHED.Enum(), msg
	case t.Killing:
		return mesos.TaskState_TASK_KILLED, nil, msg
	case ok:
		return mesos.TaskState_TASK_FINISHED, nil, msg
	}
	return mesos.TaskState_TASK_FAILED, nil, msg
}

// HasCapability reports whether fi lists capability c.
func HasCapability(fi *mesos.FrameworkInfo, c mesos.FrameworkInfo_Capability_Type) bool {
	for _, cap := range fi.GetCapabilities() {
		if cap.GetType() == c {
			return true
		}
	}
	return false
}

// AllocationRole is the role a task's resources are allocated to, for the
// MESOS_ALLOCATION_ROLE variable ("" when unknown).
func AllocationRole(task *mesos.TaskInfo) string {
	for _, r := range task.GetResources() {
		if role := r.GetAllocationInfo().GetRole(); role != "" {
			return role
		}
	}
	return ""
}
