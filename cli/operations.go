package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/resources"
)

// What `reserve`, `unreserve` and `volumes` share: reading resources from
// the command line, finding an agent's reservations and volumes through
// the leader's GET_AGENTS, and posting one operator call.

// parseResourcesArg reads RESOURCES as the user typed it: a JSON array of
// Resource objects (or one object) in Mesos's JSON mapping, used as given;
// or Mesos text syntax ("cpus(db):2;disk(db):1024"), where every resource
// must name a role, which becomes a dynamic reservation for principal
// (none when empty). Text cannot say labels or refinements: JSON can.
func parseResourcesArg(arg, principal string) (rs []*mesos.Resource, fromText bool, err error) {
	s := strings.TrimSpace(arg)
	if strings.HasPrefix(s, "[") || strings.HasPrefix(s, "{") {
		rs, err := parseResourceJSON(s)
		return rs, false, err
	}
	parsed, err := resources.Parse(s, "*")
	if err != nil {
		return nil, true, usageError{fmt.Errorf("resources %q: %v", arg, err)}
	}
	if parsed.IsEmpty() {
		return nil, true, usageError{fmt.Errorf("resources %q: nothing to reserve", arg)}
	}
	for _, r := range parsed.Proto() {
		res := r.GetReservations()
		if len(res) == 0 {
			return nil, true, usageError{fmt.Errorf("resources %q: %s has no role; write it as %s(ROLE):%s",
				arg, r.GetName(), r.GetName(), amountText(r))}
		}
		d := &mesos.Resource_ReservationInfo{Type: mesos.Resource_ReservationInfo_DYNAMIC.Enum(), Role: res[len(res)-1].Role}
		if principal != "" {
			d.Principal = proto.String(principal)
		}
		r.Reservations = []*mesos.Resource_ReservationInfo{d}
		rs = append(rs, r)
	}
	return rs, true, nil
}

// amountText is a resource's value as text syntax writes it.
func amountText(r *mesos.Resource) string {
	x, err := resources.FromProto([]*mesos.Resource{r})
	if err != nil {
		return "N"
	}
	s := x.String()
	if i := strings.Index(s, ":"); i >= 0 {
		return s[i+1:]
	}
	return s
}

// parseResourceJSON decodes a JSON array of Resource, or a single one.
func parseResourceJSON(s string) ([]*mesos.Resource, error) {
	var raw []json.RawMessage
	if strings.HasPrefix(s, "{") {
		raw = []json.RawMessage{json.RawMessage(s)}
	} else if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return nil, usageError{fmt.Errorf("resources: not a JSON array of Resource: %v", err)}
	}
	out := make([]*mesos.Resource, 0, len(raw))
	for i, x := range raw {
		r := &mesos.Resource{}
		if err := codec.Unmarshal(codec.JSON, x, r); err != nil {
			return nil, usageError{fmt.Errorf("resources[%d]: not a Resource: %v", i, err)}
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, usageError{fmt.Errorf("resources: empty array")}
	}
	return out, nil
}

// agentResources is one agent as the leading master sees it (GET_AGENTS):
// its total, reservations and volumes included, as full Resource objects.
type agentResources struct {
	ID    string
	Total []*mesos.Resource
}

// reserved returns the agent's resources reserved to role (the top of
// their reservation stack), volumes included.
func (a *agentResources) reserved(role string) []*mesos.Resource {
	var out []*mesos.Resource
	for _, r := range a.Total {
		if topRole(r) == role && role != "" {
			out = append(out, r)
		}
	}
	return out
}

// roles lists the roles the agent holds reservations for.
func (a *agentResources) roles() []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range a.Total {
		if role := topRole(r); role != "" && role != "*" && !seen[role] {
			seen[role] = true
			out = append(out, role)
		}
	}
	return out
}

// operatorCall posts a v1 operator call (JSON) and decodes the response.
// The operator API is answered by the leader only (others redirect), so
// this reads the leader's view whichever master is listed first.
func (c *invocation) operatorCall(call *masterpb.Call) (*masterpb.Response, error) {
	body, err := codec.Marshal(codec.JSON, call)
	if err != nil {
		return nil, err
	}
	var raw jsonBytes
	if err := c.master.do("POST", "/api/v1", body, string(codec.JSON), &raw); err != nil {
		return nil, err
	}
	resp := &masterpb.Response{}
	if err := codec.Unmarshal(codec.JSON, raw, resp); err != nil {
		return nil, fmt.Errorf("decoding the %s response: %v", call.GetType(), err)
	}
	return resp, nil
}

// findAgent reads one agent from the leader (GET_AGENTS).
func (c *invocation) findAgent(id string) (*agentResources, error) {
	resp, err := c.operatorCall(&masterpb.Call{Type: masterpb.Call_GET_AGENTS.Enum()})
	if err != nil {
		return nil, err
	}
	for _, a := range resp.GetGetAgents().GetAgents() {
		if a.GetAgentInfo().GetId().GetValue() == id {
			return &agentResources{ID: id, Total: resources.ToPostRefinement(a.GetTotalResources())}, nil
		}
	}
	return nil, fmt.Errorf("no agent %s is registered with the master", id)
}

// jsonBytes keeps a response body as it came, for decoding with codec.
type jsonBytes []byte

// UnmarshalJSON implements json.Unmarshaler.
func (b *jsonBytes) UnmarshalJSON(data []byte) error {
	*b = append((*b)[:0], data...)
	return nil
}

// topRole is the role of a resource's most refined reservation, "" if
// unreserved.
func topRole(r *mesos.Resource) string {
	if n := len(r.GetReservations()); n > 0 {
		return r.GetReservations()[n-1].GetRole()
	}
	return r.GetRole()
}

// postOperation sends one operator call (JSON); nil on 202.
func (c *invocation) postOperation(call *masterpb.Call) error {
	body, err := codec.Marshal(codec.JSON, call)
	if err != nil {
		return fmt.Errorf("encoding the %s call: %v", call.GetType(), err)
	}
	return c.master.do("POST", "/api/v1", body, string(codec.JSON), nil)
}

// resourcesText renders resources in text syntax for messages
// ("cpus(db):2"), with the principal of the reservation where there is
// one.
func resourcesText(rs []*mesos.Resource) string {
	var parts []string
	for _, r := range rs {
		bare := proto.Clone(r).(*mesos.Resource)
		bare.Reservations, bare.Role, bare.Reservation = nil, nil, nil
		s := bare.GetName() + "(" + topRole(r) + "):" + amountText(bare)
		if res := r.GetReservations(); len(res) > 0 && res[len(res)-1].GetPrincipal() != "" {
			s += " (principal " + res[len(res)-1].GetPrincipal() + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// resourcesJSON renders resources for --json output.
func resourcesJSON(rs []*mesos.Resource) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(rs))
	for _, r := range rs {
		b, err := codec.Marshal(codec.JSON, r)
		if err != nil {
			continue
		}
		out = append(out, json.RawMessage(bytes.TrimSpace(b)))
	}
	return out
}
