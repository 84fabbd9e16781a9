package endpoints

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/api/quotapb"
	"mezzo/internal/opapi"
	"mezzo/master"
)

// weightsOf lists the snapshot's configured weights, by role.
func weightsOf(s *master.Snapshot) []*mesos.WeightInfo {
	roles := make([]string, 0, len(s.Weights))
	for r := range s.Weights {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	out := make([]*mesos.WeightInfo, 0, len(roles))
	for _, r := range roles {
		out = append(out, &mesos.WeightInfo{Role: proto.String(r), Weight: proto.Float64(s.Weights[r])})
	}
	return out
}

// quotaStatus is GET_QUOTA's and GET /master/quota's answer: every role
// with quota, as a QuotaConfig and, for old clients, as the legacy
// QuotaInfo (guarantees only), by role.
func quotaStatus(s *master.Snapshot) *quotapb.QuotaStatus {
	st := &quotapb.QuotaStatus{}
	for _, r := range s.Roles {
		if !r.Quota.HasQuota() {
			continue
		}
		cfg := &quotapb.QuotaConfig{Role: proto.String(r.Name)}
		info := &quotapb.QuotaInfo{Role: proto.String(r.Name)}
		if len(r.Quota.Guarantees) > 0 {
			cfg.Guarantees = map[string]*mesos.Value_Scalar{}
			for _, name := range sortedNames(r.Quota.Guarantees) {
				x := r.Quota.Guarantees[name]
				cfg.Guarantees[name] = &mesos.Value_Scalar{Value: proto.Float64(x)}
				info.Guarantee = append(info.Guarantee, &mesos.Resource{Name: proto.String(name),
					Type: mesos.Value_SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: proto.Float64(x)}})
			}
		}
		if len(r.Quota.Limits) > 0 {
			cfg.Limits = map[string]*mesos.Value_Scalar{}
			for name, x := range r.Quota.Limits {
				cfg.Limits[name] = &mesos.Value_Scalar{Value: proto.Float64(x)}
			}
		}
		st.Infos = append(st.Infos, info)
		st.Configs = append(st.Configs, cfg)
	}
	return st
}

func sortedNames(m map[string]float64) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// rolesResponse answers GET_WEIGHTS and GET_QUOTA, or returns nil.
func rolesResponse(c *masterpb.Call, s *master.Snapshot) *masterpb.Response {
	switch c.GetType() {
	case masterpb.Call_GET_WEIGHTS:
		return &masterpb.Response{Type: masterpb.Response_GET_WEIGHTS.Enum(),
			GetWeights: &masterpb.Response_GetWeights{WeightInfos: weightsOf(s)}}
	case masterpb.Call_GET_QUOTA:
		return &masterpb.Response{Type: masterpb.Response_GET_QUOTA.Enum(),
			GetQuota: &masterpb.Response_GetQuota{Status: quotaStatus(s)}}
	}
	return nil
}

// roleWriteCall runs UPDATE_WEIGHTS, UPDATE_QUOTA, SET_QUOTA or
// REMOVE_QUOTA: 200 with an empty body and no Content-Type on success (as
// TEARDOWN), the error's status and text otherwise.
func (h *handlers) roleWriteCall(w http.ResponseWriter, r *http.Request, c *masterpb.Call) {
	var err error
	switch c.GetType() {
	case masterpb.Call_UPDATE_WEIGHTS:
		err = h.src.UpdateWeights(r.Context(), principal(r), c.GetUpdateWeights().GetWeightInfos())
	case masterpb.Call_UPDATE_QUOTA:
		err = h.src.UpdateQuota(r.Context(), principal(r), c.GetUpdateQuota().GetForce(), c.GetUpdateQuota().GetQuotaConfigs())
	case masterpb.Call_SET_QUOTA:
		err = h.src.SetQuota(r.Context(), principal(r), c.GetSetQuota().GetQuotaRequest())
	case masterpb.Call_REMOVE_QUOTA:
		err = h.src.RemoveQuota(r.Context(), principal(r), c.GetRemoveQuota().GetRole())
	}
	h.writeEmptyOr(w, err)
}

// writeEmptyOr answers 200 with no body, or the error.
func (h *handlers) writeEmptyOr(w http.ResponseWriter, err error) {
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Del("Content-Type")
	w.WriteHeader(http.StatusOK)
}

// writeError answers err with the status it carries (master.APIError),
// 503 for a context or stop error without one.
func writeError(w http.ResponseWriter, err error) {
	writeText(w, errorStatus(err), err.Error())
}

// errorStatus is the HTTP status err carries (master.APIError), or 503 for
// a context or stop error without one.
func errorStatus(err error) int {
	var se interface{ HTTPStatus() int }
	if errors.As(err, &se) {
		return se.HTTPStatus()
	}
	return http.StatusServiceUnavailable
}

// weights serves /master/weights: GET lists the configured weights as a
// JSON array of WeightInfo; PUT takes such an array and applies it (200,
// or 400 naming the bad role or weight). Only the leader answers.
func (h *handlers) weights(w http.ResponseWriter, r *http.Request) {
	s := h.snapshot()
	if !s.Elected {
		redirectToLeader(w, r, s)
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		h.writeProtoArray(w, r, weightsOf(h.viewer(r).Filter(s)))
	case http.MethodPut:
		body, ok := readBody(w, r)
		if !ok {
			return
		}
		var raw []json.RawMessage
		if err := json.Unmarshal(body, &raw); err != nil {
			writeText(w, http.StatusBadRequest, "Failed to parse update weights request JSON (expecting an array of WeightInfo): "+err.Error())
			return
		}
		infos := make([]*mesos.WeightInfo, len(raw))
		for i, x := range raw {
			infos[i] = &mesos.WeightInfo{}
			if err := codec.Unmarshal(codec.JSON, x, infos[i]); err != nil {
				writeText(w, http.StatusBadRequest, fmt.Sprintf("Failed to convert weights JSON array element [%d] to WeightInfo: %v", i, err))
				return
			}
		}
		h.writeEmptyOr(w, h.src.UpdateWeights(r.Context(), principal(r), infos))
	default:
		w.Header().Set("Allow", "GET, PUT")
		writeText(w, http.StatusMethodNotAllowed, "Expecting one of { 'GET', 'PUT' }, but received '"+r.Method+"'")
	}
}

// quota serves the deprecated /master/quota: GET answers the QuotaStatus
// JSON; POST takes a QuotaRequest JSON (SET_QUOTA); DELETE
// /master/quota/<role> removes a role's quota. Only the leader answers.
func (h *handlers) quota(w http.ResponseWriter, r *http.Request) {
	s := h.snapshot()
	if !s.Elected {
		redirectToLeader(w, r, s)
		return
	}
	// The role may contain slashes: everything after "quota/".
	role, hasRole := "", false
	if i := strings.Index(r.URL.Path, "quota/"); i >= 0 {
		role, hasRole = r.URL.Path[i+len("quota/"):], true
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if hasRole {
			opapi.NoEndpoint(w, r, "master")
			return
		}
		body, err := codec.Marshal(codec.JSON, quotaStatus(h.viewer(r).Filter(s)))
		if err != nil {
			writeText(w, http.StatusInternalServerError, "Failed to render quota status: "+err.Error())
			return
		}
		h.writeJSON(w, r, json.RawMessage(body))
	case http.MethodPost:
		if hasRole {
			opapi.NoEndpoint(w, r, "master")
			return
		}
		body, ok := readBody(w, r)
		if !ok {
			return
		}
		req := &quotapb.QuotaRequest{}
		if err := codec.Unmarshal(codec.JSON, body, req); err != nil {
			writeText(w, http.StatusBadRequest, "Failed to parse set quota request JSON (expecting a QuotaRequest): "+err.Error())
			return
		}
		h.writeEmptyOr(w, h.src.SetQuota(r.Context(), principal(r), req))
	case http.MethodDelete:
		if role == "" {
			writeText(w, http.StatusBadRequest, "Failed to parse remove quota request for path '"+r.URL.Path+"': expecting /master/quota/<role>")
			return
		}
		h.writeEmptyOr(w, h.src.RemoveQuota(r.Context(), principal(r), role))
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		writeText(w, http.StatusMethodNotAllowed, "Expecting one of { 'GET', 'POST', 'DELETE' }, but received '"+r.Method+"'")
	}
}

// writeProtoArray answers a JSON array of messages in Mesos's mapping.
func (h *handlers) writeProtoArray(w http.ResponseWriter, r *http.Request, ms []*mesos.WeightInfo) {
	out := make([]json.RawMessage, 0, len(ms))
	for _, m := range ms {
		b, err := codec.Marshal(codec.JSON, m)
		if err != nil {
			writeText(w, http.StatusInternalServerError, "Failed to render JSON: "+err.Error())
			return
		}
		out = append(out, b)
	}
	h.writeJSON(w, r, out)
}
