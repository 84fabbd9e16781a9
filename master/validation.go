package master

import (
	"errors"
	"fmt"
	"math"

	"github.com/google/uuid"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/resources"
)

// ValidateCall checks a decoded scheduler Call the way Mesos's
// validation::scheduler::call does, before the master looks at its state.
// The API layer answers a non-nil error with 400
// "Failed to validate scheduler::Call: <error>".
func ValidateCall(call *schedulerpb.Call) error {
	if call.Type == nil {
		return errors.New("Expecting 'type' to be present")
	}
	t := call.GetType()
	if t == schedulerpb.Call_SUBSCRIBE {
		if call.Subscribe == nil {
			return errors.New("Expecting 'subscribe' to be present")
		}
		info := call.GetSubscribe().GetFrameworkInfo()
		if err := validateFrameworkInfo(info); err != nil {
			return err
		}
		if call.GetFrameworkId().GetValue() != info.GetId().GetValue() {
			return errors.New("'framework_id' differs from 'subscribe.framework_info.id'")
		}
		return nil
	}
	if t == schedulerpb.Call_UNKNOWN {
		return nil // answered 501 once the framework is found, as Mesos does
	}
	if call.GetFrameworkId().GetValue() == "" {
		return errors.New("Expecting 'framework_id' to be present")
	}
	need := func(present bool, name string) error {
		if !present {
			return fmt.Errorf("Expecting '%s' to be present", name)
		}
		return nil
	}
	switch t {
	case schedulerpb.Call_TEARDOWN, schedulerpb.Call_REVIVE, schedulerpb.Call_SUPPRESS:
		return nil
	case schedulerpb.Call_ACCEPT:
		return need(call.Accept != nil, "accept")
	case schedulerpb.Call_DECLINE:
		return need(call.Decline != nil, "decline")
	case schedulerpb.Call_ACCEPT_INVERSE_OFFERS:
		return need(call.AcceptInverseOffers != nil, "accept_inverse_offers")
	case schedulerpb.Call_DECLINE_INVERSE_OFFERS:
		return need(call.DeclineInverseOffers != nil, "decline_inverse_offers")
	case schedulerpb.Call_KILL:
		return need(call.Kill != nil, "kill")
	case schedulerpb.Call_SHUTDOWN:
		return need(call.Shutdown != nil, "shutdown")
	case schedulerpb.Call_ACKNOWLEDGE:
		if err := need(call.Acknowledge != nil, "acknowledge"); err != nil {
			return err
		}
		if _, err := uuid.FromBytes(call.GetAcknowledge().GetUuid()); err != nil {
			return fmt.Errorf("'acknowledge.uuid' is not a valid UUID: %v", err)
		}
		return nil
	case schedulerpb.Call_ACKNOWLEDGE_OPERATION_STATUS:
		if err := need(call.AcknowledgeOperationStatus != nil, "acknowledge_operation_status"); err != nil {
			return err
		}
		if _, err := uuid.FromBytes(call.GetAcknowledgeOperationStatus().GetUuid()); err != nil {
			return fmt.Errorf("'acknowledge_operation_status.uuid' is not a valid UUID: %v", err)
		}
		return nil
	case schedulerpb.Call_RECONCILE:
		return need(call.Reconcile != nil, "reconcile")
	case schedulerpb.Call_RECONCILE_OPERATIONS:
		return need(call.ReconcileOperations != nil, "reconcile_operations")
	case schedulerpb.Call_MESSAGE:
		return need(call.Message != nil, "message")
	case schedulerpb.Call_REQUEST:
		return need(call.Request != nil, "request")
	case schedulerpb.Call_UPDATE_FRAMEWORK:
		if err := need(call.UpdateFramework != nil, "update_framework"); err != nil {
			return err
		}
		return validateFrameworkInfo(call.GetUpdateFramework().GetFrameworkInfo())
	}
	return fmt.Errorf("Unknown call type %d", int32(t))
}

// validateFrameworkInfo checks roles and offer filters the way Mesos does
// for SUBSCRIBE and UPDATE_FRAMEWORK.
func validateFrameworkInfo(info *mesos.FrameworkInfo) error {
	if info == nil {
		return errors.New("Expecting 'framework_info' to be present")
	}
	if err := validateOfferFilters(info); err != nil {
		return err
	}
	multiRole := false
	for _, c := range info.GetCapabilities() {
		if c.GetType() == mesos.FrameworkInfo_Capability_MULTI_ROLE {
			multiRole = true
		}
	}
	if multiRole {
		if info.Role != nil {
			return errors.New("'FrameworkInfo.role' must not be present when the framework is MULTI_ROLE capable")
		}
		seen := map[string]bool{}
		for _, r := range info.GetRoles() {
			if err := resources.ValidateRole(r); err != nil {
				return fmt.Errorf("'FrameworkInfo.roles' contains invalid role: %v", err)
			}
			if seen[r] {
				return fmt.Errorf("'FrameworkInfo.roles' contains duplicate role '%s'", r)
			}
			seen[r] = true
		}
		return nil
	}
	if len(info.GetRoles()) > 0 {
		return errors.New("'FrameworkInfo.roles' must not be present when the framework is not MULTI_ROLE capable")
	}
	if err := resources.ValidateRole(info.GetRole()); err != nil {
		return fmt.Errorf("'FrameworkInfo.role' is not a valid role: %v", err)
	}
	return nil
}

// validateOfferFilters checks FrameworkInfo.offer_filters as Mesos's
// common::validation::validateOfferFilters does, naming the role.
func validateOfferFilters(info *mesos.FrameworkInfo) error {
	filters := info.GetOfferFilters()
	for _, role := range sortedKeys(filters) {
		for _, rq := range filters[role].GetMinAllocatableResources().GetQuantities() {
			if len(rq.GetQuantities()) == 0 {
				return fmt.Errorf("Invalid 'FrameworkInfo.offer_filters' for role '%s': Resource quantities must contain at least one quantity", role)
			}
			for _, name := range sortedKeys(rq.GetQuantities()) {
				if err := validateInputScalar(rq.GetQuantities()[name].GetValue()); err != nil {
					return fmt.Errorf("Invalid 'FrameworkInfo.offer_filters' for role '%s': Invalid resource quantity for '%s': %v", role, name, err)
				}
			}
		}
	}
	return nil
}

// validateInputScalar is Mesos's validateInputScalarValue.
func validateInputScalar(v float64) error {
	switch {
	case math.IsInf(v, 0):
		return errors.New("Infinite values not supported")
	case math.IsNaN(v):
		return errors.New("NaN not supported")
	case v != 0 && math.Abs(v) < 0x1p-1022:
		return errors.New("Subnormal values not supported")
	case v < 0:
		return errors.New("Negative values not supported")
	}
	return nil
}
