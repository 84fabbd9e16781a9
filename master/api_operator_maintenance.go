package master

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/maintenancepb"
	"mezzo/api/mesos"
	"mezzo/internal/authorizer"
)

// The operator API's maintenance entry points (UPDATE_MAINTENANCE_SCHEDULE,
// START_MAINTENANCE, STOP_MAINTENANCE and their classic endpoints); the
// reads (GET_MAINTENANCE_SCHEDULE, GET_MAINTENANCE_STATUS) come from the
// Snapshot's Maintenance. Each write is validated (400 *APIError naming
// the field), then recorded by the registrar before the master acts, so
// it survives a failover of the leading master.

// UpdateMaintenanceSchedule replaces the maintenance schedule. Machines in
// a window become DRAINING (offers from their agents carry the window's
// unavailability; frameworks using them get inverse offers); machines
// that left it are UP again. A DOWN machine may not be left out (400).
func (m *Master) UpdateMaintenanceSchedule(ctx context.Context, p Principal, sched *maintenancepb.Schedule) error {
	sched = cloneSchedule(sched)
	// The registry's own check (DOWN machines kept) runs on the loop
	// against the current DOWN set; the rest does not depend on state.
	if err := ValidateSchedule(sched, nil, "update_maintenance_schedule.schedule"); err != nil {
		return err
	}
	return m.authorizedAsync(ctx, p, authorizer.UpdateMaintenanceSchedule, nil, func(s *state, now time.Time, finish func(error)) { s.updateSchedule(sched, finish) })
}

// StartMaintenance brings machines DOWN: each must be in the schedule and
// not DOWN already (400). Their agents are shut down and removed; their
// tasks end TASK_GONE_BY_OPERATOR (TASK_LOST for frameworks that are not
// partition-aware); agents on them may not register until they are UP.
func (m *Master) StartMaintenance(ctx context.Context, p Principal, machines []*mesos.MachineID) error {
	if err := ValidateMachines(machines, "start_maintenance.machines"); err != nil {
		return err
	}
	ids := cloneMachines(machines)
	return m.authorizedAsync(ctx, p, authorizer.StartMaintenance, nil, func(s *state, now time.Time, finish func(error)) { s.startMaintenance(ids, finish) })
}

// StopMaintenance brings DOWN machines UP (400 for one that is not DOWN):
// they leave the schedule and their agents may register again.
func (m *Master) StopMaintenance(ctx context.Context, p Principal, machines []*mesos.MachineID) error {
	if err := ValidateMachines(machines, "stop_maintenance.machines"); err != nil {
		return err
	}
	ids := cloneMachines(machines)
	return m.authorizedAsync(ctx, p, authorizer.StopMaintenance, nil, func(s *state, now time.Time, finish func(error)) { s.stopMaintenance(ids, finish) })
}

func cloneMachines(ms []*mesos.MachineID) []*mesos.MachineID {
	out := make([]*mesos.MachineID, len(ms))
	for i, m := range ms {
		out[i] = proto.Clone(m).(*mesos.MachineID)
	}
	return out
}
