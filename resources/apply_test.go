package resources

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
)

func reserveOp(rs ...*mesos.Resource) *mesos.Offer_Operation {
	return &mesos.Offer_Operation{Type: mesos.Offer_Operation_RESERVE.Enum(),
		Reserve: &mesos.Offer_Operation_Reserve{Resources: rs}}
}

func reserveFromOp(source, rs []*mesos.Resource) *mesos.Offer_Operation {
	return &mesos.Offer_Operation{Type: mesos.Offer_Operation_RESERVE.Enum(),
		Reserve: &mesos.Offer_Operation_Reserve{Source: source, Resources: rs}}
}

func unreserveOp(rs ...*mesos.Resource) *mesos.Offer_Operation {
	return &mesos.Offer_Operation{Type: mesos.Offer_Operation_UNRESERVE.Enum(),
		Unreserve: &mesos.Offer_Operation_Unreserve{Resources: rs}}
}

func createOp(vs ...*mesos.Resource) *mesos.Offer_Operation {
	return &mesos.Offer_Operation{Type: mesos.Offer_Operation_CREATE.Enum(),
		Create: &mesos.Offer_Operation_Create{Volumes: vs}}
}

func destroyOp(vs ...*mesos.Resource) *mesos.Offer_Operation {
	return &mesos.Offer_Operation{Type: mesos.Offer_Operation_DESTROY.Enum(),
		Destroy: &mesos.Offer_Operation_Destroy{Volumes: vs}}
}

func growOp(v, add *mesos.Resource) *mesos.Offer_Operation {
	return &mesos.Offer_Operation{Type: mesos.Offer_Operation_GROW_VOLUME.Enum(),
		GrowVolume: &mesos.Offer_Operation_GrowVolume{Volume: v, Addition: add}}
}

func shrinkOp(v *mesos.Resource, sub float64) *mesos.Offer_Operation {
	return &mesos.Offer_Operation{Type: mesos.Offer_Operation_SHRINK_VOLUME.Enum(),
		ShrinkVolume: &mesos.Offer_Operation_ShrinkVolume{Volume: v,
			Subtract: &mesos.Value_Scalar{Value: proto.Float64(sub)}}}
}

// preDyn is a dynamic reservation to role in the pre-refinement format.
func preDyn(role string) opt {
	return func(r *mesos.Resource) {
		r.Role = proto.String(role)
		r.Reservation = &mesos.Resource_ReservationInfo{Principal: proto.String("p")}
	}
}

func TestApply(t *testing.T) {
	base := MustParse("cpus:4;mem:1024;disk:2048;ports:[31000-32000]")
	refined := rsv(static("a"), dynamic("a/b", "p"))
	withVol := plus(t, "cpus:4", sc("disk", 100, dyn("db")), sc("disk", 10, dyn("db"), pv("v")))
	withShared := plus(t, "", sc("disk", 10, dyn("db"), pv("s"), sharedOpt))
	withMount := mk(t, sc("disk", 500, mnt("/mnt/a"), dyn("db")), sc("disk", 500, mnt("/mnt/b")))
	tests := []struct {
		name string
		r    Resources
		op   *mesos.Offer_Operation
		want Resources
		err  string // substring; "" for success
		na   bool   // the error is a *NotAvailableError
	}{
		{
			name: "reserve", r: base,
			op:   reserveOp(sc("cpus", 2, dyn("db")), rng("ports", 31000, 31009, dyn("db"))),
			want: plus(t, "cpus:2;mem:1024;disk:2048;ports:[31010-32000]", sc("cpus", 2, dyn("db")), rng("ports", 31000, 31009, dyn("db"))),
		},
		{
			name: "reserve, pre-refinement format", r: base,
			op:   reserveOp(sc("cpus", 2, preDyn("db"))),
			want: plus(t, "cpus:2;mem:1024;disk:2048;ports:[31000-32000]", sc("cpus", 2, dyn("db"))),
		},
		{
			name: "reserve refines a static reservation", r: MustParse("cpus(a):4"),
			op:   reserveOp(sc("cpus", 1, refined)),
			want: plus(t, "cpus(a):3", sc("cpus", 1, refined)),
		},
		{
			name: "reserve keeps allocation info", r: mk(t, sc("cpus", 4, alloc("db"))),
			op:   reserveOp(sc("cpus", 1, dyn("db"), alloc("db"))),
			want: mk(t, sc("cpus", 3, alloc("db")), sc("cpus", 1, dyn("db"), alloc("db"))),
		},
		{
			name: "reserve, entries apply in turn", r: MustParse("cpus:3"),
			op:  reserveOp(sc("cpus", 2, dyn("db")), sc("cpus", 2, dyn("web"))),
			err: "reserve.resources[1]: resources cpus:2 are not available in cpus:1; cpus(reservations: [(DYNAMIC,db,p)]):2", na: true,
		},
		{
			name: "reserve more than there is", r: MustParse("cpus:1;mem:10"),
			op:  reserveOp(sc("cpus", 2, dyn("db"))),
			err: "reserve.resources[0]: resources cpus:2 are not available in cpus:1; mem:10", na: true,
		},
		{
			name: "reserve unreserved", r: base, op: reserveOp(sc("cpus", 1)),
			err: "reserve.resources[0]: cpus:1 is not dynamically reserved",
		},
		{
			name: "reserve static", r: base, op: reserveOp(sc("cpus", 1, rsv(static("db")))),
			err: "reserve.resources[0]: cpus(db):1 is not dynamically reserved",
		},
		{
			name: "reserve invalid resource", r: base, op: reserveOp(sc("cpus", -1, dyn("db"))),
			err: `reserve.resources[0] "cpus": scalar value -1 is negative`,
		},
		{
			name: "reserve nothing", r: base, op: reserveOp(sc("cpus", 0, dyn("db"))),
			err: `reserve.resources[0] "cpus": must not be empty`,
		},
		{
			name: "reserve without reserve", r: base, op: &mesos.Offer_Operation{Type: mesos.Offer_Operation_RESERVE.Enum()},
			err: "reserve: must be set",
		},
		{
			name: "reservation update with source", r: plus(t, "mem:1", sc("cpus", 2, dyn("db"))),
			op:   reserveFromOp([]*mesos.Resource{sc("cpus", 2, dyn("db"))}, []*mesos.Resource{sc("cpus", 2, dyn("web"))}),
			want: plus(t, "mem:1", sc("cpus", 2, dyn("web"))),
		},
		{
			name: "reservation update with other quantities", r: plus(t, "", sc("cpus", 2, dyn("db"))),
			op:  reserveFromOp([]*mesos.Resource{sc("cpus", 2, dyn("db"))}, []*mesos.Resource{sc("cpus", 3, dyn("web"))}),
			err: "must hold the same quantities",
		},
		{
			name: "unreserve", r: plus(t, "cpus:1", sc("cpus", 2, dyn("db"))),
			op:   unreserveOp(sc("cpus", 1.5, dyn("db"))),
			want: plus(t, "cpus:2.5", sc("cpus", 0.5, dyn("db"))),
		},
		{
			name: "unreserve a refinement back to the static role", r: plus(t, "cpus(a):3", sc("cpus", 1, refined)),
			op:   unreserveOp(sc("cpus", 1, refined)),
			want: MustParse("cpus(a):4"),
		},
		{
			name: "unreserve another principal's reservation", r: mk(t, sc("cpus", 2, dyn("db"))),
			op:  unreserveOp(sc("cpus", 2, rsv(dynamic("db", "q")))),
			err: "resources cpus(reservations: [(DYNAMIC,db,q)]):2 are not available", na: true,
		},
		{
			name: "unreserve static", r: MustParse("cpus(db):2"), op: unreserveOp(sc("cpus", 2, rsv(static("db")))),
			err: "unreserve.resources[0]: cpus(db):2 is not dynamically reserved",
		},
		{
			name: "unreserve a volume", r: withVol, op: unreserveOp(sc("disk", 10, dyn("db"), pv("v"))),
			err: "is a persistent volume: destroy it before unreserving its disk",
		},
		{
			name: "create", r: withVol, op: createOp(sc("disk", 60, dyn("db"), pv("w"))),
			want: plus(t, "cpus:4", sc("disk", 40, dyn("db")), sc("disk", 10, dyn("db"), pv("v")), sc("disk", 60, dyn("db"), pv("w"))),
		},
		{
			name: "create two", r: withVol, op: createOp(sc("disk", 60, dyn("db"), pv("w")), sc("disk", 40, dyn("db"), pv("x"))),
			want: plus(t, "cpus:4", sc("disk", 10, dyn("db"), pv("v")), sc("disk", 60, dyn("db"), pv("w")), sc("disk", 40, dyn("db"), pv("x"))),
		},
		{
			name: "create shared", r: withVol, op: createOp(sc("disk", 100, dyn("db"), pv("s"), sharedOpt)),
			want: plus(t, "cpus:4", sc("disk", 10, dyn("db"), pv("v")), sc("disk", 100, dyn("db"), pv("s"), sharedOpt)),
		},
		{
			name: "create on a MOUNT disk takes it whole", r: withMount, op: createOp(sc("disk", 500, mnt("/mnt/a"), dyn("db"), pv("m"))),
			want: mk(t, sc("disk", 500, mnt("/mnt/a"), dyn("db"), pv("m")), sc("disk", 500, mnt("/mnt/b"))),
		},
		{
			name: "create on part of a MOUNT disk", r: withMount, op: createOp(sc("disk", 100, mnt("/mnt/a"), dyn("db"), pv("m"))),
			err: "are not available", na: true,
		},
		{
			name: "create on unreserved disk that is not there", r: withVol, op: createOp(sc("disk", 60, dyn("web"), pv("w"))),
			err: "create.volumes[0]: resources disk(reservations: [(DYNAMIC,web,p)]):60 are not available", na: true,
		},
		{
			name: "create a plain disk", r: withVol, op: createOp(sc("disk", 60, dyn("db"))),
			err: "create.volumes[0]: disk(reservations: [(DYNAMIC,db,p)]):60 is not a persistent volume",
		},
		{
			name: "destroy", r: withVol, op: destroyOp(sc("disk", 10, dyn("db"), pv("v"))),
			want: plus(t, "cpus:4", sc("disk", 110, dyn("db"))),
		},
		{
			name: "destroy shared", r: withShared, op: destroyOp(sc("disk", 10, dyn("db"), pv("s"), sharedOpt)),
			want: mk(t, sc("disk", 10, dyn("db"))),
		},
		{
			name: "destroy a shared volume with other copies", r: withShared.Add(withShared),
			op:  destroyOp(sc("disk", 10, dyn("db"), pv("s"), sharedOpt)),
			err: "other shared copies of it are in use",
		},
		{
			name: "destroy an unknown volume", r: withVol, op: destroyOp(sc("disk", 10, dyn("db"), pv("nope"))),
			err: "destroy.volumes[0]: resources", na: true,
		},
		{
			name: "destroy a volume of another size", r: withVol, op: destroyOp(sc("disk", 5, dyn("db"), pv("v"))),
			err: "are not available", na: true,
		},
		{
			name: "grow", r: withVol, op: growOp(sc("disk", 10, dyn("db"), pv("v")), sc("disk", 30, dyn("db"))),
			want: plus(t, "cpus:4", sc("disk", 70, dyn("db")), sc("disk", 40, dyn("db"), pv("v"))),
		},
		{
			name: "grow from other disk", r: withVol.Add(MustParse("disk:100")),
			op:  growOp(sc("disk", 10, dyn("db"), pv("v")), sc("disk", 30)),
			err: "grow_volume.addition: disk:30 is not the disk of volume",
		},
		{
			name: "grow by more than there is", r: withVol, op: growOp(sc("disk", 10, dyn("db"), pv("v")), sc("disk", 300, dyn("db"))),
			err: "grow_volume: resources", na: true,
		},
		{
			name: "grow a shared volume", r: withShared, op: growOp(sc("disk", 10, dyn("db"), pv("s"), sharedOpt), sc("disk", 1, dyn("db"))),
			err: "growing a shared persistent volume is not supported",
		},
		{
			name: "shrink", r: withVol, op: shrinkOp(sc("disk", 10, dyn("db"), pv("v")), 4),
			want: plus(t, "cpus:4", sc("disk", 104, dyn("db")), sc("disk", 6, dyn("db"), pv("v"))),
		},
		{
			name: "shrink to nothing", r: withVol, op: shrinkOp(sc("disk", 10, dyn("db"), pv("v")), 10),
			err: "shrink_volume.subtract: 10 must be smaller than the volume's size 10",
		},
		{
			name: "shrink by nothing", r: withVol, op: shrinkOp(sc("disk", 10, dyn("db"), pv("v")), 0.0001),
			err: "shrink_volume.subtract: 0.0001 must be greater than zero",
		},
		{
			name: "shrink on MOUNT", r: withMount, op: shrinkOp(sc("disk", 500, mnt("/mnt/a"), dyn("db"), pv("m")), 1),
			err: "MOUNT disk is not supported",
		},
		{
			name: "launch changes nothing", r: base,
			op:   &mesos.Offer_Operation{Type: mesos.Offer_Operation_LAUNCH.Enum(), Launch: &mesos.Offer_Operation_Launch{}},
			want: base,
		},
		{
			name: "create disk", r: base, op: &mesos.Offer_Operation{Type: mesos.Offer_Operation_CREATE_DISK.Enum()},
			err: "CREATE_DISK is not supported",
		},
		{
			name: "no type", r: base, op: &mesos.Offer_Operation{},
			err: "unknown offer operation type UNKNOWN",
		},
		{name: "nil", r: base, op: nil, err: "operation is null"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.r.Apply(tc.op)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.err)
				}
				var na *NotAvailableError
				if errors.As(err, &na) != tc.na {
					t.Fatalf("err %v: NotAvailableError = %v, want %v", err, !tc.na, tc.na)
				}
				if !got.Equal(tc.r) {
					t.Fatalf("on error Apply returned %v, want the input %v", got, tc.r)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(tc.want) {
				t.Fatalf("got  %v\nwant %v", got, tc.want)
			}
			// Conversion agrees with Apply.
			consumed, converted, err := Conversion(tc.op)
			if err != nil {
				t.Fatal(err)
			}
			if via := tc.r.Subtract(consumed).Add(converted); !via.Equal(got) {
				t.Fatalf("r - consumed + converted = %v, want %v", via, got)
			}
		})
	}
}

// TestWithAllocationRole: a framework's operation, given the offer's role,
// applies to offered resources; without allocation info, to the agent's
// total; and the two results agree once unallocated.
func TestWithAllocationRole(t *testing.T) {
	total := mk(t, sc("cpus", 4), sc("disk", 100, dyn("db")))
	offered := total.AllocatedTo("db")
	op := &mesos.Offer_Operation{Type: mesos.Offer_Operation_RESERVE.Enum(), Reserve: &mesos.Offer_Operation_Reserve{
		Resources: []*mesos.Resource{sc("cpus", 1, dyn("db"))}}}
	if _, err := offered.Apply(op); err == nil {
		t.Fatal("unallocated operation resources must not match offered ones")
	}
	alloc := WithAllocationRole(op, "db")
	if op.Reserve.Resources[0].AllocationInfo != nil {
		t.Fatal("WithAllocationRole modified its argument")
	}
	inOffer, err := offered.Apply(alloc)
	if err != nil {
		t.Fatal(err)
	}
	onAgent, err := total.Apply(WithAllocationRole(alloc, ""))
	if err != nil {
		t.Fatal(err)
	}
	if !inOffer.WithoutAllocationInfo().Equal(onAgent) {
		t.Fatalf("offer %v and agent %v disagree", inOffer, onAgent)
	}
	// Existing allocation info is kept (the validator judges it).
	other := WithAllocationRole(WithAllocationRole(op, "web"), "db")
	if got := other.Reserve.Resources[0].GetAllocationInfo().GetRole(); got != "web" {
		t.Fatalf("allocation role overwritten: %q", got)
	}
	for _, op := range []*mesos.Offer_Operation{
		createOp(sc("disk", 1, dyn("db"), pv("v"))), destroyOp(sc("disk", 1, dyn("db"), pv("v"))),
		unreserveOp(sc("cpus", 1, dyn("db"))), growOp(sc("disk", 1, dyn("db"), pv("v")), sc("disk", 1, dyn("db"))),
		shrinkOp(sc("disk", 2, dyn("db"), pv("v")), 1),
		reserveFromOp([]*mesos.Resource{sc("cpus", 1, dyn("db"))}, []*mesos.Resource{sc("cpus", 1, dyn("web"))}),
	} {
		c, v, err := Conversion(WithAllocationRole(op, "db"))
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Add(v).AllocationRoles()) != 1 || len(c.Add(v).Allocated("db").Proto()) != len(c.Add(v).Proto()) {
			t.Fatalf("%v: not all resources allocated to db: %v → %v", op.GetType(), c, v)
		}
	}
}
