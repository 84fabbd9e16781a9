package endpoints

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"mezzo/api/codec"
	"mezzo/api/masterpb"
	"mezzo/api/mesos"
)

// The operator's operations on an agent's resources: the v1 calls
// RESERVE_RESOURCES, UNRESERVE_RESOURCES, CREATE_VOLUMES, DESTROY_VOLUMES,
// GROW_VOLUME and SHRINK_VOLUME, the classic form endpoints /master/reserve,
// /master/unreserve, /master/create-volumes and /master/destroy-volumes.
// Every write becomes one Offer.Operation handed to
// Source.ApplyOperation, which validates and applies it on the master's
// loop; this file only decodes and answers as Mesos does:
//
//	202 Accepted, empty body   the operation is applied (the agent's total
//	                           in the next snapshot holds the result)
//	400 Bad Request, text      a malformed body, or an operation the master
//	                           refuses (the text names the field)
//	409 Conflict, text         the resources are not available on the agent
//	405 / 307 / 503            not POST / not the leader / no leader known

// operationCall converts a v1 operator call of the six operation types into
// the agent ID and the Offer.Operation it asks for; ok is false for any
// other call type. The call has passed validateCall, so its sub-message is
// present.
func operationCall(c *masterpb.Call) (agentID string, op *mesos.Offer_Operation, ok bool) {
	switch c.GetType() {
	case masterpb.Call_RESERVE_RESOURCES:
		rr := c.GetReserveResources()
		return rr.GetAgentId().GetValue(), &mesos.Offer_Operation{
			Type:    mesos.Offer_Operation_RESERVE.Enum(),
			Reserve: &mesos.Offer_Operation_Reserve{Source: rr.GetSource(), Resources: rr.GetResources()},
		}, true
	case masterpb.Call_UNRESERVE_RESOURCES:
		ur := c.GetUnreserveResources()
		return ur.GetAgentId().GetValue(), &mesos.Offer_Operation{
			Type:      mesos.Offer_Operation_UNRESERVE.Enum(),
			Unreserve: &mesos.Offer_Operation_Unreserve{Resources: ur.GetResources()},
		}, true
	case masterpb.Call_CREATE_VOLUMES:
		cv := c.GetCreateVolumes()
		return cv.GetAgentId().GetValue(), &mesos.Offer_Operation{
			Type:   mesos.Offer_Operation_CREATE.Enum(),
			Create: &mesos.Offer_Operation_Create{Volumes: cv.GetVolumes()},
		}, true
	case masterpb.Call_DESTROY_VOLUMES:
		dv := c.GetDestroyVolumes()
		return dv.GetAgentId().GetValue(), &mesos.Offer_Operation{
			Type:    mesos.Offer_Operation_DESTROY.Enum(),
			Destroy: &mesos.Offer_Operation_Destroy{Volumes: dv.GetVolumes()},
		}, true
	case masterpb.Call_GROW_VOLUME:
		g := c.GetGrowVolume()
		return g.GetAgentId().GetValue(), &mesos.Offer_Operation{
			Type:       mesos.Offer_Operation_GROW_VOLUME.Enum(),
			GrowVolume: &mesos.Offer_Operation_GrowVolume{Volume: g.GetVolume(), Addition: g.GetAddition()},
		}, true
	case masterpb.Call_SHRINK_VOLUME:
		s := c.GetShrinkVolume()
		return s.GetAgentId().GetValue(), &mesos.Offer_Operation{
			Type:         mesos.Offer_Operation_SHRINK_VOLUME.Enum(),
			ShrinkVolume: &mesos.Offer_Operation_ShrinkVolume{Volume: s.GetVolume(), Subtract: s.GetSubtract()},
		}, true
	}
	return "", nil, false
}

// applyOperation hands op to the master and answers 202 or the error.
func (h *handlers) applyOperation(w http.ResponseWriter, r *http.Request, agentID string, op *mesos.Offer_Operation) {
	if err := h.src.ApplyOperation(r.Context(), principal(r), agentID, op); err != nil {
		writeError(w, err)
		return
	}
	w.Header().Del("Content-Type")
	w.WriteHeader(http.StatusAccepted)
}

// classicOperation describes one classic form endpoint: the form field
// holding the JSON array of resources and how to build the operation.
type classicOperation struct {
	field string
	build func(rs []*mesos.Resource) *mesos.Offer_Operation
}

var (
	classicReserve = classicOperation{"resources", func(rs []*mesos.Resource) *mesos.Offer_Operation {
		return &mesos.Offer_Operation{Type: mesos.Offer_Operation_RESERVE.Enum(),
			Reserve: &mesos.Offer_Operation_Reserve{Resources: rs}}
	}}
	classicUnreserve = classicOperation{"resources", func(rs []*mesos.Resource) *mesos.Offer_Operation {
		return &mesos.Offer_Operation{Type: mesos.Offer_Operation_UNRESERVE.Enum(),
			Unreserve: &mesos.Offer_Operation_Unreserve{Resources: rs}}
	}}
	classicCreateVolumes = classicOperation{"volumes", func(rs []*mesos.Resource) *mesos.Offer_Operation {
		return &mesos.Offer_Operation{Type: mesos.Offer_Operation_CREATE.Enum(),
			Create: &mesos.Offer_Operation_Create{Volumes: rs}}
	}}
	classicDestroyVolumes = classicOperation{"volumes", func(rs []*mesos.Resource) *mesos.Offer_Operation {
		return &mesos.Offer_Operation{Type: mesos.Offer_Operation_DESTROY.Enum(),
			Destroy: &mesos.Offer_Operation_Destroy{Volumes: rs}}
	}}
)

// classic serves one of the classic operation endpoints: POST with a form
// body (decoded as a form whatever its Content-Type, as Mesos does)
// slaveId=<id>&<field>=<JSON array of Resource>. Only the leader answers.
func (h *handlers) classic(kind classicOperation) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, ok := h.leaderPostBody(w, r)
		if !ok {
			return
		}
		agentID, rs, err := parseOperationForm(string(body), kind.field)
		if err != nil {
			writeText(w, http.StatusBadRequest, err.Error())
			return
		}
		h.applyOperation(w, r, agentID, kind.build(rs))
	}
}

// parseOperationForm decodes a classic operation form: the agent ID and the
// resources of field, each element of the JSON array a Resource in
// Mesos's JSON mapping. Errors are the 400 texts Mesos writes.
func parseOperationForm(body, field string) (string, []*mesos.Resource, error) {
	form, err := url.ParseQuery(body)
	if err != nil {
		return "", nil, fmt.Errorf("Unable to decode query string: %v", err)
	}
	ids, ok := form["slaveId"]
	if !ok || len(ids) == 0 {
		return "", nil, fmt.Errorf("Missing 'slaveId' query parameter in the request body")
	}
	vals, ok := form[field]
	if !ok || len(vals) == 0 {
		return "", nil, fmt.Errorf("Missing '%s' query parameter in the request body", field)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal([]byte(vals[0]), &raw); err != nil {
		return "", nil, fmt.Errorf("Error in parsing '%s' query parameter in the request body (expecting a JSON array of Resource): %v", field, err)
	}
	rs := make([]*mesos.Resource, 0, len(raw))
	for i, x := range raw {
		res := &mesos.Resource{}
		if err := codec.Unmarshal(codec.JSON, x, res); err != nil {
			return "", nil, fmt.Errorf("Error in parsing '%s' query parameter in the request body: element [%d]: %v", field, i, err)
		}
		rs = append(rs, res)
	}
	return ids[0], rs, nil
}
