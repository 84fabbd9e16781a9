package allocator

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
)

// Golden-transcript commands for maintenance, as the master reports it to
// the allocator:
//
//	unavailability AGENT START DURATION   the agent's machine is in a window
//	                                      starting START seconds after the
//	                                      transcript's epoch, lasting DURATION
//	unavailability AGENT none             the machine left the schedule
//	inverse-answer FW AGENT [refuse=S]    the framework accepted or declined
//	                                      its inverse offer (filters as sent;
//	                                      without refuse=, Mesos's default 5s)
//	inverse-rescind FW AGENT              the master rescinded it (no filter)
//
// Runs report "inverse-offer FW AGENT start=… duration=…".
func (h *harness) execMaintenance(cmd string, args []string) (bool, error) {
	switch cmd {
	case "unavailability":
		if len(args) < 2 {
			return true, fmt.Errorf("%s: want AGENT START DURATION or AGENT none", cmd)
		}
		if args[1] == "none" {
			h.c.updateUnavailability(args[0], nil)
			return true, nil
		}
		if len(args) < 3 {
			return true, fmt.Errorf("%s: want AGENT START DURATION", cmd)
		}
		start, err := time.ParseDuration(args[1])
		if err != nil {
			return true, err
		}
		d, err := time.ParseDuration(args[2])
		if err != nil {
			return true, err
		}
		epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		h.c.updateUnavailability(args[0], &mesos.Unavailability{
			Start:    &mesos.TimeInfo{Nanoseconds: proto.Int64(epoch.Add(start).UnixNano())},
			Duration: &mesos.DurationInfo{Nanoseconds: proto.Int64(int64(d))},
		})
		return true, nil
	case "inverse-answer":
		if len(args) < 2 {
			return true, fmt.Errorf("%s: want FW AGENT", cmd)
		}
		f, err := filtersOf(kv(args[2:]))
		if err != nil {
			return true, err
		}
		if f == nil {
			f = &mesos.Filters{} // refuse_seconds defaults to 5
		}
		h.c.updateInverseOffer(args[1], args[0], f, h.now)
		return true, nil
	case "inverse-rescind":
		if len(args) < 2 {
			return true, fmt.Errorf("%s: want FW AGENT", cmd)
		}
		h.c.updateInverseOffer(args[1], args[0], nil, h.now)
		return true, nil
	}
	return false, nil
}
