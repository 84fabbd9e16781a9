package registrar

import (
	"fmt"
	"math"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/maintenancepb"
	"mezzo/api/mesos"
	"mezzo/api/quotapb"
	pb "mezzo/api/registrypb"
)

// Operation is one registry mutation, built by the constructors below.
// Constructors encode the operation at once, on the caller's goroutine (so
// encoding runs in parallel and the registrar's goroutine only
// concatenates), and keep no reference to their arguments.
type Operation struct {
	o   op     // for validation and logs (no agent info)
	enc []byte // the full operation, encoded
	err error  // encoding failed
	// info is the encoded AgentInfo of Readmit (within enc), to recognise
	// a re-admission that changes nothing.
	info []byte
}

var partial = proto.MarshalOptions{AllowPartial: true}

func newOp(p *pb.Operation) Operation {
	enc, err := partial.Marshal(p)
	return Operation{o: fromProto(p), enc: enc, err: err}
}

// agentOp encodes the operation wrap builds around info (not copied: it is
// only encoded) and principal. An empty principal is left out, so an
// anonymous agent's operation encodes as it did before the registry
// recorded principals.
func agentOp(info *mesos.AgentInfo, principal string, wrap func(*mesos.AgentInfo, *string) *pb.Operation) Operation {
	var p *string
	if principal != "" {
		p = &principal
	}
	return newOp(wrap(info, p))
}

// String names the operation and its subject, for logs.
func (o Operation) String() string {
	switch o.o.kind {
	case kAdmit, kReadmit, kMarkUnreachable, kMarkReachable, kRemove, kDrain:
		return o.o.kind.String() + "(" + o.o.id + ")"
	}
	return o.o.kind.String()
}

func timeInfo(t time.Time) *mesos.TimeInfo {
	return &mesos.TimeInfo{Nanoseconds: proto.Int64(t.UnixNano())}
}

func agentID(id string) *mesos.AgentID { return &mesos.AgentID{Value: proto.String(id)} }

// SetMaster records info as the leading master. Recover applies it; a new
// leader thereby changes the registry before it serves.
func SetMaster(info *mesos.MasterInfo) Operation {
	var c *mesos.MasterInfo
	if info != nil {
		c = proto.Clone(info).(*mesos.MasterInfo)
	}
	return newOp(&pb.Operation{Op: &pb.Operation_SetMaster_{SetMaster: &pb.Operation_SetMaster{Info: c}}})
}

// Admit admits a newly registered agent; info.id is the ID the master chose.
// principal is the principal the agent authenticated as ("" if anonymous):
// the registry binds the ID to it. Fails with ErrAlreadyAdmitted if the ID
// is known, ErrGone if it was removed.
func Admit(info *mesos.AgentInfo, principal string) Operation {
	return agentOp(info, principal, func(i *mesos.AgentInfo, p *string) *pb.Operation {
		return &pb.Operation{Op: &pb.Operation_Admit{Admit: &pb.Operation_AdmitAgent{Info: i, Principal: p}}}
	})
}

// Readmit admits an agent re-registering under an ID it already had (after
// a master failover), replacing its stored info. Fails with ErrGone if the
// agent was removed, ErrPrincipal if the ID is bound to a principal other
// than principal; an unbound ID (an anonymous registration, or an entry
// written before the registry recorded principals) binds to principal.
// Like Mesos, an ID the registry does not know (pruned long ago) is
// admitted.
func Readmit(info *mesos.AgentInfo, principal string) Operation {
	o := agentOp(info, principal, func(i *mesos.AgentInfo, p *string) *pb.Operation {
		return &pb.Operation{Op: &pb.Operation_Readmit{Readmit: &pb.Operation_ReadmitAgent{Info: i, Principal: p}}}
	})
	if o.err == nil {
		o.info = agentInfoBytes(o.enc)
	}
	return o
}

// MarkUnreachable moves an admitted agent to the unreachable list, noting
// when. Fails with ErrUnknownAgent, ErrAlreadyUnreachable or ErrGone.
func MarkUnreachable(id string, at time.Time) Operation {
	return newOp(&pb.Operation{Op: &pb.Operation_MarkUnreachable_{MarkUnreachable: &pb.Operation_MarkUnreachable{
		Id: agentID(id), Timestamp: timeInfo(at)}}})
}

// MarkReachable moves an unreachable agent back to the admitted list when it
// re-registers with info as principal. Fails with ErrGone if it was removed
// meanwhile, ErrPrincipal as Readmit.
func MarkReachable(info *mesos.AgentInfo, principal string) Operation {
	return agentOp(info, principal, func(i *mesos.AgentInfo, p *string) *pb.Operation {
		return &pb.Operation{Op: &pb.Operation_MarkReachable_{MarkReachable: &pb.Operation_MarkReachable{Info: i, Principal: p}}}
	})
}

// Remove marks an admitted or unreachable agent gone, for good, and drops
// its principal (its ID is never readmitted, whoever presents it).
// Removing a gone agent again succeeds; an unknown one fails with
// ErrUnknownAgent.
func Remove(id string, at time.Time) Operation {
	return newOp(&pb.Operation{Op: &pb.Operation_Remove{Remove: &pb.Operation_RemoveAgent{
		Id: agentID(id), Timestamp: timeInfo(at)}}})
}

// Prune forgets the listed unreachable and gone agents (registry garbage
// collection), an unreachable agent's principal binding with it. IDs not
// in those lists are ignored. A pruned gone ID is no longer refused, as in
// Mesos: prune gone agents only long after removal.
func Prune(unreachable, gone []string) Operation {
	p := &pb.Operation_Prune{}
	for _, id := range unreachable {
		p.Unreachable = append(p.Unreachable, agentID(id))
	}
	for _, id := range gone {
		p.Gone = append(p.Gone, agentID(id))
	}
	return newOp(&pb.Operation{Op: &pb.Operation_Prune_{Prune: p}})
}

// UpdateWeights sets the weights of the listed roles (weight 1, the
// default, removes the role's entry).
func UpdateWeights(weights []*mesos.WeightInfo) Operation {
	u := &pb.Operation_UpdateWeights{}
	for _, w := range weights {
		u.Weights = append(u.Weights, proto.Clone(w).(*mesos.WeightInfo))
	}
	return newOp(&pb.Operation{Op: &pb.Operation_UpdateWeights_{UpdateWeights: u}})
}

// UpdateQuota sets each config's role's quota; a config with neither
// guarantees nor limits removes the role's quota.
func UpdateQuota(configs []*quotapb.QuotaConfig) Operation {
	u := &pb.Operation_UpdateQuota{}
	for _, c := range configs {
		u.Configs = append(u.Configs, proto.Clone(c).(*quotapb.QuotaConfig))
	}
	return newOp(&pb.Operation{Op: &pb.Operation_UpdateQuota_{UpdateQuota: u}})
}

// UpdateSchedule replaces the maintenance schedule. Machines that are DOWN
// must stay in it (stop their maintenance first).
func UpdateSchedule(s *maintenancepb.Schedule) Operation {
	if s == nil {
		s = &maintenancepb.Schedule{}
	}
	return newOp(&pb.Operation{Op: &pb.Operation_UpdateSchedule_{UpdateSchedule: &pb.Operation_UpdateSchedule{
		Schedule: proto.Clone(s).(*maintenancepb.Schedule)}}})
}

// StartMaintenance moves scheduled (draining) machines to DOWN.
func StartMaintenance(machines []*mesos.MachineID) Operation {
	u := &pb.Operation_StartMaintenance{}
	for _, m := range machines {
		u.Machines = append(u.Machines, proto.Clone(m).(*mesos.MachineID))
	}
	return newOp(&pb.Operation{Op: &pb.Operation_StartMaintenance_{StartMaintenance: u}})
}

// StopMaintenance brings DOWN machines back UP, dropping them from the
// schedule.
func StopMaintenance(machines []*mesos.MachineID) Operation {
	u := &pb.Operation_StopMaintenance{}
	for _, m := range machines {
		u.Machines = append(u.Machines, proto.Clone(m).(*mesos.MachineID))
	}
	return newOp(&pb.Operation{Op: &pb.Operation_StopMaintenance_{StopMaintenance: u}})
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// validateShape checks what can be checked without the registry: required
// fields present, numbers sane. The error names the field.
func validateShape(o op) error {
	switch o.kind {
	case kNone:
		return invalid("empty operation")
	case kSetMaster:
		if o.pb.GetSetMaster().GetInfo().GetId() == "" {
			return invalid("set_master.info.id is missing")
		}
	case kAdmit, kReadmit, kMarkReachable:
		field := kindFields[o.kind]
		switch {
		case !o.hasInfo:
			return invalid("%s.info is missing", field)
		case o.id == "":
			return invalid("%s.info.id is missing", field)
		case !o.hostOK:
			return invalid("%s.info.hostname is missing (agent %s)", field, o.id)
		}
	case kMarkUnreachable, kRemove:
		field := kindFields[o.kind]
		if o.id == "" {
			return invalid("%s.id is missing", field)
		}
		if !o.hasAt {
			return invalid("%s.timestamp is missing (agent %s)", field, o.id)
		}
	case kPrune:
	case kWeights:
		for i, w := range o.pb.GetUpdateWeights().GetWeights() {
			if w.GetRole() == "" {
				return invalid("update_weights.weights[%d].role is missing", i)
			}
			if v := w.GetWeight(); !(v > 0) || math.IsInf(v, 0) {
				return invalid("update_weights.weights[%d].weight %v for role %q must be positive and finite", i, v, w.GetRole())
			}
		}
	case kQuota:
		for i, c := range o.pb.GetUpdateQuota().GetConfigs() {
			if c.GetRole() == "" {
				return invalid("update_quota.configs[%d].role is missing", i)
			}
			for _, kind := range []string{"guarantees", "limits"} {
				m := c.GetGuarantees()
				if kind == "limits" {
					m = c.GetLimits()
				}
				for _, name := range sortedKeys(m) {
					if v := m[name].GetValue(); !(v >= 0) || math.IsInf(v, 0) {
						return invalid("update_quota.configs[%d].%s[%s] = %v for role %q must be non-negative and finite", i, kind, name, v, c.GetRole())
					}
				}
			}
		}
	case kSchedule:
		seen := map[string]bool{}
		for i, w := range o.pb.GetUpdateSchedule().GetSchedule().GetWindows() {
			if w.GetUnavailability() == nil {
				return invalid("update_schedule.schedule.windows[%d].unavailability is missing", i)
			}
			for j, m := range w.GetMachineIds() {
				k := machineKey(m)
				if k == "/" {
					return invalid("update_schedule.schedule.windows[%d].machine_ids[%d] needs a hostname or an ip", i, j)
				}
				if seen[k] {
					return invalid("update_schedule.schedule.windows[%d].machine_ids[%d] (%s) is in more than one window", i, j, k)
				}
				seen[k] = true
			}
		}
	case kStartMaintenance:
		return checkMachines("start_maintenance.machines", o.pb.GetStartMaintenance().GetMachines())
	case kStopMaintenance:
		return checkMachines("stop_maintenance.machines", o.pb.GetStopMaintenance().GetMachines())
	case kDrain:
		return checkDrainShape(o.pb.GetUpdateDrain().GetDrain())
	}
	return nil
}

func checkMachines(field string, ms []*mesos.MachineID) error {
	if len(ms) == 0 {
		return invalid("%s is empty", field)
	}
	for i, m := range ms {
		if machineKey(m) == "/" {
			return invalid("%s[%d] needs a hostname or an ip", field, i)
		}
	}
	return nil
}

// machineKey identifies a machine as Mesos does: hostname (case-insensitive
// in Mesos; we lower-case it) and IP together.
func machineKey(m *mesos.MachineID) string {
	return strings.ToLower(m.GetHostname()) + "/" + m.GetIp()
}
