package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"google.golang.org/protobuf/proto"

	"mezzo/api/codec"
	"mezzo/api/masterpb"
	"mezzo/api/mesos"
	"mezzo/resources"
)

// What `reserve`, `unreserve` and `volumes` share: reading resources from
// the command line, finding an agent's reservations and volumes in
// /master/slaves, and posting one operator call.

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

// agentResources is one agent of /master/slaves with the full Resource
// objects of its reservations (role → resources, volumes included).
type agentResources struct {
	ID       string                       `json:"id"`
	Hostname string                       `json:"hostname"`
	Reserved map[string][]json.RawMessage `json:"reserved_resources_full"`
}

// reserved returns the agent's reserved resources of role, decoded.
func (a *agentResources) reserved(role string) ([]*mesos.Resource, error) {
	var out []*mesos.Resource
	for _, x := range a.Reserved[role] {
		r := &mesos.Resource{}
		if err := codec.Unmarshal(codec.JSON, x, r); err != nil {
			return nil, fmt.Errorf("agent %s: decoding a reserved resource of role %s: %v", a.ID, role, err)
		}
		out = append(out, resources.ToPostRefinement([]*mesos.Resource{r})...)
	}
	return out, nil
}

// findAgent reads one agent from /master/slaves.
func (c *invocation) findAgent(id string) (*agentResources, error) {
	var doc struct {
		Slaves []agentResources `json:"slaves"`
	}
	if err := c.master.getJSON("/master/slaves?slave_id="+url.QueryEscape(id), &doc); err != nil {
		return nil, err
	}
	for i := range doc.Slaves {
		if doc.Slaves[i].ID == id {
			return &doc.Slaves[i], nil
		}
	}
	return nil, fmt.Errorf("no agent %s is registered with the master", id)
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
