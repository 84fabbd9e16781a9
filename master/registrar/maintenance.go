package registrar

import (
	"fmt"

	"mezzo/api/maintenancepb"
	"mezzo/api/mesos"
	pb "mezzo/api/registrypb"
)

// nextMaintenance returns the schedule and DOWN set after a maintenance
// operation, without modifying its arguments.
func nextMaintenance(sched *maintenancepb.Schedule, down map[string]*mesos.MachineID, op *pb.Operation) (*maintenancepb.Schedule, map[string]*mesos.MachineID, error) {
	scheduled := map[string]bool{}
	for _, w := range sched.GetWindows() {
		for _, m := range w.GetMachineIds() {
			scheduled[machineKey(m)] = true
		}
	}
	switch o := op.GetOp().(type) {
	case *pb.Operation_UpdateSchedule_:
		next := o.UpdateSchedule.GetSchedule()
		keep := map[string]bool{}
		for _, w := range next.GetWindows() {
			for _, m := range w.GetMachineIds() {
				keep[machineKey(m)] = true
			}
		}
		for k := range down {
			if !keep[k] {
				return nil, nil, fmt.Errorf("%w: machine %s is down; stop its maintenance before removing it from the schedule", ErrMaintenance, k)
			}
		}
		return next, down, nil
	case *pb.Operation_StartMaintenance_:
		nd := make(map[string]*mesos.MachineID, len(down)+len(o.StartMaintenance.GetMachines()))
		for k, m := range down {
			nd[k] = m
		}
		for _, m := range o.StartMaintenance.GetMachines() {
			k := machineKey(m)
			if !scheduled[k] {
				return nil, nil, fmt.Errorf("%w: machine %s is not in the maintenance schedule", ErrMaintenance, k)
			}
			if nd[k] != nil {
				return nil, nil, fmt.Errorf("%w: machine %s is already down", ErrMaintenance, k)
			}
			nd[k] = m
		}
		return sched, nd, nil
	case *pb.Operation_StopMaintenance_:
		nd := make(map[string]*mesos.MachineID, len(down))
		for k, m := range down {
			nd[k] = m
		}
		stop := map[string]bool{}
		for _, m := range o.StopMaintenance.GetMachines() {
			k := machineKey(m)
			if nd[k] == nil {
				return nil, nil, fmt.Errorf("%w: machine %s is not down", ErrMaintenance, k)
			}
			delete(nd, k)
			stop[k] = true
		}
		// Stopped machines leave the schedule; windows left empty go too.
		ns := &maintenancepb.Schedule{}
		for _, w := range sched.GetWindows() {
			var ids []*mesos.MachineID
			for _, m := range w.GetMachineIds() {
				if !stop[machineKey(m)] {
					ids = append(ids, m)
				}
			}
			if len(ids) > 0 {
				ns.Windows = append(ns.Windows, &maintenancepb.Window{MachineIds: ids, Unavailability: w.GetUnavailability()})
			}
		}
		return ns, nd, nil
	}
	return sched, down, nil
}
