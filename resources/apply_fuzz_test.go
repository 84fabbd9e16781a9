package resources

import (
	"errors"
	"maps"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"mezzo/api/mesos"
)

// FuzzApply decodes an agent's resources and an operation from JSON and
// applies it: errors leave the resources unchanged; successes preserve the
// scalar quantities, agree with Conversion, and rebuild from checkpoints.
func FuzzApply(f *testing.F) {
	withVol := []*mesos.Resource{sc("cpus", 4), sc("disk", 100, dyn("db")), sc("disk", 10, dyn("db"), pv("v")),
		sc("disk", 50), rng("ports", 1, 10), sc("cpus", 2, rsv(static("a")))}
	ops := []*mesos.Offer_Operation{
		reserveOp(sc("cpus", 2, dyn("db")), rng("ports", 3, 4, dyn("db"))),
		reserveOp(sc("cpus", 1, dyn("db")), sc("cpus", 1, rsv(dynamic("db", "p"), dynamic("db/x", "p")))),
		reserveOp(sc("cpus", 1, rsv(static("a"), dynamic("a/b", "p")))),
		reserveFromOp([]*mesos.Resource{sc("disk", 100, dyn("db"))}, []*mesos.Resource{sc("disk", 100, dyn("web"))}),
		unreserveOp(sc("disk", 40, dyn("db"))),
		createOp(sc("disk", 60, dyn("db"), pv("w")), sc("disk", 40, dyn("db"), pv("s"), sharedOpt)),
		destroyOp(sc("disk", 10, dyn("db"), pv("v"))),
		growOp(sc("disk", 10, dyn("db"), pv("v")), sc("disk", 30, dyn("db"))),
		shrinkOp(sc("disk", 10, dyn("db"), pv("v")), 4),
		{Type: mesos.Offer_Operation_LAUNCH.Enum()},
	}
	total, err := protojson.Marshal(&mesos.Offer_Operation_Unreserve{Resources: withVol})
	if err != nil {
		f.Fatal(err)
	}
	for _, op := range ops {
		b, err := protojson.Marshal(op)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(total, b)
	}
	f.Fuzz(func(t *testing.T, totalJSON, opJSON []byte) {
		// The Unreserve message is a convenient wrapper for a resource list.
		var list mesos.Offer_Operation_Unreserve
		if protojson.Unmarshal(totalJSON, &list) != nil {
			return
		}
		r, err := FromProto(list.Resources)
		if err != nil {
			return
		}
		var op mesos.Offer_Operation
		if protojson.Unmarshal(opJSON, &op) != nil {
			return
		}
		// The validator must judge anything without panicking, as an
		// operator and as a framework.
		vols := r.Checkpointed()
		_ = ValidateOperation(&op, OperationContext{Volumes: vols, InUse: r.Shared(), Principal: "p"})
		_ = ValidateOperation(&op, OperationContext{Volumes: vols, FrameworkRoles: []string{"db"}})
		got, err := r.Apply(&op)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			if !got.Equal(r) {
				t.Fatalf("Apply failed (%v) but changed %v into %v", err, r, got)
			}
			var na *NotAvailableError
			if !errors.As(err, &na) {
				if _, _, cerr := Conversion(&op); cerr == nil {
					t.Fatalf("Apply: %v, but Conversion accepts the operation", err)
				}
			}
			return
		}
		// Shared resources are counted once however many copies are held,
		// so creating a second copy of one is not quantity-preserving (the
		// validator rejects the duplicate persistence ID that allows it).
		if !involvesShared(r, &op) {
			if q, want := got.Quantities(), r.Quantities(); !maps.Equal(q, want) {
				t.Fatalf("%s changed the quantities: %v → %v", op.GetType(), want, q)
			}
		}
		consumed, converted, err := Conversion(&op)
		if err != nil {
			t.Fatalf("Apply succeeded but Conversion: %v", err)
		}
		if via := r.Subtract(consumed).Add(converted); !via.Equal(got) {
			t.Fatalf("r - %v + %v = %v, Apply gave %v", consumed, converted, via, got)
		}
		if back, err := FromProto(got.Proto()); err != nil || !back.Equal(got) {
			t.Fatalf("the result does not round-trip: %v, %v", back, err)
		}
	})
}

func involvesShared(r Resources, op *mesos.Offer_Operation) bool {
	if !r.Shared().IsEmpty() {
		return true
	}
	for _, rs := range [][]*mesos.Resource{op.GetReserve().GetResources(), op.GetReserve().GetSource(),
		op.GetCreate().GetVolumes(), op.GetDestroy().GetVolumes(),
		{op.GetGrowVolume().GetVolume(), op.GetGrowVolume().GetAddition(), op.GetShrinkVolume().GetVolume()}} {
		for _, p := range rs {
			if p.GetShared() != nil {
				return true
			}
		}
	}
	return false
}
