package master

import (
	"mezzo/api/mesos"
)

// The offer-operation table: what an ACCEPT may do with the resources of
// its offers. accept (state_accept.go) runs the ACCEPT's operations in
// order, each against what the operations before it left of the offers
// (launcher.remaining): an operation is first validated, without changing
// anything, and applied only if valid. A refused operation is reported
// (TASK_ERROR for the tasks of a launch) and the next one runs.
//
//	ACCEPT(offers, [op1, op2, …])
//	   │ validateOffers ── invalid ──▶ tasks TASK_LOST/DROPPED, offers recovered
//	   ▼
//	remaining = Σ offers
//	   │ for each op: offerOps[op.type]
//	   │     validate(l, op) ── error ──▶ refused (remaining unchanged)
//	   │     apply(l, op)    ──▶ remaining shrinks (or changes form), agent told
//	   ▼
//	remaining ──▶ allocator.RecoverResources(…, filters)

// offerOp is one kind of offer operation.
type offerOp struct {
	// validate checks op against the ACCEPT so far (l.remaining, the
	// framework, the agent). It changes nothing.
	validate func(l *launcher, op *mesos.Offer_Operation) error
	// apply performs a validated op: it updates l.remaining and the
	// master's state and tells the agent. Launches validate each task
	// again here, since a task's validity depends on the tasks before it;
	// an invalid task gets TASK_ERROR and the others still launch.
	apply func(l *launcher, op *mesos.Offer_Operation)
}

// offerOps is the table, by operation type. A type not in it is refused.
var offerOps = map[mesos.Offer_Operation_Type]offerOp{
	mesos.Offer_Operation_LAUNCH: {
		validate: func(*launcher, *mesos.Offer_Operation) error { return nil },
		apply: func(l *launcher, op *mesos.Offer_Operation) {
			for _, ti := range op.GetLaunch().GetTaskInfos() {
				l.launch(ti)
			}
		},
	},
	mesos.Offer_Operation_LAUNCH_GROUP: {
		validate: func(*launcher, *mesos.Offer_Operation) error { return nil },
		apply:    func(l *launcher, op *mesos.Offer_Operation) { l.launchGroup(op.GetLaunchGroup()) },
	},
}
