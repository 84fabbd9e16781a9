package master

import (
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"

	"mezzo/api/maintenancepb"
	"mezzo/api/mesos"
	"mezzo/master/registrar"
)

// MaintenanceRegistrar records the maintenance schedule and the DOWN
// machines, part of Registrar. The master validated each call (see
// ValidateSchedule, ValidateMachines); the registrar still refuses what
// does not fit the registry (a DOWN machine left out of a schedule, a
// machine brought down that is not scheduled or already down, one brought
// up that is not down) with an error wrapping registrar.ErrMaintenance.
type MaintenanceRegistrar interface {
	// UpdateSchedule replaces the schedule.
	UpdateSchedule(s *maintenancepb.Schedule, done func(error))
	// StartMaintenance moves scheduled machines to DOWN.
	StartMaintenance(machines []*mesos.MachineID, done func(error))
	// StopMaintenance moves DOWN machines back UP; they leave the
	// schedule (windows left empty go too).
	StopMaintenance(machines []*mesos.MachineID, done func(error))
}

// UpdateSchedule implements MaintenanceRegistrar.
func (a *ReplicatedRegistrar) UpdateSchedule(s *maintenancepb.Schedule, done func(error)) {
	a.submit(registrar.UpdateSchedule(s), done)
}

// StartMaintenance implements MaintenanceRegistrar.
func (a *ReplicatedRegistrar) StartMaintenance(ms []*mesos.MachineID, done func(error)) {
	a.submit(registrar.StartMaintenance(ms), done)
}

// StopMaintenance implements MaintenanceRegistrar.
func (a *ReplicatedRegistrar) StopMaintenance(ms []*mesos.MachineID, done func(error)) {
	a.submit(registrar.StopMaintenance(ms), done)
}

func (w *failureWatch) UpdateSchedule(s *maintenancepb.Schedule, done func(error)) {
	w.Registrar.UpdateSchedule(s, w.wrap(done))
}

func (w *failureWatch) StartMaintenance(ms []*mesos.MachineID, done func(error)) {
	w.Registrar.StartMaintenance(ms, w.wrap(done))
}

func (w *failureWatch) StopMaintenance(ms []*mesos.MachineID, done func(error)) {
	w.Registrar.StopMaintenance(ms, w.wrap(done))
}

// memoryMaintenance is MemoryRegistrar's maintenance part.
type memoryMaintenance struct {
	mu       sync.Mutex
	schedule *maintenancepb.Schedule
	down     map[string]*mesos.MachineID
}

func (m *memoryMaintenance) recovered() (*maintenancepb.Schedule, []*mesos.MachineID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var down []*mesos.MachineID
	for _, k := range sortedKeys(m.down) {
		down = append(down, proto.Clone(m.down[k]).(*mesos.MachineID))
	}
	return cloneSchedule(m.schedule), down
}

func (m *memoryMaintenance) scheduled() map[string]bool {
	out := map[string]bool{}
	for _, w := range m.schedule.GetWindows() {
		for _, id := range w.GetMachineIds() {
			out[machineKey(id)] = true
		}
	}
	return out
}

func (m *memoryMaintenance) apply(done func(error), op func() error) {
	m.mu.Lock()
	if m.down == nil {
		m.down = map[string]*mesos.MachineID{}
	}
	err := op()
	m.mu.Unlock()
	go done(err)
}

// UpdateSchedule implements MaintenanceRegistrar.
func (r *MemoryRegistrar) UpdateSchedule(s *maintenancepb.Schedule, done func(error)) {
	s = cloneSchedule(s)
	m := &r.maint
	m.apply(done, func() error {
		keep := map[string]bool{}
		for _, w := range s.GetWindows() {
			for _, id := range w.GetMachineIds() {
				keep[machineKey(id)] = true
			}
		}
		for k := range m.down {
			if !keep[k] {
				return fmt.Errorf("%w: machine %s is down", registrar.ErrMaintenance, k)
			}
		}
		m.schedule = s
		return nil
	})
}

// StartMaintenance implements MaintenanceRegistrar.
func (r *MemoryRegistrar) StartMaintenance(ms []*mesos.MachineID, done func(error)) {
	m := &r.maint
	m.apply(done, func() error {
		sched := m.scheduled()
		for _, id := range ms {
			k := machineKey(id)
			if !sched[k] || m.down[k] != nil {
				return fmt.Errorf("%w: machine %s is not scheduled or already down", registrar.ErrMaintenance, k)
			}
		}
		for _, id := range ms {
			m.down[machineKey(id)] = proto.Clone(id).(*mesos.MachineID)
		}
		return nil
	})
}

// StopMaintenance implements MaintenanceRegistrar.
func (r *MemoryRegistrar) StopMaintenance(ms []*mesos.MachineID, done func(error)) {
	m := &r.maint
	m.apply(done, func() error {
		stop := map[string]bool{}
		for _, id := range ms {
			k := machineKey(id)
			if m.down[k] == nil {
				return fmt.Errorf("%w: machine %s is not down", registrar.ErrMaintenance, k)
			}
			stop[k] = true
		}
		ns := &maintenancepb.Schedule{}
		for _, w := range m.schedule.GetWindows() {
			var ids []*mesos.MachineID
			for _, id := range w.GetMachineIds() {
				if !stop[machineKey(id)] {
					ids = append(ids, id)
				}
			}
			if len(ids) > 0 {
				ns.Windows = append(ns.Windows, &maintenancepb.Window{MachineIds: ids, Unavailability: w.GetUnavailability()})
			}
		}
		for k := range stop {
			delete(m.down, k)
		}
		m.schedule = ns
		return nil
	})
}
