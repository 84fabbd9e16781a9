package elastic

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/frameworks/offers"
	"mezzo/internal/clock"
	"mezzo/resources"
	"mezzo/scheduler"
)

var t0 = time.Unix(1_700_000_000, 0)

func offer(agent string, rev string) *mesos.Offer {
	rs := resources.MustParse("cpus:2;mem:1024;ports:[31000-31010]").Proto()
	if rev != "" {
		for _, r := range resources.MustParse(rev).Proto() {
			r.Revocable = &mesos.Resource_RevocableInfo{}
			rs = append(rs, r)
		}
	}
	return &mesos.Offer{
		Id:          &mesos.OfferID{Value: proto.String("o-" + agent)},
		FrameworkId: &mesos.FrameworkID{Value: proto.String("fw")},
		AgentId:     &mesos.AgentID{Value: proto.String(agent)},
		Hostname:    proto.String(agent + ".example"),
		Url:         &mesos.URL{Scheme: proto.String("http"), Address: &mesos.Address{Ip: proto.String("10.0.0." + agent[1:]), Port: proto.Int32(5051)}},
		Resources:   rs,
	}
}

func newTestCore(t *testing.T, revocable bool) *core {
	t.Helper()
	need, err := offers.ParseNeed("cpus:1;mem:128;ports:1")
	if err != nil {
		t.Fatal(err)
	}
	return newCore(need, 100, 1, 4, 10*time.Second, revocable)
}

func running(c *core, r *replica) {
	c.update(&mesos.TaskStatus{TaskId: &mesos.TaskID{Value: proto.String(r.id)}, State: mesos.TaskState_TASK_RUNNING.Enum()}, t0)
}

// The paper's web farm (TR §5.4, §6.5): replicas follow the load, one per
// agent, within [min, max]; fewer are killed only after the load stayed
// low for the scale-down delay, newest first.
func TestScalingFollowsLoad(t *testing.T) {
	c := newTestCore(t, false)
	steps := []struct {
		at      time.Duration
		load    float64
		desired int
		killed  string
	}{
		{0, 0, 1, ""},
		{time.Second, 250, 3, ""},
		{2 * time.Second, 1000, 4, ""}, // capped at max
		{3 * time.Second, 90, 1, ""},   // low: the delay starts
		{12 * time.Second, 90, 1, ""},
		{13 * time.Second, 90, 1, "replica-4 replica-3 replica-2"}, // newest first
	}
	for i, s := range steps {
		kill := c.observe(s.load, t0.Add(s.at))
		var ids []string
		for _, r := range kill {
			ids = append(ids, r.id)
		}
		if c.desired != s.desired || strings.Join(ids, " ") != s.killed {
			t.Fatalf("step %d: desired %d killed %q; want %d, %q", i, c.desired, ids, s.desired, s.killed)
		}
		// Offers from fresh agents fill the gap.
		for a := 0; c.wantsOffers(); a++ {
			r, _ := c.offered(offer(fmt.Sprintf("s%d%d", i, a), ""), t0.Add(s.at))
			if r == nil {
				t.Fatalf("step %d: no replica on a free agent", i)
			}
			running(c, r)
		}
	}
	if got := c.endpoints(); len(got) != 1 || got[0] != "10.0.0.00:31000" {
		t.Fatalf("endpoints %v", got)
	}
}

// At most one replica per agent; an offer too small is declined.
func TestOneReplicaPerAgent(t *testing.T) {
	c := newTestCore(t, false)
	c.observe(400, t0)
	if r, _ := c.offered(offer("s1", ""), t0); r == nil || r.addr != "10.0.0.1:31000" {
		t.Fatalf("first replica %+v", r)
	}
	if r, skip := c.offered(offer("s1", ""), t0); r != nil || !skip {
		t.Fatal("a second replica on the same agent")
	}
	small := offer("s2", "")
	small.Resources = resources.MustParse("cpus:0.5;mem:1024;ports:[31000-31010]").Proto()
	if r, skip := c.offered(small, t0); r != nil || skip {
		t.Fatal("a replica on too small an offer")
	}
}

// With revocable resources allowed, the first min replicas stay regular
// and the rest prefer revocable cpus; scaling down kills revocable ones
// first; a revoked replica counts as lost and is replaced.
func TestRevocableReplicas(t *testing.T) {
	c := newTestCore(t, true)
	c.observe(300, t0)
	var rs []*replica
	for a := 1; c.wantsOffers(); a++ {
		r, _ := c.offered(offer(fmt.Sprintf("s%d", a), "cpus:4"), t0.Add(time.Duration(a)*time.Millisecond))
		running(c, r)
		rs = append(rs, r)
	}
	if len(rs) != 3 || rs[0].revocable || !rs[1].revocable || !rs[2].revocable {
		t.Fatalf("replicas revocable: %v %v %v", rs[0].revocable, rs[1].revocable, rs[2].revocable)
	}
	if rs[1].res.Revocable().Scalar("cpus") != 1 || rs[1].res.NonRevocable().Scalar("mem") != 128 {
		t.Fatalf("revocable replica took %s", rs[1].res)
	}
	// A revocable replica dies (the agent's QoS controller killed it).
	c.update(&mesos.TaskStatus{TaskId: &mesos.TaskID{Value: proto.String(rs[2].id)}, State: mesos.TaskState_TASK_KILLED.Enum()}, t0)
	if c.lost != 1 || c.revoked != 1 || !c.wantsOffers() {
		t.Fatalf("lost %d revoked %d wants %v", c.lost, c.revoked, c.wantsOffers())
	}
	// Its agent is avoided for a while, then usable again.
	if r, skip := c.offered(offer(rs[2].agent, "cpus:4"), t0.Add(time.Second)); r != nil || !skip {
		t.Fatal("a replica went straight back to the agent where one just died")
	}
	r, _ := c.offered(offer("s9", "cpus:4"), t0.Add(time.Second))
	running(c, r)
	c.observe(150, t0.Add(2*time.Second))
	kill := c.observe(150, t0.Add(13*time.Second))
	if len(kill) != 1 || !kill[0].revocable || kill[0].id != r.id {
		t.Fatalf("scale-down killed %v, want the newest revocable %s", kill, r.id)
	}
	running, rev, _ := c.counts()
	if running != 2 || rev != 1 {
		t.Fatalf("running %d revocable %d after the kill was sent", running, rev)
	}
}

func TestMeter(t *testing.T) {
	fc := clock.NewFake(t0)
	m := NewMeter(fc, 5*time.Second)
	for range 50 {
		m.Add(1)
		fc.Advance(100 * time.Millisecond) // 10 per second
	}
	if r := m.Rate(); r < 9.5 || r > 10.5 {
		t.Fatalf("rate %g, want 10", r)
	}
	fc.Advance(10 * time.Second)
	if r := m.Rate(); r != 0 {
		t.Fatalf("rate %g after silence, want 0", r)
	}
}

func TestParseProfile(t *testing.T) {
	p, err := ParseProfile("0-100:10s, 100:5s,100-0:10s")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		at   time.Duration
		want float64
	}{{0, 0}, {5 * time.Second, 50}, {12 * time.Second, 100}, {20 * time.Second, 50}, {30 * time.Second, 0}} {
		if got := p.Rate(c.at); got != c.want {
			t.Errorf("rate at %v = %g, want %g", c.at, got, c.want)
		}
	}
	if p.Length() != 25*time.Second || p.Peak() != 100 {
		t.Fatalf("length %v peak %g", p.Length(), p.Peak())
	}
	for _, bad := range []string{"", "100", "100:0s", "-5:1s", "a-b:1s", "10:soon"} {
		if _, err := ParseProfile(bad); err == nil {
			t.Errorf("ParseProfile(%q) accepted", bad)
		}
	}
}

// The balancer spreads requests over the replicas, answers 503 without
// one, and meters every arrival; the generator's requests all come back.
func TestBalancerAndGenerator(t *testing.T) {
	var eps []string
	for _, name := range []string{"r1", "r2"} {
		srv := httptest.NewServer(ReplicaHandler(name, 0))
		defer srv.Close()
		eps = append(eps, strings.TrimPrefix(srv.URL, "http://"))
	}
	var current []string
	b := NewBalancer(func() []string { return current }, NewMeter(nil, time.Second))
	lb := httptest.NewServer(b)
	defer lb.Close()
	if resp, err := http.Get(lb.URL); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("without replicas: %v %v", resp, err)
	}
	current = eps
	seen := map[string]int{}
	for range 4 {
		resp, err := http.Get(lb.URL)
		if err != nil {
			t.Fatal(err)
		}
		var body [8]byte
		n, _ := resp.Body.Read(body[:])
		resp.Body.Close()
		seen[strings.TrimSpace(string(body[:n]))]++
	}
	if seen["r1"] != 2 || seen["r2"] != 2 {
		t.Fatalf("answers %v, want round-robin", seen)
	}
	prof, _ := ParseProfile("200:250ms")
	res, err := Generate(t.Context(), nil, lb.URL, prof, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent == 0 || res.OK != res.Sent || res.Failed != 0 {
		t.Fatalf("load result %+v", res)
	}
	if served, failed := b.Counts(); served != 4+res.OK || failed != 1 {
		t.Fatalf("balancer counts %d served, %d failed", served, failed)
	}
}

// The master sends revocable resources in offers of their own: a replica
// beyond min takes revocable cpus from one offer and regular memory and
// ports from another offer of the same agent.
func TestRevocableReplicaFromSeparateOffers(t *testing.T) {
	c := newTestCore(t, true)
	c.observe(200, t0)
	n := 0
	for a := 1; c.wantsOffers(); a++ {
		n++
		agent := fmt.Sprintf("s%d", a)
		regular := offer(agent, "")
		slack := offer(agent, "cpus:4")
		slack.Id = &mesos.OfferID{Value: proto.String("rev-" + agent)}
		slack.Resources = slack.Resources[len(regular.Resources):] // the revocable part alone
		gs := scheduler.ByAgent([]*mesos.Offer{regular, slack})
		if len(gs) != 1 || len(gs[0].Offers) != 2 {
			t.Fatalf("groups %v", gs)
		}
		r, _ := c.offeredOn(gs[0].Offers[0], gs[0].Resources, t0.Add(time.Duration(a)*time.Millisecond))
		if r == nil {
			t.Fatalf("no replica on %s", agent)
		}
		running(c, r)
		if a == 2 && (!r.revocable || r.res.Revocable().Scalar("cpus") != 1 || r.res.NonRevocable().Scalar("mem") != 128) {
			t.Fatalf("second replica took %s, want revocable cpus and regular mem", r.res)
		}
	}
	if n != 2 {
		t.Fatalf("%d replicas, want 2", n)
	}
}
