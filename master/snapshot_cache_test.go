package master

import (
	"fmt"
	"reflect"
	"testing"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/resources"
)

// naiveReserved is the reservation split setTotal caches, computed the
// direct way.
func naiveReserved(total resources.Resources) map[string]resources.Resources {
	out := map[string]resources.Resources{}
	for _, r := range total.Proto() {
		if n := len(r.GetReservations()); n > 0 {
			x, err := resources.FromProto([]*mesos.Resource{r})
			if err != nil {
				panic(err)
			}
			role := r.GetReservations()[n-1].GetRole()
			out[role] = out[role].Add(x)
		}
	}
	return out
}

func TestSetTotalCachesProtoAndReservations(t *testing.T) {
	for _, text := range []string{
		"",
		"cpus:4;mem:1024",
		"cpus:4;cpus(web):2;mem(web):512;disk(db):100",
		"cpus(a/b):1;cpus(a):2;mem:10;ports(a):[31000-31010]",
	} {
		total := resources.MustParse(text)
		a := &agent{}
		a.setTotal(total)
		if got, _ := resources.FromProto(a.totalProto); !got.Equal(total) {
			t.Errorf("%q: totalProto %v", text, got)
		}
		want := naiveReserved(total)
		if len(a.reserved) != len(want) {
			t.Errorf("%q: reserved roles %v, want %v", text, a.reserved, want)
		}
		for role, r := range want {
			if !a.reserved[role].Equal(r) {
				t.Errorf("%q: reserved[%s] = %v, want %v", text, role, a.reserved[role], r)
			}
		}
	}
}

func TestTaskRoleCache(t *testing.T) {
	tests := []struct {
		res      resources.Resources
		fallback string
		want     string
	}{
		{resources.MustParse("cpus:1"), "dev", "dev"},
		{resources.MustParse("cpus:1").AllocatedTo("web"), "dev", "web"},
		{resources.MustParse("cpus(ops):1").AllocatedTo("ops"), "*", "ops"},
	}
	for _, tc := range tests {
		tk := &task{res: tc.res}
		for range 2 { // computed, then cached
			if got := tk.role(tc.fallback); got != tc.want || got != allocationRole(tc.res, tc.fallback) {
				t.Errorf("role(%v, %q) = %q, want %q", tc.res, tc.fallback, got, tc.want)
			}
		}
		e := &executor{res: tc.res}
		if got := e.role(tc.fallback); got != tc.want {
			t.Errorf("executor role(%v, %q) = %q, want %q", tc.res, tc.fallback, got, tc.want)
		}
	}
}

// diffAgentViews names the first field where two views differ ("" if
// none).
func diffAgentViews(a, b *AgentView) string {
	res := func(rs []*mesos.Resource) resources.Resources {
		r, err := resources.FromProto(rs)
		if err != nil {
			panic(err)
		}
		return r
	}
	switch {
	case a.Info != b.Info || a.PID != b.PID || a.Endpoint != b.Endpoint || a.Version != b.Version:
		return "identity"
	case len(a.Capabilities) != len(b.Capabilities):
		return "capabilities"
	case a.Active != b.Active || a.Connected != b.Connected || a.Deactivated != b.Deactivated:
		return fmt.Sprintf("flags %v/%v/%v vs %v/%v/%v", a.Active, a.Connected, a.Deactivated, b.Active, b.Connected, b.Deactivated)
	case !a.RegisteredTime.Equal(b.RegisteredTime) || !a.ReregisteredTime.Equal(b.ReregisteredTime):
		return "times"
	case !res(a.Total).Equal(res(b.Total)):
		return "total"
	case !res(a.Used).Equal(res(b.Used)):
		return fmt.Sprintf("used %v vs %v", res(a.Used), res(b.Used))
	case !res(a.Offered).Equal(res(b.Offered)):
		return fmt.Sprintf("offered %v vs %v", res(a.Offered), res(b.Offered))
	case !reflect.DeepEqual(a.FrameworkIDs, b.FrameworkIDs):
		return fmt.Sprintf("frameworks %v vs %v", a.FrameworkIDs, b.FrameworkIDs)
	case !reflect.DeepEqual(a.TaskCounts, b.TaskCounts):
		return fmt.Sprintf("task counts %v vs %v", a.TaskCounts, b.TaskCounts)
	}
	return ""
}

// Through an agent's life (offers, launches, updates, disconnection,
// re-registration, framework removal) the cached view always equals a
// fresh one, and an unchanged agent's view is reused.
func TestCachedAgentViewTracksChanges(t *testing.T) {
	h := newHarness(t)
	check := func(step string) {
		t.Helper()
		for _, a := range h.s.agents {
			cached := h.s.cachedAgentView(a)
			if d := diffAgentViews(cached, h.s.agentView(a)); d != "" {
				t.Fatalf("after %s: cached view of %s is stale: %s", step, a.id, d)
			}
			if again := h.s.cachedAgentView(a); again != cached {
				t.Fatalf("after %s: unchanged view of %s rebuilt", step, a.id)
			}
		}
	}
	a := h.addAgent("a", "cpus:4;mem:1024")
	b := h.addAgent("b", "cpus:2;mem:512")
	check("agents added")
	f := h.subscribe(fwInfo("fw"))
	check("framework subscribed")
	o := h.offer(f, a, "*", "cpus:4;mem:1024")
	check("offer")
	f.mustCall(acceptCall([]*mesos.Offer{o}, launch(cmdTask("t1", a.id, "cpus:1;mem:64"), cmdTask("t2", a.id, "cpus:1;mem:64"))))
	check("accept")
	a.update(f.id, "t1", mesos.TaskState_TASK_RUNNING, false)
	check("t1 running")
	a.update(f.id, "t2", mesos.TaskState_TASK_FINISHED, false)
	check("t2 finished")
	h.offer(f, b, "*", "cpus:2;mem:512")
	check("offer on b")
	a.st.Close()
	h.settle()
	check("a disconnected")
	sub := agentSub("a", "cpus:4;mem:2048")
	sub.AgentInfo.Id = agentID(a.id)
	if _, err := h.s.agentSubscribe(sub, "", h.now); err != nil {
		t.Fatal(err)
	}
	h.settle()
	check("a re-registered with more memory")
	f.mustCall(&schedulerpb.Call{Type: schedulerpb.Call_TEARDOWN.Enum()})
	h.settle()
	check("framework torn down")
}
