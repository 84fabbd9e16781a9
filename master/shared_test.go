package master

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
	"mezzo/api/schedulerpb"
	"mezzo/resources"
)

// sharedVolume is a shared persistent volume of mb megabytes on disk
// dynamically reserved to role.
func sharedVolume(id, role string, mb float64) *mesos.Resource {
	v := volume(id, role, mb)
	v.Shared = &mesos.Resource_SharedInfo{}
	return v
}

// volumeTask is a command task on text's resources and the volume.
func volumeTask(id, agent, text string, vol *mesos.Resource) *mesos.TaskInfo {
	t := cmdTask(id, agent, text)
	t.Resources = resources.ToPreRefinement(append(resources.MustParse(text).Proto(), proto.Clone(vol).(*mesos.Resource)))
	return t
}

// holds reports whether offers hold the volume (any copy).
func holds(offers []*mesos.Offer, vol *mesos.Resource) bool {
	v := mustRes([]*mesos.Resource{vol})
	return !v.SharedIn(offered(offers).WithoutAllocationInfo()).IsEmpty()
}

// Shared persistent volumes end to end with the real allocator (issue 12):
// two frameworks of the role run tasks on one volume at once (one of them
// two tasks from one offer's copy); a framework of the role without
// SHARED_RESOURCES is never offered it; DESTROY is refused while a task
// uses it and accepted once all have ended, after which nobody is offered
// it.
func TestSharedVolumeTwoFrameworks(t *testing.T) {
	h, sa := syncHarness(t, false)
	a := h.addAgent("a1", "cpus:8;mem:2048;disk:1024")
	shared := []mesos.FrameworkInfo_Capability_Type{mesos.FrameworkInfo_Capability_SHARED_RESOURCES}
	fa := h.subscribe(roleInfo("fa", "db", shared...))
	h.run(sa)
	offers := fa.offers()
	if len(offers) != 1 {
		t.Fatalf("fa got %d offers", len(offers))
	}
	vol := sharedVolume("data", "db", 512)
	acc := acceptCall(offers, reserveOp(dynRes("disk:512", "db", "")), withID(createOp(vol), "create"),
		launch(volumeTask("ta", a.id, "cpus:1;mem:128", vol)))
	acc.Accept.Filters = &mesos.Filters{RefuseSeconds: proto.Float64(0)}
	fa.mustCall(acc)
	if sts := fa.opStatuses(); len(sts) != 1 || sts[0].GetState() != mesos.OperationState_OPERATION_FINISHED {
		t.Fatalf("CREATE statuses %v", sts)
	}
	if got := h.task(fa.id, "ta"); got == nil || got.GetState() != mesos.TaskState_TASK_STAGING {
		t.Fatalf("task ta = %v", got)
	}

	fb := h.subscribe(roleInfo("fb", "db", shared...))
	fno := h.subscribe(roleInfo("fno", "db"))

	// The volume is in use by ta and offered again; fb launches two tasks
	// on the one copy its offer holds.
	launched := false
	for i := 0; i < 10 && !launched; i++ {
		h.advance(time.Second)
		h.run(sa)
		if o := fno.offers(); holds(o, vol) {
			t.Fatalf("round %d: fno (no SHARED_RESOURCES) was offered the shared volume: %v", i, offered(o))
		} else {
			fno.declineFor(o, 3600) // let fa and fb have the agent
		}
		fa.declineAll(fa.offers())
		o := fb.offers()
		if !holds(o, vol) {
			fb.declineAll(o)
			continue
		}
		acc := acceptCall(o, launch(volumeTask("tb1", a.id, "cpus:1;mem:128", vol), volumeTask("tb2", a.id, "cpus:1;mem:128", vol)))
		acc.Accept.Filters = &mesos.Filters{RefuseSeconds: proto.Float64(0)}
		fb.mustCall(acc)
		launched = true
	}
	if !launched {
		t.Fatal("fb was never offered the shared volume while ta used it")
	}
	for _, id := range []string{"tb1", "tb2"} {
		if got := h.task(fb.id, id); got == nil || got.GetState() != mesos.TaskState_TASK_STAGING {
			t.Fatalf("task %s = %v, updates %v", id, got, fb.updates())
		}
	}
	if n := sa.Metrics()["allocator/mesos/allocation_updates_rejected"]; n != 0 {
		t.Fatalf("the allocator refused %v allocation updates", n)
	}

	// destroyWhenOffered waits for an offer of the volume to fa or fb and
	// tries to DESTROY it there; it returns the operation's status.
	destroyWhenOffered := func(id string) *mesos.OperationStatus {
		t.Helper()
		for i := 0; i < 10; i++ {
			h.advance(time.Second)
			h.run(sa)
			if o := fno.offers(); holds(o, vol) {
				t.Fatalf("fno was offered the shared volume: %v", offered(o))
			} else {
				fno.declineFor(o, 3600)
			}
			for _, f := range []*fakeFramework{fa, fb} {
				o := f.offers()
				if !holds(o, vol) {
					f.declineAll(o)
					continue
				}
				acc := acceptCall(o, withID(destroyOp(vol), id))
				acc.Accept.Filters = &mesos.Filters{RefuseSeconds: proto.Float64(0)}
				f.mustCall(acc)
				sts := f.opStatuses()
				if len(sts) != 1 {
					t.Fatalf("DESTROY %s: statuses %v", id, sts)
				}
				for _, g := range []*fakeFramework{fa, fb} {
					g.declineAll(g.offers())
				}
				return sts[0]
			}
		}
		t.Fatalf("the shared volume was not offered to fa or fb")
		return nil
	}
	st := destroyWhenOffered("d1")
	if st.GetState() != mesos.OperationState_OPERATION_ERROR || !strings.Contains(st.GetMessage(), "cannot be destroyed") {
		t.Fatalf("DESTROY while in use: %v %q", st.GetState(), st.GetMessage())
	}
	if !h.total(a).Contains(mustRes([]*mesos.Resource{vol})) {
		t.Fatalf("a refused DESTROY changed the total: %v", h.total(a))
	}

	// The tasks end one by one; DESTROY is refused while any runs.
	a.update(fa.id, "ta", mesos.TaskState_TASK_FINISHED, false)
	a.update(fb.id, "tb1", mesos.TaskState_TASK_FINISHED, false)
	h.settle()
	if st := destroyWhenOffered("d2"); st.GetState() != mesos.OperationState_OPERATION_ERROR || !strings.Contains(st.GetMessage(), "tb2") {
		t.Fatalf("DESTROY while tb2 runs: %v %q", st.GetState(), st.GetMessage())
	}
	a.update(fb.id, "tb2", mesos.TaskState_TASK_FINISHED, false)
	h.settle()
	if st := destroyWhenOffered("d3"); st.GetState() != mesos.OperationState_OPERATION_FINISHED {
		t.Fatalf("DESTROY after all tasks ended: %v %q", st.GetState(), st.GetMessage())
	}
	if !mustRes([]*mesos.Resource{vol}).SharedIn(h.total(a)).IsEmpty() {
		t.Fatalf("the volume is still in the total: %v", h.total(a))
	}
	for i := 0; i < 3; i++ {
		h.advance(time.Second)
		h.run(sa)
		for _, f := range []*fakeFramework{fa, fb, fno} {
			o := f.offers()
			if holds(o, vol) {
				t.Fatalf("the destroyed volume was offered: %v", offered(o))
			}
			f.declineAll(o)
		}
	}
	if n := sa.Metrics()["allocator/mesos/allocation_updates_rejected"]; n != 0 {
		t.Fatalf("the allocator refused %v allocation updates", n)
	}
}

// A DESTROY of a shared volume rescinds the other frameworks' offers that
// hold it (the allocator offers a shared volume to several at once), as
// Mesos's master does; offers without it stay.
func TestSharedVolumeDestroyRescindsOtherOffers(t *testing.T) {
	h := newHarness(t)
	vol := sharedVolume("data", "db", 512)
	sub := agentSub("a1", "cpus:4;mem:1024;disk:512")
	sub.CheckpointedResources = []*mesos.Resource{vol}
	a := h.agentSubscribe(sub)
	shared := []mesos.FrameworkInfo_Capability_Type{mesos.FrameworkInfo_Capability_SHARED_RESOURCES}
	fa := h.subscribe(roleInfo("fa", "db", shared...))
	fb := h.subscribe(roleInfo("fb", "db", shared...))
	fc := h.subscribe(roleInfo("fc", "db", shared...))
	v := mustRes([]*mesos.Resource{vol})
	offerTo := func(f *fakeFramework, res resources.Resources) *mesos.Offer {
		h.s.allocated(f.id, map[string]map[string]resources.Resources{"db": {a.id: res}}, h.now)
		h.settle()
		o := f.offers()
		if len(o) != 1 {
			t.Fatalf("want 1 offer, got %v", o)
		}
		return o[0]
	}
	oa := offerTo(fa, resources.MustParse("cpus:1;mem:128").Add(v))
	offerTo(fb, resources.MustParse("cpus:1;mem:128").Add(v))
	offerTo(fc, resources.MustParse("cpus:1;mem:128"))
	fa.mustCall(acceptCall([]*mesos.Offer{oa}, withID(destroyOp(vol), "d")))
	if sts := fa.opStatuses(); len(sts) != 1 || sts[0].GetState() != mesos.OperationState_OPERATION_FINISHED {
		t.Fatalf("DESTROY statuses %v", sts)
	}
	if got := eventTypes(fb.drain()); len(got) != 1 || got[0] != schedulerpb.Event_RESCIND.String() {
		t.Fatalf("fb's offer holding the volume: events %v, want RESCIND", got)
	}
	if got := eventTypes(fc.drain()); len(got) != 0 {
		t.Fatalf("fc's offer without the volume: events %v, want none", got)
	}
	if !v.SharedIn(h.total(a)).IsEmpty() {
		t.Fatalf("volume still in the total %v", h.total(a))
	}
}

// The copies a launch needs beyond its offers' are added to the
// allocation, one UpdateAllocation per launch: two tasks of one ACCEPT on
// one offered copy (one more), and a task whose new executor names the
// volume too (one more: each holds a copy, each gives it back when it
// ends). A task naming a shared volume its offers do not hold is refused.
func TestSharedVolumeCopiesOfOneAccept(t *testing.T) {
	h := newHarness(t)
	vol := sharedVolume("data", "db", 512)
	sub := agentSub("a1", "cpus:4;mem:1024;disk:512")
	sub.CheckpointedResources = []*mesos.Resource{vol}
	a := h.agentSubscribe(sub)
	f := h.subscribe(roleInfo("fa", "db", mesos.FrameworkInfo_Capability_SHARED_RESOURCES))
	v := mustRes([]*mesos.Resource{vol})
	h.s.allocated(f.id, map[string]map[string]resources.Resources{"db": {a.id: resources.MustParse("cpus:4;mem:1024").Add(v)}}, h.now)
	h.settle()
	offers := f.offers()
	withExec := volumeTask("t3", a.id, "cpus:0.5;mem:64", vol)
	withExec.Command = nil
	withExec.Executor = &mesos.ExecutorInfo{ExecutorId: &mesos.ExecutorID{Value: proto.String("ex")},
		Command:   &mesos.CommandInfo{Value: proto.String("exec")},
		Resources: resources.ToPreRefinement(append(resources.MustParse("cpus:0.25;mem:32").Proto(), proto.Clone(vol).(*mesos.Resource)))}
	other := sharedVolume("other", "db", 64)
	f.mustCall(acceptCall(offers, launch(
		volumeTask("t1", a.id, "cpus:0.5;mem:64", vol),
		volumeTask("t2", a.id, "cpus:0.5;mem:64", vol),
		withExec,
		volumeTask("t4", a.id, "cpus:0.5;mem:64", other))))
	for _, id := range []string{"t1", "t2", "t3"} {
		if got := h.task(f.id, id); got == nil || got.GetState() != mesos.TaskState_TASK_STAGING {
			t.Fatalf("task %s = %v", id, got)
		}
	}
	ups := f.updates()
	if len(ups) != 1 || ups[0].GetTaskId().GetValue() != "t4" || ups[0].GetState() != mesos.TaskState_TASK_ERROR ||
		!strings.Contains(ups[0].GetMessage(), "more resources") {
		t.Fatalf("updates %v, want TASK_ERROR for t4", ups)
	}
	var adds []string
	for _, c := range h.alloc.recorded() {
		if strings.HasPrefix(c, "UpdateAllocation") {
			adds = append(adds, c)
		}
	}
	// t1 takes the offer's copy; t2 needs one more; t3 and its executor
	// two more.
	if len(adds) != 2 || strings.Count(adds[0], "<SHARED>") != 1 || !strings.Contains(adds[1], "[data,data:RW]<SHARED>:512 x2") {
		t.Fatalf("allocation updates %v", adds)
	}
	rec := h.alloc.recoveries()
	if len(rec) != 1 || rec[0].res.HasShared() {
		t.Fatalf("recovered %v: want the rest of the offer, without the volume", rec)
	}
}
