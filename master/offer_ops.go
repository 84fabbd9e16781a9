package master

import (
	"errors"
	"fmt"

	"mezzo/api/mesos"
	"mezzo/resources"
)

// The offer-operation table: what an ACCEPT may do with the resources of
// its offers. accept (state_accept.go) runs the ACCEPT's operations in
// order, each against what the operations before it left of the offers
// (launcher.remaining): an operation is first validated, without changing
// anything, and applied only if valid. A refused operation is reported
// (TASK_ERROR for the tasks of a launch, OPERATION_ERROR for an operation
// with an id, a log line and a metric otherwise) and the next one runs.
//
//	ACCEPT(offers, [op1, op2, …])
//	   │ validateOffers ── invalid ──▶ tasks TASK_LOST/DROPPED,
//	   │                               operations OPERATION_DROPPED,
//	   │                               offers recovered
//	   ▼
//	remaining = Σ offers
//	   │ for each op: offerOps[op.type]
//	   │     validate(l, op) ── error ──▶ refused (remaining unchanged)
//	   │     apply(l, op')   ──▶ remaining shrinks (launch) or converts
//	   │                         (RESERVE …), agent total and allocator
//	   │                         follow, agent told
//	   ▼
//	remaining ──▶ allocator.RecoverResources(…, filters)

// offerOp is one kind of offer operation.
type offerOp struct {
	// validate checks op against the ACCEPT so far (l.remaining, the
	// framework, the agent) and returns it prepared for apply
	// (normalized). It changes nothing.
	validate func(l *launcher, op *mesos.Offer_Operation) (*mesos.Offer_Operation, error)
	// apply performs a validated op: it updates l.remaining and the
	// master's state and tells the agent and the allocator. Launches
	// validate each task again here, since a task's validity depends on
	// the tasks before it; an invalid task gets TASK_ERROR and the others
	// still launch.
	apply func(l *launcher, op *mesos.Offer_Operation)
}

// offerOps is the table, by operation type. A type not in it is refused.
var offerOps = map[mesos.Offer_Operation_Type]offerOp{
	mesos.Offer_Operation_LAUNCH: {
		validate: validateLaunch,
		apply: func(l *launcher, op *mesos.Offer_Operation) {
			for _, ti := range op.GetLaunch().GetTaskInfos() {
				l.launch(ti)
			}
		},
	},
	mesos.Offer_Operation_LAUNCH_GROUP: {
		validate: validateLaunch,
		apply:    func(l *launcher, op *mesos.Offer_Operation) { l.launchGroup(op.GetLaunchGroup()) },
	},
	mesos.Offer_Operation_RESERVE:       conversionOp,
	mesos.Offer_Operation_UNRESERVE:     conversionOp,
	mesos.Offer_Operation_CREATE:        conversionOp,
	mesos.Offer_Operation_DESTROY:       conversionOp,
	mesos.Offer_Operation_GROW_VOLUME:   conversionOp,
	mesos.Offer_Operation_SHRINK_VOLUME: conversionOp,
}

// errLaunchID refuses launches with an operation ID: Mesos gives no
// operation feedback for launches (their tasks' updates are the feedback)
// and refuses them the same way.
var errLaunchID = errors.New("operation feedback is not supported for LAUNCH and LAUNCH_GROUP operations: their tasks' status updates are the feedback; remove the operation's 'id'")

func validateLaunch(_ *launcher, op *mesos.Offer_Operation) (*mesos.Offer_Operation, error) {
	if op.GetId() != nil {
		return nil, errLaunchID
	}
	return op, nil
}

// conversionOp is RESERVE, UNRESERVE, CREATE, DESTROY, GROW_VOLUME and
// SHRINK_VOLUME on offered resources.
var conversionOp = offerOp{
	validate: func(l *launcher, op *mesos.Offer_Operation) (*mesos.Offer_Operation, error) {
		if op.GetId() != nil && l.s.operations[l.fw.id][op.GetId().GetValue()] != nil {
			return nil, fmt.Errorf("id: operation '%s' of this framework still awaits the acknowledgement of its status; operation IDs must be unique",
				op.GetId().GetValue())
		}
		n, err := normalizeOperation(op, l.role)
		if err != nil {
			return nil, err
		}
		if err := l.s.checkOperation(l.a, opCaller{fw: l.fw, principal: l.fw.info.GetPrincipal()}, n); err != nil {
			return nil, err
		}
		if err := l.s.authorizeOperation(l.fw.info.GetPrincipal(), n); err != nil {
			return nil, err
		}
		if _, err := l.remaining.Apply(n); err != nil {
			var na *resources.NotAvailableError
			if errors.As(err, &na) {
				return nil, fmt.Errorf("%s: resources %s are not available in the offers (what remains of them: %s)",
					na.Field, na.Wanted, describe(na.Available))
			}
			return nil, err
		}
		// Offers are carved out of the total, so this holds unless an
		// operator's operation changed the total while an offer of the
		// old form was on its way from the allocator.
		if _, err := l.a.total.Apply(unallocated(n)); err != nil {
			return nil, fmt.Errorf("the agent's resources changed since the offer was made (%v); retry with a new offer", err)
		}
		return n, nil
	},
	apply: func(l *launcher, op *mesos.Offer_Operation) {
		remaining, err := l.remaining.Apply(op)
		if err == nil {
			err = l.s.applyToAgent(l.a, op)
		}
		if err != nil {
			// validate applied it to the same remaining: a broken invariant.
			panic(err)
		}
		if op.GetType() == mesos.Offer_Operation_DESTROY {
			// Other offers may hold the volume (a shared one is offered
			// while in use): they would name a volume that is gone. As
			// Mesos's master, rescind them.
			l.s.rescindOffersHolding(l.a, op.GetDestroy().GetVolumes())
		}
		l.remaining = remaining
		l.offeredShared = remaining.Shared()
		consumed, converted, _ := resources.Conversion(op)
		l.s.alloc.UpdateAllocation(l.fw.id, l.a.id, consumed, converted)
		l.s.operationStatus(l.fw, l.a.id, op, mesos.OperationState_OPERATION_FINISHED, "", l.convertedFor(converted), l.now)
	},
}

// convertedFor renders converted resources as the framework reads its
// offers: pre-refinement without RESERVATION_REFINEMENT, allocation info
// only for MULTI_ROLE frameworks.
func (l *launcher) convertedFor(r resources.Resources) []*mesos.Resource {
	rs := r.Proto()
	if !l.fw.has(mesos.FrameworkInfo_Capability_MULTI_ROLE) {
		for _, x := range rs {
			x.AllocationInfo = nil
		}
	}
	if !l.fw.has(mesos.FrameworkInfo_Capability_RESERVATION_REFINEMENT) {
		rs = resources.ToPreRefinementInPlace(rs)
	}
	return rs
}

// refuse reports an operation the ACCEPT could not run: TASK_ERROR for
// each task of a launch, an operation status (OPERATION_ERROR) otherwise.
func (l *launcher) refuse(op *mesos.Offer_Operation, err error) {
	switch op.GetType() {
	case mesos.Offer_Operation_LAUNCH:
		for _, ti := range op.GetLaunch().GetTaskInfos() {
			l.s.rejectTask(l.fw, newStatus(ti.GetTaskId(), agentID(l.a.id), mesos.TaskState_TASK_ERROR,
				mesos.TaskStatus_REASON_TASK_INVALID, err.Error(), l.now))
		}
	case mesos.Offer_Operation_LAUNCH_GROUP:
		for _, ti := range op.GetLaunchGroup().GetTaskGroup().GetTasks() {
			l.s.rejectTask(l.fw, newStatus(ti.GetTaskId(), agentID(l.a.id), mesos.TaskState_TASK_ERROR,
				mesos.TaskStatus_REASON_TASK_GROUP_INVALID, err.Error(), l.now))
		}
	default:
		l.s.operationStatus(l.fw, l.a.id, op, mesos.OperationState_OPERATION_ERROR, err.Error(), nil, l.now)
	}
}
