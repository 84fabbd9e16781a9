package cli

import (
	"errors"
	"flag"
	"fmt"

	"google.golang.org/protobuf/proto"

	"mezzo/api/masterpb"
	"mezzo/api/mesos"
)

// reserveOpts are the flags of `reserve` and `unreserve`.
type reserveOpts struct {
	agent     *string
	principal *string
}

func reserveFlags(fs *flag.FlagSet) any {
	return &reserveOpts{
		agent:     fs.String("agent", "", "ID of the agent whose resources to (un)reserve (required)"),
		principal: fs.String("principal", "", "principal of the reservation (text syntax only)"),
	}
}

var reserveSpec = spec{
	summary: "reserve an agent's unreserved resources for a role (operator RESERVE_RESOURCES)",
	usage:   " RESOURCES",
	nargs:   1,
	setup:   reserveFlags,
	run:     runReserve,
}

var unreserveSpec = spec{
	summary: "give reserved resources of an agent back to * (operator UNRESERVE_RESOURCES)",
	usage:   " RESOURCES",
	nargs:   1,
	setup:   reserveFlags,
	run:     runUnreserve,
}

// operationResult is the --json output of reserve, unreserve and volumes
// create/destroy.
type operationResult struct {
	AgentID   string `json:"agent_id"`
	Operation string `json:"operation"`
	Resources any    `json:"resources"`
}

func runReserve(e *env, c *invocation) error {
	o := c.opts.(*reserveOpts)
	if *o.agent == "" {
		return usageError{errors.New("--agent is required (see `mezzo agents`)")}
	}
	rs, _, err := parseResourcesArg(c.args[0], *o.principal)
	if err != nil {
		return err
	}
	err = c.postOperation(&masterpb.Call{Type: masterpb.Call_RESERVE_RESOURCES.Enum(),
		ReserveResources: &masterpb.Call_ReserveResources{AgentId: agentIDOf(*o.agent), Resources: rs}})
	if err != nil {
		return err
	}
	return c.reportOperation(*o.agent, "RESERVE", rs, "Reserved")
}

func runUnreserve(e *env, c *invocation) error {
	o := c.opts.(*reserveOpts)
	if *o.agent == "" {
		return usageError{errors.New("--agent is required (see `mezzo agents`)")}
	}
	rs, fromText, err := parseResourcesArg(c.args[0], *o.principal)
	if err != nil {
		return err
	}
	if fromText {
		// Text cannot carry labels, and the user may not remember the
		// principal: take the reservation as the agent holds it.
		if rs, err = c.matchReservations(*o.agent, rs, *o.principal); err != nil {
			return err
		}
	}
	err = c.postOperation(&masterpb.Call{Type: masterpb.Call_UNRESERVE_RESOURCES.Enum(),
		UnreserveResources: &masterpb.Call_UnreserveResources{AgentId: agentIDOf(*o.agent), Resources: rs}})
	if err != nil {
		return err
	}
	return c.reportOperation(*o.agent, "UNRESERVE", rs, "Unreserved")
}

// matchReservations replaces the reservations of resources parsed from
// text by the agent's own reservation of that role and resource name
// (principal and labels included), when exactly one matches (restricted
// to principal when given). With none, the resources are left as typed and
// the master answers that they are not available.
func (c *invocation) matchReservations(agentID string, rs []*mesos.Resource, principal string) ([]*mesos.Resource, error) {
	a, err := c.findAgent(agentID)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		role := topRole(r)
		held := a.reserved(role)
		var match []*mesos.Resource_ReservationInfo
		for _, h := range held {
			if h.GetName() != r.GetName() || h.GetDisk().GetPersistence() != nil || len(h.GetReservations()) != 1 {
				continue
			}
			res := h.GetReservations()[0]
			if principal != "" && res.GetPrincipal() != principal {
				continue
			}
			dup := false
			for _, m := range match {
				dup = dup || proto.Equal(m, res)
			}
			if !dup {
				match = append(match, res)
			}
		}
		if len(match) > 1 {
			return nil, usageError{fmt.Errorf("agent %s holds %s reserved for role %s under %d different reservations (principals or labels); "+
				"give --principal, or the resources as JSON (see GET_AGENTS or /master/slaves reserved_resources_full)", agentID, r.GetName(), role, len(match))}
		}
		if len(match) == 1 {
			r.Reservations = []*mesos.Resource_ReservationInfo{proto.Clone(match[0]).(*mesos.Resource_ReservationInfo)}
		}
	}
	return rs, nil
}

func (c *invocation) reportOperation(agentID, op string, rs []*mesos.Resource, verb string) error {
	if c.json {
		return writeJSON(c.stdout, operationResult{AgentID: agentID, Operation: op, Resources: resourcesJSON(rs)})
	}
	_, err := fmt.Fprintf(c.stdout, "%s %s on agent %s.\n", verb, resourcesText(rs), agentID)
	return err
}

func agentIDOf(id string) *mesos.AgentID { return &mesos.AgentID{Value: proto.String(id)} }
