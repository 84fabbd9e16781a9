package master

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/schedulerpb"
	"mezzo/internal/authorizer"
	"mezzo/internal/secrets"
	"mezzo/master/allocator/longtask"
	"mezzo/resources"
)

// accept handles ACCEPT. Offers are validated first: if any is invalid,
// every task of every launch operation is reported TASK_LOST (TASK_DROPPED
// for partition-aware frameworks) with REASON_INVALID_OFFERS and the
// framework's valid offers go back. Otherwise operations run in order
// against what remains of the offers, so nothing is ever over-committed;
// whatever is left is recovered with the ACCEPT's filters (an ACCEPT
// without operations is therefore a DECLINE). The operations themselves
// are the table in offer_ops.go.
func (s *state) accept(fw *framework, acc *schedulerpb.Call_Accept, now time.Time) {
	offers, err := s.validateOffers(fw, acc.GetOfferIds())
	if err != nil {
		for _, o := range offers {
			s.dropOffer(o)
			s.alloc.RecoverResources(o.fwID, o.agentID, o.res, nil)
		}
		lost := mesos.TaskState_TASK_LOST
		if fw.partitionAware() {
			lost = mesos.TaskState_TASK_DROPPED
		}
		msg := "Task launched with invalid offers: " + err.Error()
		for _, op := range acc.GetOperations() {
			for _, ti := range launchTasks(op) {
				s.rejectTask(fw, newStatus(ti.GetTaskId(), ti.GetAgentId(), lost,
					mesos.TaskStatus_REASON_INVALID_OFFERS, msg, now))
			}
			if t := op.GetType(); t != mesos.Offer_Operation_LAUNCH && t != mesos.Offer_Operation_LAUNCH_GROUP {
				agent := ""
				if len(offers) > 0 {
					agent = offers[0].agentID
				}
				s.operationStatus(fw, agent, op, mesos.OperationState_OPERATION_DROPPED,
					"Operation attempted with invalid offers: "+err.Error(), nil, now)
			}
		}
		return
	}

	a := s.agents[offers[0].agentID]
	role := offers[0].role
	var remaining resources.Resources
	var longParts []longtask.Quantities
	for _, o := range offers {
		// The offers' long parts become the ACCEPT's budget for long
		// tasks instead of going back to the books.
		longParts = append(longParts, o.long)
		o.long = nil
		s.dropOffer(o)
		remaining = remaining.Add(o.res)
	}
	l := &launcher{s: s, fw: fw, a: a, role: role, now: now, remaining: remaining,
		offeredShared: remaining.Shared(),
		executors:     map[string]*executor{}, taskIDs: map[string]bool{}}
	if s.long != nil {
		l.longBudget = s.long.Accept(a.id, longParts...)
	}
	for i, op := range acc.GetOperations() {
		kind, ok := offerOps[op.GetType()]
		if !ok {
			l.refuse(op, fmt.Errorf("operations[%d]: operation type %s is not supported", i, op.GetType()))
			continue
		}
		prepared, err := kind.validate(l, op)
		if err != nil {
			l.refuse(op, err)
			continue
		}
		kind.apply(l, prepared)
	}
	if !l.remaining.IsEmpty() {
		s.alloc.RecoverResources(fw.id, a.id, l.remaining, normalizeFilters(acc.GetFilters()))
	}
}

// launchTasks lists the tasks an operation would launch.
func launchTasks(op *mesos.Offer_Operation) []*mesos.TaskInfo {
	switch op.GetType() {
	case mesos.Offer_Operation_LAUNCH:
		return op.GetLaunch().GetTaskInfos()
	case mesos.Offer_Operation_LAUNCH_GROUP:
		return op.GetLaunchGroup().GetTaskGroup().GetTasks()
	}
	return nil
}

// validateOffers checks the ACCEPT's offer IDs. It returns the framework's
// own valid offers even when it reports an error, so they can be recovered.
func (s *state) validateOffers(fw *framework, ids []*mesos.OfferID) ([]*offer, error) {
	var offers []*offer
	var errs []string
	if len(ids) == 0 {
		errs = append(errs, "No offers specified")
	}
	seen := map[string]bool{}
	for _, id := range ids {
		v := id.GetValue()
		if seen[v] {
			errs = append(errs, fmt.Sprintf("Duplicate offer %s in offer list", v))
			continue
		}
		seen[v] = true
		o := s.offers[v]
		switch {
		case o == nil:
			errs = append(errs, fmt.Sprintf("Offer %s is no longer valid", v))
		case o.fwID != fw.id:
			errs = append(errs, fmt.Sprintf("Offer %s has invalid framework %s while framework %s is expected", v, o.fwID, fw.id))
		default:
			offers = append(offers, o)
		}
	}
	if len(errs) == 0 {
		first := offers[0]
		for _, o := range offers[1:] {
			if o.agentID != first.agentID {
				errs = append(errs, fmt.Sprintf("Aggregated offers must belong to one single agent. Offer %s uses agent %s and offer %s uses agent %s",
					first.id, first.agentID, o.id, o.agentID))
				break
			}
			if o.role != first.role {
				errs = append(errs, fmt.Sprintf("Aggregated offers must be allocated to the same role. Offer %s uses role %s and offer %s uses role %s",
					first.id, first.role, o.id, o.role))
				break
			}
		}
		if a := s.agents[first.agentID]; a == nil || !a.active() {
			errs = append(errs, fmt.Sprintf("Agent %s is not available", first.agentID))
		}
	}
	if len(errs) > 0 {
		return offers, errors.New(strings.Join(errs, "; "))
	}
	return offers, nil
}

// launcher carries one ACCEPT's running totals across its operations.
type launcher struct {
	s         *state
	fw        *framework
	a         *agent
	role      string
	now       time.Time
	remaining resources.Resources
	// offeredShared are the shared resources of the offers (as CREATE and
	// DESTROY leave them): launches do not use them up. As in Mesos, the
	// tasks of one ACCEPT may use a shared volume its offers held once
	// (see launch).
	offeredShared resources.Resources
	executors     map[string]*executor // executors started by this ACCEPT
	taskIDs       map[string]bool      // tasks launched by this ACCEPT
	// longBudget is what the ACCEPT's long tasks may use (nil without
	// long-task bounds).
	longBudget *longtask.Budget
}

// launch runs one LAUNCH task: TASK_ERROR (REASON_TASK_INVALID) if it is
// invalid, else it becomes STAGING and is sent to the agent.
func (l *launcher) launch(ti *mesos.TaskInfo) {
	if err := l.authorizeRun(ti, nil); err != nil {
		l.s.rejectTask(l.fw, newStatus(ti.GetTaskId(), agentID(l.a.id), mesos.TaskState_TASK_ERROR,
			mesos.TaskStatus_REASON_TASK_UNAUTHORIZED, err.Error(), l.now))
		return
	}
	task, res, err := l.validateTask(ti, false)
	var ex *executor
	need := res
	if err == nil && ti.GetExecutor() != nil {
		ex, err = l.executorFor(ti.GetExecutor())
		if err == nil {
			if mixErr := mixesRevocable(res.Add(ex.res)); mixErr != nil {
				err = fmt.Errorf("Task and its executor mix revocable and non-revocable resources: %v", mixErr)
			}
		}
		if err == nil && l.isNew(ex) {
			need = need.Add(ex.res)
		}
	}
	if err == nil && !l.fits(need) {
		err = fmt.Errorf("Task uses more resources %s than available %s", describe(need), describe(l.available()))
	}
	// Last: a long task that fits holds its part of the bound at once.
	var long bool
	var shortUntil time.Time
	if err == nil {
		long, shortUntil, err = l.declare(task)
	}
	if err == nil && long {
		err = l.holdLong(res)
	}
	if err != nil {
		l.s.rejectTask(l.fw, newStatus(ti.GetTaskId(), agentID(l.a.id), mesos.TaskState_TASK_ERROR,
			mesos.TaskStatus_REASON_TASK_INVALID, err.Error(), l.now))
		return
	}
	l.useShared(need)
	l.remaining = l.remaining.Subtract(need)
	run := &protocol.AgentEvent_RunTask{FrameworkInfo: l.fw.info, Task: task}
	if ex != nil {
		l.addExecutor(ex)
		run.ExecutorInfo = ex.info
	}
	l.s.markLong(l.addTask(task, res, ex), long, shortUntil)
	ev := l.s.agentEvent(protocol.AgentEvent_RUN_TASK)
	ev.RunTask = run
	l.s.sendAgent(l.a, ev)
}

// available is what a task of the ACCEPT may use: what remains of the
// offers, with their shared resources whether earlier tasks use them or
// not (Mesos's master: "2 tasks can be launched on 1 copy of a shared
// persistent volume from the offer").
func (l *launcher) available() resources.Resources {
	if l.offeredShared.IsEmpty() {
		return l.remaining
	}
	return l.remaining.NonShared().Add(l.offeredShared)
}

// fits reports whether a launch needing need fits in the offers: its
// non-shared resources in what remains, each of its shared resources
// (however many copies: a task and its new executor may both name the
// volume) among the offers' shared resources.
func (l *launcher) fits(need resources.Resources) bool {
	if !need.HasShared() {
		return l.remaining.Contains(need)
	}
	sh := need.Shared()
	return l.remaining.NonShared().Contains(need.NonShared()) && sh.SharedIn(l.offeredShared).Equal(sh)
}

// useShared accounts for the shared resources a launch uses beyond the
// copies left in the offers: the allocator adds those copies to the
// framework's allocation (UpdateAllocation from nothing, as Mesos's master
// converts nothing into them), so each task's copy goes back when the task
// ends.
func (l *launcher) useShared(need resources.Resources) {
	if !need.HasShared() {
		return
	}
	additional := need.Shared().Subtract(l.remaining.Shared())
	if !additional.IsEmpty() {
		l.s.alloc.UpdateAllocation(l.fw.id, l.a.id, resources.Resources{}, additional)
	}
}

// launchGroup runs one LAUNCH_GROUP: all tasks start together under one
// DEFAULT executor, or all get TASK_ERROR with REASON_TASK_GROUP_INVALID.
func (l *launcher) launchGroup(g *mesos.Offer_Operation_LaunchGroup) {
	tasks := g.GetTaskGroup().GetTasks()
	for _, ti := range tasks {
		if err := l.authorizeRun(ti, g.GetExecutor()); err != nil {
			for _, ti := range tasks {
				l.s.rejectTask(l.fw, newStatus(ti.GetTaskId(), agentID(l.a.id), mesos.TaskState_TASK_ERROR,
					mesos.TaskStatus_REASON_TASK_GROUP_UNAUTHORIZED, err.Error(), l.now))
			}
			return
		}
	}
	var infos []*mesos.TaskInfo
	var need resources.Resources
	taskRes := map[string]resources.Resources{}
	var ex *executor
	type declared struct {
		long  bool
		until time.Time
	}
	decl := map[string]declared{}
	err := func() error {
		if len(tasks) == 0 {
			return errors.New("Task group cannot be empty")
		}
		ei := g.GetExecutor()
		if ei.GetType() != mesos.ExecutorInfo_DEFAULT {
			return errors.New("'ExecutorInfo.type' must be 'DEFAULT'")
		}
		if ei.GetFrameworkId() == nil {
			return errors.New("'ExecutorInfo.framework_id' must be set")
		}
		var err error
		if ex, err = l.executorFor(ei); err != nil {
			return err
		}
		inGroup := map[string]bool{}
		for _, ti := range tasks {
			if ti.GetExecutor() != nil {
				return fmt.Errorf("Task '%s' should not have 'ExecutorInfo' set", ti.GetTaskId().GetValue())
			}
			if inGroup[ti.GetTaskId().GetValue()] {
				return fmt.Errorf("Task has duplicate ID: %s", ti.GetTaskId().GetValue())
			}
			inGroup[ti.GetTaskId().GetValue()] = true
			task, res, err := l.validateTask(ti, true)
			if err != nil {
				return fmt.Errorf("Task '%s' is invalid: %v", ti.GetTaskId().GetValue(), err)
			}
			infos = append(infos, task)
			taskRes[ti.GetTaskId().GetValue()] = res
			need = need.Add(res)
		}
		if err := mixesRevocable(need.Add(ex.res)); err != nil {
			return fmt.Errorf("Task group and executor mix revocable and non-revocable resources: %v", err)
		}
		if l.isNew(ex) {
			need = need.Add(ex.res)
		}
		if !l.remaining.Contains(need) {
			return fmt.Errorf("Task group uses more resources %s than available %s", describe(need), describe(l.remaining))
		}
		// Last: the group's long tasks, if they fit together, hold
		// their part of the bound at once.
		var long resources.Resources
		for _, ti := range infos {
			id := ti.GetTaskId().GetValue()
			isLong, until, err := l.declare(ti)
			if err != nil {
				return fmt.Errorf("Task '%s' is invalid: %v", id, err)
			}
			decl[id] = declared{isLong, until}
			if isLong {
				long = long.Add(taskRes[id])
			}
		}
		if !long.IsEmpty() {
			return l.holdLong(long)
		}
		return nil
	}()
	if err != nil {
		for _, ti := range tasks {
			l.s.rejectTask(l.fw, newStatus(ti.GetTaskId(), agentID(l.a.id), mesos.TaskState_TASK_ERROR,
				mesos.TaskStatus_REASON_TASK_GROUP_INVALID, err.Error(), l.now))
		}
		return
	}
	l.remaining = l.remaining.Subtract(need)
	l.addExecutor(ex)
	for _, ti := range infos {
		id := ti.GetTaskId().GetValue()
		l.s.markLong(l.addTask(ti, taskRes[id], ex), decl[id].long, decl[id].until)
	}
	ev := l.s.agentEvent(protocol.AgentEvent_RUN_TASK_GROUP)
	ev.RunTaskGroup = &protocol.AgentEvent_RunTaskGroup{
		FrameworkInfo: l.fw.info,
		ExecutorInfo:  ex.info,
		TaskGroup:     &mesos.TaskGroupInfo{Tasks: infos},
	}
	l.s.sendAgent(l.a, ev)
}

// validateTask checks a task on its own (not its executor) and returns it
// normalized: resources in post-refinement form with the offer's
// allocation_info injected where missing. It normalizes ti itself: the
// ACCEPT was decoded for this call alone and is not read after it, and
// copying every task was an eighth of a busy master's launches. From here
// on the TaskInfo is shared (RUN_TASK, the task's record) and never
// changed.
func (l *launcher) validateTask(ti *mesos.TaskInfo, inGroup bool) (*mesos.TaskInfo, resources.Resources, error) {
	id := ti.GetTaskId().GetValue()
	if err := validateID(id); err != nil {
		return nil, resources.Resources{}, fmt.Errorf("Task ID '%s' is invalid: %v", id, err)
	}
	if l.fw.tasks[id] != nil || l.taskIDs[id] {
		return nil, resources.Resources{}, fmt.Errorf("Task has duplicate ID: %s", id)
	}
	if got := ti.GetAgentId().GetValue(); got != l.a.id {
		return nil, resources.Resources{}, fmt.Errorf("Task uses invalid agent: %s", got)
	}
	if !inGroup && (ti.GetExecutor() == nil) == (ti.GetCommand() == nil) {
		return nil, resources.Resources{}, errors.New("Task should have at least one (but not both) of CommandInfo or ExecutorInfo present")
	}
	if err := secrets.ValidateEnvironment(ti.GetCommand().GetEnvironment()); err != nil {
		return nil, resources.Resources{}, fmt.Errorf("Task's command is invalid: %v", err)
	}
	if len(ti.GetResources()) == 0 {
		return nil, resources.Resources{}, errors.New("Task uses no resources")
	}
	rs := ti.GetResources()
	setAllocation(rs, l.role)
	res, err := resources.FromProto(rs) // validates them
	if err != nil {
		return nil, resources.Resources{}, fmt.Errorf("Task uses invalid resources: %v", err)
	}
	if err := mixesRevocable(res); err != nil {
		return nil, resources.Resources{}, fmt.Errorf("Task mixes revocable and non-revocable resources: %v", err)
	}
	ti.Resources = res.Proto()
	return ti, res, nil
}

// executorFor validates an ExecutorInfo and returns the executor it names:
// the one already on the agent or started earlier in this ACCEPT (which
// must be identical), or a new one.
func (l *launcher) executorFor(ei *mesos.ExecutorInfo) (*executor, error) {
	id := ei.GetExecutorId().GetValue()
	if err := validateID(id); err != nil {
		return nil, fmt.Errorf("Executor ID '%s' is invalid: %v", id, err)
	}
	if got := ei.GetFrameworkId().GetValue(); ei.GetFrameworkId() != nil && got != l.fw.id {
		return nil, fmt.Errorf("ExecutorInfo has an invalid FrameworkID (Actual: %s vs Expected: %s)", got, l.fw.id)
	}
	if ei.GetType() != mesos.ExecutorInfo_DEFAULT && ei.GetCommand() == nil {
		return nil, errors.New("'ExecutorInfo.command' must be set for 'CUSTOM' executor")
	}
	if err := secrets.ValidateEnvironment(ei.GetCommand().GetEnvironment()); err != nil {
		return nil, fmt.Errorf("Executor's command is invalid: %v", err)
	}
	rs := withAllocation(ei.GetResources(), l.role)
	if err := resources.Validate(rs); err != nil {
		return nil, fmt.Errorf("Executor uses invalid resources: %v", err)
	}
	res, err := resources.FromProto(rs)
	if err != nil {
		return nil, fmt.Errorf("Executor uses invalid resources: %v", err)
	}
	if err := mixesRevocable(res); err != nil {
		return nil, fmt.Errorf("Executor mixes revocable and non-revocable resources: %v", err)
	}
	info := proto.Clone(ei).(*mesos.ExecutorInfo)
	info.FrameworkId = frameworkID(l.fw.id)
	info.Resources = res.Proto()
	existing := l.executors[id]
	if existing == nil {
		existing = l.a.executors[l.fw.id][id]
	}
	if existing != nil {
		if !proto.Equal(existing.info, info) {
			return nil, fmt.Errorf("ExecutorInfo is not compatible with existing ExecutorInfo with same ExecutorID '%s'", id)
		}
		return existing, nil
	}
	return &executor{info: info, res: res, fwID: l.fw.id, agentID: l.a.id}, nil
}

func (l *launcher) isNew(ex *executor) bool {
	_, onAgent := l.a.executors[l.fw.id][ex.info.GetExecutorId().GetValue()]
	_, inAccept := l.executors[ex.info.GetExecutorId().GetValue()]
	return !onAgent && !inAccept
}

func (l *launcher) addExecutor(ex *executor) {
	id := ex.info.GetExecutorId().GetValue()
	if !l.isNew(ex) {
		return
	}
	l.executors[id] = ex
	l.s.addExecutor(ex)
}

// addTask records a launched task as STAGING.
func (l *launcher) addTask(ti *mesos.TaskInfo, res resources.Resources, ex *executor) *task {
	id := ti.GetTaskId().GetValue()
	l.taskIDs[id] = true
	p := &mesos.Task{
		Name:        ti.Name,
		TaskId:      ti.TaskId,
		FrameworkId: frameworkID(l.fw.id),
		AgentId:     agentID(l.a.id),
		State:       mesos.TaskState_TASK_STAGING.Enum(),
		Resources:   ti.Resources, // res's protos (validateTask): shared
		Labels:      ti.Labels,
		Discovery:   ti.Discovery,
		Container:   ti.Container,
		HealthCheck: ti.HealthCheck,
		KillPolicy:  ti.KillPolicy,
		User:        proto.String(runAs(ti, ex, l.fw.info)),
		Limits:      ti.Limits,
	}
	t := &task{proto: p, res: res, fwID: l.fw.id, agentID: l.a.id}
	if ex != nil {
		p.ExecutorId = ex.info.GetExecutorId()
		t.executorID = ex.info.GetExecutorId().GetValue()
	}
	l.s.addTask(t)
	l.s.emit(func() *masterpb.Event {
		return &masterpb.Event{Type: masterpb.Event_TASK_ADDED.Enum(), TaskAdded: &masterpb.Event_TaskAdded{Task: p}}
	})
	return t
}

// authorizeRun asks whether the framework's principal may run ti as the
// user it would run as (run_tasks); exec is a task group's executor.
func (l *launcher) authorizeRun(ti *mesos.TaskInfo, exec *mesos.ExecutorInfo) error {
	return l.s.authorize(Principal{Name: l.fw.info.GetPrincipal()}, authorizer.RunTask, authorizer.RunTaskObject(ti, exec, l.fw.info))
}

// runAs is the user a task runs as (Task.user): its command's, else its
// executor's, else its framework's, as the agent picks it.
func runAs(ti *mesos.TaskInfo, ex *executor, fw *mesos.FrameworkInfo) string {
	var exec *mesos.ExecutorInfo
	if ex != nil {
		exec = ex.info
	}
	return authorizer.RunTaskObject(ti, exec, fw).Value
}

// withAllocation copies rs, injecting allocation_info.role where missing
// (schedulers such as example-scheduler send resources without it).
func withAllocation(rs []*mesos.Resource, role string) []*mesos.Resource {
	out := make([]*mesos.Resource, len(rs))
	for i, r := range rs {
		out[i] = proto.CloneOf(r)
	}
	setAllocation(out, role)
	return out
}

// setAllocation is withAllocation in place, for resources the caller owns.
func setAllocation(rs []*mesos.Resource, role string) {
	for _, r := range rs {
		if r.AllocationInfo == nil {
			r.AllocationInfo = &mesos.Resource_AllocationInfo{Role: proto.String(role)}
		}
	}
}

// validateID applies Mesos's rules for task and executor IDs.
func validateID(id string) error {
	switch {
	case id == "":
		return errors.New("ID must not be empty")
	case id == "." || id == "..":
		return errors.New("'.' and '..' are not allowed")
	case strings.Contains(id, "/"):
		return errors.New("'/' is not allowed")
	}
	for _, c := range id {
		if c < 0x20 || c == 0x7f {
			return errors.New("control characters are not allowed")
		}
	}
	return nil
}

// describe renders resources for error messages in Mesos's text form.
func describe(r resources.Resources) string {
	if r.IsEmpty() {
		return "{}"
	}
	return r.String()
}
