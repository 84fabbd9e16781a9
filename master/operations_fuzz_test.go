package master

import (
	"testing"

	"mezzo/api/codec"
	"mezzo/api/mesos"
	"mezzo/resources"
)

// FuzzOperatorOperation feeds arbitrary operations (Mesos JSON) to an
// agent that holds a reservation, a volume and a task on it: never a
// panic; a refusal is a 400 or 409 *APIError and changes nothing; an
// applied operation keeps the agent's quantities.
func FuzzOperatorOperation(f *testing.F) {
	for _, seed := range []string{
		`{"type":"RESERVE","reserve":{"resources":[{"name":"cpus","type":"SCALAR","scalar":{"value":1},"reservations":[{"type":"DYNAMIC","role":"db"}]}]}}`,
		`{"type":"RESERVE","reserve":{"resources":[{"name":"cpus","type":"SCALAR","scalar":{"value":1},"role":"db","reservation":{"principal":"p"}}]}}`,
		`{"type":"UNRESERVE","unreserve":{"resources":[{"name":"disk","type":"SCALAR","scalar":{"value":50},"reservations":[{"type":"DYNAMIC","role":"db"}]}]}}`,
		`{"type":"CREATE","create":{"volumes":[{"name":"disk","type":"SCALAR","scalar":{"value":10},"reservations":[{"type":"DYNAMIC","role":"db"}],"disk":{"persistence":{"id":"v2"},"volume":{"container_path":"d","mode":"RW"}}}]}}`,
		`{"type":"DESTROY","destroy":{"volumes":[{"name":"disk","type":"SCALAR","scalar":{"value":40},"reservations":[{"type":"DYNAMIC","role":"db"}],"disk":{"persistence":{"id":"v1"},"volume":{"container_path":"data","mode":"RW"}}}]}}`,
		`{"type":"GROW_VOLUME","grow_volume":{"volume":{"name":"disk","type":"SCALAR","scalar":{"value":40},"reservations":[{"type":"DYNAMIC","role":"db"}],"disk":{"persistence":{"id":"v1"},"volume":{"container_path":"data","mode":"RW"}}},"addition":{"name":"disk","type":"SCALAR","scalar":{"value":5},"reservations":[{"type":"DYNAMIC","role":"db"}]}}}`,
		`{"type":"SHRINK_VOLUME","shrink_volume":{"volume":{"name":"disk","type":"SCALAR","scalar":{"value":40}},"subtract":{"value":1}}}`,
		`{"type":"RESERVE","reserve":{"resources":[null]}}`, `{"type":"LAUNCH"}`, `{}`, `{"type":"CREATE_DISK"}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		op := &mesos.Offer_Operation{}
		if err := codec.Unmarshal(codec.JSON, []byte(body), op); err != nil {
			return
		}
		h := newHarness(t)
		a := h.addAgent("a1", "cpus:2;mem:256;disk:100")
		fw := h.subscribe(roleInfo("db-fw", "db"))
		if err := h.s.operatorOperation(Principal{}, a.id, reserveOp(dynRes("cpus:1;disk:100", "db", "")), h.now); err != nil {
			t.Fatal(err)
		}
		if err := h.s.operatorOperation(Principal{}, a.id, createOp(volume("v1", "db", 40)), h.now); err != nil {
			t.Fatal(err)
		}
		o := h.offerAll(fw, a, "db")
		task := cmdTask("t1", a.id, "cpus:1")
		task.Resources = append(resources.ToPreRefinement(dynRes("cpus:1", "db", "")), resources.ToPreRefinement([]*mesos.Resource{volume("v1", "db", 40)})...)
		fw.mustCall(acceptCall([]*mesos.Offer{o}, launch(task)))
		a.drain()
		before := h.total(a)
		err := h.s.operatorOperation(Principal{}, a.id, op, h.now)
		h.settle()
		if err != nil {
			apiErr, ok := err.(*APIError)
			if !ok || (apiErr.Status != 400 && apiErr.Status != 409) || apiErr.Message == "" {
				t.Fatalf("error %v (%T)", err, err)
			}
			if !h.total(a).Equal(before) {
				t.Fatalf("refused operation changed the total: %v -> %v", before, h.total(a))
			}
			if sets, _ := a.checkpoints(); len(sets) != 0 {
				t.Fatalf("refused operation checkpointed %v", sets)
			}
			return
		}
		got, want := h.total(a).Quantities(), before.Quantities()
		for k, v := range want {
			if d := got[k] - v; d > 1e-9 || d < -1e-9 {
				t.Fatalf("applied %s changed quantities %v -> %v", body, want, got)
			}
		}
	})
}
