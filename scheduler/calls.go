package scheduler

import (
	"context"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
)

// Accept accepts offers with the given operations. Resources of the offers
// that the operations leave unused are declined for filters.refuse_seconds
// (default 5 s). An ACCEPT without operations is a decline.
func (c *Client) Accept(ctx context.Context, offerIDs []*mesos.OfferID, ops []*mesos.Offer_Operation, filters *mesos.Filters) error {
	return c.Call(ctx, &schedulerpb.Call{
		Type: schedulerpb.Call_ACCEPT.Enum(),
		Accept: &schedulerpb.Call_Accept{
			OfferIds:   offerIDs,
			Operations: ops,
			Filters:    filters,
		},
	})
}

// Launch accepts offers with one LAUNCH operation of tasks.
func (c *Client) Launch(ctx context.Context, offerIDs []*mesos.OfferID, tasks []*mesos.TaskInfo, filters *mesos.Filters) error {
	return c.Accept(ctx, offerIDs, []*mesos.Offer_Operation{LaunchOp(tasks...)}, filters)
}

// LaunchOp builds a LAUNCH operation.
func LaunchOp(tasks ...*mesos.TaskInfo) *mesos.Offer_Operation {
	return &mesos.Offer_Operation{
		Type:   mesos.Offer_Operation_LAUNCH.Enum(),
		Launch: &mesos.Offer_Operation_Launch{TaskInfos: tasks},
	}
}

// Decline declines offers; filters (nil = master default of 5 s) says for
// how long the same resources should not be offered again.
func (c *Client) Decline(ctx context.Context, offerIDs []*mesos.OfferID, filters *mesos.Filters) error {
	return c.Call(ctx, &schedulerpb.Call{
		Type:    schedulerpb.Call_DECLINE.Enum(),
		Decline: &schedulerpb.Call_Decline{OfferIds: offerIDs, Filters: filters},
	})
}

// RefuseFor returns filters that refuse declined resources for secs seconds.
func RefuseFor(secs float64) *mesos.Filters {
	return &mesos.Filters{RefuseSeconds: proto.Float64(secs)}
}

// Acknowledge acknowledges a status update. Updates without a uuid (e.g.
// reconciliation answers) need no acknowledgement: it returns nil without
// sending anything, as mesos-go does.
func (c *Client) Acknowledge(ctx context.Context, status *mesos.TaskStatus) error {
	if len(status.GetUuid()) == 0 {
		return nil
	}
	return c.Call(ctx, &schedulerpb.Call{
		Type: schedulerpb.Call_ACKNOWLEDGE.Enum(),
		Acknowledge: &schedulerpb.Call_Acknowledge{
			AgentId: status.GetAgentId(),
			TaskId:  status.GetTaskId(),
			Uuid:    status.GetUuid(),
		},
	})
}

// Kill asks for a task to be killed. agentID may be nil if unknown.
func (c *Client) Kill(ctx context.Context, taskID *mesos.TaskID, agentID *mesos.AgentID) error {
	return c.Call(ctx, &schedulerpb.Call{
		Type: schedulerpb.Call_KILL.Enum(),
		Kill: &schedulerpb.Call_Kill{TaskId: taskID, AgentId: agentID},
	})
}

// Reconcile asks for the latest state of tasks; no tasks means implicit
// reconciliation (all tasks the master knows for this framework).
func (c *Client) Reconcile(ctx context.Context, tasks []*schedulerpb.Call_Reconcile_Task) error {
	return c.Call(ctx, &schedulerpb.Call{
		Type:      schedulerpb.Call_RECONCILE.Enum(),
		Reconcile: &schedulerpb.Call_Reconcile{Tasks: tasks},
	})
}

// Revive removes filters and resumes offers for roles (none = all roles).
func (c *Client) Revive(ctx context.Context, roles ...string) error {
	call := &schedulerpb.Call{Type: schedulerpb.Call_REVIVE.Enum()}
	if len(roles) > 0 {
		call.Revive = &schedulerpb.Call_Revive{Roles: roles}
	}
	return c.Call(ctx, call)
}

// Request tells the master what the framework needs (REQUEST). Offers do
// not change, but the master's explain (and `mezzo explain`) can then say
// at once when no agent could ever hold it.
func (c *Client) Request(ctx context.Context, requests ...*mesos.Request) error {
	return c.Call(ctx, &schedulerpb.Call{
		Type:    schedulerpb.Call_REQUEST.Enum(),
		Request: &schedulerpb.Call_Request{Requests: requests},
	})
}

// Suppress stops offers for roles (none = all roles) until Revive.
func (c *Client) Suppress(ctx context.Context, roles ...string) error {
	call := &schedulerpb.Call{Type: schedulerpb.Call_SUPPRESS.Enum()}
	if len(roles) > 0 {
		call.Suppress = &schedulerpb.Call_Suppress{Roles: roles}
	}
	return c.Call(ctx, call)
}

// UpdateFramework replaces the framework's info (its id is filled in),
// suppressed roles and offer constraints (UPDATE_FRAMEWORK); the master
// answers 400 naming the problem if they are not valid. Once accepted they
// are also what later re-subscriptions send.
func (c *Client) UpdateFramework(ctx context.Context, info *mesos.FrameworkInfo, suppressedRoles []string, constraints *schedulerpb.OfferConstraints) error {
	info = proto.CloneOf(info)
	info.Id = c.FrameworkID()
	if c.cfg.Revocable {
		info = withCapability(info, mesos.FrameworkInfo_Capability_REVOCABLE_RESOURCES)
	}
	u := &schedulerpb.Call_UpdateFramework{FrameworkInfo: info, SuppressedRoles: suppressedRoles, OfferConstraints: constraints}
	if err := c.Call(ctx, &schedulerpb.Call{Type: schedulerpb.Call_UPDATE_FRAMEWORK.Enum(), UpdateFramework: u}); err != nil {
		return err
	}
	c.mu.Lock()
	c.sub = &schedulerpb.Call_Subscribe{FrameworkInfo: proto.CloneOf(info), SuppressedRoles: append([]string(nil), suppressedRoles...),
		OfferConstraints: proto.CloneOf(constraints)}
	c.mu.Unlock()
	return nil
}

// Teardown removes the framework: the master kills its tasks and closes
// the stream. The event channel then closes with ErrTornDown.
func (c *Client) Teardown(ctx context.Context) error {
	return c.Call(ctx, &schedulerpb.Call{Type: schedulerpb.Call_TEARDOWN.Enum()})
}
