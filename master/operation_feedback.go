package master

import (
	"bytes"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
)

// Operation feedback (Mesos 1.6+): an offer operation with an `id` gets
// UPDATE_OPERATION_STATUS events, each with a UUID, resent with backoff
// until the framework answers ACKNOWLEDGE_OPERATION_STATUS with that UUID.
// The conversions mezzo supports complete in the master when accepted (the
// agent only checkpoints the result), so the first status is already
// terminal: OPERATION_FINISHED, OPERATION_ERROR (the operation was invalid)
// or OPERATION_DROPPED (its offers were). Once acknowledged, the record is
// forgotten, as Mesos forgets terminal acknowledged operations.
//
//	ACCEPT op{id} ─▶ FINISHED | ERROR | DROPPED ─▶ sent, retried 10s, 20s … 10min
//	                                             ─▶ ACKNOWLEDGE(uuid) ─▶ forgotten
//
// Operations without an id get no feedback: failures are logged and
// counted (master/operations/...). Records are soft state: after a
// failover RECONCILE_OPERATIONS answers OPERATION_UNKNOWN for them.

// Retry backoff of unacknowledged operation statuses: as the agent's
// status update manager retries task updates (Mesos's
// STATUS_UPDATE_RETRY_INTERVAL_MIN and _MAX).
const (
	operationRetryMin = 10 * time.Second
	operationRetryMax = 10 * time.Minute
)

// operationRec is an operation with feedback whose latest status the
// framework has not acknowledged.
type operationRec struct {
	p         *mesos.Operation // replaced on change, never mutated once published
	fwID, id  string
	backoff   time.Duration
	nextRetry time.Time
	// sentOn is the subscription the status was last sent on: a framework
	// that subscribes again gets it at once, not after the backoff.
	sentOn *FrameworkStream
}

// operationStatus reports an operation's outcome: counted in the metrics
// always; for an operation with an id, sent to the framework as
// UPDATE_OPERATION_STATUS and retried until acknowledged. agent is the
// agent's ID ("" if the operation named none); converted are the
// resources the operation produced (FINISHED only).
func (s *state) operationStatus(fw *framework, agent string, op *mesos.Offer_Operation, state mesos.OperationState,
	msg string, converted []*mesos.Resource, now time.Time) {
	typ := strings.ToLower(op.GetType().String())
	st := strings.ToLower(strings.TrimPrefix(state.String(), "OPERATION_"))
	s.count("master/operations/total")
	s.count("master/operations/" + st)
	s.count("master/operations/" + typ + "/total")
	s.count("master/operations/" + typ + "/" + st)
	if state != mesos.OperationState_OPERATION_FINISHED {
		s.log.Warn("offer operation refused", "framework", fwIDOf(fw), "agent", agent,
			"operation", op.GetType().String(), "id", op.GetId().GetValue(), "state", state.String(), "reason", msg)
	}
	if op.GetId() == nil || fw == nil {
		return
	}
	u := uuid.New()
	status := &mesos.OperationStatus{
		OperationId:        op.GetId(),
		State:              state.Enum(),
		ConvertedResources: converted,
		Uuid:               &mesos.UUID{Value: u[:]},
	}
	if msg != "" {
		status.Message = proto.String(msg)
	}
	if agent != "" {
		status.AgentId = agentID(agent)
	}
	id := op.GetId().GetValue()
	if s.operations == nil {
		s.operations = map[string]map[string]*operationRec{}
	}
	if s.operations[fw.id][id] != nil {
		// An operation with this ID still awaits its acknowledgement: the
		// new one is refused, reported once and not tracked, so that the
		// earlier record (and its retries) stay intact.
		status.Uuid = nil
		s.sendOperationStatus(fw, status)
		return
	}
	rec := &operationRec{fwID: fw.id, id: id, backoff: operationRetryMin, nextRetry: now.Add(operationRetryMin)}
	rec.p = &mesos.Operation{
		FrameworkId:  frameworkID(fw.id),
		Info:         op,
		LatestStatus: status,
		Statuses:     []*mesos.OperationStatus{status},
		Uuid:         &mesos.UUID{Value: u[:]},
	}
	if agent != "" {
		rec.p.AgentId = agentID(agent)
	}
	if s.operations[fw.id] == nil {
		s.operations[fw.id] = map[string]*operationRec{}
	}
	s.operations[fw.id][id] = rec
	s.dirty = true
	s.sendOperationStatus(fw, status)
	rec.sentOn = fw.stream
}

func fwIDOf(fw *framework) string {
	if fw == nil {
		return ""
	}
	return fw.id
}

func (s *state) sendOperationStatus(fw *framework, status *mesos.OperationStatus) {
	s.sendFramework(fw, &schedulerpb.Event{
		Type:                  schedulerpb.Event_UPDATE_OPERATION_STATUS.Enum(),
		UpdateOperationStatus: &schedulerpb.Event_UpdateOperationStatus{Status: status},
	})
}

// acknowledgeOperation handles ACKNOWLEDGE_OPERATION_STATUS: the record
// whose latest status has the UUID is forgotten (its status is terminal).
// Acknowledgements of unknown operations or of older statuses are ignored,
// as Mesos does (the framework may acknowledge a retry twice).
func (s *state) acknowledgeOperation(fw *framework, ack *schedulerpb.Call_AcknowledgeOperationStatus) {
	id := ack.GetOperationId().GetValue()
	rec := s.operations[fw.id][id]
	if rec == nil || !bytes.Equal(rec.p.GetLatestStatus().GetUuid().GetValue(), ack.GetUuid()) {
		s.log.Info("ignoring acknowledgement of an unknown operation status", "framework", fw.id, "operation", id)
		return
	}
	delete(s.operations[fw.id], id)
	if len(s.operations[fw.id]) == 0 {
		delete(s.operations, fw.id)
	}
	s.dirty = true
}

// retryOperationStatuses resends the latest status of every
// unacknowledged operation whose retry is due, doubling its backoff, and
// at once (backoff reset) to a framework that subscribed again since it
// was last sent. Records of frameworks that are gone are dropped.
func (s *state) retryOperationStatuses(now time.Time) {
	for _, fwID := range sortedKeys(s.operations) {
		fw := s.frameworks[fwID]
		if fw == nil {
			delete(s.operations, fwID)
			s.dirty = true
			continue
		}
		for _, id := range sortedKeys(s.operations[fwID]) {
			rec := s.operations[fwID][id]
			switch {
			case fw.stream != nil && fw.stream != rec.sentOn:
				rec.backoff = operationRetryMin
			case now.Before(rec.nextRetry):
				continue
			default:
				rec.backoff = min(2*rec.backoff, operationRetryMax)
			}
			s.sendOperationStatus(fw, rec.p.GetLatestStatus())
			rec.sentOn = fw.stream
			rec.nextRetry = now.Add(rec.backoff)
		}
	}
}

// nextOperationRetry is the earliest pending status retry, zero if none.
func (s *state) nextOperationRetry() time.Time {
	var next time.Time
	for _, ops := range s.operations {
		for _, rec := range ops {
			if next.IsZero() || rec.nextRetry.Before(next) {
				next = rec.nextRetry
			}
		}
	}
	return next
}

// reconcileOperations answers RECONCILE_OPERATIONS from the master's view
// with statuses that carry no UUID (they need no acknowledgement): with no
// operations listed, the latest status of each of the framework's known
// operations; otherwise, per operation, its latest status if known, else
// what the master knows of its agent: OPERATION_RECOVERING (admitted, not
// yet re-registered after a failover), OPERATION_UNREACHABLE,
// OPERATION_GONE_BY_OPERATOR, or OPERATION_UNKNOWN (a registered agent,
// or none named).
func (s *state) reconcileOperations(fw *framework, ops []*schedulerpb.Call_ReconcileOperations_Operation) {
	answer := func(st *mesos.OperationStatus) {
		c := proto.Clone(st).(*mesos.OperationStatus)
		c.Uuid = nil
		s.sendOperationStatus(fw, c)
	}
	known := s.operations[fw.id]
	if len(ops) == 0 {
		for _, id := range sortedKeys(known) {
			answer(known[id].p.GetLatestStatus())
		}
		return
	}
	for _, o := range ops {
		id := o.GetOperationId().GetValue()
		agent := o.GetAgentId().GetValue()
		if rec := known[id]; rec != nil && (agent == "" || rec.p.GetAgentId().GetValue() == agent) {
			answer(rec.p.GetLatestStatus())
			continue
		}
		state := mesos.OperationState_OPERATION_UNKNOWN
		switch {
		case agent == "" || s.agents[agent] != nil:
		case s.recovered[agent]:
			state = mesos.OperationState_OPERATION_RECOVERING
		case s.unreachable[agent] != nil:
			state = mesos.OperationState_OPERATION_UNREACHABLE
		case s.gone[agent]:
			state = mesos.OperationState_OPERATION_GONE_BY_OPERATOR
		}
		st := &mesos.OperationStatus{OperationId: o.GetOperationId(), State: state.Enum()}
		if agent != "" {
			st.AgentId = o.GetAgentId()
		}
		s.sendOperationStatus(fw, st)
	}
}

// operationViews lists the operations awaiting acknowledgement, by
// framework and operation ID, for the snapshot (GET_OPERATIONS).
func (s *state) operationViews() []*mesos.Operation {
	var out []*mesos.Operation
	for _, fwID := range sortedKeys(s.operations) {
		if s.frameworks[fwID] == nil {
			continue
		}
		for _, id := range sortedKeys(s.operations[fwID]) {
			out = append(out, s.operations[fwID][id].p)
		}
	}
	return out
}
