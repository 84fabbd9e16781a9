package oversub

import "mezzo/resources"

// Forwarder decides, as Mesos's agent does, what to tell the master about
// oversubscribed resources and when: the total is the estimate plus the
// throttle-able revocable resources containers already hold (the
// estimators leave those out; lent reservations are the master's and never
// part of the agent's estimate), and it is sent only when it differs from
// the last one sent, or first after the agent (re-)registered.
//
// A Forwarder is owned by one goroutine (the agent keeps it on its loop);
// it is not safe for concurrent use. The zero value is ready and sends its
// first total.
type Forwarder struct {
	last resources.Resources
	sent bool
}

// Next returns the total for this estimate and whether to send it. It
// records the total as sent when it says to send; if the send then fails,
// call Reset so the next round sends again.
func (f *Forwarder) Next(estimate resources.Resources, containers []ContainerUsage) (resources.Resources, bool) {
	total := estimate
	for _, c := range containers {
		total = total.Add(unallocated(c.Allocated.Throttleable()))
	}
	if f.sent && total.Equal(f.last) {
		return total, false
	}
	f.last, f.sent = total, true
	return total, true
}

// Reset forgets what was sent: after the agent (re-)registers, or after a
// failed send, the next total is sent whatever it is.
func (f *Forwarder) Reset() { f.sent = false }
