package master

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"google.golang.org/protobuf/proto"

	"mezzo/api/maintenancepb"
	"mezzo/api/mesos"
)

// Maintenance: machines and their modes, as Mesos's master keeps them.
//
//	        schedule names it              START_MAINTENANCE
//	 UP ─────────────────────► DRAINING ─────────────────────► DOWN
//	 ▲ ▲                          │                              │
//	 │ └──── schedule drops it ───┘                              │
//	 └────────────── STOP_MAINTENANCE (leaves the schedule) ─────┘
//
// DRAINING machines' agents keep running; their offers carry the window's
// unavailability and their frameworks get inverse offers. DOWN machines'
// agents are shut down and may not register until the machine is UP.
//
// A machine is named by hostname and/or IP (MachineID). An agent runs on
// a machine when every field the MachineID sets matches the agent: its
// AgentInfo hostname (case-insensitively) and the IP of its endpoint.

// machineKey is a MachineID's identity in the schedule (hostnames are
// case-insensitive), as the registry keys it.
func machineKey(m *mesos.MachineID) string {
	return strings.ToLower(m.GetHostname()) + "/" + m.GetIp()
}

// machineString renders a MachineID for errors, as Mesos does (its JSON).
func machineString(m *mesos.MachineID) string {
	var parts []string
	if m.Hostname != nil {
		parts = append(parts, fmt.Sprintf("%q:%q", "hostname", m.GetHostname()))
	}
	if m.Ip != nil {
		parts = append(parts, fmt.Sprintf("%q:%q", "ip", m.GetIp()))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// machineMatches reports whether an agent with hostname and ip runs on
// the machine m.
func machineMatches(m *mesos.MachineID, hostname, ip string) bool {
	if m.GetHostname() == "" && m.GetIp() == "" {
		return false
	}
	if m.GetHostname() != "" && !strings.EqualFold(m.GetHostname(), hostname) {
		return false
	}
	if m.GetIp() != "" && m.GetIp() != ip {
		return false
	}
	return true
}

// overlaps finds, in time linear in the schedule, a MachineID added
// earlier that some agent would match as well as a new one, given that exact
// duplicates are refused before: {host, ip} overlaps {host} and {ip};
// {host} overlaps anything with that host and any {ip}; {ip} anything
// with that IP and any {host}.
type overlaps struct {
	hostAny, hostOnly, ipAny, ipOnly map[string]*namedMachine
	hostOnlyAny, ipOnlyAny           *namedMachine
}

type namedMachine struct {
	id    *mesos.MachineID
	field string
}

// add records m (named field in errors) and returns an earlier machine it
// overlaps, or nil.
func (o *overlaps) add(m *mesos.MachineID, field string) *namedMachine {
	if o.hostAny == nil {
		o.hostAny, o.hostOnly = map[string]*namedMachine{}, map[string]*namedMachine{}
		o.ipAny, o.ipOnly = map[string]*namedMachine{}, map[string]*namedMachine{}
	}
	h, ip := strings.ToLower(m.GetHostname()), m.GetIp()
	var hit *namedMachine
	switch {
	case h != "" && ip != "":
		hit = firstOf(o.hostOnly[h], o.ipOnly[ip])
	case h != "":
		hit = firstOf(o.hostAny[h], o.ipOnlyAny)
	default:
		hit = firstOf(o.ipAny[ip], o.hostOnlyAny)
	}
	if hit != nil {
		return hit
	}
	n := &namedMachine{m, field}
	if h != "" {
		if o.hostAny[h] == nil {
			o.hostAny[h] = n
		}
		if ip == "" {
			o.hostOnly[h] = n
			if o.hostOnlyAny == nil {
				o.hostOnlyAny = n
			}
		}
	}
	if ip != "" {
		if o.ipAny[ip] == nil {
			o.ipAny[ip] = n
		}
		if h == "" {
			o.ipOnly[ip] = n
			if o.ipOnlyAny == nil {
				o.ipOnlyAny = n
			}
		}
	}
	return nil
}

func firstOf(a, b *namedMachine) *namedMachine {
	if a != nil {
		return a
	}
	return b
}

// ValidateMachineID checks one MachineID as Mesos does: a hostname or an
// IP, and an IP that parses as IPv4 (Mesos parses it with AF_INET). field
// names it in the error.
func ValidateMachineID(m *mesos.MachineID, field string) error {
	if m.GetHostname() == "" && m.GetIp() == "" {
		return badRequest("%s: Both 'hostname' and 'ip' for a machine are empty", field)
	}
	if m.GetIp() != "" {
		a, err := netip.ParseAddr(m.GetIp())
		if err != nil {
			return badRequest("%s: invalid 'ip' %q: %v", field, m.GetIp(), err)
		}
		if !a.Is4() {
			return badRequest("%s: invalid 'ip' %q: not an IPv4 address", field, m.GetIp())
		}
	}
	return nil
}

// ValidateMachines checks the machine list of START_MAINTENANCE and
// STOP_MAINTENANCE (and /master/machine/down|up): not empty, each valid,
// none twice.
func ValidateMachines(ids []*mesos.MachineID, field string) error {
	if len(ids) == 0 {
		return badRequest("%s: List of machines is empty", field)
	}
	seen := map[string]bool{}
	for i, m := range ids {
		if err := ValidateMachineID(m, fmt.Sprintf("%s[%d]", field, i)); err != nil {
			return err
		}
		k := machineKey(m)
		if seen[k] {
			return badRequest("%s[%d]: Machine '%s' appears more than once in the schedule", field, i, machineString(m))
		}
		seen[k] = true
	}
	return nil
}

// ValidateSchedule checks a maintenance schedule as Mesos does: every
// window names at least one machine and a valid unavailability
// (non-negative duration), every machine is valid and appears in one
// window only, and no machine that is DOWN (down, by machineKey) is left
// out. field names the schedule in errors.
func ValidateSchedule(s *maintenancepb.Schedule, down map[string]*mesos.MachineID, field string) error {
	seen := map[string]bool{}
	var ov overlaps
	for i, w := range s.GetWindows() {
		wf := fmt.Sprintf("%s.windows[%d]", field, i)
		if len(w.GetMachineIds()) == 0 {
			return badRequest("%s: List of machines in the maintenance window is empty", wf)
		}
		for j, m := range w.GetMachineIds() {
			if err := ValidateMachineID(m, fmt.Sprintf("%s.machine_ids[%d]", wf, j)); err != nil {
				return err
			}
			k := machineKey(m)
			if seen[k] {
				return badRequest("%s.machine_ids[%d]: Machine '%s' appears more than once in the schedule", wf, j, machineString(m))
			}
			seen[k] = true
			// mezzo matches agents by the fields a MachineID sets, so two
			// different IDs may name one machine ({hostname} and
			// {hostname, ip}): that machine would be in two places.
			f := fmt.Sprintf("%s.machine_ids[%d]", wf, j)
			if o := ov.add(m, f); o != nil {
				return badRequest("%s: Machine '%s' may be the machine '%s' of %s: a machine appears once in the schedule",
					f, machineString(m), machineString(o.id), o.field)
			}
		}
		u := w.GetUnavailability()
		if u == nil || u.GetStart() == nil {
			return badRequest("%s: Expecting 'unavailability.start' to be present", wf)
		}
		if u.GetDuration().GetNanoseconds() < 0 {
			return badRequest("%s: Unavailability 'duration' is negative", wf)
		}
	}
	for _, k := range sortedKeys(down) {
		if !seen[k] {
			return badRequest("%s: Machine '%s' is deactivated and cannot be removed from the schedule", field, machineString(down[k]))
		}
	}
	return nil
}

// cloneSchedule returns a copy (an empty schedule for nil).
func cloneSchedule(s *maintenancepb.Schedule) *maintenancepb.Schedule {
	if s == nil {
		return &maintenancepb.Schedule{}
	}
	return proto.Clone(s).(*maintenancepb.Schedule)
}

// endpointIP is the IP of an agent's endpoint ("host:port"), "" if the
// host is not an IP.
func endpointIP(endpoint string) string {
	host, _, err := net.SplitHostPort(endpoint)
	if err != nil {
		host = endpoint
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return a.String()
	}
	return ""
}
