package master

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/resources"
)

// Operations that change an agent's resources: RESERVE, UNRESERVE, CREATE,
// DESTROY, GROW_VOLUME and SHRINK_VOLUME, from a framework's ACCEPT (on
// offered resources, offer_ops.go) or from an operator (on unallocated
// resources, state_operator_ops.go). Both paths share what is here:
//
//	operation ─▶ normalizeOperation (post-refinement, allocation info)
//	          ─▶ checkOperation (who may do what; volumes; persistence IDs)
//	          ─▶ Resources.Apply on what the caller may use (offers / free)
//	          ─▶ applyToAgent: the agent's total, the agent checkpoints it
//
// The pure arithmetic (what an operation consumes and produces) is
// resources.Apply; here is what needs the master's state.

// conversionTypes are the offer operations that convert resources.
var conversionTypes = map[mesos.Offer_Operation_Type]bool{
	mesos.Offer_Operation_RESERVE:       true,
	mesos.Offer_Operation_UNRESERVE:     true,
	mesos.Offer_Operation_CREATE:        true,
	mesos.Offer_Operation_DESTROY:       true,
	mesos.Offer_Operation_GROW_VOLUME:   true,
	mesos.Offer_Operation_SHRINK_VOLUME: true,
}

// operationResources calls f on every resource list an operation carries
// (a single resource as a list of one), in field order, with the field's
// name; f returns the list to store back.
func operationResources(op *mesos.Offer_Operation, f func(field string, rs []*mesos.Resource) []*mesos.Resource) {
	one := func(field string, r **mesos.Resource) {
		if *r == nil {
			return
		}
		if out := f(field, []*mesos.Resource{*r}); len(out) == 1 {
			*r = out[0]
		}
	}
	switch op.GetType() {
	case mesos.Offer_Operation_RESERVE:
		if rv := op.GetReserve(); rv != nil {
			if len(rv.Source) > 0 {
				rv.Source = f("reserve.source", rv.Source)
			}
			rv.Resources = f("reserve.resources", rv.Resources)
		}
	case mesos.Offer_Operation_UNRESERVE:
		if u := op.GetUnreserve(); u != nil {
			u.Resources = f("unreserve.resources", u.Resources)
		}
	case mesos.Offer_Operation_CREATE:
		if c := op.GetCreate(); c != nil {
			c.Volumes = f("create.volumes", c.Volumes)
		}
	case mesos.Offer_Operation_DESTROY:
		if d := op.GetDestroy(); d != nil {
			d.Volumes = f("destroy.volumes", d.Volumes)
		}
	case mesos.Offer_Operation_GROW_VOLUME:
		if g := op.GetGrowVolume(); g != nil {
			one("grow_volume.volume", &g.Volume)
			one("grow_volume.addition", &g.Addition)
		}
	case mesos.Offer_Operation_SHRINK_VOLUME:
		if s := op.GetShrinkVolume(); s != nil {
			one("shrink_volume.volume", &s.Volume)
		}
	}
}

// normalizeOperation returns a copy of a conversion operation with its
// resources checked for well-formedness (either reservation format, not
// both) and converted to the post-refinement form and, for a framework's
// operation (role set: the role its offers are allocated to), allocation
// info for role where missing, as Mesos's master injects it. An operator's
// operation (role "") keeps what it carries: ValidateOperation refuses
// allocated resources there.
func normalizeOperation(op *mesos.Offer_Operation, role string) (*mesos.Offer_Operation, error) {
	out := proto.Clone(op).(*mesos.Offer_Operation)
	var err error
	operationResources(out, func(field string, rs []*mesos.Resource) []*mesos.Resource {
		if err != nil {
			return rs
		}
		for i, r := range rs {
			if r == nil {
				err = fmt.Errorf("%s[%d]: must not be null", field, i)
				return rs
			}
		}
		if verr := resources.Validate(rs); verr != nil {
			err = fmt.Errorf("%s: %v", field, verr)
			return rs
		}
		return resources.ToPostRefinement(rs)
	})
	if err != nil {
		return nil, err
	}
	if role != "" {
		out = resources.WithAllocationRole(out, role)
	}
	return out, nil
}

// unallocated returns a copy of a normalized operation without allocation
// info: the form that applies to an agent's total.
func unallocated(op *mesos.Offer_Operation) *mesos.Offer_Operation {
	return resources.WithAllocationRole(op, "")
}

// topRole is the role of a resource's last (most refined) reservation, ""
// if unreserved.
func topRole(r *mesos.Resource) string {
	if n := len(r.GetReservations()); n > 0 {
		return r.GetReservations()[n-1].GetRole()
	}
	return ""
}

// opCaller is who asks for an operation: a framework (its roles and
// capabilities bound what it may do) or an operator (fw nil).
type opCaller struct {
	fw *framework
	// principal is the caller's principal: the framework's
	// FrameworkInfo.principal (Mesos validates a framework's operations
	// against it), or the operator's Principal.Name. Empty means no
	// principal, and no principal checks, as in Mesos.
	principal string
}

// checkOperation validates a normalized conversion operation against the
// caller and the agent (resources.ValidateOperation, as Mesos's
// validators), plus what needs the master's task records: a volume in use
// cannot be destroyed or resized, and the error names the task. What is
// available is checked by applying it (resources.Apply). It changes
// nothing. Errors name the field.
func (s *state) checkOperation(a *agent, c opCaller, op *mesos.Offer_Operation) error {
	if id := op.GetId(); id != nil && id.GetValue() == "" {
		return errors.New("id: must not be empty when set")
	}
	switch op.GetType() {
	case mesos.Offer_Operation_DESTROY:
		for i, v := range op.GetDestroy().GetVolumes() {
			if err := s.checkNotInUse(a, fmt.Sprintf("destroy.volumes[%d]", i), v, "destroyed"); err != nil {
				return err
			}
		}
	case mesos.Offer_Operation_GROW_VOLUME:
		// A resized volume in use would no longer match the task's
		// resources (its size is part of them).
		if err := s.checkNotInUse(a, "grow_volume.volume", op.GetGrowVolume().GetVolume(), "grown"); err != nil {
			return err
		}
	case mesos.Offer_Operation_SHRINK_VOLUME:
		if err := s.checkNotInUse(a, "shrink_volume.volume", op.GetShrinkVolume().GetVolume(), "shrunk"); err != nil {
			return err
		}
	}
	ctx := resources.OperationContext{Principal: c.principal, Volumes: a.total, InUse: s.inUse(a)}
	if c.fw != nil {
		ctx.FrameworkRoles = c.fw.roles()
		ctx.RefinementCapable = c.fw.has(mesos.FrameworkInfo_Capability_RESERVATION_REFINEMENT)
		ctx.SharedResourcesCapable = c.fw.has(mesos.FrameworkInfo_Capability_SHARED_RESOURCES)
	}
	return resources.ValidateOperation(op, ctx)
}

// inUse is what the agent's live tasks and executors use.
func (s *state) inUse(a *agent) resources.Resources {
	var used resources.Resources
	for _, ts := range a.tasks {
		for _, t := range ts {
			if !t.recovered && !mesos.IsTerminal(t.proto.GetState()) {
				used = used.Add(t.res)
			}
		}
	}
	for _, es := range a.executors {
		for _, e := range es {
			used = used.Add(e.res)
		}
	}
	return used
}

// checkNotInUse refuses an operation on a persistent volume that a live
// task or executor on the agent uses (Mesos refuses to destroy or resize
// a volume in use: its data would vanish under the task).
func (s *state) checkNotInUse(a *agent, field string, v *mesos.Resource, verb string) error {
	id := v.GetDisk().GetPersistence().GetId()
	if id == "" {
		return nil // Conversion refused non-volumes already
	}
	role := topRole(v)
	uses := func(r resources.Resources) bool {
		for _, x := range r.PersistentVolumes().Proto() {
			if x.GetDisk().GetPersistence().GetId() == id && topRole(x) == role {
				return true
			}
		}
		return false
	}
	for _, fwID := range sortedKeys(a.tasks) {
		for _, t := range sortedTasks(a.tasks[fwID]) {
			if !t.recovered && !mesos.IsTerminal(t.proto.GetState()) && uses(t.res) {
				return fmt.Errorf("%s: persistent volume '%s' cannot be %s: task '%s' of framework %s uses it",
					field, id, verb, t.id(), fwID)
			}
		}
	}
	for _, fwID := range sortedKeys(a.executors) {
		for _, exID := range sortedKeys(a.executors[fwID]) {
			if uses(a.executors[fwID][exID].res) {
				return fmt.Errorf("%s: persistent volume '%s' cannot be %s: executor '%s' of framework %s uses it",
					field, id, verb, exID, fwID)
			}
		}
	}
	return nil
}

// applyToAgent applies a normalized, checked conversion operation to the
// agent's total and has the agent checkpoint the new set. The caller has
// checked that the operation applies (to offers or free resources, both
// within the total), so failing here breaks an invariant.
func (s *state) applyToAgent(a *agent, op *mesos.Offer_Operation) error {
	total, err := a.total.Apply(unallocated(op))
	if err != nil {
		return fmt.Errorf("master: operation applies to the caller's resources but not to agent %s's total: %w", a.id, err)
	}
	a.setTotal(total)
	s.dirty = true
	s.checkpointResources(a)
	return nil
}

// checkpointResources sends the agent its complete set of checkpointed
// resources (dynamic reservations and persistent volumes): it replaces
// the agent's checkpoint, so a lost or repeated event does no harm.
func (s *state) checkpointResources(a *agent) {
	ev := s.agentEvent(protocol.AgentEvent_CHECKPOINT_RESOURCES)
	ev.CheckpointResources = &protocol.AgentEvent_CheckpointResources{Resources: a.total.Checkpointed().Proto()}
	s.sendAgent(a, ev)
}

// agentTotal is an agent's total as it subscribes: its flag resources
// (agent_info.resources) with its checkpointed reservations and volumes
// applied. An error names the checkpointed resource that does not fit.
func agentTotal(sub *protocol.AgentCall_Subscribe) (flags, total resources.Resources, err error) {
	flags, err = resources.FromProto(sub.GetAgentInfo().GetResources())
	if err != nil {
		return resources.Resources{}, resources.Resources{}, fmt.Errorf("invalid 'agent_info.resources': %v", err)
	}
	cp := sub.GetCheckpointedResources()
	if len(cp) == 0 {
		return flags, flags, nil
	}
	if err := resources.Validate(cp); err != nil {
		return resources.Resources{}, resources.Resources{}, fmt.Errorf("invalid 'checkpointed_resources': %v", err)
	}
	c, err := resources.FromProto(resources.ToPostRefinement(cp))
	if err != nil {
		return resources.Resources{}, resources.Resources{}, fmt.Errorf("invalid 'checkpointed_resources': %v", err)
	}
	total, err = resources.ApplyCheckpointed(flags, c)
	if err != nil {
		return resources.Resources{}, resources.Resources{}, fmt.Errorf("'checkpointed_resources' conflict with 'agent_info.resources': %v", err)
	}
	return flags, total, nil
}

// reregisteredTotal is the total of a known agent subscribing again. The
// master's view of its checkpointed resources wins, as in Mesos: the agent
// may have missed a CHECKPOINT_RESOURCES while disconnected, so resend
// says whether to send it the master's set. If that set no longer fits
// the agent's flag resources (it restarted with other --resources), the
// agent's own report (checked by agentSubscribe) is taken instead.
func (s *state) reregisteredTotal(a *agent, sub *protocol.AgentCall_Subscribe) (total resources.Resources, resend bool) {
	flags, reported, err := agentTotal(sub)
	if err != nil {
		return a.total, false // agentSubscribe refused such a report
	}
	mine := a.total.Checkpointed()
	total, err = resources.ApplyCheckpointed(flags, mine)
	if err != nil {
		s.log.Warn("agent's resources no longer hold the master's view of its reservations and volumes; taking the agent's",
			"agent", a.id, "err", err)
		return reported, false
	}
	return total, !mine.Equal(reported.Checkpointed())
}
