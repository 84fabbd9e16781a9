package registrar

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"mezzo/api/maintenancepb"
	"mezzo/api/mesos"
	"mezzo/api/quotapb"
	pb "mezzo/api/registrypb"
)

// Registry is a read-only, point-in-time view of the registry, as Recover
// returns it. Agent infos stay encoded until asked for (Agent, Agents), so
// taking a view of 50,000 agents costs a map copy. Messages it returns are
// shared: read them, do not modify them.
type Registry struct {
	s *state
}

// Version is the number of batches applied since the registry was created;
// 0 means it was never written.
func (r *Registry) Version() uint64 { return r.s.version }

// Master is the leading master recorded last.
func (r *Registry) Master() *mesos.MasterInfo { return r.s.master }

// Status is where agent id stands.
func (r *Registry) Status(id string) AgentStatus { return r.s.status(id) }

// NumAgents is the number of admitted agents.
func (r *Registry) NumAgents() int { return len(r.s.agents) }

// AgentIDs are the admitted agents' IDs, sorted.
func (r *Registry) AgentIDs() []string { return sortedKeys(r.s.agents) }

// Agent decodes an admitted agent's info; ErrUnknownAgent if id is not
// admitted.
func (r *Registry) Agent(id string) (*mesos.AgentInfo, error) {
	e, ok := r.s.agents[id]
	if !ok {
		return nil, fmt.Errorf("agent %s: %w (status %s)", id, ErrUnknownAgent, r.s.status(id))
	}
	return decodeAgent(id, e.info)
}

// Agents decodes every admitted agent's info, sorted by ID.
func (r *Registry) Agents() ([]*mesos.AgentInfo, error) {
	out := make([]*mesos.AgentInfo, 0, len(r.s.agents))
	for _, id := range sortedKeys(r.s.agents) {
		info, err := decodeAgent(id, r.s.agents[id].info)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

func decodeAgent(id string, raw []byte) (*mesos.AgentInfo, error) {
	info := &mesos.AgentInfo{}
	if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(raw, info); err != nil {
		return nil, fmt.Errorf("registry: agent %s: %w", id, err)
	}
	return info, nil
}

// Principal is the principal admitted or unreachable agent id is bound to:
// the one it registered as. "" if it has none (it registered anonymously,
// or before the registry recorded principals: its next registration binds
// it) or is not admitted or unreachable.
func (r *Registry) Principal(id string) string { return r.s.principal(id) }

// Principals returns every binding (admitted and unreachable agents with
// a principal), by agent ID.
func (r *Registry) Principals() map[string]string {
	out := map[string]string{}
	for id, e := range r.s.agents {
		if e.principal != "" {
			out[id] = e.principal
		}
	}
	for id, e := range r.s.unreachable {
		if e.principal != "" {
			out[id] = e.principal
		}
	}
	return out
}

// UnreachableAgent is an agent marked unreachable.
type UnreachableAgent struct {
	ID string
	At time.Time // when it was marked unreachable
	// Info is its last known info (nil if unknown).
	Info func() (*mesos.AgentInfo, error)
}

// Unreachable lists the unreachable agents, sorted by ID.
func (r *Registry) Unreachable() []UnreachableAgent {
	out := make([]UnreachableAgent, 0, len(r.s.unreachable))
	for _, id := range sortedKeys(r.s.unreachable) {
		e := r.s.unreachable[id]
		u := UnreachableAgent{ID: id, At: time.Unix(0, e.at)}
		if e.info != nil {
			u.Info = func() (*mesos.AgentInfo, error) { return decodeAgent(id, e.info) }
		}
		out = append(out, u)
	}
	return out
}

// GoneAgent is an agent removed for good.
type GoneAgent struct {
	ID string
	At time.Time // when it was removed
}

// Gone lists the removed agents, sorted by ID.
func (r *Registry) Gone() []GoneAgent {
	out := make([]GoneAgent, 0, len(r.s.gone))
	for _, id := range sortedKeys(r.s.gone) {
		out = append(out, GoneAgent{ID: id, At: time.Unix(0, r.s.gone[id])})
	}
	return out
}

// Weights returns the role weights other than the default 1.
func (r *Registry) Weights() map[string]float64 {
	out := make(map[string]float64, len(r.s.weights))
	for k, v := range r.s.weights {
		out[k] = v
	}
	return out
}

// Quotas returns the quota configurations, sorted by role.
func (r *Registry) Quotas() []*quotapb.QuotaConfig {
	out := make([]*quotapb.QuotaConfig, 0, len(r.s.quotas))
	for _, role := range sortedKeys(r.s.quotas) {
		out = append(out, r.s.quotas[role])
	}
	return out
}

// Schedule is the maintenance schedule (nil if none was set).
func (r *Registry) Schedule() *maintenancepb.Schedule { return r.s.schedule }

// DownMachines lists the machines under maintenance, sorted.
func (r *Registry) DownMachines() []*mesos.MachineID {
	out := make([]*mesos.MachineID, 0, len(r.s.down))
	for _, k := range sortedKeys(r.s.down) {
		out = append(out, r.s.down[k])
	}
	return out
}

// Proto decodes the whole registry into its protobuf form (for the
// registry endpoint, debugging and tests).
func (r *Registry) Proto() (*pb.Registry, error) {
	out := &pb.Registry{}
	if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(encodeRegistry(r.s, true), out); err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	return out, nil
}

// encodeRegistry encodes s as a pb.Registry: the small fields through
// protobuf, then agents and unreachable agents by hand around their
// already-encoded infos (encodings of one message concatenate). Agents are
// sorted by ID only if sorted is set: snapshots skip it (sorting 50,000
// IDs costs more than the rest of the encoding).
func encodeRegistry(s *state, sorted bool) []byte {
	head := &pb.Registry{Master: s.master, Schedule: s.schedule, Version: proto.Uint64(s.version)}
	for _, id := range sortedKeys(s.gone) {
		head.Gone = append(head.Gone, &pb.GoneAgent{Id: agentID(id), Timestamp: &mesos.TimeInfo{Nanoseconds: proto.Int64(s.gone[id])}})
	}
	for _, role := range sortedKeys(s.weights) {
		head.Weights = append(head.Weights, &mesos.WeightInfo{Role: proto.String(role), Weight: proto.Float64(s.weights[role])})
	}
	for _, role := range sortedKeys(s.quotas) {
		head.QuotaConfigs = append(head.QuotaConfigs, s.quotas[role])
	}
	for _, k := range sortedKeys(s.down) {
		head.DownMachines = append(head.DownMachines, s.down[k])
	}
	for _, id := range sortedKeys(s.drains) {
		head.Drains = append(head.Drains, s.drains[id])
	}
	b, _ := proto.MarshalOptions{AllowPartial: true, Deterministic: true}.Marshal(head)

	size := len(b)
	for id, e := range s.agents {
		size += len(id) + len(e.info) + len(e.principal) + 16
	}
	out := make([]byte, 0, size+len(s.unreachable)*64)
	out = append(out, b...)
	var agent []byte
	add := func(e agentEntry) {
		agent = appendMessageField(agent[:0], fieldAgentInfo, e.info)
		if e.principal != "" {
			agent = protowire.AppendString(protowire.AppendTag(agent, fieldAgentPrincipal, protowire.BytesType), e.principal)
		}
		out = appendMessageField(out, fieldRegistryAgents, agent)
	}
	if sorted {
		for _, id := range sortedKeys(s.agents) {
			add(s.agents[id])
		}
	} else {
		for _, e := range s.agents {
			add(e)
		}
	}
	for _, id := range sortedKeys(s.unreachable) {
		e := s.unreachable[id]
		head := &pb.UnreachableAgent{Id: agentID(id), Timestamp: &mesos.TimeInfo{Nanoseconds: proto.Int64(e.at)}}
		if e.principal != "" {
			head.Principal = proto.String(e.principal)
		}
		u, _ := partial.Marshal(head)
		if e.info != nil {
			u = appendMessageField(u, fieldUnreachableInfo, e.info)
		}
		out = appendMessageField(out, fieldRegistryUnreachable, u)
	}
	return out
}

// decodeRegistry rebuilds a state from an encoded pb.Registry, leaving
// agent infos encoded.
func decodeRegistry(b []byte) (*state, error) {
	s := newState()
	// Size the agents map first: growing it is a good part of the cost.
	n := 0
	if err := fields(b, func(f field) error {
		if f.num == fieldRegistryAgents {
			n++
		}
		return nil
	}); err != nil {
		return nil, err
	}
	s.agents = make(map[string]agentEntry, n)
	var rest []byte
	// Agents usually share a principal: intern it once, not per agent.
	var last string
	intern := func(p string) string {
		if p != last {
			last = principalName(p)
		}
		return last
	}
	err := fields(b, func(f field) error {
		switch {
		case f.num == fieldRegistryAgents && f.typ == protowire.BytesType:
			var raw, principal []byte
			if err := fields(f.val, func(g field) error {
				switch {
				case g.num == fieldAgentInfo && g.typ == protowire.BytesType:
					raw = g.val
				case g.num == fieldAgentPrincipal && g.typ == protowire.BytesType:
					principal = g.val
				}
				return nil
			}); err != nil {
				return fmt.Errorf("agents[%d]: %w", len(s.agents), err)
			}
			id, _, err := agentFields(raw)
			if err != nil {
				return fmt.Errorf("agents[%d].info: %w", len(s.agents), err)
			}
			if id == "" {
				return fmt.Errorf("agents[%d].info.id is missing", len(s.agents))
			}
			e := agentEntry{info: append([]byte(nil), raw...)}
			if len(principal) > 0 {
				e.principal = intern(string(principal))
			}
			s.agents[id] = e
		case f.num == fieldRegistryUnreachable && f.typ == protowire.BytesType:
			var head, raw []byte
			if err := fields(f.val, func(g field) error {
				if g.num == fieldUnreachableInfo && g.typ == protowire.BytesType {
					raw = append([]byte(nil), g.val...)
				} else {
					head = append(head, g.all...)
				}
				return nil
			}); err != nil {
				return fmt.Errorf("unreachable[%d]: %w", len(s.unreachable), err)
			}
			u := &pb.UnreachableAgent{}
			if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(head, u); err != nil {
				return fmt.Errorf("unreachable[%d]: %w", len(s.unreachable), err)
			}
			if u.GetId().GetValue() == "" {
				return fmt.Errorf("unreachable[%d].id is missing", len(s.unreachable))
			}
			s.unreachable[u.GetId().GetValue()] = unreachableEntry{at: u.GetTimestamp().GetNanoseconds(), info: raw,
				principal: intern(u.GetPrincipal())}
		default:
			rest = append(rest, f.all...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r := &pb.Registry{}
	if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(rest, r); err != nil {
		return nil, err
	}
	s.master = r.GetMaster()
	s.schedule = r.GetSchedule()
	s.version = r.GetVersion()
	for i, g := range r.GetGone() {
		id := g.GetId().GetValue()
		if id == "" {
			return nil, fmt.Errorf("gone[%d].id is missing", i)
		}
		s.gone[id] = g.GetTimestamp().GetNanoseconds()
	}
	for _, w := range r.GetWeights() {
		s.weights[w.GetRole()] = w.GetWeight()
	}
	for _, c := range r.GetQuotaConfigs() {
		s.quotas[c.GetRole()] = c
	}
	for _, m := range r.GetDownMachines() {
		s.down[machineKey(m)] = m
	}
	for i, d := range r.GetDrains() {
		if d.GetId().GetValue() == "" {
			return nil, fmt.Errorf("drains[%d].id is missing", i)
		}
		s.drains[d.GetId().GetValue()] = d
	}
	return s, nil
}
