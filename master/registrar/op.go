package registrar

import (
	"mezzo/api/mesos"
	pb "mezzo/api/registrypb"
)

// opKind is an operation's type.
type opKind uint8

const (
	kNone opKind = iota
	kSetMaster
	kAdmit
	kReadmit
	kMarkUnreachable
	kMarkReachable
	kRemove
	kPrune
	kWeights
	kQuota
	kSchedule
	kStartMaintenance
	kStopMaintenance
	kDrain
)

// op is an operation as validation and the state read it. Agent
// operations are flattened (their info stays encoded in raw, which only
// the Machine holds); the others keep their message in pb.
type op struct {
	kind      opKind
	id        string // agent operations: the agent ID
	hasInfo   bool   // Admit, Readmit, MarkReachable: info present
	hostOK    bool   // ... and its hostname set
	at        int64  // MarkUnreachable, Remove: Unix nanoseconds
	hasAt     bool
	raw       []byte        // Admit, Readmit, MarkReachable: encoded AgentInfo (Machine side)
	principal string        // ... and the principal it binds the agent to ("": none)
	pb        *pb.Operation // every other kind
}

// fromProto flattens a decoded operation. Agent infos are not encoded
// here: the caller sets raw if it needs it.
func fromProto(p *pb.Operation) op {
	agent := func(k opKind, info *mesos.AgentInfo, principal string) op {
		return op{kind: k, id: info.GetId().GetValue(), hasInfo: info != nil, hostOK: info.GetHostname() != "", principal: principal}
	}
	stamped := func(k opKind, id *mesos.AgentID, ts *mesos.TimeInfo) op {
		return op{kind: k, id: id.GetValue(), at: ts.GetNanoseconds(), hasAt: ts != nil}
	}
	switch o := p.GetOp().(type) {
	case *pb.Operation_SetMaster_:
		return op{kind: kSetMaster, pb: p}
	case *pb.Operation_Admit:
		return agent(kAdmit, o.Admit.GetInfo(), o.Admit.GetPrincipal())
	case *pb.Operation_Readmit:
		return agent(kReadmit, o.Readmit.GetInfo(), o.Readmit.GetPrincipal())
	case *pb.Operation_MarkReachable_:
		return agent(kMarkReachable, o.MarkReachable.GetInfo(), o.MarkReachable.GetPrincipal())
	case *pb.Operation_MarkUnreachable_:
		return stamped(kMarkUnreachable, o.MarkUnreachable.GetId(), o.MarkUnreachable.GetTimestamp())
	case *pb.Operation_Remove:
		return stamped(kRemove, o.Remove.GetId(), o.Remove.GetTimestamp())
	case *pb.Operation_Prune_:
		return op{kind: kPrune, pb: p}
	case *pb.Operation_UpdateWeights_:
		return op{kind: kWeights, pb: p}
	case *pb.Operation_UpdateQuota_:
		return op{kind: kQuota, pb: p}
	case *pb.Operation_UpdateSchedule_:
		return op{kind: kSchedule, pb: p}
	case *pb.Operation_StartMaintenance_:
		return op{kind: kStartMaintenance, pb: p}
	case *pb.Operation_StopMaintenance_:
		return op{kind: kStopMaintenance, pb: p}
	case *pb.Operation_UpdateDrain_:
		return op{kind: kDrain, id: o.UpdateDrain.GetDrain().GetId().GetValue(), pb: p}
	}
	return op{}
}

var kindNames = [...]string{
	kNone: "Empty", kSetMaster: "SetMaster", kAdmit: "Admit", kReadmit: "Readmit",
	kMarkUnreachable: "MarkUnreachable", kMarkReachable: "MarkReachable", kRemove: "Remove",
	kPrune: "Prune", kWeights: "UpdateWeights", kQuota: "UpdateQuota", kSchedule: "UpdateSchedule",
	kStartMaintenance: "StartMaintenance", kStopMaintenance: "StopMaintenance",
	kDrain: "UpdateDrain",
}

// field is the operation's field name in messages.
var kindFields = [...]string{
	kAdmit: "admit", kReadmit: "readmit", kMarkUnreachable: "mark_unreachable",
	kMarkReachable: "mark_reachable", kRemove: "remove", kDrain: "update_drain",
}

func (k opKind) String() string { return kindNames[k] }
