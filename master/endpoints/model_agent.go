package endpoints

import (
	"encoding/json"

	"mezzo/api/mesos"
	"mezzo/master"
)

// agentInfoJSON is Mesos's json(SlaveInfo): the identity part of an agent,
// also used alone for recovered_slaves.
type agentInfoJSON struct {
	ID         string          `json:"id"`
	Hostname   string          `json:"hostname"`
	Port       int32           `json:"port"`
	Attributes map[string]any  `json:"attributes"`
	Domain     json.RawMessage `json:"domain,omitempty"`
}

// agentJSON is a registered agent in /master/state (SlaveWriter).
type agentJSON struct {
	agentInfoJSON
	PID                 string                    `json:"pid"`
	RegisteredTime      jnum                      `json:"registered_time"`
	ReregisteredTime    *jnum                     `json:"reregistered_time,omitempty"`
	Resources           map[string]any            `json:"resources"`
	UsedResources       map[string]any            `json:"used_resources"`
	OfferedResources    map[string]any            `json:"offered_resources"`
	ReservedResources   map[string]map[string]any `json:"reserved_resources"`
	UnreservedResources map[string]any            `json:"unreserved_resources"`
	Active              bool                      `json:"active"`
	Deactivated         bool                      `json:"deactivated"`
	Version             string                    `json:"version"`
	Capabilities        []string                  `json:"capabilities"`
	// DrainInfo is present while an operator drains the agent, as Mesos
	// writes it: {"state":"DRAINING","config":{...}}.
	DrainInfo json.RawMessage `json:"drain_info,omitempty"`
}

// agentFullJSON adds the full Resource objects /master/slaves shows so that
// operators can build /unreserve and /destroy-volumes requests from them.
type agentFullJSON struct {
	agentJSON
	ReservedResourcesFull   map[string][]json.RawMessage `json:"reserved_resources_full"`
	UnreservedResourcesFull []json.RawMessage            `json:"unreserved_resources_full"`
	UsedResourcesFull       []json.RawMessage            `json:"used_resources_full"`
	OfferedResourcesFull    []json.RawMessage            `json:"offered_resources_full"`
}

func agentInfoModel(info *mesos.AgentInfo) agentInfoJSON {
	if info == nil {
		info = &mesos.AgentInfo{}
	}
	m := agentInfoJSON{
		ID:         info.GetId().GetValue(),
		Hostname:   info.GetHostname(),
		Port:       info.GetPort(),
		Attributes: attributesJSON(info.GetAttributes()),
	}
	if info.Domain != nil {
		m.Domain = protoJSON(info.Domain)
	}
	return m
}

func agentModel(a *master.AgentView) agentJSON {
	caps := make([]string, 0, len(a.Capabilities))
	for _, c := range a.Capabilities {
		caps = append(caps, c.GetType().String())
	}
	m := agentJSON{
		agentInfoJSON:       agentInfoModel(a.Info),
		PID:                 a.PID,
		RegisteredTime:      secs(a.RegisteredTime),
		Resources:           summary(a.Total),
		UsedResources:       summary(a.Used),
		OfferedResources:    summary(a.Offered),
		ReservedResources:   reservedSummaries(a.Total),
		UnreservedResources: unreservedSummary(a.Total),
		Active:              a.Active,
		Deactivated:         a.Deactivated,
		Version:             a.Version,
		Capabilities:        caps,
	}
	if !a.ReregisteredTime.IsZero() {
		t := secs(a.ReregisteredTime)
		m.ReregisteredTime = &t
	}
	if a.DrainInfo != nil {
		m.DrainInfo = protoJSON(a.DrainInfo)
	}
	return m
}

func agentFullModel(a *master.AgentView) agentFullJSON {
	m := agentFullJSON{
		agentJSON:               agentModel(a),
		ReservedResourcesFull:   map[string][]json.RawMessage{},
		UnreservedResourcesFull: []json.RawMessage{},
		UsedResourcesFull:       []json.RawMessage{},
		OfferedResourcesFull:    []json.RawMessage{},
	}
	if total, ok := parseResources(a.Total); ok {
		for _, role := range reservationRoles(total) {
			m.ReservedResourcesFull[role] = fullResources(total.ReservedTo(role))
		}
		m.UnreservedResourcesFull = fullResources(total.Unreserved())
	}
	if used, ok := parseResources(a.Used); ok {
		m.UsedResourcesFull = fullResources(used)
	}
	if offered, ok := parseResources(a.Offered); ok {
		m.OfferedResourcesFull = fullResources(offered)
	}
	return m
}
