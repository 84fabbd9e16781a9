package httpapi

import (
	"errors"
	"fmt"
	"net/http"

	"mezzo/api/codec"
	"mezzo/api/protocol"
)

// agent serves POST /internal/v1/agent, the agent protocol (see
// api/proto/mezzo/protocol/v1/protocol.proto): protobuf only; SUBSCRIBE
// opens the agent's event stream, every other call is answered 202.
// Handlers are independent per request, so thousands of agents may share
// one HTTP/2 connection as separate streams.
func (s *server) agent(w http.ResponseWriter, r *http.Request) {
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
	if mt != codec.Protobuf {
		fail(w, http.StatusUnsupportedMediaType, fmt.Sprintf("The agent protocol is protobuf only: expecting 'Content-Type' of %s", codec.Protobuf))
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	call := &protocol.AgentCall{}
	if err := unmarshal(mt, body, call); err != nil {
		fail(w, http.StatusBadRequest, parseError(mt, "AgentCall", err))
		return
	}
	if call.Type == nil || call.GetType() == protocol.AgentCall_UNKNOWN {
		fail(w, http.StatusBadRequest, "Expecting 'type' to be present")
		return
	}
	if call.GetType() == protocol.AgentCall_SUBSCRIBE {
		s.agentSubscribe(w, r, call)
		return
	}
	if call.GetAgentId().GetValue() == "" {
		fail(w, http.StatusBadRequest, "Expecting 'agent_id' to be present")
		return
	}
	if err := s.m.AgentCall(r.Context(), principal(r), call); err != nil {
		s.failErr(w, r, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

func (s *server) agentSubscribe(w http.ResponseWriter, r *http.Request, call *protocol.AgentCall) {
	if call.GetSubscribe() == nil {
		fail(w, http.StatusBadRequest, "Expecting 'subscribe' to be present")
		return
	}
	st, err := s.m.SubscribeAgent(r.Context(), principal(r), call)
	if err != nil {
		s.failErr(w, r, err)
		return
	}
	defer st.Close()
	rw := streamStart(w, codec.Protobuf, nil)
	// SUBSCRIBED is queued by now: it leaves with the headers.
	if !sendQueued(rw, codec.Protobuf, st.Drain, true) {
		return
	}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-st.Ready():
			if !sendQueued(rw, codec.Protobuf, st.Drain, false) {
				return
			}
		}
	}
}
