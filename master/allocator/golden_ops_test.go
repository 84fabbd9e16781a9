package allocator

import (
	"fmt"
	"strconv"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/resources"
)

// Golden-transcript commands for offer operations, as the master reports
// them to the allocator. The text syntax has no dynamic reservations or
// volumes, so the commands build them:
//
//	reserve FW AGENT RES ROLE      RES of FW's offer on AGENT reserved to ROLE
//	                               (DYNAMIC, principal "ops"; onto an existing
//	                               reservation it is a refinement)
//	unreserve FW AGENT ROLE        every dynamic reservation of ROLE in the offer
//	                               (not volumes) loses its top reservation
//	create FW AGENT ROLE ID MB [shared]   a volume ID of MB out of disk reserved
//	                               to ROLE (shared: a shared volume)
//	use FW AGENT ID                a task of FW uses one copy of volume ID: the
//	                               copy its offer on AGENT holds, else (the
//	                               offer's copy is used already) the master adds
//	                               one (UpdateAllocation from nothing)
//	release FW AGENT ID            a task using volume ID ended: one copy back
//	destroy FW AGENT ID            volume ID back to plain reserved disk
//	grow|shrink FW AGENT ID MB     volume ID by MB (GROW_VOLUME takes plain disk
//	                               of the volume's reservation; SHRINK_VOLUME
//	                               gives it back)
//	update-allocation FW AGENT FROM TO   raw conversion (text syntax)
//	operator-reserve AGENT RES ROLE      operator RESERVE on unallocated resources
//	                                     (the agent's new total, UpdateAgent)
//	operator-unreserve AGENT ROLE        operator UNRESERVE of ROLE's free dynamic
//	                                     reservations
//	consumption ROLE               the role's quota consumption
//
// The first five call updateAllocation and answer "converted FROM -> TO"
// or "rejected: why"; the framework's outstanding offer holds the new form
// and is what a later decline or accept hands back.
func (h *harness) execOperation(cmd string, args []string) (bool, error) {
	need := func(n int) error {
		if len(args) < n {
			return fmt.Errorf("%s: want %d arguments", cmd, n)
		}
		return nil
	}
	var err error
	switch cmd {
	case "reserve":
		if err = need(4); err != nil {
			return true, err
		}
		var from, to resources.Resources
		if from, err = parseRes(args[2]); err != nil {
			return true, err
		}
		if to, err = from.PushReservation(dynamic(args[3])); err != nil {
			return true, err
		}
		err = h.convert(args[0], args[1], from, to)
	case "unreserve":
		if err = need(3); err != nil {
			return true, err
		}
		err = h.convertEach(args[0], args[1], func(r resources.Resources) (resources.Resources, resources.Resources) {
			from := r.Filter(func(p *mesos.Resource) bool { return topDynamic(p, args[2]) && p.GetDisk().GetPersistence() == nil })
			return from, from.PopReservation()
		})
	case "create":
		if err = need(5); err != nil {
			return true, err
		}
		mb, perr := strconv.ParseFloat(args[4], 64)
		if perr != nil {
			return true, fmt.Errorf("create: size %q: %v", args[4], perr)
		}
		shared := len(args) > 5 && args[5] == "shared"
		err = h.convertEach(args[0], args[1], func(r resources.Resources) (resources.Resources, resources.Resources) {
			return volume(r, args[2], args[3], mb, shared)
		})
	case "use":
		if err = need(3); err != nil {
			return true, err
		}
		err = h.useVolume(args[0], args[1], args[2])
	case "release":
		if err = need(3); err != nil {
			return true, err
		}
		u := nested(h.used, args[0], args[1])
		for _, role := range sortedKeys(u) {
			v := oneCopy(u[role], args[2])
			if v.IsEmpty() {
				continue
			}
			u[role] = u[role].Subtract(v)
			h.c.recoverResources(args[0], args[1], h.tagged(args[0], role, v), nil, h.now)
			return true, nil
		}
		return true, fmt.Errorf("release: %s uses no volume %s on %s", args[0], args[2], args[1])
	case "destroy":
		if err = need(3); err != nil {
			return true, err
		}
		err = h.convertEach(args[0], args[1], func(r resources.Resources) (resources.Resources, resources.Resources) {
			from := r.Filter(func(p *mesos.Resource) bool { return p.GetDisk().GetPersistence().GetId() == args[2] })
			return from, withoutDisk(from)
		})
	case "grow", "shrink":
		if err = need(4); err != nil {
			return true, err
		}
		mb, perr := strconv.ParseFloat(args[3], 64)
		if perr != nil {
			return true, fmt.Errorf("%s: size %q: %v", cmd, args[3], perr)
		}
		err = h.convertEach(args[0], args[1], func(r resources.Resources) (resources.Resources, resources.Resources) {
			return resize(r, args[2], mb, cmd == "grow")
		})
	case "update-allocation":
		if err = need(4); err != nil {
			return true, err
		}
		var from, to resources.Resources
		if from, err = parseRes(args[2]); err != nil {
			return true, err
		}
		if to, err = parseRes(args[3]); err != nil {
			return true, err
		}
		err = h.convert(args[0], args[1], from, to)
	case "operator-reserve":
		if err = need(3); err != nil {
			return true, err
		}
		a := h.c.agents[args[0]]
		if a == nil {
			return true, fmt.Errorf("operator-reserve: no agent %s", args[0])
		}
		var r, to resources.Resources
		if r, err = parseRes(args[1]); err != nil {
			return true, err
		}
		if !a.free.Contains(r) {
			return true, fmt.Errorf("operator-reserve: %s is not free on %s (free %s)", r, a.id, a.free)
		}
		if to, err = r.PushReservation(dynamic(args[2])); err != nil {
			return true, err
		}
		h.c.updateAgent(a.id, nil, a.total.Subtract(r).Add(to))
		h.say("total %s", a.total)
	case "operator-unreserve":
		if err = need(2); err != nil {
			return true, err
		}
		a := h.c.agents[args[0]]
		if a == nil {
			return true, fmt.Errorf("operator-unreserve: no agent %s", args[0])
		}
		from := a.free.Filter(func(p *mesos.Resource) bool { return topDynamic(p, args[1]) && p.GetDisk().GetPersistence() == nil })
		h.c.updateAgent(a.id, nil, a.total.Subtract(from).Add(from.PopReservation()))
		h.say("total %s", a.total)
	case "consumption":
		if err = need(1); err != nil {
			return true, err
		}
		qr := h.c.newQuotaRun(h.c.agentList)
		h.say("%s consumes %s", args[0], h.c.names.format(qr.consumption(args[0])))
	default:
		return false, nil
	}
	return true, err
}

// dynamic is the reservation the transcripts' operations make.
func dynamic(role string) *mesos.Resource_ReservationInfo {
	return &mesos.Resource_ReservationInfo{
		Type:      mesos.Resource_ReservationInfo_DYNAMIC.Enum(),
		Role:      proto.String(role),
		Principal: proto.String("ops"),
	}
}

// topDynamic reports whether p's top reservation is a dynamic one of role.
func topDynamic(p *mesos.Resource, role string) bool {
	rs := p.GetReservations()
	return len(rs) > 0 && rs[len(rs)-1].GetType() == mesos.Resource_ReservationInfo_DYNAMIC && rs[len(rs)-1].GetRole() == role
}

// volume carves a persistent volume id of mb out of r's disk reserved to
// role (without disk info): from is that much plain reserved disk, to the
// volume.
func volume(r resources.Resources, role, id string, mb float64, shared bool) (from, to resources.Resources) {
	for _, p := range r.Proto() {
		if p.GetName() != "disk" || p.GetDisk() != nil || reservationRole(p) != role || p.GetScalar().GetValue() < mb {
			continue
		}
		p.Scalar.Value = proto.Float64(mb)
		f, err := resources.New(p)
		if err != nil {
			continue
		}
		v := proto.Clone(p).(*mesos.Resource)
		v.Disk = &mesos.Resource_DiskInfo{
			Persistence: &mesos.Resource_DiskInfo_Persistence{Id: proto.String(id), Principal: proto.String("ops")},
			Volume:      &mesos.Volume{ContainerPath: proto.String(id), Mode: mesos.Volume_RW.Enum()},
		}
		if shared {
			v.Shared = &mesos.Resource_SharedInfo{}
		}
		t, err := resources.New(v)
		if err != nil {
			continue
		}
		return f, t
	}
	return resources.Resources{}, resources.Resources{}
}

// resize is GROW_VOLUME (grow) or SHRINK_VOLUME of volume id in r by
// mb: grow converts the volume plus mb of plain disk with the same
// reservations into the larger volume; shrink the reverse. Nothing if r
// lacks the volume (or, to grow, the disk; to shrink, the size).
func resize(r resources.Resources, id string, mb float64, grow bool) (from, to resources.Resources) {
	var vol *mesos.Resource
	for _, p := range r.Proto() {
		if p.GetDisk().GetPersistence().GetId() == id {
			vol = p
		}
	}
	if vol == nil || (!grow && vol.GetScalar().GetValue() <= mb) {
		return resources.Resources{}, resources.Resources{}
	}
	plain := proto.Clone(vol).(*mesos.Resource)
	plain.Disk = nil
	plain.Scalar.Value = proto.Float64(mb)
	resized := proto.Clone(vol).(*mesos.Resource)
	if grow {
		resized.Scalar.Value = proto.Float64(vol.GetScalar().GetValue() + mb)
	} else {
		resized.Scalar.Value = proto.Float64(vol.GetScalar().GetValue() - mb)
	}
	v, e1 := resources.New(vol)
	d, e2 := resources.New(plain)
	n, e3 := resources.New(resized)
	if e1 != nil || e2 != nil || e3 != nil {
		return resources.Resources{}, resources.Resources{}
	}
	if grow {
		if !r.Contains(v.Add(d)) {
			return resources.Resources{}, resources.Resources{}
		}
		return v.Add(d), n
	}
	return v, n.Add(d)
}

// withoutDisk strips disk info and sharing (DESTROY).
func withoutDisk(r resources.Resources) resources.Resources {
	ps := r.Proto()
	for _, p := range ps {
		p.Disk, p.Shared = nil, nil
	}
	out, err := resources.New(ps...)
	if err != nil {
		return resources.Resources{}
	}
	return out
}

// convert applies from → to to fw's offer on agent (in the role whose
// offer holds from; the first role if none does, to show the rejection).
func (h *harness) convert(fw, agent string, from, to resources.Resources) error {
	byRole := nested(h.outstanding, fw, agent)
	roles := sortedKeys(byRole)
	if len(roles) == 0 {
		return fmt.Errorf("%s has no offer on %s", fw, agent)
	}
	role := roles[0]
	for _, rn := range roles {
		if byRole[rn].Contains(from) {
			role = rn
			break
		}
	}
	return h.convertIn(fw, agent, role, from, to)
}

// convertEach applies the conversion pick chooses in each role's offer
// of fw on agent (those where it chooses something).
func (h *harness) convertEach(fw, agent string, pick func(resources.Resources) (from, to resources.Resources)) error {
	byRole := nested(h.outstanding, fw, agent)
	done := false
	for _, rn := range sortedKeys(byRole) {
		from, to := pick(byRole[rn])
		if from.IsEmpty() {
			continue
		}
		if err := h.convertIn(fw, agent, rn, from, to); err != nil {
			return err
		}
		done = true
	}
	if !done {
		return fmt.Errorf("nothing in %s's offer on %s to convert", fw, agent)
	}
	return nil
}

func (h *harness) convertIn(fw, agent, role string, from, to resources.Resources) error {
	before := h.c.updatesRejected
	h.c.updateAllocation(fw, agent, h.tagged(fw, role, from), h.tagged(fw, role, to))
	if h.c.updatesRejected != before {
		h.say("rejected: %s", h.c.lastRejected)
		return nil
	}
	byRole := nested(h.outstanding, fw, agent)
	byRole[role] = byRole[role].Subtract(from).Add(to)
	h.say("converted %s -> %s", from, to)
	return nil
}

// oneCopy returns one copy of volume id from r (empty if r has none).
func oneCopy(r resources.Resources, id string) resources.Resources {
	for _, p := range r.Proto() {
		if p.GetDisk().GetPersistence().GetId() == id {
			v, err := resources.New(p)
			if err == nil {
				return v
			}
		}
	}
	return resources.Resources{}
}

// useVolume is the "use" command: a task takes a copy of volume id from
// fw's offer on agent, or, once the offer's copy is taken (a second task of
// the same ACCEPT), the master adds a copy to the allocation.
func (h *harness) useVolume(fw, agent, id string) error {
	byRole := nested(h.outstanding, fw, agent)
	u := nested(h.used, fw, agent)
	for _, role := range sortedKeys(byRole) {
		v := oneCopy(byRole[role], id)
		if v.IsEmpty() {
			continue
		}
		byRole[role] = byRole[role].Subtract(v)
		u[role] = u[role].Add(v)
		h.say("uses offered %s", v)
		return nil
	}
	for _, role := range sortedKeys(u) {
		v := oneCopy(u[role], id)
		if v.IsEmpty() {
			continue
		}
		before := h.c.updatesRejected
		h.c.updateAllocation(fw, agent, resources.Resources{}, h.tagged(fw, role, v))
		if h.c.updatesRejected != before {
			h.say("rejected: %s", h.c.lastRejected)
			return nil
		}
		u[role] = u[role].Add(v)
		h.say("added copy %s", v)
		return nil
	}
	return fmt.Errorf("use: %s holds no volume %s on %s", fw, id, agent)
}
