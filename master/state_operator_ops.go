package master

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"mezzo/api/mesos"
	"mezzo/resources"
)

// Operator operations: RESERVE_RESOURCES, UNRESERVE_RESOURCES,
// CREATE_VOLUMES, DESTROY_VOLUMES, GROW_VOLUME, SHRINK_VOLUME and the
// classic /master/reserve, /unreserve, /create-volumes, /destroy-volumes.
// As in Mesos they apply to the agent's unallocated resources (neither used
// by tasks and executors nor offered); when what they need is offered out,
// the agent's offers are rescinded first and the operation is tried again
// against what is then free.

// operatorOperation validates and applies an operator's operation on the
// loop. Errors are *APIError: 400 naming the problem, 409 when the
// resources are not available.
func (s *state) operatorOperation(p Principal, agentID string, op *mesos.Offer_Operation, now time.Time) error {
	if op == nil {
		return badRequest("Operation is missing")
	}
	if !conversionTypes[op.GetType()] {
		return badRequest("Operation type %s cannot be applied by an operator (expecting RESERVE, UNRESERVE, CREATE, DESTROY, GROW_VOLUME or SHRINK_VOLUME)", op.GetType())
	}
	if op.GetId() != nil {
		return badRequest("Operator operations do not take an operation 'id': they are answered synchronously")
	}
	if agentID == "" {
		return badRequest("Expecting 'agent_id' to be present")
	}
	a := s.agents[agentID]
	if a == nil {
		return badRequest("No agent found with specified ID '%s'", agentID)
	}
	if a.leaving {
		return &APIError{Status: http.StatusConflict, Message: fmt.Sprintf("Agent %s is being removed", agentID)}
	}
	n, err := normalizeOperation(op, "")
	if err != nil {
		return s.operatorRefused(op, agentID, badRequest("Invalid %s operation: %v", op.GetType(), err), now)
	}
	if err := s.checkOperation(a, opCaller{principal: p.Name}, n); err != nil {
		return s.operatorRefused(op, agentID, badRequest("Invalid %s operation: %v", op.GetType(), err), now)
	}
	if err := s.authorizeOperation(p.Name, n); err != nil {
		return s.operatorRefused(op, agentID, err.(*APIError), now)
	}
	_, err = s.freeOn(a).Apply(n)
	var na *resources.NotAvailableError
	if errors.As(err, &na) && len(a.offers) > 0 {
		s.rescindAgentOffers(a)
		_, err = s.freeOn(a).Apply(n)
	}
	if errors.As(err, &na) {
		return s.operatorRefused(op, agentID, &APIError{Status: http.StatusConflict, Message: fmt.Sprintf(
			"Invalid %s operation: %s: resources %s are not available on agent %s: its unallocated resources are %s",
			op.GetType(), na.Field, na.Wanted, agentID, describe(na.Available))}, now)
	}
	if err != nil {
		return s.operatorRefused(op, agentID, badRequest("Invalid %s operation: %v", op.GetType(), err), now)
	}
	if err := s.applyToAgent(a, n); err != nil {
		panic(err) // the unallocated resources are part of the total
	}
	a.converted = true
	s.alloc.UpdateAgent(a.id, nil, a.total)
	s.operationStatus(nil, agentID, n, mesos.OperationState_OPERATION_FINISHED, "", nil, now)
	s.log.Info("operator operation applied", "agent", agentID, "operation", op.GetType().String(), "principal", p.Name)
	return nil
}

// operatorRefused counts a refused operator operation and returns err.
func (s *state) operatorRefused(op *mesos.Offer_Operation, agentID string, err *APIError, now time.Time) error {
	state := mesos.OperationState_OPERATION_ERROR
	if err.Status == http.StatusConflict {
		state = mesos.OperationState_OPERATION_DROPPED
	}
	s.operationStatus(nil, agentID, op, state, err.Message, nil, now)
	return err
}

// freeOn is what of the agent's total no task, executor or offer
// holds, without allocation info.
func (s *state) freeOn(a *agent) resources.Resources {
	var held resources.Resources
	for _, ts := range a.tasks {
		for _, t := range ts {
			if !t.recovered {
				held = held.Add(t.res)
			}
		}
	}
	for _, es := range a.executors {
		for _, e := range es {
			held = held.Add(e.res)
		}
	}
	for _, o := range a.offers {
		held = held.Add(o.res)
	}
	return a.total.Subtract(held.WithoutAllocationInfo())
}
