package agent

import (
	"errors"

	"mezzo/api/mesos"
	"mezzo/resources"

	"google.golang.org/protobuf/proto"
)

// applyCheckpointed is Mesos's applyCheckpointedResources for one entry
// set: each checkpointed resource, stripped of its persistence and
// dynamic reservations, must be in total, and replaces that part of it.
//
// TODO(agentres): resources.ApplyCheckpointed (branch res) replaces this
// once merged.
func applyCheckpointed(total, checkpointed resources.Resources) (resources.Resources, error) {
	for _, r := range checkpointed.Proto() {
		stripped := proto.Clone(r).(*mesos.Resource)
		stripped.Shared = nil
		if d := stripped.Disk; d != nil {
			d.Persistence, d.Volume = nil, nil
			if d.Source == nil {
				stripped.Disk = nil
			}
		}
		for n := len(stripped.Reservations); n > 0 && stripped.Reservations[n-1].GetType() == mesos.Resource_ReservationInfo_DYNAMIC; n-- {
			stripped.Reservations = stripped.Reservations[:n-1]
		}
		s, err := resources.New(stripped)
		if err != nil {
			return resources.Resources{}, err
		}
		if !total.Contains(s) {
			return resources.Resources{}, errors.New("'" + total.String() + "' does not contain '" + s.String() + "'")
		}
		one, err := resources.New(r)
		if err != nil {
			return resources.Resources{}, err
		}
		total = total.Subtract(s).Add(one)
	}
	return total, nil
}
