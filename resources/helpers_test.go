package resources

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
)

// Builders for resources in tests that the text syntax cannot express
// (dynamic reservations, volumes, shared and MOUNT disks).

type opt func(*mesos.Resource)

// sc builds a scalar resource.
func sc(name string, v float64, opts ...opt) *mesos.Resource {
	r := &mesos.Resource{Name: proto.String(name), Type: mesos.Value_SCALAR.Enum(),
		Scalar: &mesos.Value_Scalar{Value: proto.Float64(v)}}
	for _, o := range opts {
		o(r)
	}
	return r
}

// rng builds a ports-like range resource.
func rng(name string, b, e uint64, opts ...opt) *mesos.Resource {
	r := &mesos.Resource{Name: proto.String(name), Type: mesos.Value_RANGES.Enum(),
		Ranges: &mesos.Value_Ranges{Range: []*mesos.Value_Range{{Begin: proto.Uint64(b), End: proto.Uint64(e)}}}}
	for _, o := range opts {
		o(r)
	}
	return r
}

func static(role string) *mesos.Resource_ReservationInfo {
	return &mesos.Resource_ReservationInfo{Type: mesos.Resource_ReservationInfo_STATIC.Enum(), Role: proto.String(role)}
}

// rsv sets the reservation stack.
func rsv(stack ...*mesos.Resource_ReservationInfo) opt {
	return func(r *mesos.Resource) { r.Reservations = stack }
}

// dyn reserves dynamically to role by principal "p" (on top of nothing).
func dyn(role string) opt { return rsv(dynamic(role, "p")) }

// pv makes a disk a persistent volume with id, mounted at "data".
func pv(id string) opt {
	return func(r *mesos.Resource) {
		if r.Disk == nil {
			r.Disk = &mesos.Resource_DiskInfo{}
		}
		r.Disk.Persistence = &mesos.Resource_DiskInfo_Persistence{Id: proto.String(id), Principal: proto.String("p")}
		r.Disk.Volume = &mesos.Volume{ContainerPath: proto.String("data"), Mode: mesos.Volume_RW.Enum()}
	}
}

func sharedOpt(r *mesos.Resource)    { r.Shared = &mesos.Resource_SharedInfo{} }
func revocableOpt(r *mesos.Resource) { r.Revocable = &mesos.Resource_RevocableInfo{} }
func throttleOpt(r *mesos.Resource) {
	r.Revocable = &mesos.Resource_RevocableInfo{ThrottleInfo: &mesos.Resource_RevocableInfo_ThrottleInfo{}}
}

// mnt puts a disk on a MOUNT source at root.
func mnt(root string) opt {
	return func(r *mesos.Resource) {
		if r.Disk == nil {
			r.Disk = &mesos.Resource_DiskInfo{}
		}
		r.Disk.Source = &mesos.Resource_DiskInfo_Source{Type: mesos.Resource_DiskInfo_Source_MOUNT.Enum(),
			Mount: &mesos.Resource_DiskInfo_Source_Mount{Root: proto.String(root)}}
	}
}

func alloc(role string) opt {
	return func(r *mesos.Resource) { r.AllocationInfo = &mesos.Resource_AllocationInfo{Role: proto.String(role)} }
}

// mk builds a Resources value, failing the test on invalid input.
func mk(t testing.TB, rs ...*mesos.Resource) Resources {
	t.Helper()
	r, err := New(rs...)
	if err != nil {
		t.Fatalf("New(%v): %v", rs, err)
	}
	return r
}

// plus concatenates resources and text-syntax resources.
func plus(t testing.TB, text string, rs ...*mesos.Resource) Resources {
	t.Helper()
	return MustParse(text).Add(mk(t, rs...))
}
