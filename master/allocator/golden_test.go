package allocator

import (
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/internal/transcript"
	"mezzo/resources"
)

var update = flag.Bool("update", false, "rewrite golden transcripts in testdata")

// A golden transcript is a list of commands, one per line, each followed by
// the allocator's answer on lines starting with "> ". The test replays the
// commands against a core with a fake time and compares the whole
// transcript; go test -run Golden -update rewrites the files.
//
// Commands:
//
//	option interval=1s min=cpus:0.01|mem:32 order=drf|priority|lottery revoke idle-reservations
//	weights ROLE=W ...
//	quota ROLE [guarantee=RES] [limit=RES]
//	add-agent ID RES [used=FW:RES]... [attr=NAME:VALUE]... [region=R zone=Z]
//	remove-agent|activate-agent|deactivate-agent ID
//	update-agent ID RES
//	oversubscribed ID RES            (RES made revocable with throttle_info, as the master does)
//	add-framework ID [role=R] [roles=R1,R2 (MULTI_ROLE)] [caps=C1,C2] [inactive] [suppressed=R1,R2]
//	remove-framework|activate-framework|deactivate-framework ID
//	update-framework ID [role=...] [roles=...] [caps=...] [suppressed=...]
//	suppress|revive FW [ROLE...]
//	request FW [ROLE RES [agent=ID]]...   (a REQUEST call; none: asks for nothing)
//	allocate                          (one run at the current time)
//	advance DURATION
//	decline FW AGENT [refuse=SECONDS] (everything outstanding on AGENT)
//	accept FW AGENT RES [refuse=SECONDS]  (RES used, the rest declined)
//	finish FW AGENT RES               (used RES recovered, no filter)
//	explain FW
//	state                             (offered or allocated per agent and framework)
//
// the offer filter and constraint commands of golden_offerfilters_test.go
// (offer-filters, constraints), the maintenance commands of golden_maint_test.go (unavailability,
// inverse-answer, inverse-rescind), and the offer operations of golden_ops_test.go (reserve, unreserve,
// create, destroy, update-allocation, operator-reserve, operator-unreserve,
// consumption).
type harness struct {
	t           *testing.T
	c           *core
	now         time.Time
	opts        Options
	outstanding map[string]map[string]map[string]resources.Resources // fw → agent → role → offered
	used        map[string]map[string]map[string]resources.Resources // fw → agent → role → in use
	out         []string
}

func newHarness(t *testing.T) *harness {
	h := &harness{
		t:           t,
		now:         time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		opts:        Options{Offer: func(string, Offers) {}, Interval: time.Second},
		outstanding: map[string]map[string]map[string]resources.Resources{},
		used:        map[string]map[string]map[string]resources.Resources{},
	}
	h.c = newCore(h.opts)
	return h
}

func (h *harness) say(format string, args ...any) {
	h.out = append(h.out, "> "+fmt.Sprintf(format, args...))
}

func parseRes(s string) (resources.Resources, error) {
	rev := false
	if strings.HasPrefix(s, "rev:") {
		rev, s = true, s[4:]
	}
	r, err := resources.Parse(s, "*")
	if err != nil || !rev {
		return r, err
	}
	ps := r.Proto()
	for _, p := range ps {
		p.Revocable = &mesos.Resource_RevocableInfo{}
	}
	return resources.New(ps...)
}

func parseQuantities(s string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, kv := range strings.Split(s, ";") {
		k, v, ok := strings.Cut(kv, ":")
		if !ok {
			return nil, fmt.Errorf("quantity %q: want name:value", kv)
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("quantity %q: %v", kv, err)
		}
		out[k] = x
	}
	return out, nil
}

// kv splits "k=v" arguments; bare words map to "".
func kv(args []string) map[string]string {
	m := map[string]string{}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		m[k] = v
	}
	return m
}

func list(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func frameworkInfo(args map[string]string) *mesos.FrameworkInfo {
	info := &mesos.FrameworkInfo{User: proto.String("u"), Name: proto.String("f")}
	if r, ok := args["role"]; ok {
		info.Role = proto.String(r)
	}
	caps := list(args["caps"])
	if rs, ok := args["roles"]; ok {
		info.Roles = list(rs)
		caps = append(caps, "MULTI_ROLE")
	}
	for _, c := range caps {
		t := mesos.FrameworkInfo_Capability_Type(mesos.FrameworkInfo_Capability_Type_value[c])
		info.Capabilities = append(info.Capabilities, &mesos.FrameworkInfo_Capability{Type: t.Enum()})
	}
	return info
}

func (h *harness) multiRole(fw string) bool {
	f := h.c.frameworks[fw]
	return f != nil && hasCapability(f.info, mesos.FrameworkInfo_Capability_MULTI_ROLE)
}

// tagged returns r as the master would pass it back: with allocation info
// for MULTI_ROLE frameworks.
func (h *harness) tagged(fw, role string, r resources.Resources) resources.Resources {
	if h.multiRole(fw) {
		return r.AllocatedTo(role)
	}
	return r
}

func nested(m map[string]map[string]map[string]resources.Resources, fw, agent string) map[string]resources.Resources {
	if m[fw] == nil {
		m[fw] = map[string]map[string]resources.Resources{}
	}
	if m[fw][agent] == nil {
		m[fw][agent] = map[string]resources.Resources{}
	}
	return m[fw][agent]
}

func filtersOf(args map[string]string) (*mesos.Filters, error) {
	s, ok := args["refuse"]
	if !ok {
		return nil, nil
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("refuse=%q: %v", s, err)
	}
	return &mesos.Filters{RefuseSeconds: proto.Float64(x)}, nil
}

func (h *harness) exec(line string) error {
	fields := strings.Fields(line)
	cmd, args := fields[0], fields[1:]
	need := func(n int) error {
		if len(args) < n {
			return fmt.Errorf("%s: want at least %d arguments", cmd, n)
		}
		return nil
	}
	switch cmd {
	case "option":
		for k, v := range kv(args) {
			switch k {
			case "interval":
				d, err := time.ParseDuration(v)
				if err != nil {
					return err
				}
				h.opts.Interval = d
			case "min":
				h.opts.MinAllocatable = nil
				for _, alt := range strings.Split(v, "|") {
					m, err := parseQuantities(alt)
					if err != nil {
						return err
					}
					h.opts.MinAllocatable = append(h.opts.MinAllocatable, m)
				}
			case "revoke":
				h.opts.Revoke = func(string, string, resources.Resources) {}
			case "idle-reservations":
				h.opts.OfferIdleReservations = true
			case "order":
			default:
				return fmt.Errorf("option %q unknown", k)
			}
		}
		order := h.c.order
		h.c = newCore(h.opts)
		switch kv(args)["order"] {
		case "priority":
			order = orderPriority
		case "lottery":
			order = orderLottery
		case "drf":
			order = orderDRF
		}
		h.c.order = order
	case "weights":
		w := map[string]float64{}
		for k, v := range kv(args) {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return err
			}
			w[k] = x
		}
		h.c.updateWeights(w)
	case "quota":
		if err := need(1); err != nil {
			return err
		}
		var q Quota
		a := kv(args[1:])
		var err error
		if g, ok := a["guarantee"]; ok {
			if q.Guarantees, err = parseQuantities(g); err != nil {
				return err
			}
		}
		if l, ok := a["limit"]; ok {
			if q.Limits, err = parseQuantities(l); err != nil {
				return err
			}
		}
		h.c.updateQuota(args[0], q)
	case "add-agent":
		if err := need(2); err != nil {
			return err
		}
		total, err := parseRes(args[1])
		if err != nil {
			return err
		}
		used := map[string]resources.Resources{}
		attrs := map[string]string{}
		var region, zone string
		for _, a := range args[2:] {
			if v, ok := strings.CutPrefix(a, "attr="); ok {
				k, x, _ := strings.Cut(v, ":")
				attrs[k] = x
				continue
			}
			if v, ok := strings.CutPrefix(a, "region="); ok {
				region = v
				continue
			}
			if v, ok := strings.CutPrefix(a, "zone="); ok {
				zone = v
				continue
			}
			v, ok := strings.CutPrefix(a, "used=")
			if !ok {
				return fmt.Errorf("add-agent: unexpected %q", a)
			}
			fw, rs, _ := strings.Cut(v, ":")
			r, err := parseRes(rs)
			if err != nil {
				return err
			}
			used[fw] = r
		}
		h.c.addAgent(args[0], agentInfo(args[0], attrs, region, zone), total, used)
	case "remove-agent":
		h.c.removeAgent(args[0])
		for _, byAgent := range h.outstanding {
			delete(byAgent, args[0])
		}
	case "activate-agent":
		h.c.activateAgent(args[0])
	case "deactivate-agent":
		h.c.deactivateAgent(args[0])
	case "update-agent":
		r, err := parseRes(args[1])
		if err != nil {
			return err
		}
		h.c.updateAgent(args[0], nil, r)
	case "oversubscribed":
		r, err := resources.Parse(args[1], "*")
		if err != nil {
			return err
		}
		// As the master passes an agent's UPDATE_RESOURCES estimate:
		// throttle-able slack.
		h.c.updateOversubscribed(args[0], r.AsThrottleable())
	case "add-framework":
		a := kv(args[1:])
		_, inactive := a["inactive"]
		h.c.addFramework(args[0], frameworkInfo(a), nil, !inactive, FrameworkOptions{SuppressedRoles: list(a["suppressed"])})
	case "update-framework":
		a := kv(args[1:])
		h.c.updateFramework(args[0], frameworkInfo(a), FrameworkOptions{SuppressedRoles: list(a["suppressed"])})
	case "remove-framework":
		h.c.removeFramework(args[0])
		delete(h.outstanding, args[0])
	case "activate-framework":
		h.c.activateFramework(args[0])
	case "deactivate-framework":
		h.c.deactivateFramework(args[0])
	case "suppress":
		h.c.suppressOffers(args[0], args[1:])
	case "revive":
		h.c.reviveOffers(args[0], args[1:])
	case "request":
		// request FW ROLE RES [agent=ID] ...: one REQUEST call whose
		// requests are the ROLE RES [agent=ID] groups; no groups asks for
		// nothing.
		var reqs []Request
		for rest := args[1:]; len(rest) > 0; {
			if len(rest) < 2 {
				return fmt.Errorf("request: want ROLE RES, got %q", rest)
			}
			r, err := parseRes(rest[1])
			if err != nil {
				return err
			}
			req := Request{Role: rest[0], Resources: r}
			rest = rest[2:]
			if len(rest) > 0 && strings.HasPrefix(rest[0], "agent=") {
				req.AgentID, rest = strings.TrimPrefix(rest[0], "agent="), rest[1:]
			}
			reqs = append(reqs, req)
		}
		h.c.requestResources(args[0], reqs)
	case "advance":
		d, err := time.ParseDuration(args[0])
		if err != nil {
			return err
		}
		h.now = h.now.Add(d)
	case "allocate":
		res := h.c.allocate(h.now)
		h.report(res)
	case "decline":
		if err := need(2); err != nil {
			return err
		}
		f, err := filtersOf(kv(args[2:]))
		if err != nil {
			return err
		}
		byRole := nested(h.outstanding, args[0], args[1])
		for _, role := range sortedKeys(byRole) {
			h.c.recoverResources(args[0], args[1], h.tagged(args[0], role, byRole[role]), f, h.now)
		}
		delete(h.outstanding[args[0]], args[1])
	case "accept":
		if err := need(3); err != nil {
			return err
		}
		use, err := parseRes(args[2])
		if err != nil {
			return err
		}
		f, err := filtersOf(kv(args[3:]))
		if err != nil {
			return err
		}
		byRole := nested(h.outstanding, args[0], args[1])
		for _, role := range sortedKeys(byRole) {
			offered := byRole[role]
			part := intersect(offered, use)
			use = use.Subtract(part)
			if !part.IsEmpty() {
				u := nested(h.used, args[0], args[1])
				u[role] = u[role].Add(part)
			}
			if rest := offered.Subtract(part); !rest.IsEmpty() {
				h.c.recoverResources(args[0], args[1], h.tagged(args[0], role, rest), f, h.now)
			}
		}
		if !use.IsEmpty() {
			return fmt.Errorf("accept: %s was not offered", use)
		}
		delete(h.outstanding[args[0]], args[1])
	case "finish":
		r, err := parseRes(args[2])
		if err != nil {
			return err
		}
		u := nested(h.used, args[0], args[1])
		for _, role := range sortedKeys(u) {
			part := intersect(u[role], r)
			if part.IsEmpty() {
				continue
			}
			u[role] = u[role].Subtract(part)
			r = r.Subtract(part)
			h.c.recoverResources(args[0], args[1], h.tagged(args[0], role, part), nil, h.now)
		}
	case "explain":
		ex := h.c.explain(args[0], h.now)
		for _, r := range ex.Roles {
			line := fmt.Sprintf("%s %s: eligible=%d filtered=%d nothing_free=%d below_min=%d over_limit=%d gpu=%d", r.Role, r.Reason,
				r.Agents.Eligible, r.Agents.Filtered, r.Agents.NothingFree, r.Agents.BelowMinAllocatable, r.Agents.OverQuotaLimit, r.Agents.GPUAgent)
			if r.Agents.OfferConstraints > 0 {
				line += fmt.Sprintf(" constraints=%d", r.Agents.OfferConstraints)
			}
			h.say("%s", line)
		}
	case "state":
		for _, a := range h.c.agentList {
			if a.shared.IsEmpty() {
				h.say("agent %s free %s", a.id, h.c.names.format(a.freeQ))
			} else {
				h.say("agent %s free %s shared %s", a.id, h.c.names.format(a.freeQ), a.shared)
			}
			for _, x := range a.alloc.sorted() {
				h.say("  %s %s %s", x.fw, x.role, x.res)
			}
			for _, x := range a.revAlloc.sorted() {
				h.say("  %s %s %s", x.fw, x.role, x.res)
			}
		}
		for _, rn := range sortedKeys(h.c.roles) {
			h.say("role %s share %.4f", rn, dominant(h.c.tree[rn].alloc, h.c.totalQ))
		}
	default:
		if ok, err := h.execMaintenance(cmd, args); ok {
			return err
		}
		if ok, err := h.execOperation(cmd, args); ok {
			return err
		}
		if ok, err := h.execOfferFilters(cmd, args); ok {
			return err
		}
		return fmt.Errorf("unknown command %q", cmd)
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func (h *harness) report(res runResult) {
	if len(res.offers) == 0 && len(res.rescinds) == 0 && len(res.revokes) == 0 && len(res.inverse) == 0 {
		h.say("nothing")
	}
	for _, fid := range sortedKeys(res.offers) {
		for _, role := range sortedKeys(res.offers[fid]) {
			for _, aid := range sortedKeys(res.offers[fid][role]) {
				r := res.offers[fid][role][aid]
				h.say("offer %s %s %s %s", fid, role, aid, r)
				byRole := nested(h.outstanding, fid, aid)
				byRole[role] = byRole[role].Add(r)
			}
		}
	}
	for _, r := range res.rescinds {
		h.say("rescind %s %s %s", r.framework, r.agent, r.res)
	}
	for _, r := range res.revokes {
		h.say("revoke %s %s %s", r.framework, r.agent, r.res)
	}
	for _, fid := range sortedKeys(res.inverse) {
		for _, aid := range sortedKeys(res.inverse[fid]) {
			u := res.inverse[fid][aid]
			h.say("inverse-offer %s %s start=%s duration=%s", fid, aid,
				time.Unix(0, u.GetStart().GetNanoseconds()).UTC().Format(time.RFC3339),
				time.Duration(u.GetDuration().GetNanoseconds()))
		}
	}
}

func TestGolden(t *testing.T) {
	transcript.Run(t, "testdata/*.txt", *update, func(t *testing.T) transcript.Exec {
		h := newHarness(t)
		return func(line string) ([]string, error) {
			h.out = nil
			err := h.exec(line)
			return h.out, err
		}
	})
}
