package resources

import (
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
)

func TestArithmetic(t *testing.T) {
	tests := []struct {
		a, b, sum, diff string
		contains        bool // a contains b
	}{
		{"cpus:1", "cpus:2", "cpus:3", "", false},
		{"cpus:3", "cpus:2", "cpus:5", "cpus:1", true},
		{"cpus:0.1", "cpus:0.2", "cpus:0.3", "", false},
		{"cpus:0.3", "cpus:0.1", "cpus:0.4", "cpus:0.2", true},
		{"cpus:1;mem:10", "mem:10", "cpus:1; mem:20", "cpus:1", true},
		{"cpus:1", "cpus(web):1", "cpus:1; cpus(web):1", "cpus:1", false},
		{"cpus(web):1", "cpus:1", "cpus:1; cpus(web):1", "cpus(web):1", false},
		{"ports:[1-10]", "ports:[3-4]", "ports:[1-10]", "ports:[1-2, 5-10]", true},
		{"ports:[1-10]", "ports:[11-20]", "ports:[1-20]", "ports:[1-10]", false},
		{"ports:[1-10]", "ports:[5-20]", "ports:[1-20]", "ports:[1-4]", false},
		{"ports:[1-10, 20-30]", "ports:[5-25]", "ports:[1-30]", "ports:[1-4, 26-30]", false},
		{"ports:[1-10]", "ports:[1-10]", "ports:[1-10]", "", true},
		{"disks:{a,b}", "disks:{b}", "disks:{a, b}", "disks:{a}", true},
		{"disks:{a,b}", "disks:{c}", "disks:{a, b, c}", "disks:{a, b}", false},
		{"", "cpus:1", "cpus:1", "", false},
		{"cpus:1", "", "cpus:1", "cpus:1", true},
		{"", "", "", "", true},
		{"cpus:1;ports:[1-2]", "gpus:1", "cpus:1; gpus:1; ports:[1-2]", "cpus:1; ports:[1-2]", false},
	}
	for _, tc := range tests {
		a, b := MustParse(tc.a), MustParse(tc.b)
		if got := a.Add(b).String(); got != tc.sum {
			t.Errorf("(%s) + (%s) = %q, want %q", tc.a, tc.b, got, tc.sum)
		}
		if got := a.Subtract(b).String(); got != tc.diff {
			t.Errorf("(%s) - (%s) = %q, want %q", tc.a, tc.b, got, tc.diff)
		}
		if got := a.Contains(b); got != tc.contains {
			t.Errorf("(%s).Contains(%s) = %v, want %v", tc.a, tc.b, got, tc.contains)
		}
	}
}

func TestFixedPointNoDrift(t *testing.T) {
	r := Resources{}
	tenth := MustParse("cpus:0.1")
	for range 1000 {
		r = r.Add(tenth)
	}
	if got := r.Scalar("cpus"); got != 100 {
		t.Fatalf("1000 × 0.1 = %v, want 100", got)
	}
	for range 999 {
		r = r.Subtract(tenth)
	}
	if got := r.Scalar("cpus"); got != 0.1 {
		t.Fatalf("after subtracting: %v, want 0.1", got)
	}
	if !r.Equal(tenth) {
		t.Fatalf("%v != %v", r, tenth)
	}
	if got := MustParse("cpus:0.1").Add(MustParse("cpus:0.2")).Scalar("cpus"); got != 0.3 {
		t.Fatalf("0.1+0.2 = %v", got)
	}
}

func TestRolesAndFilters(t *testing.T) {
	r := MustParse("cpus:1;cpus(eng):2;cpus(eng/web):4;cpus(ops):8;mem:16")
	tests := []struct {
		name string
		got  Resources
		want string
	}{
		{"Unreserved", r.Unreserved(), "cpus:1; mem:16"},
		{"Reserved", r.Reserved(), "cpus(eng):2; cpus(eng/web):4; cpus(ops):8"},
		{"ReservedTo(eng)", r.ReservedTo("eng"), "cpus(eng):2"},
		{"ReservedTo(*)", r.ReservedTo("*"), ""},
		{"AllocatableTo(eng)", r.AllocatableTo("eng"), "cpus:1; cpus(eng):2; mem:16"},
		{"AllocatableTo(eng/web)", r.AllocatableTo("eng/web"), "cpus:1; cpus(eng):2; cpus(eng/web):4; mem:16"},
		{"AllocatableTo(eng/web/x)", r.AllocatableTo("eng/web/x"), "cpus:1; cpus(eng):2; cpus(eng/web):4; mem:16"},
		{"AllocatableTo(engine)", r.AllocatableTo("engine"), "cpus:1; mem:16"},
		{"AllocatableTo(ops)", r.AllocatableTo("ops"), "cpus:1; cpus(ops):8; mem:16"},
		{"Filter(scalar>2)", r.Filter(func(p *mesos.Resource) bool { return p.GetScalar().GetValue() > 2 }), "cpus(eng/web):4; cpus(ops):8; mem:16"},
		{"ToUnreserved", r.ToUnreserved(), "cpus:15; mem:16"},
	}
	for _, tc := range tests {
		if s := tc.got.String(); s != tc.want {
			t.Errorf("%s = %q, want %q", tc.name, s, tc.want)
		}
	}
	if got := r.Scalar("cpus"); got != 15 {
		t.Errorf("Scalar(cpus) = %v", got)
	}
	if got := r.Quantities(); !reflect.DeepEqual(got, map[string]float64{"cpus": 15, "mem": 16}) {
		t.Errorf("Quantities = %v", got)
	}
	if got := r.Names(); !reflect.DeepEqual(got, []string{"cpus", "mem"}) {
		t.Errorf("Names = %v", got)
	}
}

func revocable(t *testing.T, text string) Resources {
	t.Helper()
	var out []*mesos.Resource
	for _, p := range MustParse(text).Proto() {
		p.Revocable = &mesos.Resource_RevocableInfo{}
		out = append(out, p)
	}
	r, err := New(out...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRevocable(t *testing.T) {
	rev := revocable(t, "cpus:2;ports:[5-6]")
	r := MustParse("cpus:1;mem:64;ports:[1-3];disks:{a}").Add(rev)
	if got := r.Revocable(); !got.Equal(rev) {
		t.Errorf("Revocable = %v", got)
	}
	if got := r.NonRevocable().String(); got != "cpus:1; disks:{a}; mem:64; ports:[1-3]" {
		t.Errorf("NonRevocable = %v", got)
	}
	if got := r.Scalar("cpus"); got != 3 {
		t.Errorf("Scalar(cpus) = %v", got)
	}
	// Revocable and non-revocable cpus are distinct identities.
	if r.Contains(revocable(t, "cpus:3")) || !r.Contains(revocable(t, "cpus:2")) {
		t.Error("revocable containment is per identity")
	}
	want := map[string]any{
		"cpus": 1.0, "gpus": 0.0, "mem": 64.0, "disk": 0.0,
		"ports": "[1-3]", "disks": "{a}",
		"cpus_revocable": 2.0, "ports_revocable": "[5-6]",
	}
	if got := r.Summary(); !reflect.DeepEqual(got, want) {
		t.Errorf("Summary = %v, want %v", got, want)
	}
	if !strings.Contains(rev.String(), "cpus{REV}:2") {
		t.Errorf("String = %q", rev.String())
	}
}

func TestSummary(t *testing.T) {
	r := MustParse("cpus:1;cpus(web):1.5;mem:10;ports:[1-2];ports(web):[3-5,9-9];disk:100")
	want := map[string]any{"cpus": 2.5, "gpus": 0.0, "mem": 10.0, "disk": 100.0, "ports": "[1-5, 9-9]"}
	if got := r.Summary(); !reflect.DeepEqual(got, want) {
		t.Errorf("Summary = %v, want %v", got, want)
	}
	if got := (Resources{}).Summary(); !reflect.DeepEqual(got, map[string]any{"cpus": 0.0, "gpus": 0.0, "mem": 0.0, "disk": 0.0}) {
		t.Errorf("empty Summary = %v", got)
	}
}

func TestAllocationInfo(t *testing.T) {
	r := MustParse("cpus:1;cpus(web):2;mem:8")
	a := r.AllocatedTo("web")
	if a.Equal(r) || r.Contains(a) || a.Contains(r) {
		t.Fatal("allocation info is part of the identity")
	}
	for _, p := range a.Proto() {
		if p.GetAllocationInfo().GetRole() != "web" {
			t.Fatalf("AllocatedTo did not set the role: %v", p)
		}
	}
	if got := a.Allocated("web"); !got.Equal(a) {
		t.Errorf("Allocated(web) = %v", got)
	}
	if got := a.AllocationRoles(); !reflect.DeepEqual(got, []string{"web"}) {
		t.Errorf("AllocationRoles = %v", got)
	}
	if !a.WithoutAllocationInfo().Equal(r) {
		t.Errorf("WithoutAllocationInfo = %v", a.WithoutAllocationInfo())
	}
	if !strings.Contains(a.String(), "cpus(allocated: web):1") {
		t.Errorf("String = %q", a.String())
	}
	// Re-allocating merges entries that differed only by allocation role.
	b := MustParse("cpus:1").AllocatedTo("x").Add(MustParse("cpus:2").AllocatedTo("y"))
	if got := b.AllocatedTo("z"); got.Len() != 1 || got.Scalar("cpus") != 3 {
		t.Errorf("AllocatedTo(z) = %v", got)
	}
}

func dynamic(role, principal string) *mesos.Resource_ReservationInfo {
	return &mesos.Resource_ReservationInfo{
		Type:      mesos.Resource_ReservationInfo_DYNAMIC.Enum(),
		Role:      proto.String(role),
		Principal: proto.String(principal),
	}
}

func TestRefinement(t *testing.T) {
	scalar := func(v float64) *mesos.Value_Scalar { return &mesos.Value_Scalar{Value: proto.Float64(v)} }
	// Pre-refinement dynamic reservation.
	pre := &mesos.Resource{
		Name: proto.String("cpus"), Type: mesos.Value_SCALAR.Enum(), Scalar: scalar(1),
		Role:        proto.String("web"),
		Reservation: &mesos.Resource_ReservationInfo{Principal: proto.String("ops")},
	}
	post := &mesos.Resource{
		Name: proto.String("cpus"), Type: mesos.Value_SCALAR.Enum(), Scalar: scalar(1),
		Reservations: []*mesos.Resource_ReservationInfo{dynamic("web", "ops")},
	}
	a, err := New(pre)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(post)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Equal(b) {
		t.Fatalf("pre %v != post %v", a, b)
	}
	if got := a.Proto(); len(got) != 1 || !proto.Equal(got[0], post) {
		t.Fatalf("Proto = %v, want %v", got, post)
	}
	if got := ToPreRefinement(a.Proto()); len(got) != 1 || !proto.Equal(got[0], pre) {
		t.Fatalf("ToPreRefinement = %v, want %v", got, pre)
	}
	// Endpoint format carries both.
	ep := ToEndpointFormat([]*mesos.Resource{post})[0]
	if ep.GetRole() != "web" || ep.GetReservation().GetPrincipal() != "ops" || len(ep.Reservations) != 1 {
		t.Fatalf("ToEndpointFormat = %v", ep)
	}
	if _, err := New(ep); err != nil {
		t.Fatalf("endpoint format must be accepted: %v", err)
	}
	// Unreserved becomes role "*" in the old format.
	u := ToPreRefinement(MustParse("mem:1").Proto())[0]
	if u.Role == nil || u.GetRole() != "*" || len(u.Reservations) != 0 {
		t.Fatalf("ToPreRefinement(unreserved) = %v", u)
	}
	// Static stays static, without reservation.
	s := ToPreRefinement(MustParse("mem(db):1").Proto())[0]
	if s.GetRole() != "db" || s.Reservation != nil || len(s.Reservations) != 0 {
		t.Fatalf("ToPreRefinement(static) = %v", s)
	}
	// Refined reservations cannot be downgraded and are left as is.
	refined := &mesos.Resource{
		Name: proto.String("cpus"), Type: mesos.Value_SCALAR.Enum(), Scalar: scalar(1),
		Reservations: []*mesos.Resource_ReservationInfo{dynamic("eng", "p"), dynamic("eng/web", "p")},
	}
	if _, err := New(refined); err != nil {
		t.Fatal(err)
	}
	if got := ToPreRefinement([]*mesos.Resource{refined})[0]; !proto.Equal(got, refined) {
		t.Fatalf("ToPreRefinement(refined) = %v", got)
	}
	if !HasRefinedReservations(refined) {
		t.Fatal("HasRefinedReservations")
	}
	// Inputs are never modified.
	if pre.Reservations != nil || post.Role != nil {
		t.Fatal("inputs were modified")
	}
}

func TestValidateReservations(t *testing.T) {
	base := func() *mesos.Resource {
		return &mesos.Resource{Name: proto.String("cpus"), Type: mesos.Value_SCALAR.Enum(),
			Scalar: &mesos.Value_Scalar{Value: proto.Float64(1)}}
	}
	tests := []struct {
		name string
		edit func(r *mesos.Resource)
		want string
	}{
		{"star dynamically reserved", func(r *mesos.Resource) {
			r.Reservation = &mesos.Resource_ReservationInfo{}
		}, `role "*" cannot be dynamically reserved`},
		{"reservation with type", func(r *mesos.Resource) {
			r.Role = proto.String("a")
			r.Reservation = &mesos.Resource_ReservationInfo{Type: mesos.Resource_ReservationInfo_DYNAMIC.Enum()}
		}, "'reservation.type' must not be set"},
		{"reservation with role", func(r *mesos.Resource) {
			r.Role = proto.String("a")
			r.Reservation = &mesos.Resource_ReservationInfo{Role: proto.String("a")}
		}, "'reservation.role' must not be set"},
		{"missing type", func(r *mesos.Resource) {
			r.Reservations = []*mesos.Resource_ReservationInfo{{Role: proto.String("a")}}
		}, "'type' must be set"},
		{"missing role", func(r *mesos.Resource) {
			r.Reservations = []*mesos.Resource_ReservationInfo{{Type: mesos.Resource_ReservationInfo_STATIC.Enum()}}
		}, "'role' must be set"},
		{"star reserved", func(r *mesos.Resource) {
			r.Reservations = []*mesos.Resource_ReservationInfo{dynamic("*", "p")}
		}, `role "*" cannot be reserved`},
		{"refined static", func(r *mesos.Resource) {
			r.Reservations = []*mesos.Resource_ReservationInfo{dynamic("a", "p"),
				{Type: mesos.Resource_ReservationInfo_STATIC.Enum(), Role: proto.String("a/b")}}
		}, "cannot be STATIC"},
		{"not a refinement", func(r *mesos.Resource) {
			r.Reservations = []*mesos.Resource_ReservationInfo{dynamic("a", "p"), dynamic("b", "p")}
		}, `"b" is not a refinement of "a"`},
		{"same role is not a refinement", func(r *mesos.Resource) {
			r.Reservations = []*mesos.Resource_ReservationInfo{dynamic("a", "p"), dynamic("a", "p")}
		}, "not a refinement"},
		{"role with refined", func(r *mesos.Resource) {
			r.Role = proto.String("a/b")
			r.Reservations = []*mesos.Resource_ReservationInfo{dynamic("a", "p"), dynamic("a/b", "p")}
		}, "'role' must not be set if there is more than one"},
		{"conflicting role", func(r *mesos.Resource) {
			r.Role = proto.String("b")
			r.Reservations = []*mesos.Resource_ReservationInfo{dynamic("a", "p")}
		}, `'role' "b" does not match the role "a"`},
		{"static with reservation", func(r *mesos.Resource) {
			r.Role = proto.String("a")
			r.Reservation = &mesos.Resource_ReservationInfo{}
			r.Reservations = []*mesos.Resource_ReservationInfo{{Type: mesos.Resource_ReservationInfo_STATIC.Enum(), Role: proto.String("a")}}
		}, "'reservation' must not be set if the single reservation"},
		{"dynamic role without reservation", func(r *mesos.Resource) {
			r.Role = proto.String("a")
			r.Reservations = []*mesos.Resource_ReservationInfo{dynamic("a", "p")}
		}, "both set or both unset"},
		{"principal mismatch", func(r *mesos.Resource) {
			r.Role = proto.String("a")
			r.Reservation = &mesos.Resource_ReservationInfo{Principal: proto.String("q")}
			r.Reservations = []*mesos.Resource_ReservationInfo{dynamic("a", "p")}
		}, "principal"},
		{"bad role", func(r *mesos.Resource) { r.Role = proto.String("a b") }, "whitespace"},
		{"disk info on cpus", func(r *mesos.Resource) { r.Disk = &mesos.Resource_DiskInfo{} }, "DiskInfo should not be set"},
		{"shared cpus", func(r *mesos.Resource) { r.Shared = &mesos.Resource_SharedInfo{} }, `resource "cpus" cannot be shared`},
		{"shared disk", func(r *mesos.Resource) {
			r.Name = proto.String("disk")
			r.Shared = &mesos.Resource_SharedInfo{}
		}, "only persistent volumes can be shared"},
		{"unknown disk source", func(r *mesos.Resource) {
			r.Name = proto.String("disk")
			r.Disk = &mesos.Resource_DiskInfo{Source: &mesos.Resource_DiskInfo_Source{}}
		}, "unsupported disk.source.type UNKNOWN"},
		{"block with mount", func(r *mesos.Resource) {
			r.Name = proto.String("disk")
			r.Disk = &mesos.Resource_DiskInfo{Source: &mesos.Resource_DiskInfo_Source{
				Type: mesos.Resource_DiskInfo_Source_BLOCK.Enum(), Mount: &mesos.Resource_DiskInfo_Source_Mount{}}}
		}, "disk.source.mount should not be set for BLOCK"},
		{"tiny scalar", func(r *mesos.Resource) { r.Scalar.Value = proto.Float64(0.0004) }, "rounds to 0"},
		{"scalar and ranges", func(r *mesos.Resource) { r.Ranges = &mesos.Value_Ranges{} }, "invalid scalar resource"},
		{"empty name", func(r *mesos.Resource) { r.Name = proto.String("") }, "empty resource name"},
		{"missing type field", func(r *mesos.Resource) { r.Type = nil }, "'type' must be set"},
		{"bad allocation role", func(r *mesos.Resource) {
			r.AllocationInfo = &mesos.Resource_AllocationInfo{Role: proto.String("..")}
		}, "allocation_info.role"},
	}
	for _, tc := range tests {
		r := base()
		tc.edit(r)
		err := Validate([]*mesos.Resource{base(), r})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "resources[1] ") {
			t.Errorf("%s: error %v, want resources[1] ... %q", tc.name, err, tc.want)
		}
		if _, err := New(r); err == nil {
			t.Errorf("%s: New accepted it", tc.name)
		}
	}
	if err := Validate([]*mesos.Resource{nil}); err == nil {
		t.Error("nil resource accepted")
	}
}

func TestPushPopReservation(t *testing.T) {
	r := MustParse("cpus:2;mem:10")
	eng, err := r.PushReservation(dynamic("eng", "p"))
	if err != nil {
		t.Fatal(err)
	}
	if got := eng.ReservedTo("eng"); !got.Equal(eng) || eng.Len() != 2 {
		t.Fatalf("PushReservation = %v", eng)
	}
	web, err := eng.PushReservation(dynamic("eng/web", "p"))
	if err != nil {
		t.Fatal(err)
	}
	if web.ReservedTo("eng/web").Len() != 2 {
		t.Fatalf("refined = %v", web)
	}
	if _, err := eng.PushReservation(dynamic("ops", "p")); err == nil {
		t.Fatal("pushing a non-refinement must fail")
	}
	if got := web.PopReservation(); !got.Equal(eng) {
		t.Fatalf("Pop = %v, want %v", got, eng)
	}
	if got := eng.PopReservation(); !got.Equal(r) {
		t.Fatalf("Pop = %v, want %v", got, r)
	}
}

func volume(id string, size float64, shared bool) *mesos.Resource {
	r := &mesos.Resource{
		Name: proto.String("disk"), Type: mesos.Value_SCALAR.Enum(),
		Scalar:       &mesos.Value_Scalar{Value: proto.Float64(size)},
		Reservations: []*mesos.Resource_ReservationInfo{dynamic("db", "p")},
		Disk: &mesos.Resource_DiskInfo{
			Persistence: &mesos.Resource_DiskInfo_Persistence{Id: proto.String(id)},
			Volume:      &mesos.Volume{ContainerPath: proto.String("data"), Mode: mesos.Volume_RW.Enum()},
		},
	}
	if shared {
		r.Shared = &mesos.Resource_SharedInfo{}
	}
	return r
}

func TestIndivisible(t *testing.T) {
	v1, err := New(volume("v1", 100, false))
	if err != nil {
		t.Fatal(err)
	}
	// A persistent volume is not divisible: half of it is not contained.
	half, _ := New(volume("v1", 50, false))
	if v1.Contains(half) {
		t.Error("a persistent volume must not contain a smaller one with the same id")
	}
	if got := v1.Subtract(half); !got.Equal(v1) {
		t.Errorf("subtracting a different volume must not change it: %v", got)
	}
	two := v1.Add(v1)
	if two.Len() != 1 || len(two.Proto()) != 2 || two.Scalar("disk") != 200 {
		t.Errorf("two copies: %v (%d protos, %v disk)", two, len(two.Proto()), two.Scalar("disk"))
	}
	if !two.Subtract(v1).Equal(v1) || !two.Subtract(two).IsEmpty() {
		t.Error("copies subtract one at a time")
	}

	// Shared volumes: counted, appear once, scalar counted once.
	s, err := New(volume("s", 10, true))
	if err != nil {
		t.Fatal(err)
	}
	ss := s.Add(s)
	if len(ss.Proto()) != 1 || ss.Scalar("disk") != 10 {
		t.Errorf("shared: %v protos=%d disk=%v", ss, len(ss.Proto()), ss.Scalar("disk"))
	}
	if !ss.Contains(s) || s.Contains(ss) || !ss.Subtract(s).Equal(s) {
		t.Error("shared counting")
	}
	if got := ss.Shared(); !got.Equal(ss) || !ss.NonShared().IsEmpty() {
		t.Error("Shared filter")
	}
	if got := v1.Add(s).PersistentVolumes(); got.Len() != 2 {
		t.Errorf("PersistentVolumes = %v", got)
	}

	// MOUNT disks are exclusive too.
	mount := func(root string) *mesos.Resource {
		return &mesos.Resource{Name: proto.String("disk"), Type: mesos.Value_SCALAR.Enum(),
			Scalar: &mesos.Value_Scalar{Value: proto.Float64(1000)},
			Disk: &mesos.Resource_DiskInfo{Source: &mesos.Resource_DiskInfo_Source{
				Type:  mesos.Resource_DiskInfo_Source_MOUNT.Enum(),
				Mount: &mesos.Resource_DiskInfo_Source_Mount{Root: proto.String(root)}}}}
	}
	m, err := New(mount("/mnt/a"), mount("/mnt/a"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Proto()) != 2 || m.Scalar("disk") != 2000 {
		t.Errorf("MOUNT disks must not merge: %v", m.Proto())
	}
	part, _ := New(&mesos.Resource{Name: proto.String("disk"), Type: mesos.Value_SCALAR.Enum(),
		Scalar: &mesos.Value_Scalar{Value: proto.Float64(10)}, Disk: mount("/mnt/a").Disk})
	if m.Contains(part) {
		t.Error("part of a MOUNT disk is not contained")
	}
}

func TestProtoIsDeepCopy(t *testing.T) {
	r := MustParse("cpus(web):1;ports:[1-5];d:{a}")
	ps := r.Proto()
	for _, p := range ps {
		p.Name = proto.String("x")
		if len(p.Reservations) > 0 {
			p.Reservations[0].Role = proto.String("evil")
		}
		if p.Set != nil {
			p.Set.Item[0] = "z"
		}
	}
	if got := r.String(); got != "cpus(web):1; d:{a}; ports:[1-5]" {
		t.Fatalf("mutating Proto() output changed r: %q", got)
	}
}

func TestZeroValue(t *testing.T) {
	var r Resources
	if !r.IsEmpty() || r.Len() != 0 || r.String() != "" || r.Proto() != nil || !r.Equal(Resources{}) {
		t.Fatal("zero value")
	}
	if !r.Contains(r) || r.Add(r).Len() != 0 || r.Subtract(r).Len() != 0 {
		t.Fatal("zero value ops")
	}
}

func TestLabelsOrderInsensitive(t *testing.T) {
	withLabels := func(kv ...string) *mesos.Resource {
		res := dynamic("web", "p")
		res.Labels = &mesos.Labels{}
		for i := 0; i < len(kv); i += 2 {
			res.Labels.Labels = append(res.Labels.Labels, &mesos.Label{Key: proto.String(kv[i]), Value: proto.String(kv[i+1])})
		}
		return &mesos.Resource{Name: proto.String("cpus"), Type: mesos.Value_SCALAR.Enum(),
			Scalar:       &mesos.Value_Scalar{Value: proto.Float64(1)},
			Reservations: []*mesos.Resource_ReservationInfo{res}}
	}
	r, err := New(withLabels("a", "1", "b", "2"), withLabels("b", "2", "a", "1"), withLabels("a", "2", "b", "1"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Len() != 2 || r.Scalar("cpus") != 3 {
		t.Fatalf("labels must compare as a set: %v", r)
	}
}

func TestNamedAndScalars(t *testing.T) {
	r := MustParse("cpus:1;cpus(a):2;mem:3;ports:[1-2]")
	if got := r.Named("cpus").String(); got != "cpus:1; cpus(a):2" {
		t.Errorf("Named = %q", got)
	}
	if got := r.Scalars().String(); got != "cpus:1; cpus(a):2; mem:3" {
		t.Errorf("Scalars = %q", got)
	}
}

func TestConversionsTolerateNil(t *testing.T) {
	in := []*mesos.Resource{nil}
	for _, f := range []func([]*mesos.Resource) []*mesos.Resource{ToPreRefinement, ToPostRefinement, ToEndpointFormat} {
		if out := f(in); len(out) != 1 || out[0] != nil {
			t.Fatalf("got %v", out)
		}
	}
}

// cloneMeta's hand-written copy equals proto.Clone and shares nothing
// with the original.
func TestCloneMetaIsADeepCopy(t *testing.T) {
	dyn := mesos.Resource_ReservationInfo_DYNAMIC.Enum()
	metas := []*mesos.Resource{
		nil,
		{AllocationInfo: &mesos.Resource_AllocationInfo{Role: proto.String("a")}},
		{AllocationInfo: &mesos.Resource_AllocationInfo{}},
		{Revocable: &mesos.Resource_RevocableInfo{}},
		{Reservations: []*mesos.Resource_ReservationInfo{
			{Type: mesos.Resource_ReservationInfo_STATIC.Enum(), Role: proto.String("a")},
			{Type: dyn, Role: proto.String("a/b"), Principal: proto.String("p"),
				Labels: &mesos.Labels{Labels: []*mesos.Label{{Key: proto.String("k"), Value: proto.String("v")}}}},
		}, AllocationInfo: &mesos.Resource_AllocationInfo{Role: proto.String("a/b")}},
		{Disk: &mesos.Resource_DiskInfo{Persistence: &mesos.Resource_DiskInfo_Persistence{Id: proto.String("v")}},
			Shared: &mesos.Resource_SharedInfo{}, ProviderId: &mesos.ResourceProviderID{Value: proto.String("rp")}},
	}
	for i, m := range metas {
		got := cloneMeta(m)
		want := &mesos.Resource{}
		if m != nil {
			want = proto.Clone(m).(*mesos.Resource)
		}
		if !proto.Equal(got, want) {
			t.Errorf("%d: cloneMeta = %v, want %v", i, got, want)
		}
		if m == nil {
			continue
		}
		before := proto.Clone(m)
		if got.AllocationInfo != nil {
			got.AllocationInfo.Role = proto.String("changed")
		}
		for _, r := range got.Reservations {
			r.Role = proto.String("changed")
			if r.Labels != nil {
				r.Labels.Labels[0].Value = proto.String("changed")
			}
		}
		if got.Disk != nil {
			got.Disk.Persistence.Id = proto.String("changed")
		}
		if !proto.Equal(m, before) {
			t.Errorf("%d: changing the copy changed the original: %v", i, m)
		}
	}
	// Unknown fields survive (through proto.Clone).
	u := &mesos.Resource{AllocationInfo: &mesos.Resource_AllocationInfo{Role: proto.String("a")}}
	u.AllocationInfo.ProtoReflect().SetUnknown([]byte{0x98, 0x06, 0x01}) // field 99, varint 1
	if got := cloneMeta(u); !proto.Equal(got, u) {
		t.Errorf("unknown fields lost: %v", got)
	}
}

// Throttle-able slack and lent reservations are both revocable but never
// merge, and survive a round trip through Proto, so offers and the agent
// can keep the two kinds apart.
func TestThrottleableAndLentStayApart(t *testing.T) {
	r, err := New(sc("cpus", 1, throttleOpt), sc("cpus", 2, revocableOpt), sc("cpus", 4))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(r.Proto()); got != 3 {
		t.Fatalf("%d entries, want 3 (slack, lent, regular): %v", got, r)
	}
	for _, tc := range []struct {
		name string
		got  Resources
		want float64
	}{
		{"Revocable", r.Revocable(), 3},
		{"Throttleable", r.Throttleable(), 1},
		{"Lent", r.Lent(), 2},
		{"NonRevocable", r.NonRevocable(), 4},
	} {
		if v := tc.got.Quantities()["cpus"]; v != tc.want {
			t.Errorf("%s: cpus %v, want %v", tc.name, v, tc.want)
		}
	}
	back, err := New(r.Proto()...)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(r) || back.Throttleable().Quantities()["cpus"] != 1 {
		t.Errorf("round trip: %v, want %v", back, r)
	}
}

// AsLent turns only reservations into lent resources (oversubscription
// for reservations): volumes and shared resources stay with their owner,
// unreserved resources need no lending.
func TestAsLent(t *testing.T) {
	vol := sc("disk", 64, dyn("db"), pv("v1"))
	r, err := New(sc("cpus", 2, rsv(static("web"))), sc("mem", 512, dyn("db")), sc("cpus", 3), vol,
		sc("disk", 10, dyn("db"), pv("v2"), sharedOpt), rng("ports", 31000, 31009, rsv(static("web"))))
	if err != nil {
		t.Fatal(err)
	}
	lent := r.AsLent()
	if got, want := lent.String(), "cpus{REV}:2; mem{REV}:512; ports{REV}:[31000-31009]"; got != want {
		t.Fatalf("AsLent = %q, want %q", got, want)
	}
	if !lent.Equal(lent.Lent()) || !lent.Throttleable().IsEmpty() || !lent.Reserved().IsEmpty() {
		t.Fatalf("AsLent must be unreserved, revocable without throttle_info: %v", lent)
	}
	if !(Resources{}).AsLent().IsEmpty() || !MustParse("cpus:1").AsLent().IsEmpty() {
		t.Fatal("nothing reserved, nothing lent")
	}
}

// AsThrottleable marks every entry as slack, whatever its revocability,
// and the text form tells the two revocable kinds apart.
func TestAsThrottleable(t *testing.T) {
	r, err := New(sc("cpus", 1.5), sc("mem", 64, revocableOpt))
	if err != nil {
		t.Fatal(err)
	}
	got := r.AsThrottleable()
	if s, want := got.String(), "cpus{REV:THROTTLE}:1.5; mem{REV:THROTTLE}:64"; s != want {
		t.Fatalf("AsThrottleable = %q, want %q", s, want)
	}
	if !got.Equal(got.Throttleable()) || !got.Lent().IsEmpty() {
		t.Fatalf("not all throttle-able: %v", got)
	}
}
