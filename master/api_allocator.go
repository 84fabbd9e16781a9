package master

import (
	"time"

	"mezzo/api/mesos"
	"mezzo/master/allocator"
	"mezzo/resources"
)

// The allocator's callbacks (allocator.Options): they post to the loop
// and never block, since the allocator calls them from its own goroutine.

// AllocatorRevoke is the allocator's Revoke callback (Config.Revocation):
// it kills the framework's tasks on the agent covering r, on the loop. It
// never blocks.
func (m *Master) AllocatorRevoke(frameworkID, agentID string, r resources.Resources) {
	m.post(func(s *state, now time.Time) { s.revoke(frameworkID, agentID, r, now) })
}

// AllocatorOffer is the allocator's Offer callback: it turns the
// allocation into offers on the loop. It never blocks.
func (m *Master) AllocatorOffer(frameworkID string, offers allocator.Offers) {
	m.post(func(s *state, now time.Time) { s.allocated(frameworkID, offers, now) })
}

// AllocatorInverseOffer is the allocator's InverseOffer callback: it
// sends the framework INVERSE_OFFERS on the loop. It never blocks.
func (m *Master) AllocatorInverseOffer(frameworkID string, offers map[string]*mesos.Unavailability) {
	m.post(func(s *state, now time.Time) { s.inverseAllocated(frameworkID, offers, now) })
}

// AllocatorRescind is the allocator's Rescind callback.
func (m *Master) AllocatorRescind(frameworkID, agentID string, r resources.Resources) {
	m.post(func(s *state, now time.Time) { s.rescindOn(frameworkID, agentID, r, now) })
}
