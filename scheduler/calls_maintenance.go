package scheduler

import (
	"context"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
)

// AcceptInverseOffers answers inverse offers (maintenance: the agents'
// machines will be unavailable) with "the framework can vacate them in
// time"; DeclineInverseOffers with "it cannot". The master records the
// answer (GET_MAINTENANCE_STATUS) and, for filters.refuse_seconds (nil =
// 5 s), sends no new inverse offer for those agents.
func (c *Client) AcceptInverseOffers(ctx context.Context, ids []*mesos.OfferID, filters *mesos.Filters) error {
	return c.Call(ctx, &schedulerpb.Call{
		Type:                schedulerpb.Call_ACCEPT_INVERSE_OFFERS.Enum(),
		AcceptInverseOffers: &schedulerpb.Call_AcceptInverseOffers{InverseOfferIds: ids, Filters: filters},
	})
}

// DeclineInverseOffers declines inverse offers; see AcceptInverseOffers.
func (c *Client) DeclineInverseOffers(ctx context.Context, ids []*mesos.OfferID, filters *mesos.Filters) error {
	return c.Call(ctx, &schedulerpb.Call{
		Type:                 schedulerpb.Call_DECLINE_INVERSE_OFFERS.Enum(),
		DeclineInverseOffers: &schedulerpb.Call_DeclineInverseOffers{InverseOfferIds: ids, Filters: filters},
	})
}
