package scheduler_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/internal/clock"
	"mezzo/scheduler"
	"mezzo/scheduler/schedulertest"
)

// The inverse-offer answers reach the master as the calls Mesos defines.
func TestInverseOfferCalls(t *testing.T) {
	m := schedulertest.NewMaster(t)
	c := newClient(clock.NewFake(time.Unix(0, 0)), codec.Protobuf, m.Addr())
	subscribe(t, c)
	ctx := context.Background()
	ids := []*mesos.OfferID{{Value: proto.String("O7")}}
	if err := c.AcceptInverseOffers(ctx, ids, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.DeclineInverseOffers(ctx, ids, scheduler.RefuseFor(60)); err != nil {
		t.Fatal(err)
	}
	acc := m.Calls(schedulerpb.Call_ACCEPT_INVERSE_OFFERS)
	dec := m.Calls(schedulerpb.Call_DECLINE_INVERSE_OFFERS)
	if len(acc) != 1 || acc[0].GetAcceptInverseOffers().GetInverseOfferIds()[0].GetValue() != "O7" ||
		acc[0].GetAcceptInverseOffers().Filters != nil || acc[0].GetFrameworkId().GetValue() != m.FrameworkID() {
		t.Fatalf("ACCEPT_INVERSE_OFFERS = %v", acc)
	}
	if len(dec) != 1 || dec[0].GetDeclineInverseOffers().GetFilters().GetRefuseSeconds() != 60 {
		t.Fatalf("DECLINE_INVERSE_OFFERS = %v", dec)
	}
}
