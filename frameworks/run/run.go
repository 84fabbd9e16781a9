package run

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/resources"
	"mezzo/scheduler"
)

// teardownTimeout bounds the TEARDOWN call made on the way out, which may
// happen after the caller's context has ended.
const teardownTimeout = 10 * time.Second

// Run runs opts.Command as one task on the cluster and follows it to a
// terminal state, streaming its output through opts.Output when set. It
// returns the exit code of exitcode.go: the task's own exit status, or one
// of mezzo's (timeout, lost, killed, interrupted), and ExitMezzo with an
// error for bad options or when the masters cannot be reached or reject the
// framework.
func Run(ctx context.Context, opts Options) (exitCode int, err error) {
	if err := opts.validate(); err != nil {
		return ExitUsage, err
	}
	var need []resources.Resources
	var take *scheduler.Need // a need scheduler.Take serves (nil: need's shapes)
	if opts.Task != nil {
		// The task file's resources, as written (ParseTask validated them).
		r, err := resources.FromProto(opts.Task.GetResources())
		if err != nil {
			return ExitUsage, fmt.Errorf("task resources: %w", err)
		}
		need = []resources.Resources{r}
	} else if opts.Revocable {
		n, err := revocableNeed(opts.Resources)
		if err != nil {
			return ExitUsage, err
		}
		take = &n
		need = []resources.Resources{needResources(n)}
	} else if need, err = wanted(opts.Resources, opts.Role); err != nil {
		return ExitUsage, fmt.Errorf("--resources: %w", err)
	} else if n, err := scheduler.ParseNeed(opts.Resources); err == nil {
		take = &n
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var timeout <-chan time.Time
	if opts.Timeout > 0 {
		// The injected clock drives the run's deadline; a wall-clock
		// deadline on ctx also bounds the blocking subscription.
		t := opts.Clock.NewTimer(opts.Timeout)
		defer t.Stop()
		timeout = t.C()
		var cancelT context.CancelFunc
		ctx, cancelT = context.WithTimeout(ctx, opts.Timeout)
		defer cancelT()
	}

	r := &runner{
		opts:   opts,
		need:   need,
		taskID: &mesos.TaskID{Value: proto.String(opts.TaskID)},
		client: scheduler.New(scheduler.Config{
			Masters:    opts.Masters,
			Codec:      opts.Codec,
			HTTPClient: opts.HTTPClient,
			Credential: opts.Credential,
			Framework:  frameworkInfo(opts),
			Revocable:  opts.Revocable,
			Clock:      opts.Clock,
		}),
		take: take,
	}
	// Every way out stops the output's follower (finishOutput drained it
	// already on a task's end).
	defer r.stopOutput()
	events, err := r.client.Subscribe(ctx)
	if err != nil {
		return ExitUsage, fmt.Errorf("cannot subscribe to %s: %w", strings.Join(opts.Masters, ","), err)
	}
	// While the task waits for an offer that fits, say why now and then.
	waitNote := opts.Clock.NewTimer(waitNoteFirst)
	defer waitNote.Stop()
	// ended is every way out but the task's own end: the rest of the
	// output, the teardown, and the code. With --timeout the clock's timer
	// and ctx's deadline fire together; whichever is seen first, it is the
	// timeout (124).
	ended := func(err error) (int, error) {
		r.finishOutput()
		r.teardown()
		if opts.Timeout > 0 && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, errTimedOut)) {
			return ExitTimeout, fmt.Errorf("timed out after %v", opts.Timeout)
		}
		return ExitInterrupted, err
	}
	for {
		select {
		case <-timeout:
			return ended(errTimedOut)
		case <-ctx.Done():
			return ended(ctx.Err())
		case <-waitNote.C():
			if r.state == notLaunched {
				r.noteWaiting(ctx)
				waitNote.Reset(waitNoteEvery)
			}
		case ev, ok := <-events:
			if !ok {
				if err := r.client.Err(); errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
					return ended(err)
				}
				return ExitUsage, fmt.Errorf("lost the subscription: %w", r.client.Err())
			}
			if code, done, err := r.handle(ctx, ev); done {
				return code, err
			}
		}
	}
}

// errTimedOut is Options.Timeout expiring on the injected clock.
var errTimedOut = errors.New("timed out")

// runner is the framework's state, owned by Run's goroutine.
type runner struct {
	opts   Options
	client *scheduler.Client
	need   []resources.Resources // acceptable shapes of the task's resources
	// take is the need when scheduler.Take serves it: a revocable run's
	// (revocable.go), or a regular run of scalars only; nil: need's shapes.
	take       *scheduler.Need
	taskID     *mesos.TaskID
	agentID    *mesos.AgentID // where the task was launched, once it was
	state      launchState
	started    bool // an update other than "unknown to the master" was seen
	suppressed bool
	output     *follower // following the task's output, once it runs
	lastWhy    string    // the last reason printed for still waiting
}

func (r *runner) logf(format string, args ...any) { fmt.Fprintf(r.opts.Log, format, args...) }

// wanted parses the resources text into the shapes an offer may satisfy:
// unreserved, or (for a role other than "*") reserved to that role.
func wanted(text, role string) ([]resources.Resources, error) {
	unreserved, err := resources.Parse(text, "*")
	if err != nil {
		return nil, err
	}
	if unreserved.IsEmpty() {
		return nil, errors.New("no resources requested")
	}
	out := []resources.Resources{unreserved}
	if role != "*" {
		reserved, err := resources.Parse(text, role)
		if err != nil {
			return nil, err
		}
		if !reserved.Equal(unreserved) {
			out = append(out, reserved)
		}
	}
	return out, nil
}

func frameworkInfo(o Options) *mesos.FrameworkInfo {
	fi := &mesos.FrameworkInfo{
		User:       proto.String(o.User),
		Name:       proto.String(o.Name),
		Checkpoint: proto.Bool(o.Checkpoint),
		Capabilities: []*mesos.FrameworkInfo_Capability{
			{Type: mesos.FrameworkInfo_Capability_RESERVATION_REFINEMENT.Enum()},
		},
	}
	if o.Role != "*" {
		fi.Role = proto.String(o.Role)
	}
	if usesShared(o.Task) {
		// Without it the master never offers shared resources (a shared
		// persistent volume), so the task could never launch.
		fi.Capabilities = append(fi.Capabilities,
			&mesos.FrameworkInfo_Capability{Type: mesos.FrameworkInfo_Capability_SHARED_RESOURCES.Enum()})
	}
	return fi
}

// usesShared reports whether the task (or its executor) uses shared
// resources.
func usesShared(t *mesos.TaskInfo) bool {
	for _, rs := range [][]*mesos.Resource{t.GetResources(), t.GetExecutor().GetResources()} {
		for _, r := range rs {
			if r.GetShared() != nil {
				return true
			}
		}
	}
	return false
}

// handle reacts to one event; done says Run should return code, err.
func (r *runner) handle(ctx context.Context, ev *schedulerpb.Event) (code int, done bool, err error) {
	switch ev.GetType() {
	case schedulerpb.Event_SUBSCRIBED:
		fmt.Fprintf(r.opts.Log, "Subscribed with framework ID %s\n", ev.GetSubscribed().GetFrameworkId().GetValue())
		// A new subscription starts unsuppressed.
		r.suppressed = false
		if r.state == notLaunched {
			// Say what the task needs, so that the master's explain tells
			// an operator at once when no agent could ever hold it. It is
			// advice: a refusal changes nothing for the run.
			if err := r.client.Request(ctx, &mesos.Request{Resources: r.need[0].Proto()}); err != nil {
				fmt.Fprintf(r.opts.Log, "REQUEST refused: %v\n", err)
			}
		} else {
			// Re-subscribed after a disconnection: updates sent meanwhile
			// may be lost to us, and an uncertain launch must be settled
			// before any other; ask for the task's state.
			r.reconcile(ctx)
		}
	case schedulerpb.Event_OFFERS:
		if err := r.offers(ctx, ev.GetOffers().GetOffers()); err != nil {
			return ExitUsage, true, err
		}
	case schedulerpb.Event_UPDATE:
		return r.update(ctx, ev.GetUpdate().GetStatus())
	case schedulerpb.Event_ERROR:
		return ExitUsage, true, fmt.Errorf("master aborted the framework: %s", ev.GetError().GetMessage())
	case schedulerpb.Event_FAILURE:
		f := ev.GetFailure()
		fmt.Fprintf(r.opts.Log, "Failure on agent %s (executor %s, status %d)\n",
			f.GetAgentId().GetValue(), f.GetExecutorId().GetValue(), f.GetStatus())
	}
	return 0, false, nil
}

// offers launches the task on the first agent whose offers fit and
// declines the rest: briefly while still waiting, for an hour once
// launched. An agent's offers are taken together (scheduler.ByAgent): a
// revocable run's cpus come in an offer of their own.
func (r *runner) offers(ctx context.Context, offers []*mesos.Offer) error {
	var decline []*mesos.OfferID
	for _, g := range scheduler.ByAgent(offers) {
		if r.state != notLaunched {
			decline = append(decline, g.IDs()...)
			continue
		}
		res, ok := r.match(g)
		if !ok {
			decline = append(decline, g.IDs()...)
			continue
		}
		o := g.Offers[0]
		task := r.task(o.GetAgentId(), res)
		fmt.Fprintf(r.opts.Log, "Launching task %s on agent %s (%s) with %s\n",
			r.opts.TaskID, o.GetAgentId().GetValue(), o.GetHostname(), res)
		r.agentID = proto.CloneOf(o.GetAgentId())
		if err := r.client.Launch(ctx, g.IDs(), []*mesos.TaskInfo{task}, scheduler.RefuseFor(DeclineSeconds)); err != nil {
			if !failedOver(err) {
				return fmt.Errorf("launching the task: %w", err)
			}
			// The master went away mid-ACCEPT: the task may or may not
			// exist. Settle that by reconciliation before launching
			// again (see failover.go).
			r.logf("Launch of task %s uncertain (%v); reconciling\n", r.opts.TaskID, err)
			r.state = launchUncertain
			r.reconcile(ctx)
			continue
		}
		r.state = launched
	}
	if len(decline) > 0 {
		var filters *mesos.Filters // Mesos's default 5 s while we still wait
		if r.state == launched {
			filters = scheduler.RefuseFor(DeclineSeconds)
		}
		if err := r.client.Decline(ctx, decline, filters); err != nil {
			fmt.Fprintf(r.opts.Log, "Decline failed: %v\n", err)
		}
	}
	if r.state == launched && !r.suppressed {
		if err := r.client.Suppress(ctx); err != nil {
			fmt.Fprintf(r.opts.Log, "Suppress failed: %v\n", err)
		} else {
			r.suppressed = true
		}
	}
	return nil
}

// match returns the task's resources if the agent's offers hold one of
// the wanted shapes (a revocable run: its need, cpus from revocable
// resources).
func (r *runner) match(g scheduler.AgentOffers) (resources.Resources, bool) {
	if r.take != nil {
		// The role's reservations first, then unreserved resources, mixed
		// within a name as mesos-execute's Resources::find does, so
		// "cpus:1.5" runs on cpus(web):1 plus cpus:0.5; a revocable run's
		// cpus from revocable resources.
		got, _, ok := scheduler.Take(g.Resources, *r.take)
		return got, ok
	}
	for _, want := range r.need {
		if g.Resources.Contains(want) {
			return want, true
		}
	}
	return resources.Resources{}, false
}

func (r *runner) task(agent *mesos.AgentID, res resources.Resources) *mesos.TaskInfo {
	if r.opts.Task != nil {
		t := proto.CloneOf(r.opts.Task)
		t.AgentId = proto.CloneOf(agent)
		t.TaskId = proto.CloneOf(r.taskID)
		if t.GetName() == "" {
			t.Name = proto.String(r.opts.Name)
		}
		return t
	}
	t := &mesos.TaskInfo{
		Name:      proto.String(r.opts.Name),
		TaskId:    proto.CloneOf(r.taskID),
		AgentId:   proto.CloneOf(agent),
		Resources: res.Proto(),
		Command:   commandInfo(r.opts.Command, r.opts.Shell),
	}
	if len(r.opts.Env) > 0 {
		env := &mesos.Environment{}
		for _, kv := range r.opts.Env {
			name, value, _ := strings.Cut(kv, "=")
			env.Variables = append(env.Variables, &mesos.Environment_Variable{Name: proto.String(name), Value: proto.String(value)})
		}
		t.Command.Environment = env
	}
	if r.opts.DockerImage != "" {
		t.Container = &mesos.ContainerInfo{
			Type:   mesos.ContainerInfo_DOCKER.Enum(),
			Docker: &mesos.ContainerInfo_DockerInfo{Image: proto.String(r.opts.DockerImage)},
		}
	}
	return t
}

// commandInfo builds the task's command. Shell is set explicitly either
// way: CommandInfo.shell defaults to true.
func commandInfo(argv []string, shell bool) *mesos.CommandInfo {
	if shell {
		return &mesos.CommandInfo{Shell: proto.Bool(true), Value: proto.String(strings.Join(argv, " "))}
	}
	return &mesos.CommandInfo{
		Shell:     proto.Bool(false),
		Value:     proto.String(argv[0]),
		Arguments: append([]string(nil), argv...),
	}
}

// update prints and acknowledges a status update; a terminal state of our
// task ends the run.
func (r *runner) update(ctx context.Context, s *mesos.TaskStatus) (int, bool, error) {
	ours := s.GetTaskId().GetValue() == r.taskID.GetValue()
	if ours && !r.started && unknownToMaster(s) {
		// The master does not know the task, and nothing ever said it
		// started: it never did (see failover.go). Not an end.
		r.neverStarted(ctx, s)
		return 0, false, nil
	}
	if ours {
		fmt.Fprintln(r.opts.Out, StatusLine(s))
		r.started = true
		switch s.GetState() {
		case mesos.TaskState_TASK_STARTING, mesos.TaskState_TASK_RUNNING,
			// Ended before reporting it ran (a failed fetch, a command
			// that could not start): its sandbox may still say why.
			mesos.TaskState_TASK_FAILED, mesos.TaskState_TASK_FINISHED, mesos.TaskState_TASK_KILLED:
			if r.agentID != nil {
				r.startOutput(ctx)
			}
		}
		if r.state == launchUncertain {
			r.state = launched // the master knows the task
		}
	}
	if err := r.client.Acknowledge(ctx, s); err != nil {
		fmt.Fprintf(r.opts.Log, "Acknowledge failed: %v\n", err)
	}
	if !ours || !mesos.IsTerminal(s.GetState()) {
		return 0, false, nil
	}
	r.finishOutput()
	r.teardown()
	return ExitCode(s), true, nil
}

// teardown removes the framework (killing the task if it still runs).
func (r *runner) teardown() {
	ctx, cancel := context.WithTimeout(context.Background(), teardownTimeout)
	defer cancel()
	if err := r.client.Teardown(ctx); err != nil && !errors.Is(err, scheduler.ErrNotSubscribed) {
		fmt.Fprintf(r.opts.Log, "Teardown failed: %v\n", err)
	}
}
