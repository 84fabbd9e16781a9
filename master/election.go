package master

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/maintenancepb"
	"mezzo/api/mesos"
	"mezzo/api/quotapb"
	"mezzo/master/registrar"
)

// Election is the replicated log's view of leadership as the master needs
// it (cmd/ adapts replog.Log; tests use a fake). Raft leadership is master
// leadership: the master serves only while IsLeader holds and after it has
// recovered the registry (Recoverer) in the current term.
type Election interface {
	// LeaderCh receives this node's leadership now and at every change;
	// the channel holds only the latest value.
	LeaderCh() <-chan bool
	// IsLeader reports whether this node leads now.
	IsLeader() bool
	// Term is the current leadership term: the epoch stamped on every
	// master→agent message and offer, fencing a deposed leader.
	Term() uint64
	// LeaderAddr is the HTTP address (host:port) of the current leader's
	// master, "" if no leader is known.
	LeaderAddr() string
}

// Recoverer is a Registrar whose registry a newly elected master reads
// before serving: Recover commits a barrier and info as the leading
// master, then returns the registry's content.
type Recoverer interface {
	Recover(ctx context.Context, info *mesos.MasterInfo) (*RecoveredRegistry, error)
}

// RecoveredRegistry is what a new leader loads from the registry: the
// replicated part of the master's state. Frameworks and tasks are not in
// it; they come back with re-registering agents and schedulers.
type RecoveredRegistry struct {
	// Agents are the admitted agents' IDs: the new leader expects them to
	// re-register within Config.AgentReregisterTimeout.
	Agents []string
	// Unreachable maps unreachable agents to when they became so.
	Unreachable map[string]time.Time
	// Gone maps removed agents to when they were removed.
	Gone map[string]time.Time
	// Weights are the recorded role weights (roles absent weigh 1).
	Weights map[string]float64
	// Quotas are the recorded quota configurations.
	Quotas []*quotapb.QuotaConfig
	// Schedule is the maintenance schedule (nil: none); Down the machines
	// under maintenance (DOWN).
	Schedule *maintenancepb.Schedule
	Down     []*mesos.MachineID
	// Drains are the drained and deactivated agents (admitted or
	// unreachable) by agent ID.
	Drains map[string]registrar.Drain
	// Principals binds admitted and unreachable agents to the principal
	// they registered as (agents without one are unbound).
	Principals map[string]string
}

// ErrRegistryUnavailable wraps registrar failures that are not about the
// operation itself (a failed or timed-out store write, a registrar that is
// not recovered): the master treats them as a loss of leadership, steps
// down and recovers again.
var ErrRegistryUnavailable = &APIError{Status: http.StatusServiceUnavailable, Message: "the registry is unavailable"}

// notLeader is the refusal of a master that does not lead: 307 to the
// leader when one is known (Location //host:port + the request's path,
// set by the HTTP layer from Leader), 503 otherwise.
func (s *state) notLeader() *APIError {
	if s.leader == nil {
		return &APIError{Status: http.StatusServiceUnavailable, Message: "No leader elected"}
	}
	return &APIError{Status: http.StatusTemporaryRedirect, Message: "This master is not the leader",
		Leader: LeaderHostPort(s.leader)}
}

// LeaderHostPort is "host:port" of a MasterInfo, for redirects: its
// hostname (or IP) and port.
func LeaderHostPort(info *mesos.MasterInfo) string {
	host := info.GetHostname()
	if host == "" {
		host = info.GetAddress().GetIp()
	}
	return net.JoinHostPort(host, strconv.Itoa(int(info.GetPort())))
}

// leaderInfo describes the master at HTTP address addr (host:port) for
// followers' redirects and /master/state's "leader". The registry's
// leading-master record is used when it names that address; otherwise
// the address alone.
func leaderInfo(addr string, recorded *mesos.MasterInfo) *mesos.MasterInfo {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil
	}
	if recorded != nil && int(recorded.GetPort()) == p &&
		(recorded.GetHostname() == host || recorded.GetAddress().GetIp() == host) {
		return recorded
	}
	info := &mesos.MasterInfo{
		Id:       proto.String(""),
		Ip:       proto.Uint32(0),
		Port:     proto.Uint32(uint32(p)),
		Pid:      proto.String("master@" + addr),
		Hostname: proto.String(host),
		Address:  &mesos.Address{Hostname: proto.String(host), Port: proto.Int32(int32(p))},
	}
	if ip := net.ParseIP(host); ip != nil {
		info.Address.Ip = proto.String(host)
		if v4 := ip.To4(); v4 != nil {
			info.Ip = proto.Uint32(uint32(v4[0]) | uint32(v4[1])<<8 | uint32(v4[2])<<16 | uint32(v4[3])<<24)
		}
	}
	return info
}
