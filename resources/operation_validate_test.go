package resources

import (
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
)

// volAt is a persistent volume of role db with a given container path.
func volAt(id, containerPath string, opts ...opt) *mesos.Resource {
	r := sc("disk", 10, append([]opt{dyn("db"), pv(id)}, opts...)...)
	r.Disk.Volume.ContainerPath = proto.String(containerPath)
	return r
}

func TestValidateOperation(t *testing.T) {
	fw := OperationContext{FrameworkRoles: []string{"db"}, RefinementCapable: true}
	fwOld := OperationContext{FrameworkRoles: []string{"a/b"}}
	fwRefine := OperationContext{FrameworkRoles: []string{"a/b"}, RefinementCapable: true}
	fwShared := OperationContext{FrameworkRoles: []string{"db"}, SharedResourcesCapable: true}
	fwTwo := OperationContext{FrameworkRoles: []string{"db", "web"}}
	operator := OperationContext{}
	withP := func(c OperationContext, p string) OperationContext { c.Principal = p; return c }
	agent := mk(t, sc("cpus", 4), sc("disk", 100, dyn("db")), sc("disk", 10, dyn("db"), pv("v")), sc("disk", 5, dyn("db"), pv("used")))
	withVols := func(c OperationContext) OperationContext {
		c.Volumes = agent.Checkpointed()
		c.InUse = mk(t, sc("cpus", 1), sc("disk", 5, dyn("db"), pv("used")))
		return c
	}
	refined := rsv(static("a"), dynamic("a/b", "p"))
	noPrincipal := rsv(&mesos.Resource_ReservationInfo{Type: mesos.Resource_ReservationInfo_DYNAMIC.Enum(), Role: proto.String("db")})
	bad := func(f func(*mesos.Resource)) opt { return f }
	volMode := func(m mesos.Volume_Mode) opt { return func(r *mesos.Resource) { r.Disk.Volume.Mode = m.Enum() } }

	tests := []struct {
		name string
		op   *mesos.Offer_Operation
		c    OperationContext
		err  string // substring; "" for valid
	}{
		// RESERVE
		{"reserve by a framework", reserveOp(sc("cpus", 1, dyn("db"), alloc("db"))), fw, ""},
		{"reserve by an operator", reserveOp(sc("cpus", 1, dyn("web")), rng("ports", 1, 2, dyn("web"))), operator, ""},
		{"reserve, pre-refinement format", reserveOp(sc("cpus", 1, preDyn("db"))), fw, ""},
		{"reserve with the caller's principal", reserveOp(sc("cpus", 1, dyn("db"))), withP(fw, "p"), ""},
		{"reserve nothing", reserveOp(), fw, "reserve.resources: must not be empty"},
		{"reserve no reserve", &mesos.Offer_Operation{Type: mesos.Offer_Operation_RESERVE.Enum()}, fw, "reserve: must be set"},
		{"reserve zero", reserveOp(sc("cpus", 0, dyn("db"))), fw, `reserve.resources[0]: resource "cpus" must not be empty`},
		{"reserve unreserved", reserveOp(sc("cpus", 1)), fw, "reserve.resources[0]: resource cpus:1 is not dynamically reserved"},
		{"reserve static", reserveOp(sc("cpus", 1, rsv(static("db")))), operator, "reserve.resources[0]: resource cpus(db):1 is not dynamically reserved"},
		{"reserve to another role", reserveOp(sc("cpus", 1, dyn("web"))), fw,
			`reserve.resources[0].reservations[0].role: role "web" is not one of the framework's roles [db]`},
		{"reserve to another role, pre-refinement", reserveOp(sc("cpus", 1, preDyn("web"))), fw,
			`reserve.resources[0].role: role "web" is not one of the framework's roles [db]`},
		{"reserve allocated elsewhere", reserveOp(sc("cpus", 1, dyn("db"), alloc("web"))), fwTwo,
			`reserve.resources[0].allocation_info.role: the resource is allocated to role "web", not to the reservation's role "db"`},
		{"reserve across roles", reserveOp(sc("cpus", 1, dyn("db"), alloc("db")), sc("mem", 1, dyn("web"), alloc("web"))), fwTwo,
			"reserve.resources[1].allocation_info.role: resources of one operation must be allocated to one role"},
		{"reserve allocated by an operator", reserveOp(sc("cpus", 1, dyn("db"), alloc("db"))), operator,
			"reserve.resources[0].allocation_info: the operator API only operates on unallocated resources"},
		{"reserve for another principal", reserveOp(sc("cpus", 1, dyn("db"))), withP(fw, "q"),
			`reserve.resources[0].reservations[0].principal: "p" does not match the caller's principal "q"`},
		{"reserve for another principal, pre-refinement", reserveOp(sc("cpus", 1, preDyn("db"))), withP(operator, "q"),
			`reserve.resources[0].reservation.principal: "p" does not match the caller's principal "q"`},
		{"reserve without principal", reserveOp(sc("cpus", 1, noPrincipal)), withP(fw, "q"),
			`reserve.resources[0].reservations[0].principal: must be set to the caller's principal "q"`},
		{"reserve without principal, none needed", reserveOp(sc("cpus", 1, noPrincipal)), fw, ""},
		{"reserve a refinement", reserveOp(sc("cpus", 1, refined)), fwRefine, ""},
		{"reserve a refinement without the capability", reserveOp(sc("cpus", 1, refined)), fwOld,
			"reserve.resources[0].reservations: refined reservations need the RESERVATION_REFINEMENT capability"},
		{"reserve a refinement that does not refine", reserveOp(sc("cpus", 1, rsv(static("a"), dynamic("b", "p")))), operator,
			`reserve.resources[0]: reservations[1]: role "b" is not a refinement of "a"`},
		{"reserve revocable", reserveOp(sc("cpus", 1, dyn("db"), revocableOpt)), fw,
			"reserve.resources[0].revocable: revocable resources cannot be dynamically reserved"},
		{"reserve a volume", reserveOp(sc("disk", 1, dyn("db"), pv("v"))), fw,
			"reserve.resources[0].disk.persistence: persistent volumes cannot be reserved"},
		{"reserve half a gpu", reserveOp(sc("gpus", 0.5, dyn("db"))), fw, "reserve.resources[0].scalar: gpus must be a whole number, not 0.5"},
		{"reserve invalid", reserveOp(sc("cpus", math.NaN(), dyn("db"))), fw, `reserve.resources[0]: scalar value NaN is not a finite number`},
		{"reserve a non-persistent volume", reserveOp(sc("disk", 1, dyn("db"), bad(func(r *mesos.Resource) {
			r.Disk = &mesos.Resource_DiskInfo{Volume: &mesos.Volume{ContainerPath: proto.String("x"), Mode: mesos.Volume_RW.Enum()}}
		}))), fw, "reserve.resources[0].disk.volume: non-persistent volumes are not supported"},
		{"reserve from a provider", reserveOp(sc("cpus", 1, dyn("db"), bad(func(r *mesos.Resource) {
			r.ProviderId = &mesos.ResourceProviderID{Value: proto.String("rp")}
		}))), fw, "reserve.resources[0].provider_id: resource providers are not supported"},
		{"reservation update", reserveFromOp([]*mesos.Resource{sc("cpus", 1, dyn("db")), sc("mem", 2, dyn("db"))},
			[]*mesos.Resource{sc("cpus", 1, dyn("web")), sc("mem", 2, dyn("web"))}), operator, ""},
		{"reservation update, mixed source", reserveFromOp([]*mesos.Resource{sc("cpus", 1, dyn("db")), sc("mem", 2)},
			[]*mesos.Resource{sc("cpus", 1, dyn("web")), sc("mem", 2, dyn("web"))}), operator,
			"reserve.source[1].reservations: all resources must have the same reservations as reserve.source[0]"},
		{"reservation update, other quantities", reserveFromOp([]*mesos.Resource{sc("cpus", 1, dyn("db"))},
			[]*mesos.Resource{sc("cpus", 2, dyn("web"))}), operator, "reserve.source: cpus:1 must hold the same quantities as reserve.resources cpus:2"},
		{"reservation update, invalid source", reserveFromOp([]*mesos.Resource{sc("cpus", -1, dyn("db"))},
			[]*mesos.Resource{sc("cpus", 1, dyn("web"))}), operator, "reserve.source[0]: scalar value -1 is negative"},

		// UNRESERVE
		{"unreserve", unreserveOp(sc("cpus", 1, dyn("db"), alloc("db"))), fw, ""},
		{"unreserve a refinement", unreserveOp(sc("cpus", 1, refined)), operator, ""},
		{"unreserve nothing", unreserveOp(), fw, "unreserve.resources: must not be empty"},
		{"unreserve static", unreserveOp(sc("cpus", 1, rsv(static("db")))), operator,
			"unreserve.resources[0]: resource cpus(db):1 is not dynamically reserved"},
		{"unreserve a volume", unreserveOp(sc("disk", 10, dyn("db"), pv("v"))), operator,
			"unreserve.resources[0].disk.persistence: a persistent volume cannot be unreserved; DESTROY it first"},
		{"unreserve another principal's", unreserveOp(sc("cpus", 1, dyn("db"))), withP(fw, "q"),
			`unreserve.resources[0].reservations[0].principal: the reservation was made by principal "p"; "q" cannot unreserve it`},
		{"unreserve one's own", unreserveOp(sc("cpus", 1, dyn("db"))), withP(operator, "p"), ""},

		// CREATE
		{"create", createOp(sc("disk", 10, dyn("db"), pv("w"), alloc("db"))), withVols(fw), ""},
		{"create by an operator", createOp(sc("disk", 10, dyn("db"), pv("w"))), withVols(operator), ""},
		{"create nothing", createOp(), fw, "create.volumes: must not be empty"},
		{"create plain disk", createOp(sc("disk", 10, dyn("db"))), fw,
			"create.volumes[0].disk: resource disk(reservations: [(DYNAMIC,db,p)]):10 is not a persistent volume (no disk info)"},
		{"create on cpus", createOp(sc("cpus", 1, dyn("db"))), fw, "create.volumes[0].disk: resource"},
		{"create on unreserved disk", createOp(sc("disk", 10, pv("w"))), fw,
			"create.volumes[0].reservations: persistent volumes cannot be created from unreserved resources"},
		{"create read-only", createOp(sc("disk", 10, dyn("db"), pv("w"), volMode(mesos.Volume_RO))), fw,
			"create.volumes[0].disk.volume.mode: read-only persistent volumes are not supported"},
		{"create without volume", createOp(sc("disk", 10, dyn("db"), pv("w"), bad(func(r *mesos.Resource) { r.Disk.Volume = nil }))), fw,
			"create.volumes[0].disk.volume: must be set for a persistent volume"},
		{"create with a host path", createOp(sc("disk", 10, dyn("db"), pv("w"), bad(func(r *mesos.Resource) { r.Disk.Volume.HostPath = proto.String("/x") }))), fw,
			"create.volumes[0].disk.volume.host_path: must not be set for a persistent volume"},
		{"create at an absolute path", createOp(volAt("w", "/data")), fw, `create.volumes[0].disk.volume.container_path: "/data" must be relative to the sandbox`},
		{"create outside the sandbox", createOp(volAt("w", "a/../../x")), fw, `create.volumes[0].disk.volume.container_path: "a/../../x" must not leave the sandbox`},
		{"create at no path", createOp(volAt("w", "")), fw, "create.volumes[0].disk.volume.container_path: must not be empty"},
		{"create with an empty id", createOp(sc("disk", 10, dyn("db"), pv(""))), fw, "create.volumes[0].disk.persistence.id: must not be empty"},
		{"create with a slash in the id", createOp(sc("disk", 10, dyn("db"), pv("a/b"))), fw,
			`create.volumes[0].disk.persistence.id: persistence ID "a/b" contains invalid characters`},
		{"create with id ..", createOp(sc("disk", 10, dyn("db"), pv(".."))), fw, `create.volumes[0].disk.persistence.id: ".." is not a valid persistence ID`},
		{"create revocable", createOp(sc("disk", 10, dyn("db"), pv("w"), revocableOpt)), fw,
			"create.volumes[0].revocable: persistent volumes cannot be created from revocable resources"},
		{"create an id used on the agent", createOp(sc("disk", 20, dyn("db"), pv("v"))), withVols(fw),
			`create.volumes[0].disk.persistence.id: persistence ID "v" of role "db" is already used on the agent`},
		{"create an id used by another role", createOp(sc("disk", 20, dyn("web"), pv("v"))), withVols(operator), ""},
		{"create an id twice", createOp(sc("disk", 1, dyn("db"), pv("x")), sc("disk", 2, dyn("db"), pv("x"))), withVols(fw),
			`create.volumes[1].disk.persistence.id: persistence ID "x" of role "db" is already used in this operation`},
		{"create shared without the capability", createOp(sc("disk", 10, dyn("db"), pv("s"), sharedOpt)), fw,
			"create.volumes[0].shared: shared volumes need the SHARED_RESOURCES capability"},
		{"create shared with the capability", createOp(sc("disk", 10, dyn("db"), pv("s"), sharedOpt)), fwShared, ""},
		{"create shared by an operator", createOp(sc("disk", 10, dyn("db"), pv("s"), sharedOpt)), operator, ""},
		{"create for another principal", createOp(sc("disk", 10, dyn("db"), pv("w"))), withP(fw, "q"),
			`create.volumes[0].disk.persistence.principal: "p" does not match the caller's principal "q"`},
		{"create without principal", createOp(sc("disk", 10, dyn("db"), pv("w"), bad(func(r *mesos.Resource) { r.Disk.Persistence.Principal = nil }))),
			withP(fw, "q"), `create.volumes[0].disk.persistence.principal: must be set to the caller's principal "q"`},

		// DESTROY
		{"destroy", destroyOp(sc("disk", 10, dyn("db"), pv("v"))), withVols(operator), ""},
		{"destroy an offered volume", destroyOp(sc("disk", 10, dyn("db"), pv("v"), alloc("db"))), withVols(fw), ""},
		{"destroy nothing", destroyOp(), withVols(fw), "destroy.volumes: must not be empty"},
		{"destroy an unknown volume", destroyOp(sc("disk", 10, dyn("db"), pv("nope"))), withVols(operator),
			"destroy.volumes[0]: persistent volume disk(reservations: [(DYNAMIC,db,p)])[nope,data:RW]:10 does not exist on the agent"},
		{"destroy a volume in use", destroyOp(sc("disk", 5, dyn("db"), pv("used"))), withVols(operator),
			"destroy.volumes[0]: persistent volume disk(reservations: [(DYNAMIC,db,p)])[used,data:RW]:5 is in use by a task or executor"},
		{"destroy a plain disk", destroyOp(sc("disk", 10, dyn("db"))), withVols(operator), "destroy.volumes[0].disk: resource"},
		{"destroy another principal's", destroyOp(sc("disk", 10, dyn("db"), pv("v"))), withP(withVols(operator), "q"),
			`destroy.volumes[0].disk.persistence.principal: the volume was created by principal "p"; "q" cannot destroy it`},

		// GROW_VOLUME
		{"grow", growOp(sc("disk", 10, dyn("db"), pv("v")), sc("disk", 5, dyn("db"))), withVols(operator), ""},
		{"grow from other disk", growOp(sc("disk", 10, dyn("db"), pv("v")), sc("disk", 5)), withVols(operator),
			"grow_volume.addition: disk:5 is not the same disk as the volume's disk(reservations: [(DYNAMIC,db,p)]):10"},
		{"grow by nothing", growOp(sc("disk", 10, dyn("db"), pv("v")), sc("disk", 0, dyn("db"))), withVols(operator),
			`grow_volume.addition: resource "disk" must not be empty`},
		{"grow without addition", growOp(sc("disk", 10, dyn("db"), pv("v")), nil), withVols(operator), "grow_volume.addition: must be set"},
		{"grow without volume", growOp(nil, sc("disk", 1, dyn("db"))), withVols(operator), "grow_volume.volume: must be set"},
		{"grow an unknown volume", growOp(sc("disk", 10, dyn("db"), pv("x")), sc("disk", 5, dyn("db"))), withVols(operator),
			"grow_volume.volume: persistent volume"},
		{"grow a shared volume", growOp(sc("disk", 10, dyn("db"), pv("v"), sharedOpt), sc("disk", 5, dyn("db"))), withVols(operator),
			"grow_volume.volume.shared: resizing a shared persistent volume is not supported"},

		// SHRINK_VOLUME
		{"shrink", shrinkOp(sc("disk", 10, dyn("db"), pv("v")), 4), withVols(operator), ""},
		{"shrink to nothing", shrinkOp(sc("disk", 10, dyn("db"), pv("v")), 10), withVols(operator),
			"shrink_volume.subtract: 10 must be smaller than the volume's size 10"},
		{"shrink by nothing", shrinkOp(sc("disk", 10, dyn("db"), pv("v")), 0), withVols(operator), "shrink_volume.subtract: 0 must be greater than zero"},
		{"shrink by NaN", shrinkOp(sc("disk", 10, dyn("db"), pv("v")), math.NaN()), withVols(operator), "shrink_volume.subtract: NaN must be greater than zero"},
		{"shrink on MOUNT", shrinkOp(sc("disk", 10, mnt("/m"), dyn("db"), pv("m")), 1),
			OperationContext{Volumes: mk(t, sc("disk", 10, mnt("/m"), dyn("db"), pv("m")))},
			"shrink_volume.volume.disk.source: shrinking a volume on a MOUNT disk is not supported"},

		// Others.
		{"launch", &mesos.Offer_Operation{Type: mesos.Offer_Operation_LAUNCH.Enum(), Launch: &mesos.Offer_Operation_Launch{}}, fw, ""},
		{"launch without launch", &mesos.Offer_Operation{Type: mesos.Offer_Operation_LAUNCH.Enum()}, fw, "launch: must be set"},
		{"create disk", &mesos.Offer_Operation{Type: mesos.Offer_Operation_CREATE_DISK.Enum()}, operator, "type: CREATE_DISK is not supported"},
		{"unknown", &mesos.Offer_Operation{}, operator, "type: unknown offer operation type UNKNOWN"},
		{"nil", nil, operator, "operation: must be set"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := ValidateOperation(tc.op, tc.c)
			if tc.err == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v\nwant it to contain %q", err, tc.err)
			}
		})
	}
}

// TestValidatedOperationsApply: what the validator accepts on resources the
// agent has, Apply performs, and vice versa for the malformed.
func TestValidatedOperationsApply(t *testing.T) {
	agent := mk(t, sc("cpus", 4), sc("disk", 100, dyn("db")), sc("disk", 10, dyn("db"), pv("v")))
	c := OperationContext{Volumes: agent.Checkpointed()}
	for _, op := range []*mesos.Offer_Operation{
		reserveOp(sc("cpus", 1, dyn("db"))),
		unreserveOp(sc("disk", 50, dyn("db"))),
		createOp(sc("disk", 50, dyn("db"), pv("w"))),
		destroyOp(sc("disk", 10, dyn("db"), pv("v"))),
		growOp(sc("disk", 10, dyn("db"), pv("v")), sc("disk", 5, dyn("db"))),
		shrinkOp(sc("disk", 10, dyn("db"), pv("v")), 4),
	} {
		if err := ValidateOperation(op, c); err != nil {
			t.Fatalf("%v: %v", op.GetType(), err)
		}
		if _, err := agent.Apply(op); err != nil {
			t.Fatalf("%v: valid but Apply: %v", op.GetType(), err)
		}
	}
}
