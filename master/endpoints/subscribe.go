package endpoints

import (
	"context"
	"net/http"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/masterpb"
	"mezzo/api/recordio"
	"mezzo/master"
)

// subscribe streams the operator event feed for a SUBSCRIBE call: 200 with
// Content-Type mt, no Content-Length (chunked), a RecordIO stream whose
// first record is SUBSCRIBED{get_state, heartbeat_interval_seconds}, then
// every event Watch delivers, with a HEARTBEAT each heartbeat interval (the
// first one interval after subscribing). The stream ends when the client
// goes away or the master closes the event channel.
func (h *handlers) subscribe(w http.ResponseWriter, r *http.Request, mt codec.MediaType) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel() // tells the master to drop the subscriber
	snap, events, err := h.src.Watch(ctx)
	if err != nil {
		writeText(w, http.StatusServiceUnavailable, "Failed to subscribe to the master's event stream: "+err.Error())
		return
	}
	if snap == nil {
		snap = &master.Snapshot{}
	}
	v := h.viewer(r)
	filter := newEventFilter(v, snap)
	snap = v.Filter(snap)

	// Arm the heartbeat before the first record so that a client that has
	// read SUBSCRIBED knows the timer runs (tests advance a fake clock then).
	ticker := h.clock.NewTicker(h.heartbeat)
	defer ticker.Stop()

	w.Header().Set("Content-Type", string(mt))
	w.Header().Del("Content-Length")
	w.WriteHeader(http.StatusOK)
	rw := recordio.NewWriter(w)
	send := func(ev *masterpb.Event) bool {
		b, err := codec.Marshal(mt, ev)
		if err != nil {
			h.log.Error("endpoints: encoding operator event", "type", ev.GetType().String(), "err", err)
			return true // skip the event, keep the stream
		}
		return rw.Write(b) == nil
	}

	subscribed := &masterpb.Event{
		Type: masterpb.Event_SUBSCRIBED.Enum(),
		Subscribed: &masterpb.Event_Subscribed{
			GetState:                 getState(snap),
			HeartbeatIntervalSeconds: proto.Float64(h.heartbeat.Seconds()),
		},
	}
	if !send(subscribed) {
		return
	}
	heartbeat := &masterpb.Event{Type: masterpb.Event_HEARTBEAT.Enum()}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			if ev != nil && filter.pass(ev) && !send(ev) {
				return
			}
		case <-ticker.C():
			if !send(heartbeat) {
				return
			}
		}
	}
}
