package httpapi

import (
	"errors"
	"net/http"

	"mezzo/api/codec"
	"mezzo/api/schedulerpb"
	"mezzo/master"
)

// scheduler serves POST /api/v1/scheduler (reference §1.2): every status
// code, header and message as Mesos answers them.
func (s *server) scheduler(w http.ResponseWriter, r *http.Request) {
	if s.redirectIfFollower(w, r) {
		return
	}
	if !checkPost(w, r) {
		return
	}
	mt, status, err := codec.RequestType(r)
	if err != nil {
		msg := err.Error()
		if errors.Is(err, codec.ErrMissingContentType) {
			msg = "Expecting 'Content-Type' to be present"
		}
		fail(w, status, msg)
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	call := &schedulerpb.Call{}
	if err := unmarshal(mt, body, call); err != nil {
		fail(w, http.StatusBadRequest, parseError(mt, "Call", err))
		return
	}
	if err := master.ValidateCall(call); err != nil {
		fail(w, http.StatusBadRequest, "Failed to validate scheduler::Call: "+err.Error())
		return
	}
	if call.GetType() == schedulerpb.Call_SUBSCRIBE {
		s.subscribe(w, r, call)
		return
	}
	if err := s.m.SchedulerCall(r.Context(), principal(r), call, r.Header.Get("Mesos-Stream-Id")); err != nil {
		s.failErr(w, r, err)
		return
	}
	if call.GetType() == schedulerpb.Call_UPDATE_FRAMEWORK {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// subscribe answers SUBSCRIBE with the framework's event stream and keeps
// the request open until the client goes away or the master ends the
// subscription. HEARTBEATs follow every HeartbeatInterval.
func (s *server) subscribe(w http.ResponseWriter, r *http.Request, call *schedulerpb.Call) {
	if r.Header.Get("Mesos-Stream-Id") != "" {
		fail(w, http.StatusBadRequest, "Subscribe calls should not include the 'Mesos-Stream-Id' header")
		return
	}
	rt, err := codec.ResponseType(r)
	if err != nil {
		fail(w, http.StatusNotAcceptable, err.Error())
		return
	}
	st, err := s.m.Subscribe(r.Context(), principal(r), call)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	defer st.Close()
	rw := streamStart(w, rt, map[string]string{"Mesos-Stream-Id": st.ID()})
	ticker := s.cfg.Clock.NewTicker(s.cfg.HeartbeatInterval)
	defer ticker.Stop()
	heartbeat := &schedulerpb.Event{Type: schedulerpb.Event_HEARTBEAT.Enum()}
	// SUBSCRIBED is queued by now: it leaves with the headers.
	if !sendQueued(rw, rt, st.Drain, true) {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-st.Ready():
			if !sendQueued(rw, rt, st.Drain, false) {
				return
			}
		case <-ticker.C():
			if err := writeRecord(rw, rt, heartbeat); err != nil {
				return
			}
		}
	}
}
