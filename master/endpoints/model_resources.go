package endpoints

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"mezzo/api/codec"
	"mezzo/api/mesos"
	"mezzo/resources"
)

// parseResources normalizes rs. The snapshot only holds resources the master
// validated, so an error here is a bug upstream; we still render what we can
// rather than fail the whole document.
func parseResources(rs []*mesos.Resource) (resources.Resources, bool) {
	r, err := resources.FromProto(rs)
	return r, err == nil
}

// summary is Mesos's resources summary object: {"cpus":1.0,"gpus":0.0,
// "mem":128.0,"disk":0.0,"ports":"[31000-32000]"} (src/common/http.cpp).
func summary(rs ...[]*mesos.Resource) map[string]any {
	var all []*mesos.Resource
	for _, part := range rs {
		all = append(all, part...)
	}
	r, ok := parseResources(all)
	if !ok {
		return naiveSummary(all)
	}
	return summarize(r)
}

// summarize converts resources.Summary's float64s to jnum so amounts print
// as Mesos prints doubles ("2.0").
func summarize(r resources.Resources) map[string]any {
	out := r.Summary()
	for k, v := range out {
		if f, ok := v.(float64); ok {
			out[k] = jnum(f)
		}
	}
	return out
}

// naiveSummary sums scalars only; used when resources fail to normalize.
func naiveSummary(rs []*mesos.Resource) map[string]any {
	out := map[string]any{"cpus": jnum(0), "gpus": jnum(0), "mem": jnum(0), "disk": jnum(0)}
	for _, r := range rs {
		if r.GetType() != mesos.Value_SCALAR {
			continue
		}
		name := r.GetName()
		if r.Revocable != nil {
			name += "_revocable"
		}
		v, _ := out[name].(jnum)
		out[name] = v + jnum(r.GetScalar().GetValue())
	}
	return out
}

// reservationRole is the role a resource is reserved to (the last, most
// refined reservation), or "" when it is unreserved.
func reservationRole(r *mesos.Resource) string {
	if n := len(r.GetReservations()); n > 0 {
		return r.GetReservations()[n-1].GetRole()
	}
	if role := r.GetRole(); role != "" && role != "*" {
		return role
	}
	return ""
}

// reservationRoles lists the distinct roles r has reservations for, sorted.
func reservationRoles(r resources.Resources) []string {
	seen := map[string]bool{}
	var roles []string
	for _, res := range r.Proto() {
		if role := reservationRole(res); role != "" && !seen[role] {
			seen[role] = true
			roles = append(roles, role)
		}
	}
	sort.Strings(roles)
	return roles
}

// reservedSummaries is /master/state's reserved_resources: role → summary.
func reservedSummaries(total []*mesos.Resource) map[string]map[string]any {
	out := map[string]map[string]any{}
	r, ok := parseResources(total)
	if !ok {
		return out
	}
	for _, role := range reservationRoles(r) {
		out[role] = summarize(r.ReservedTo(role))
	}
	return out
}

// unreservedSummary is /master/state's unreserved_resources.
func unreservedSummary(total []*mesos.Resource) map[string]any {
	r, ok := parseResources(total)
	if !ok {
		return naiveSummary(nil)
	}
	return summarize(r.Unreserved())
}

// fullResources renders resources as Resource JSON objects in Mesos's
// "endpoint" format (post-refinement reservations plus the pre-refinement
// role/reservation where one reservation allows it), as /master/slaves'
// *_full fields do so operators can feed them to /unreserve.
func fullResources(r resources.Resources) []json.RawMessage {
	out := []json.RawMessage{}
	for _, res := range resources.ToEndpointFormat(r.Proto()) {
		b, _ := codec.MarshalJSON(res)
		out = append(out, b)
	}
	return out
}

// attributesJSON models agent attributes as Mesos does: scalars as numbers,
// ranges and sets as their text, text as a string.
func attributesJSON(attrs []*mesos.Attribute) map[string]any {
	out := map[string]any{}
	for _, a := range attrs {
		switch a.GetType() {
		case mesos.Value_SCALAR:
			out[a.GetName()] = jnum(a.GetScalar().GetValue())
		case mesos.Value_RANGES:
			out[a.GetName()] = rangesText(a.GetRanges())
		case mesos.Value_SET:
			out[a.GetName()] = setText(a.GetSet())
		case mesos.Value_TEXT:
			out[a.GetName()] = a.GetText().GetValue()
		}
	}
	return out
}

// rangesText is stout's stringify(Value::Ranges): "[1-2, 5-9]".
func rangesText(r *mesos.Value_Ranges) string {
	var sb strings.Builder
	sb.WriteByte('[')
	for i, rg := range r.GetRange() {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(strconv.FormatUint(rg.GetBegin(), 10))
		sb.WriteByte('-')
		sb.WriteString(strconv.FormatUint(rg.GetEnd(), 10))
	}
	sb.WriteByte(']')
	return sb.String()
}

// setText is stout's stringify(Value::Set): "{a, b}".
func setText(s *mesos.Value_Set) string {
	return "{" + strings.Join(s.GetItem(), ", ") + "}"
}
