package master

import (
	"context"
	"time"

	"mezzo/api/schedulerpb"
)

// The scheduler API's entry points: what master/httpapi calls for
// POST /api/v1/scheduler. Each runs on the loop as a leader call.

// Subscribe handles a validated scheduler SUBSCRIBE call and returns the
// new subscription's event stream. The first queued event is SUBSCRIBED
// (then HEARTBEAT), or ERROR followed by the end of the stream.
func (m *Master) Subscribe(ctx context.Context, p Principal, call *schedulerpb.Call) (*FrameworkStream, error) {
	return openStream(ctx, m, func(s *state, now time.Time) (*FrameworkStream, error) {
		return s.subscribe(p, call.GetSubscribe(), now)
	})
}

// SchedulerCall applies a validated non-SUBSCRIBE scheduler call made on
// the subscription identified by streamID (the Mesos-Stream-Id header, ""
// if absent). It returns an *APIError for calls the master refuses.
func (m *Master) SchedulerCall(ctx context.Context, p Principal, call *schedulerpb.Call, streamID string) error {
	return m.leaderCall(ctx, func(s *state, now time.Time) error {
		return s.schedulerCall(p, call, streamID, now)
	})
}
