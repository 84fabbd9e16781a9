package elastic

import (
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"time"

	"mezzo/api/mesos"
	"mezzo/frameworks/offers"
	"mezzo/resources"
)

// core is the service's state: its replicas and the scaling policy. It
// takes now and returns decisions; the handler (framework.go) makes the
// calls.
//
// Scaling (the paper's web farm, TR §5.4 and §6.5): every tick the
// observed load sets the replicas wanted, ceil(load / Target) within
// [Min, Max]. More wanted than live: the service asks for offers and
// starts one replica per offer, at most one per agent (the paper's only
// placement constraint). Fewer wanted: once that has held for
// ScaleDownAfter (so a dip does not kill what the next peak needs), the
// surplus is killed, revocable replicas first, then the newest.
//
// Revocable resources (with Revocable set and the REVOCABLE_RESOURCES
// capability): the first Min replicas run on regular resources, so the
// service survives revocation; replicas beyond them prefer revocable
// resources, which may be taken back (the agent's QoS controller kills
// them, or the estimate shrinks): a replica lost that way is replaced
// by the next tick like any other.
type core struct {
	need           offers.Need
	target         float64
	min, max       int
	scaleDownAfter time.Duration
	revocable      bool

	replicas map[string]*replica  // live: launched, not ended, not being killed
	killing  map[string]*replica  // killed by us, end not yet confirmed
	agents   map[string]bool      // agents running one of ours
	avoid    map[string]time.Time // agents where a replica just died, until when
	seq      int
	desired  int
	load     float64
	lowSince time.Time // since when fewer replicas are wanted than live

	launched, lost, revoked int
}

// replica is one instance of the service.
type replica struct {
	id        string
	seq       int
	agent     string
	addr      string // host:port it serves on
	revocable bool
	res       resources.Resources
	state     mesos.TaskState
	launched  time.Time
}

func newCore(need offers.Need, target float64, lo, hi int, scaleDownAfter time.Duration, revocable bool) *core {
	return &core{need: need, target: target, min: lo, max: hi, scaleDownAfter: scaleDownAfter, revocable: revocable,
		desired: lo, replicas: map[string]*replica{}, killing: map[string]*replica{}, agents: map[string]bool{},
		avoid: map[string]time.Time{}}
}

// observe takes the load seen now and returns replicas to kill.
func (c *core) observe(load float64, now time.Time) (kill []*replica) {
	c.load = load
	want := int(math.Ceil(load/c.target - 1e-9))
	c.desired = min(max(want, c.min), c.max)
	live := len(c.replicas)
	if c.desired >= live {
		c.lowSince = time.Time{}
		return nil
	}
	if c.lowSince.IsZero() {
		c.lowSince = now
	}
	if now.Sub(c.lowSince) < c.scaleDownAfter {
		return nil
	}
	c.lowSince = time.Time{}
	order := make([]*replica, 0, live)
	for _, r := range c.replicas {
		order = append(order, r)
	}
	slices.SortFunc(order, func(a, b *replica) int {
		if a.revocable != b.revocable {
			if a.revocable {
				return -1
			}
			return 1
		}
		if d := b.launched.Compare(a.launched); d != 0 {
			return d
		}
		return b.seq - a.seq
	})
	for _, r := range order[:live-c.desired] {
		delete(c.replicas, r.id)
		c.killing[r.id] = r
		kill = append(kill, r)
	}
	return kill
}

// wantsOffers: fewer replicas live than wanted.
func (c *core) wantsOffers() bool { return len(c.replicas) < c.desired }

// regular counts the live replicas on regular resources.
func (c *core) regular() int {
	n := 0
	for _, r := range c.replicas {
		if !r.revocable {
			n++
		}
	}
	return n
}

// avoidFor is how long an agent where a replica died unbidden gets no
// new one, so that a replica that cannot start there (a port taken, a
// missing binary) does not crash-loop on it.
const avoidFor = 10 * time.Second

// offered returns the replica to start on an offer, or nil to decline
// it; skip says the agent is not for us for a while (it runs one of ours,
// or one just died there): decline it with a longer filter.
func (c *core) offered(o *mesos.Offer, now time.Time) (r *replica, skip bool) {
	return c.offeredOn(o, offers.Available(o), now)
}

// offeredOn is offered for all of an agent's offers at once: o is one of
// them (for the agent's ID and address), avail what they hold together.
// The master sends revocable resources in offers of their own, so a
// replica on revocable cpus with regular memory takes from several.
func (c *core) offeredOn(o *mesos.Offer, avail resources.Resources, now time.Time) (r *replica, skip bool) {
	if !c.wantsOffers() {
		return nil, false
	}
	agent := o.GetAgentId().GetValue()
	if c.agents[agent] || now.Before(c.avoid[agent]) {
		return nil, true
	}
	delete(c.avoid, agent)
	rev := offers.NoRevocable
	if c.revocable && c.regular() >= c.min {
		rev = offers.PreferRevocable
	}
	got, _, ok := offers.Take(avail, c.need, rev)
	if !ok {
		return nil, false
	}
	c.seq++
	r = &replica{id: fmt.Sprintf("replica-%d", c.seq), seq: c.seq, agent: agent, res: got, revocable: offers.IsRevocable(got),
		state: mesos.TaskState_TASK_STAGING, launched: now}
	host := o.GetUrl().GetAddress().GetIp()
	if host == "" {
		host = o.GetHostname()
	}
	if ps := offers.Ports(got); len(ps) > 0 {
		r.addr = net.JoinHostPort(host, strconv.FormatUint(ps[0], 10))
	}
	c.replicas[r.id] = r
	c.agents[agent] = true
	c.launched++
	return r, false
}

// update applies a status update to a replica.
func (c *core) update(st *mesos.TaskStatus, now time.Time) {
	id := st.GetTaskId().GetValue()
	r, ours := c.replicas[id], false
	if r == nil {
		r, ours = c.killing[id], true
	}
	if r == nil || mesos.IsTerminal(r.state) {
		return
	}
	r.state = st.GetState()
	if !mesos.IsTerminal(r.state) {
		return
	}
	delete(c.replicas, id)
	delete(c.killing, id)
	delete(c.agents, r.agent)
	if !ours {
		c.lost++
		if r.revocable {
			c.revoked++
		}
		c.avoid[r.agent] = now.Add(avoidFor)
	}
}

// endpoints lists where running replicas serve, sorted.
func (c *core) endpoints() []string {
	var out []string
	for _, r := range c.replicas {
		if r.state == mesos.TaskState_TASK_RUNNING && r.addr != "" {
			out = append(out, r.addr)
		}
	}
	slices.Sort(out)
	return out
}

// counts: running replicas, of them on revocable resources, and their
// cpus.
func (c *core) counts() (running, revocable int, cpus float64) {
	for _, r := range c.replicas {
		if r.state != mesos.TaskState_TASK_RUNNING {
			continue
		}
		running++
		if r.revocable {
			revocable++
		}
		cpus += r.res.Scalar("cpus")
	}
	return running, revocable, cpus
}
