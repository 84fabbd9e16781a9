package cli

import (
	"flag"
	"fmt"
	"net/url"
	"time"
)

type logsOpts struct {
	stderr    *bool
	follow    *bool
	framework *string
	tail      *int
	interval  *time.Duration
}

var logsSpec = spec{
	summary: "print a task's stdout (or --stderr) from its sandbox; --follow keeps printing",
	usage:   " TASK_ID",
	nargs:   1,
	setup: func(fs *flag.FlagSet) any {
		return &logsOpts{
			stderr:    fs.Bool("stderr", false, "print stderr instead of stdout"),
			follow:    fs.Bool("follow", false, "keep printing what the task writes, until it ends"),
			framework: fs.String("framework", "", "the task's framework ID (when several frameworks use the task ID)"),
			tail:      fs.Int("tail", 0, "print only the last N lines (0: the whole file)"),
			interval:  fs.Duration("interval", time.Second, "how often --follow polls the agent"),
		}
	},
	run: runLogs,
}

// sandbox is where a task's files are: its agent and executor directory.
type sandbox struct {
	task    task
	addr    string // agent host:port
	who     string // names the agent in errors
	dir     string
	agentID string
}

func runLogs(e *env, c *invocation) error {
	o := c.opts.(*logsOpts)
	if *o.tail < 0 {
		return usageError{fmt.Errorf("--tail=%d: expecting a number of lines >= 0", *o.tail)}
	}
	if *o.interval <= 0 {
		return usageError{fmt.Errorf("--interval=%s: expecting a positive duration", *o.interval)}
	}
	sb, err := locateSandbox(c, c.args[0], *o.framework)
	if err != nil {
		return err
	}
	name := "stdout"
	if *o.stderr {
		name = "stderr"
	}
	f := &remoteFile{c: c.master, addr: sb.addr, who: sb.who, path: sb.dir + "/" + name}
	size, err := f.size()
	if err != nil {
		return err
	}
	var off int64
	if *o.tail > 0 {
		if off, err = f.tailStart(size, *o.tail); err != nil {
			return err
		}
	}
	if off, err = f.copy(c.stdout, off); err != nil {
		return err
	}
	if !*o.follow {
		return nil
	}
	for polls := 0; e.maxPolls == 0 || polls < e.maxPolls; polls++ {
		t := e.clock.NewTimer(*o.interval)
		<-t.C()
		next, err := f.copy(c.stdout, off)
		if err != nil {
			return err
		}
		if next != off {
			off = next
			continue
		}
		// Nothing new: a truncated file starts over; a finished task ends
		// the command once what it wrote is printed.
		if size, err := f.size(); err == nil && size < off {
			fmt.Fprintf(c.stderr, "mezzo logs: %s was truncated; reading from the start\n", f.path)
			off = 0
			continue
		}
		if done, err := taskEnded(c, sb.task); err == nil && done {
			_, err := f.copy(c.stdout, off)
			return err
		}
	}
	return nil
}

// locateSandbox finds the task through /master/tasks, its agent through
// /master/slaves and the executor's directory through the agent's /state.
func locateSandbox(c *invocation, taskID, frameworkID string) (*sandbox, error) {
	t, err := findTask(c, taskID, frameworkID)
	if err != nil {
		return nil, err
	}
	var agents agentsDoc
	if err := c.master.getJSON("/master/slaves?"+url.Values{"slave_id": {t.SlaveID}}.Encode(), &agents); err != nil {
		return nil, err
	}
	var pid string
	for _, a := range agents.Slaves {
		if a.ID == t.SlaveID {
			pid = a.PID
		}
	}
	if pid == "" {
		return nil, fmt.Errorf("task %s ran on agent %s, which is no longer registered with the master", taskID, t.SlaveID)
	}
	addr, err := agentAddr(pid)
	if err != nil {
		return nil, err
	}
	who := t.SlaveID + " at " + addr
	var st agentState
	if err := c.master.getAgentJSON(addr, who, "/slave(1)/state", &st); err != nil {
		return nil, err
	}
	dir := findDirectory(st, t)
	if dir == "" {
		return nil, fmt.Errorf("agent %s: no sandbox for task %s of framework %s in its /state (the agent may have garbage-collected it)", who, taskID, t.FrameworkID)
	}
	return &sandbox{task: t, addr: addr, who: who, dir: dir, agentID: t.SlaveID}, nil
}

// findDirectory finds the sandbox of the executor that ran t: the executor
// listing the task, else the one with the task's executor ID (the command
// executor's ID is the task's). Live executors win over completed ones, and
// among completed runs the latest (listed last) wins.
func findDirectory(st agentState, t task) string {
	has := func(refs []agentTaskRef) bool {
		for _, r := range refs {
			if r.ID == t.ID {
				return true
			}
		}
		return false
	}
	match := func(ex agentExecutor) bool {
		return has(ex.Tasks) || has(ex.QueuedTasks) || has(ex.CompletedTasks) ||
			(t.ExecutorID != "" && ex.ID == t.ExecutorID) || ex.ID == t.ID
	}
	var completed string
	for _, group := range [][]agentFramework{st.Frameworks, st.CompletedFrameworks} {
		for _, f := range group {
			if f.ID != t.FrameworkID {
				continue
			}
			for _, ex := range f.Executors {
				if match(ex) && ex.Directory != "" {
					return ex.Directory
				}
			}
			for _, ex := range f.CompletedExecutors {
				if match(ex) && ex.Directory != "" {
					completed = ex.Directory
				}
			}
		}
	}
	return completed
}

// taskEnded reports whether the master has the task in a terminal state.
func taskEnded(c *invocation, t task) (bool, error) {
	q := url.Values{"task_id": {t.ID}, "framework_id": {t.FrameworkID}, "limit": {allTasksLimit}}
	var doc tasksDoc
	if err := c.master.getJSON("/master/tasks?"+q.Encode(), &doc); err != nil {
		return false, err
	}
	for _, x := range doc.Tasks {
		if !terminal(x.State) {
			return false, nil
		}
	}
	return true, nil
}
