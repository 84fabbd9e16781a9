package registrar

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	pb "mezzo/api/registrypb"
)

// The registry keeps agent infos encoded: decoding 50,000 AgentInfos (with
// their resources and attributes) is most of the cost of loading a
// registry, and the encoded form is one pointer-free allocation the
// garbage collector never scans. Only the ID (and the hostname, which
// validation checks) are read on the way in, with the operation's
// principal beside the info; Registry decodes an info when asked for it.

// Field numbers read by hand.
const (
	fieldAgentInfoHostname = 1 // mesos.v1.AgentInfo.hostname
	fieldAgentInfoID       = 6 // mesos.v1.AgentInfo.id
	fieldAgentIDValue      = 1 // mesos.v1.AgentID.value

	fieldBatchOperations = 1 // Batch.operations

	fieldOpAdmit          = 2 // Operation.admit
	fieldOpReadmit        = 3 // Operation.readmit
	fieldOpMarkReachable  = 5 // Operation.mark_reachable
	fieldAgentOpInfo      = 1 // {Admit,Readmit}Agent.info, MarkReachable.info
	fieldAgentOpPrincipal = 2 // ... .principal

	fieldRegistryAgents      = 2 // Registry.agents
	fieldRegistryUnreachable = 3 // Registry.unreachable
	fieldAgentInfo           = 1 // Agent.info
	fieldAgentPrincipal      = 2 // Agent.principal
	fieldUnreachableInfo     = 3 // UnreachableAgent.info
)

var errWire = errors.New("malformed protobuf")

// field is one top-level field of an encoded message.
type field struct {
	num protowire.Number
	typ protowire.Type
	val []byte // the payload of a length-delimited field
	all []byte // the whole field, tag included
}

// fields splits an encoded message into its top-level fields.
func fields(b []byte, each func(f field) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errWire
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return errWire
		}
		f := field{num: num, typ: typ, all: b[:n+m]}
		if typ == protowire.BytesType {
			f.val, _ = protowire.ConsumeBytes(b[n:])
		}
		if err := each(f); err != nil {
			return err
		}
		b = b[n+m:]
	}
	return nil
}

// agentFields reads the ID and whether the hostname is set from an
// encoded AgentInfo (the last occurrence wins, as in protobuf).
func agentFields(raw []byte) (id string, hostOK bool, err error) {
	err = fields(raw, func(f field) error {
		switch {
		case f.num == fieldAgentInfoHostname && f.typ == protowire.BytesType:
			hostOK = len(f.val) > 0
		case f.num == fieldAgentInfoID && f.typ == protowire.BytesType:
			return fields(f.val, func(g field) error {
				if g.num == fieldAgentIDValue && g.typ == protowire.BytesType {
					id = string(g.val)
				}
				return nil
			})
		}
		return nil
	})
	return id, hostOK, err
}

// agentKind is the kind of the agent operation stored in Operation field
// num (kNone for other fields).
func agentKind(num protowire.Number) opKind {
	switch num {
	case fieldOpAdmit:
		return kAdmit
	case fieldOpReadmit:
		return kReadmit
	case fieldOpMarkReachable:
		return kMarkReachable
	}
	return kNone
}

// agentOpInfo walks the fields of an agent operation's message (Admit,
// Readmit, MarkReachable): raw is its encoded AgentInfo, found whether it
// has one, principal its principal (the last occurrence wins, as in
// protobuf), other whether it has any other field.
func agentOpInfo(b []byte) (raw []byte, principal string, found, other bool, err error) {
	err = fields(b, func(f field) error {
		switch {
		case f.num == fieldAgentOpInfo && f.typ == protowire.BytesType && !found:
			raw, found = f.val, true
		case f.num == fieldAgentOpPrincipal && f.typ == protowire.BytesType:
			principal = string(f.val)
		default:
			other = true
		}
		return nil
	})
	return raw, principal, found, other, err
}

// agentInfoBytes returns the encoded AgentInfo inside an encoded agent
// operation, as parseOp's fast path finds it (nil if there is none, or
// the encoding is unusual).
func agentInfoBytes(b []byte) []byte {
	var info []byte
	n := 0
	err := fields(b, func(f field) error {
		n++
		if agentKind(f.num) == kNone || f.typ != protowire.BytesType {
			return nil
		}
		raw, _, found, other, err := agentOpInfo(f.val)
		if found && !other {
			info = raw
		}
		return err
	})
	if err != nil || n != 1 {
		return nil
	}
	return info
}

// parseOp decodes one encoded Operation. The common agent operations take
// a fast path that leaves the AgentInfo encoded.
func parseOp(b []byte) (op, error) {
	var only field
	n := 0
	if err := fields(b, func(f field) error { only = f; n++; return nil }); err != nil {
		return op{}, err
	}
	if k := agentKind(only.num); n == 1 && k != kNone && only.typ == protowire.BytesType {
		raw, principal, found, other, err := agentOpInfo(only.val)
		if err != nil {
			return op{}, err
		}
		if !other {
			o := op{kind: k, hasInfo: found, principal: principal}
			if found {
				if o.id, o.hostOK, err = agentFields(raw); err != nil {
					return op{}, err
				}
				o.raw = append([]byte(nil), raw...)
			}
			return o, nil
		}
	}
	// Everything else (and unusual encodings of agent operations).
	p := &pb.Operation{}
	if err := (proto.UnmarshalOptions{AllowPartial: true}).Unmarshal(b, p); err != nil {
		return op{}, err
	}
	o := fromProto(p)
	var info *mesos.AgentInfo
	switch x := p.GetOp().(type) {
	case *pb.Operation_Admit:
		info = x.Admit.GetInfo()
	case *pb.Operation_Readmit:
		info = x.Readmit.GetInfo()
	case *pb.Operation_MarkReachable_:
		info = x.MarkReachable.GetInfo()
	}
	if info != nil {
		raw, err := partial.Marshal(info)
		if err != nil {
			return op{}, err
		}
		o.raw = raw
	}
	return o, nil
}

// parseBatch decodes an encoded Batch.
func parseBatch(b []byte) ([]op, error) {
	var ops []op
	err := fields(b, func(f field) error {
		if f.num != fieldBatchOperations || f.typ != protowire.BytesType {
			return nil // unknown field: ignored, as protobuf does
		}
		o, err := parseOp(f.val)
		if err != nil {
			return fmt.Errorf("operation %d: %w", len(ops), err)
		}
		ops = append(ops, o)
		return nil
	})
	return ops, err
}

// appendMessageField appends a length-delimited field holding b.
func appendMessageField(dst []byte, num protowire.Number, b []byte) []byte {
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	return protowire.AppendBytes(dst, b)
}
