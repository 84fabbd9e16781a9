package endpoints

import (
	"context"

	"mezzo/api/maintenancepb"
	"mezzo/api/mesos"
	"mezzo/master"
)

// MaintenanceWriter is the part of Source the maintenance endpoints write
// through (see master.Master's methods of the same names).
type MaintenanceWriter interface {
	// UpdateMaintenanceSchedule applies UPDATE_MAINTENANCE_SCHEDULE and
	// POST /master/maintenance/schedule.
	UpdateMaintenanceSchedule(ctx context.Context, p master.Principal, s *maintenancepb.Schedule) error
	// StartMaintenance applies START_MAINTENANCE and /master/machine/down.
	StartMaintenance(ctx context.Context, p master.Principal, machines []*mesos.MachineID) error
	// StopMaintenance applies STOP_MAINTENANCE and /master/machine/up.
	StopMaintenance(ctx context.Context, p master.Principal, machines []*mesos.MachineID) error
}
