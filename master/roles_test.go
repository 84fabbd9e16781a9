package master

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/protocol"
	"mezzo/api/quotapb"
	"mezzo/api/schedulerpb"
	"mezzo/internal/clock"
	"mezzo/master/allocator"
	"mezzo/resources"
)

// The harness's registrar gains the weights and quota writes here (methods
// may live in any file of the package), held like the others.

func (h *heldRegistrar) UpdateWeights(ws []*mesos.WeightInfo, done func(error)) {
	h.do(func(d func(error)) { h.inner.UpdateWeights(ws, d) }, done)
}

func (h *heldRegistrar) UpdateQuota(cs []*quotapb.QuotaConfig, done func(error)) {
	h.do(func(d func(error)) { h.inner.UpdateQuota(cs, d) }, done)
}

// rolesAllocator records what the master tells the allocator about
// weights and quota (the harness's recorder ignores those calls).
type rolesAllocator struct {
	*recordingAllocator
	mu      sync.Mutex
	weights []map[string]float64
	quotas  []string
}

func (r *rolesAllocator) UpdateWeights(w map[string]float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.weights = append(r.weights, w)
}

func (r *rolesAllocator) UpdateQuota(role string, q allocator.Quota) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.quotas = append(r.quotas, fmt.Sprintf("%s g=%v l=%v", role, q.Guarantees, q.Limits))
}

func newRolesHarness(t *testing.T, mod ...func(*Config)) (*harness, *rolesAllocator) {
	h := newHarness(t, mod...)
	ra := &rolesAllocator{recordingAllocator: h.alloc}
	h.s.alloc = ra
	return h, ra
}

// result captures a finish callback.
type result struct {
	done bool
	err  error
}

func (r *result) finish(err error) { r.done, r.err = true, err }

func weightInfo(role string, w float64) *mesos.WeightInfo {
	return &mesos.WeightInfo{Role: proto.String(role), Weight: proto.Float64(w)}
}

func scalars(kv ...any) map[string]*mesos.Value_Scalar {
	m := map[string]*mesos.Value_Scalar{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = &mesos.Value_Scalar{Value: proto.Float64(kv[i+1].(float64))}
	}
	return m
}

func quotaConfig(role string, guarantees, limits map[string]*mesos.Value_Scalar) *quotapb.QuotaConfig {
	return &quotapb.QuotaConfig{Role: proto.String(role), Guarantees: guarantees, Limits: limits}
}

func roleView(s *Snapshot, name string) *RoleView {
	for _, r := range s.Roles {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// Weights are written through the registrar and applied (state, snapshot,
// allocator) only once the write completes.
func TestUpdateWeightsAppliedOnlyAfterRegistrar(t *testing.T) {
	h, ra := newRolesHarness(t, func(c *Config) { c.Weights = map[string]float64{"ops": 3} })
	if w := h.s.snapshot(h.now).Weights; w["ops"] != 3 {
		t.Fatalf("initial weights = %v, want ops=3", w)
	}
	h.reg.hold = true
	infos, err := ValidateWeightInfos([]*mesos.WeightInfo{weightInfo(" eng ", 2.5)})
	if err != nil {
		t.Fatal(err)
	}
	var res result
	h.s.updateWeights(infos, res.finish)
	h.settle()
	if res.done || h.s.weight("eng") != 1 || len(ra.weights) != 0 || h.reg.inner.Weights()["eng"] != 0 {
		t.Fatalf("weights applied before the registrar write completed: done=%v weight=%v alloc=%v", res.done, h.s.weight("eng"), ra.weights)
	}
	h.reg.release()
	h.settle()
	if !res.done || res.err != nil {
		t.Fatalf("finish = %+v", res)
	}
	if h.s.weight("eng") != 2.5 || h.reg.inner.Weights()["eng"] != 2.5 {
		t.Fatalf("weight eng = %v (registry %v), want 2.5", h.s.weight("eng"), h.reg.inner.Weights())
	}
	if len(ra.weights) != 1 || ra.weights[0]["eng"] != 2.5 || len(ra.weights[0]) != 1 {
		t.Fatalf("allocator told %v, want [{eng:2.5}]", ra.weights)
	}
	snap := h.s.snapshot(h.now)
	if snap.Weights["eng"] != 2.5 || snap.Weights["ops"] != 3 {
		t.Fatalf("snapshot weights = %v", snap.Weights)
	}
	if r := roleView(snap, "eng"); r == nil || r.Weight != 2.5 || r.Quota == nil || r.Quota.HasQuota() {
		t.Fatalf("role view eng = %+v", r)
	}
}

// Updating the weight of a role with frameworks rescinds outstanding offers.
func TestUpdateWeightsRescindsOffers(t *testing.T) {
	h, _ := newRolesHarness(t)
	a := h.addAgent("a1", "cpus:4;mem:1024")
	info := fwInfo("fw")
	info.Role = proto.String("eng")
	f := h.subscribe(info)
	h.offer(f, a, "eng", "cpus:4;mem:1024")
	var res result
	h.s.updateWeights([]*mesos.WeightInfo{weightInfo("other", 2)}, res.finish)
	h.settle()
	if len(h.s.offers) != 1 {
		t.Fatal("weights of a role without frameworks rescinded offers")
	}
	h.s.updateWeights([]*mesos.WeightInfo{weightInfo("eng", 2)}, res.finish)
	h.settle()
	if len(h.s.offers) != 0 {
		t.Fatal("offers not rescinded after a weight change of an active role")
	}
	var rescinds int
	for _, ev := range f.drain() {
		if ev.GetType() == schedulerpb.Event_RESCIND {
			rescinds++
		}
	}
	if rescinds != 1 {
		t.Fatalf("framework got %d RESCIND events, want 1", rescinds)
	}
}

func TestValidateWeightInfos(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   *mesos.WeightInfo
		want string // substring of the error; "" means valid
	}{
		{"ok", weightInfo("eng/web", 2), ""},
		{"star", weightInfo("*", 0.5), ""},
		{"no role", &mesos.WeightInfo{Weight: proto.Float64(1)}, "weight_infos[0].role"},
		{"bad role", weightInfo("eng//web", 1), "weight_infos[0].role 'eng//web'"},
		{"dot", weightInfo("..", 1), "weight_infos[0].role"},
		{"zero", weightInfo("eng", 0), "weight_infos[0].weight for role 'eng'"},
		{"negative", weightInfo("eng", -1), "must be positive"},
		{"nan", weightInfo("eng", math.NaN()), "weight_infos[0].weight"},
		{"inf", weightInfo("eng", math.Inf(1)), "weight_infos[0].weight"},
		{"null", nil, "weight_infos[0]: null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ValidateWeightInfos([]*mesos.WeightInfo{tc.in})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			var ae *APIError
			if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || !strings.Contains(ae.Message, tc.want) {
				t.Fatalf("error = %v, want 400 containing %q", err, tc.want)
			}
		})
	}
}

func TestConfigWeightsValidated(t *testing.T) {
	for _, w := range []map[string]float64{{"a b": 1}, {"eng": 0}, {"eng": math.NaN()}} {
		c := Config{Weights: w}
		if err := c.validate(); err == nil || !strings.Contains(err.Error(), "Config.Weights") {
			t.Errorf("Weights %v: error %v, want one naming Config.Weights", w, err)
		}
	}
}

// A failed registrar write applies nothing and answers 503.
type failingRegistrar struct{ Registrar }

// Its completions run before the call returns, which the harness allows
// (they only post to the loop), so the test needs no waiting.
func (failingRegistrar) UpdateWeights(_ []*mesos.WeightInfo, done func(error)) {
	done(errors.New("disk on fire"))
}

func (failingRegistrar) UpdateQuota(_ []*quotapb.QuotaConfig, done func(error)) {
	done(errors.New("disk on fire"))
}

func TestRolesRegistrarFailure(t *testing.T) {
	h, ra := newRolesHarness(t)
	h.s.reg = failingRegistrar{h.reg}
	var errs []error
	h.s.updateWeights([]*mesos.WeightInfo{weightInfo("eng", 2)}, func(err error) { errs = append(errs, err) })
	h.s.updateQuota([]*quotapb.QuotaConfig{quotaConfig("eng", nil, scalars("cpus", 1.0))}, true, func(err error) { errs = append(errs, err) })
	h.settle()
	if len(errs) != 2 {
		t.Fatalf("%d answers, want 2", len(errs))
	}
	for _, err := range errs {
		var ae *APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || !strings.Contains(ae.Message, "disk on fire") {
			t.Fatalf("error = %v, want 503 naming the registrar's error", err)
		}
	}
	if h.s.weight("eng") != 1 || len(h.s.rolesState().quotas) != 0 || len(ra.weights)+len(ra.quotas) != 0 {
		t.Fatal("a failed write was applied")
	}
}

// UPDATE_QUOTA goes through the registrar, then reaches the allocator and
// the snapshot; a later change waits for the one in flight.
func TestUpdateQuotaFlowAndSerialization(t *testing.T) {
	h, ra := newRolesHarness(t)
	h.addAgent("a1", "cpus:8;mem:8192")
	h.reg.hold = true
	var r1, r2 result
	h.s.updateQuota([]*quotapb.QuotaConfig{quotaConfig("dev", scalars("cpus", 2.0), scalars("cpus", 4.0, "mem", 2048.0))}, false, r1.finish)
	// A second request that fits the cluster alone (7 ≤ 8 cpus) but not
	// with the first (2 + 7): it must wait for the first and then fail.
	h.s.updateQuota([]*quotapb.QuotaConfig{quotaConfig("test", scalars("cpus", 7.0), nil)}, false, r2.finish)
	h.settle()
	if len(h.reg.held) != 1 {
		t.Fatalf("%d registrar writes in flight, want 1 (changes are serialized)", len(h.reg.held))
	}
	if r1.done || r2.done || len(ra.quotas) != 0 || roleView(h.s.snapshot(h.now), "dev") != nil {
		t.Fatal("quota applied or answered before the registrar write completed")
	}
	h.reg.release()
	h.settle()
	if !r1.done || r1.err != nil {
		t.Fatalf("r1 = %+v", r1)
	}
	if ae, ok := r2.err.(*APIError); !r2.done || !ok || ae.Status != 400 || !strings.Contains(ae.Message, "exceed cluster capacity") {
		t.Fatalf("r2 = %+v, want 400 overcommit (validated after the first was applied)", r2)
	}
	if len(h.reg.held) != 0 {
		t.Fatal("a refused change reached the registrar")
	}
	if len(ra.quotas) != 1 || ra.quotas[0] != "dev g=map[cpus:2] l=map[cpus:4 mem:2048]" {
		t.Fatalf("allocator told %q", ra.quotas)
	}
	v := roleView(h.s.snapshot(h.now), "dev")
	if v == nil || !v.Quota.HasQuota() || v.Quota.Guarantees["cpus"] != 2 || v.Quota.Limits["mem"] != 2048 {
		t.Fatalf("dev role view = %+v", v)
	}
	// Forced, the overcommit is accepted.
	var r3 result
	h.reg.hold = false
	h.s.updateQuota([]*quotapb.QuotaConfig{quotaConfig("more", scalars("cpus", 7.0), nil)}, true, r3.finish)
	h.settle()
	if r3.err != nil {
		t.Fatalf("forced overcommit: %v", r3.err)
	}
	// An empty config removes the quota.
	h.s.updateQuota([]*quotapb.QuotaConfig{quotaConfig("more", nil, nil)}, false, r3.finish)
	h.settle()
	if r3.err != nil || h.s.rolesState().quotas["more"] != nil || h.reg.inner.Quotas()["more"] != nil {
		t.Fatalf("removing by empty config: %v", r3.err)
	}
}

func TestValidateQuotaConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    *quotapb.QuotaConfig
		want string
	}{
		{"ok", quotaConfig("dev", scalars("cpus", 1.0), scalars("cpus", 2.0, "mem", 10.0)), ""},
		{"guarantee only", quotaConfig("dev", scalars("gpus", 1.0), nil), ""},
		{"nested", quotaConfig("eng/web", nil, scalars("cpus", 1.0)), ""},
		{"no role", &quotapb.QuotaConfig{}, "'c.role' must be set"},
		{"bad role", quotaConfig("-x", nil, nil), "'c.role'"},
		{"negative", quotaConfig("dev", scalars("cpus", -1.0), nil), "'c.guarantees[cpus]'"},
		{"nan limit", quotaConfig("dev", nil, scalars("mem", math.NaN())), "'c.limits[mem]'"},
		{"too large mem", quotaConfig("dev", nil, scalars("mem", 2e12)), "exabyte"},
		{"too large cpus", quotaConfig("dev", nil, scalars("cpus", 2e12)), "trillion"},
		{"guarantee over limit", quotaConfig("dev", scalars("cpus", 3.0), scalars("cpus", 2.0)), "'c.guarantees[cpus]' (3) exceeds 'c.limits[cpus]' (2)"},
		{"missing value", &quotapb.QuotaConfig{Role: proto.String("dev"), Limits: map[string]*mesos.Value_Scalar{"cpus": {}}}, "missing value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateQuotaConfig(tc.c, "c")
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || err.(*APIError).Status != 400 {
				t.Fatalf("error = %v, want 400 containing %q", err, tc.want)
			}
		})
	}
}

func scalarRes(name string, v float64) *mesos.Resource {
	return &mesos.Resource{Name: proto.String(name), Type: mesos.Value_SCALAR.Enum(), Scalar: &mesos.Value_Scalar{Value: proto.Float64(v)}}
}

func TestValidateQuotaRequest(t *testing.T) {
	reserved := scalarRes("cpus", 1)
	reserved.Role = proto.String("dev")
	revocable := scalarRes("cpus", 1)
	revocable.Revocable = &mesos.Resource_RevocableInfo{}
	ports := resources.MustParse("ports:[1-2]").Proto()[0]
	for _, tc := range []struct {
		name string
		req  *quotapb.QuotaRequest
		want string
	}{
		{"ok", &quotapb.QuotaRequest{Role: proto.String("dev"), Guarantee: []*mesos.Resource{scalarRes("cpus", 1), scalarRes("mem", 64)}}, ""},
		{"no role", &quotapb.QuotaRequest{Guarantee: []*mesos.Resource{scalarRes("cpus", 1)}}, "'role' must be set"},
		{"bad role", &quotapb.QuotaRequest{Role: proto.String("a b"), Guarantee: []*mesos.Resource{scalarRes("cpus", 1)}}, "invalid 'role'"},
		{"empty", &quotapb.QuotaRequest{Role: proto.String("dev")}, "'guarantee' is empty"},
		{"duplicate", &quotapb.QuotaRequest{Role: proto.String("dev"), Guarantee: []*mesos.Resource{scalarRes("cpus", 1), scalarRes("cpus", 2)}}, "guarantee[1] \"cpus\": duplicate"},
		{"reserved", &quotapb.QuotaRequest{Role: proto.String("dev"), Guarantee: []*mesos.Resource{reserved}}, "must not be reserved"},
		{"revocable", &quotapb.QuotaRequest{Role: proto.String("dev"), Guarantee: []*mesos.Resource{revocable}}, "must not be revocable"},
		{"ranges", &quotapb.QuotaRequest{Role: proto.String("dev"), Guarantee: []*mesos.Resource{ports}}, "not a scalar"},
		{"negative", &quotapb.QuotaRequest{Role: proto.String("dev"), Guarantee: []*mesos.Resource{scalarRes("cpus", -1)}}, "invalid 'guarantee'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ValidateQuotaRequest(tc.req)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("unexpected %v", err)
				}
				if cfg.GetGuarantees()["mem"].GetValue() != 64 || cfg.GetLimits()["cpus"].GetValue() != 1 {
					t.Fatalf("config = %v: the guarantee is also the limit", cfg)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want containing %q", err, tc.want)
			}
		})
	}
}

func TestQuotaStateChecks(t *testing.T) {
	h, _ := newRolesHarness(t)
	h.addAgent("a1", "cpus:4;mem:4096;cpus(dev):1")
	run := func(f func(finish func(error))) error {
		var r result
		f(r.finish)
		h.settle()
		if !r.done {
			t.Fatal("no answer")
		}
		return r.err
	}
	wantErr := func(err error, status int, sub string) {
		t.Helper()
		ae, ok := err.(*APIError)
		if !ok || ae.Status != status || !strings.Contains(ae.Message, sub) {
			t.Fatalf("error = %v, want %d containing %q", err, status, sub)
		}
	}
	// Hierarchy: a child's guarantee needs a parent guarantee containing it.
	wantErr(run(func(fin func(error)) {
		h.s.updateQuota([]*quotapb.QuotaConfig{quotaConfig("eng/web", scalars("cpus", 1.0), nil)}, false, fin)
	}), 400, "parent role 'eng'")
	if err := run(func(fin func(error)) {
		h.s.updateQuota([]*quotapb.QuotaConfig{
			quotaConfig("eng", scalars("cpus", 2.0), nil),
			quotaConfig("eng/web", scalars("cpus", 1.0), nil),
			quotaConfig("eng/db", scalars("cpus", 1.0), nil),
		}, false, fin)
	}); err != nil {
		t.Fatalf("valid hierarchy refused: %v", err)
	}
	// Children's guarantees are contained in the parent's: capacity counts 2, not 4.
	if got := topLevelGuarantees(h.s.quotasWith(nil))["cpus"]; got != 2 {
		t.Fatalf("top-level guarantees = %v, want 2", got)
	}
	// Removing the parent would orphan the children's guarantees.
	wantErr(run(func(fin func(error)) { h.s.removeQuota("eng", fin) }), 400, "parent role 'eng'")
	wantErr(run(func(fin func(error)) { h.s.removeQuota("nobody", fin) }), 400, "role 'nobody' has no quota")
	// Duplicate roles in one call.
	wantErr(run(func(fin func(error)) {
		h.s.updateQuota([]*quotapb.QuotaConfig{quotaConfig("x", nil, nil), quotaConfig("x", nil, nil)}, false, fin)
	}), 400, "quota_configs[1].role' 'x' repeats quota_configs[0]")

	// A limit below what the role consumes (its unused reservation counts).
	wantErr(run(func(fin func(error)) {
		h.s.updateQuota([]*quotapb.QuotaConfig{quotaConfig("dev", nil, scalars("cpus", 0.5))}, false, fin)
	}), 400, "role 'dev' already consumes cpus 1")
	if err := run(func(fin func(error)) {
		h.s.updateQuota([]*quotapb.QuotaConfig{quotaConfig("dev", nil, scalars("cpus", 0.5))}, true, fin)
	}); err != nil {
		t.Fatalf("forced limit: %v", err)
	}
	if c := roleView(h.s.snapshot(h.now), "dev").Quota.Consumed["cpus"]; c != 1 {
		t.Fatalf("dev consumes %v cpus, want 1 (its reservation)", c)
	}

	// Deprecated SET_QUOTA: no second quota, 409 when overcommitting.
	setCfg := func(role string, cpus float64) *quotapb.QuotaConfig {
		cfg, err := ValidateQuotaRequest(&quotapb.QuotaRequest{Role: proto.String(role), Guarantee: []*mesos.Resource{scalarRes("cpus", cpus)}})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	wantErr(run(func(fin func(error)) { h.s.setQuota(setCfg("dev", 1), false, fin) }), 400, "already has quota")
	wantErr(run(func(fin func(error)) { h.s.setQuota(setCfg("ops", 10), false, fin) }), 409, "overcommit")
	if err := run(func(fin func(error)) { h.s.setQuota(setCfg("ops", 1), false, fin) }); err != nil {
		t.Fatal(err)
	}
	if err := run(func(fin func(error)) { h.s.removeQuota("ops", fin) }); err != nil {
		t.Fatal(err)
	}
	if h.s.rolesState().quotas["ops"] != nil {
		t.Fatal("quota not removed")
	}
}

// Setting a limit rescinds the role's outstanding offers.
func TestQuotaLimitRescindsRoleOffers(t *testing.T) {
	h, _ := newRolesHarness(t)
	a := h.addAgent("a1", "cpus:4;mem:1024")
	info := fwInfo("fw")
	info.Role = proto.String("dev")
	f := h.subscribe(info)
	h.offer(f, a, "dev", "cpus:4;mem:1024")
	var r result
	h.s.updateQuota([]*quotapb.QuotaConfig{quotaConfig("dev", nil, scalars("cpus", 8.0))}, false, r.finish)
	h.settle()
	if r.err != nil || len(h.s.offers) != 0 {
		t.Fatalf("err=%v offers=%d: the role's offers should be rescinded", r.err, len(h.s.offers))
	}
}

// syncHarness is a harness whose allocator is the real hierarchical DRF
// core, run synchronously: Run performs one allocation whose offers (and
// revocations) come back through the loop's mailbox.
func syncHarness(t *testing.T, revocation bool) (*harness, *allocator.Sync) {
	h := newHarness(t)
	opts := allocator.Options{
		Offer: func(fw string, offers allocator.Offers) {
			h.s.post(func(s *state, now time.Time) { s.allocated(fw, offers, now) })
		},
		Clock: clock.NewFake(epoch0),
	}
	if revocation {
		opts.Revoke = func(fw, agent string, r resources.Resources) {
			h.s.post(func(s *state, now time.Time) { s.revoke(fw, agent, r, now) })
		}
	}
	sa, err := allocator.NewSync(allocator.Default, opts)
	if err != nil {
		t.Fatal(err)
	}
	h.s.alloc = sa
	return h, sa
}

func (h *harness) run(sa *allocator.Sync) {
	sa.Run(h.now)
	h.settle()
}

// killed returns the task IDs of KILL_TASK events the agent received.
func killed(a *fakeAgent) []string {
	var out []string
	for _, ev := range a.drain() {
		if ev.GetType() == protocol.AgentEvent_KILL_TASK {
			out = append(out, ev.GetKillTask().GetFrameworkId().GetValue()+"/"+ev.GetKillTask().GetTaskId().GetValue())
		}
	}
	return out
}

// Revocation (paper §3.3.3): a framework in a role below its guarantee
// revives while an over-share framework holds the whole cluster; the
// over-share framework's tasks are killed with their kill policy, their
// TASK_KILLED updates carry REASON_CONTAINER_PREEMPTED, and the freed
// resources go to the guaranteed role. Without revocation nothing is killed.
func TestRevocationKillsOverShareTasks(t *testing.T) {
	for _, on := range []bool{true, false} {
		t.Run(fmt.Sprintf("revocation=%v", on), func(t *testing.T) {
			h, sa := syncHarness(t, on)
			a := h.addAgent("a1", "cpus:4;mem:4096")
			greedyInfo := fwInfo("greedy")
			greedyInfo.Role = proto.String("batch")
			greedy := h.subscribe(greedyInfo)
			h.run(sa)
			offers := greedy.offers()
			if len(offers) != 1 {
				t.Fatalf("greedy got %d offers, want 1", len(offers))
			}
			t1 := cmdTask("t1", a.id, "cpus:2;mem:1024")
			t1.KillPolicy = &mesos.KillPolicy{GracePeriod: &mesos.DurationInfo{Nanoseconds: proto.Int64(7e9)}}
			greedy.mustCall(acceptCall(offers, launch(t1, cmdTask("t2", a.id, "cpus:2;mem:3072"))))
			a.drain()
			a.update(greedy.id, "t1", mesos.TaskState_TASK_RUNNING, false)
			a.update(greedy.id, "t2", mesos.TaskState_TASK_RUNNING, false)
			greedy.drain()

			var r result
			h.s.updateQuota([]*quotapb.QuotaConfig{quotaConfig("prod", scalars("cpus", 2.0, "mem", 1024.0), nil)}, false, r.finish)
			h.settle()
			if r.err != nil {
				t.Fatal(r.err)
			}
			prodInfo := fwInfo("prod")
			prodInfo.Role = proto.String("prod")
			prod := h.subscribe(prodInfo)
			h.run(sa)

			kills := killed(a)
			if !on {
				if len(kills) != 0 {
					t.Fatalf("revocation off, yet killed %v", kills)
				}
				return
			}
			if len(kills) == 0 {
				t.Fatal("no task of the over-share framework was killed")
			}
			for _, k := range kills {
				if !strings.HasPrefix(k, greedy.id+"/") {
					t.Fatalf("killed %s: only the over-share framework's tasks may be killed", k)
				}
			}
			// Not asked twice for the same agent while kills are pending.
			h.run(sa)
			if again := killed(a); len(again) != 0 {
				t.Fatalf("killed again %v", again)
			}
			// The kill carries the task's kill policy.
			var policy *mesos.KillPolicy
			for _, ev := range a.events {
				if ev.GetKillTask().GetTaskId().GetValue() == "t1" {
					policy = ev.GetKillTask().GetKillPolicy()
				}
			}
			if policy.GetGracePeriod().GetNanoseconds() != 7e9 && containsStr(kills, greedy.id+"/t1") {
				t.Fatalf("KILL_TASK t1 kill policy = %v, want the task's 7s grace period", policy)
			}
			for _, k := range kills {
				taskID := k[strings.IndexByte(k, '/')+1:]
				err := h.s.agentCallNotingPreemption(&protocol.AgentCall{Type: protocol.AgentCall_STATUS_UPDATE.Enum(), AgentId: agentID(a.id),
					StatusUpdate: &protocol.AgentCall_StatusUpdate{FrameworkId: frameworkID(greedy.id),
						Status: &mesos.TaskStatus{TaskId: &mesos.TaskID{Value: proto.String(taskID)}, State: mesos.TaskState_TASK_KILLED.Enum(),
							Source: mesos.TaskStatus_SOURCE_EXECUTOR.Enum()}}}, h.now)
				if err != nil {
					t.Fatal(err)
				}
				h.settle()
			}
			ups := greedy.updates()
			if len(ups) != len(kills) {
				t.Fatalf("greedy got %d updates, want %d", len(ups), len(kills))
			}
			for _, u := range ups {
				if u.GetState() != mesos.TaskState_TASK_KILLED || u.GetReason() != mesos.TaskStatus_REASON_CONTAINER_PREEMPTED || u.GetMessage() == "" {
					t.Fatalf("update = %v, want TASK_KILLED with REASON_CONTAINER_PREEMPTED", u)
				}
			}
			if len(h.s.rolesState().preempting) != 0 {
				t.Fatal("preemption bookkeeping not cleared by the terminal updates")
			}
			// The freed resources go to the guaranteed role.
			h.run(sa)
			got := prod.offers()
			if len(got) == 0 {
				t.Fatal("the role under its guarantee got no offer after the revocation")
			}
			off, _ := resources.FromProto(got[0].GetResources())
			if off.Scalar("cpus") < 2 {
				t.Fatalf("prod offered %v, want at least its 2 guaranteed cpus", off)
			}
		})
	}
}

func containsStr(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// The Master's methods go through the loop and the registrar and return
// once the snapshot shows the change; the built allocator explains and
// reports metrics through the master.
func TestMasterRolesMethods(t *testing.T) {
	clk := clock.NewFake(epoch0)
	m, err := New(Config{ID: "M", Hostname: "m", IP: "127.0.0.1", Port: 5050, Version: "test", Clock: clk,
		Revocation: true, Weights: map[string]float64{"ops": 2},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	defer m.Stop()
	ctx := context.Background()
	if err := m.UpdateWeights(ctx, Principal{}, []*mesos.WeightInfo{weightInfo("eng", 3)}); err != nil {
		t.Fatal(err)
	}
	if w := m.Snapshot().Weights; w["eng"] != 3 || w["ops"] != 2 {
		t.Fatalf("weights = %v", w)
	}
	if err := m.UpdateWeights(ctx, Principal{}, []*mesos.WeightInfo{weightInfo("eng", 0)}); err == nil {
		t.Fatal("zero weight accepted")
	}
	err = m.UpdateQuota(ctx, Principal{}, true, []*quotapb.QuotaConfig{quotaConfig("dev", scalars("cpus", 1.0), scalars("cpus", 2.0))})
	if err != nil {
		t.Fatal(err)
	}
	if v := roleView(m.Snapshot(), "dev"); v == nil || v.Quota.Limits["cpus"] != 2 {
		t.Fatalf("dev = %+v", v)
	}
	if err := m.SetQuota(ctx, Principal{}, &quotapb.QuotaRequest{Role: proto.String("dev"), Guarantee: []*mesos.Resource{scalarRes("cpus", 1)}}); err == nil {
		t.Fatal("SET_QUOTA over an existing quota accepted")
	}
	if err := m.RemoveQuota(ctx, Principal{}, "dev"); err != nil {
		t.Fatal(err)
	}
	if v := roleView(m.Snapshot(), "dev"); v != nil && v.Quota.HasQuota() {
		t.Fatalf("dev still has quota: %+v", v.Quota)
	}
	ex, ok := m.Explain("nope")
	if !ok || len(ex.Roles) != 1 || ex.Roles[0].Reason != allocator.ReasonUnknownFramework {
		t.Fatalf("explain = %+v, %v", ex, ok)
	}
	if ms := m.AllocatorMetrics(); ms == nil {
		t.Fatal("no allocator metrics")
	} else if _, ok := ms["allocator/mesos/allocation_runs"]; !ok {
		t.Fatalf("allocator metrics lack allocation_runs: %v", ms)
	}
}

// Consumption counts a subtree: a child's use of its parent's reservation
// counts once for the parent, and unused reservations count too.
func TestQuotaConsumption(t *testing.T) {
	used := map[string]resources.Resources{
		"eng/web": resources.MustParse("cpus(eng):1;mem:100").AllocatedTo("eng/web"),
		"ops":     resources.MustParse("cpus:2").AllocatedTo("ops"),
	}
	reserved := map[string]resources.Resources{"eng": resources.MustParse("cpus(eng):3")}
	subUsed, subReserved := consumptionBase(used, reserved)
	for _, tc := range []struct {
		role string
		want map[string]float64
	}{
		{"eng", map[string]float64{"cpus": 3, "mem": 100}},
		{"eng/web", map[string]float64{"cpus": 1, "mem": 100}},
		{"ops", map[string]float64{"cpus": 2}},
		{"idle", map[string]float64{}},
	} {
		got := quotaConsumption(tc.role, subUsed, subReserved)
		if quantityString(got) != quantityString(tc.want) {
			t.Errorf("consumption(%s) = %v, want %v", tc.role, got, tc.want)
		}
	}
}
