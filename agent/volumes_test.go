package agent

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"mezzo/agent/containerizer"
	"mezzo/api/mesos"
	"mezzo/resources"

	"google.golang.org/protobuf/proto"
)

// reservedDisk is mb of disk dynamically reserved to role (by principal
// "ops"), in the post-refinement format.
func reservedDisk(role string, mb float64) *mesos.Resource {
	return &mesos.Resource{
		Name: proto.String("disk"), Type: mesos.Value_SCALAR.Enum(),
		Scalar: &mesos.Value_Scalar{Value: proto.Float64(mb)},
		Reservations: []*mesos.Resource_ReservationInfo{{
			Type: mesos.Resource_ReservationInfo_DYNAMIC.Enum(), Role: proto.String(role), Principal: proto.String("ops"),
		}},
	}
}

// persistentVolume is a volume id of mb on disk reserved to role, seen at
// containerPath ("" for none).
func persistentVolume(role, id, containerPath string, mb float64) *mesos.Resource {
	r := reservedDisk(role, mb)
	r.Disk = &mesos.Resource_DiskInfo{Persistence: &mesos.Resource_DiskInfo_Persistence{Id: proto.String(id), Principal: proto.String("ops")}}
	if containerPath != "" {
		r.Disk.Volume = &mesos.Volume{ContainerPath: proto.String(containerPath), Mode: mesos.Volume_RW.Enum()}
	}
	return r
}

func reservedCPUs(role string, n float64) *mesos.Resource {
	r := reservedDisk(role, 0)
	r.Name = proto.String("cpus")
	r.Scalar.Value = proto.Float64(n)
	return r
}

func TestVolumePath(t *testing.T) {
	withSource := func(r *mesos.Resource, src *mesos.Resource_DiskInfo_Source) *mesos.Resource {
		r.Disk.Source = src
		return r
	}
	cases := []struct {
		name string
		r    *mesos.Resource
		want string
		err  string
	}{
		{"plain role", persistentVolume("db", "v1", "data", 10), "/w/volumes/roles/db/v1", ""},
		// Mesos writes the '/' of a hierarchical role as a space.
		{"hierarchical role", persistentVolume("eng/db", "v1", "data", 10), "/w/volumes/roles/eng db/v1", ""},
		{"refined reservation uses the top role", func() *mesos.Resource {
			r := persistentVolume("eng", "v2", "data", 10)
			r.Reservations = append(r.Reservations, &mesos.Resource_ReservationInfo{Type: mesos.Resource_ReservationInfo_DYNAMIC.Enum(), Role: proto.String("eng/db")})
			return r
		}(), "/w/volumes/roles/eng db/v2", ""},
		{"PATH disk, relative root", withSource(persistentVolume("db", "v1", "", 10), &mesos.Resource_DiskInfo_Source{
			Type: mesos.Resource_DiskInfo_Source_PATH.Enum(), Path: &mesos.Resource_DiskInfo_Source_Path{Root: proto.String("disk2")}}),
			"/w/disk2/volumes/roles/db/v1", ""},
		{"MOUNT disk is its root", withSource(persistentVolume("db", "v1", "", 10), &mesos.Resource_DiskInfo_Source{
			Type: mesos.Resource_DiskInfo_Source_MOUNT.Enum(), Mount: &mesos.Resource_DiskInfo_Source_Mount{Root: proto.String("/mnt/d1")}}),
			"/mnt/d1", ""},
		{"BLOCK disk", withSource(persistentVolume("db", "v1", "", 10), &mesos.Resource_DiskInfo_Source{
			Type: mesos.Resource_DiskInfo_Source_BLOCK.Enum()}), "", "not supported"},
		{"id with a slash", persistentVolume("db", "../x", "data", 10), "", "persistence id \"../x\""},
		{"id ..", persistentVolume("db", "..", "data", 10), "", "persistence id \"..\""},
		{"unreserved", func() *mesos.Resource {
			r := persistentVolume("db", "v1", "data", 10)
			r.Reservations = nil
			return r
		}(), "", "reserved disk"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := volumePath("/w", tc.r)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("volumePath: %q, %v; want an error containing %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("volumePath: %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// syncVolumes creates the directories of the current set, removes those
// of volumes dropped, never one in use, and is idempotent: running it
// again changes nothing and keeps the data.
func TestSyncVolumes(t *testing.T) {
	w := t.TempDir()
	v1, v2 := persistentVolume("db", "v1", "data", 10), persistentVolume("eng/db", "v2", "data", 10)
	d1, d2 := filepath.Join(w, "volumes/roles/db/v1"), filepath.Join(w, "volumes/roles/eng db/v2")
	never := func(string) bool { return false }

	for range 2 { // idempotent
		kept, err := syncVolumes(w, nil, []*mesos.Resource{v1, v2}, never)
		if err != nil || len(kept) != 0 {
			t.Fatalf("create: kept %v, %v", kept, err)
		}
		for _, d := range []string{d1, d2} {
			if st, err := os.Stat(d); err != nil || !st.IsDir() {
				t.Fatalf("%s not created: %v", d, err)
			}
		}
		if err := os.WriteFile(filepath.Join(d1, "f"), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if readFile(t, filepath.Join(d1, "f")) != "x" {
		t.Fatal("data lost by a repeated sync")
	}

	// v2 dropped while in use: kept. v1 dropped, unused: removed.
	inUse := func(dir string) bool { return dir == d2 }
	kept, err := syncVolumes(w, []*mesos.Resource{v1, v2}, nil, inUse)
	if err != nil || !slices.Equal(kept, []string{d2}) {
		t.Fatalf("remove: kept %v, %v; want [%s]", kept, err, d2)
	}
	if _, err := os.Stat(d1); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s still there: %v", d1, err)
	}
	if _, err := os.Stat(d2); err != nil {
		t.Errorf("volume in use removed: %v", err)
	}
	// The same removal again (the master resent the set): nothing to do.
	if kept, err := syncVolumes(w, []*mesos.Resource{v1}, nil, never); err != nil || len(kept) != 0 {
		t.Fatalf("repeated removal: %v, %v", kept, err)
	}
}

// A volume on a MOUNT disk is the mount's root: dropping it empties it
// and leaves the mount point.
func TestSyncVolumesMountDisk(t *testing.T) {
	w, root := t.TempDir(), t.TempDir()
	v := persistentVolume("db", "v1", "data", 10)
	v.Disk.Source = &mesos.Resource_DiskInfo_Source{Type: mesos.Resource_DiskInfo_Source_MOUNT.Enum(),
		Mount: &mesos.Resource_DiskInfo_Source_Mount{Root: proto.String(root)}}
	os.MkdirAll(filepath.Join(root, "sub"), 0o755)
	os.WriteFile(filepath.Join(root, "sub", "f"), []byte("x"), 0o644)
	if _, err := syncVolumes(w, []*mesos.Resource{v}, nil, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil || len(entries) != 0 {
		t.Fatalf("mount root after removal: %v, %v", entries, err)
	}
}

func TestContainerVolumes(t *testing.T) {
	w := t.TempDir()
	os.MkdirAll(filepath.Join(w, "volumes/roles/db/v1"), 0o755)
	shared := persistentVolume("db", "v1", "data", 10)
	shared.Shared = &mesos.Resource_SharedInfo{}
	got, err := containerVolumes(w, []*mesos.Resource{
		reservedCPUs("db", 1),
		persistentVolume("db", "v1", "data", 10),
		shared, // the same directory twice: once
	})
	want := []containerizer.Volume{{HostPath: filepath.Join(w, "volumes/roles/db/v1"), ContainerPath: "data"}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("containerVolumes: %v, %v; want %v", got, err, want)
	}
	if _, err := containerVolumes(w, []*mesos.Resource{persistentVolume("db", "nope", "data", 10)}); err == nil ||
		!strings.Contains(err.Error(), "is missing on this agent") {
		t.Errorf("volume without a directory: %v", err)
	}
	// Pre-refinement format (role + reservation), as an old framework's
	// task may carry it.
	old := persistentVolume("db", "v1", "data", 10)
	old.Reservations = nil
	old.Role = proto.String("db")
	old.Reservation = &mesos.Resource_ReservationInfo{Principal: proto.String("ops")}
	if got, err := containerVolumes(w, []*mesos.Resource{old}); err != nil || !slices.Equal(got, want) {
		t.Errorf("pre-refinement volume: %v, %v", got, err)
	}
}

// checkpointedTotal applies a set to the flags' resources, and names the
// entry that does not fit or does not belong in the set.
func TestCheckpointedTotal(t *testing.T) {
	flags := resources.MustParse("cpus:4;mem:1024;disk:1000")
	cases := []struct {
		name string
		set  []*mesos.Resource
		want string // total, or
		err  string
	}{
		{"empty", nil, "cpus:4;mem:1024;disk:1000", ""},
		{"reservation and volume", []*mesos.Resource{reservedCPUs("db", 1), reservedDisk("db", 100), persistentVolume("db", "v1", "data", 200)},
			"", ""},
		{"too much disk", []*mesos.Resource{persistentVolume("db", "v1", "data", 2000)}, "", "disk:1000 is missing"},
		{"static reservation", func() []*mesos.Resource {
			r := reservedCPUs("db", 1)
			r.Reservations[0].Type = mesos.Resource_ReservationInfo_STATIC.Enum()
			r.Reservations[0].Principal = nil
			return []*mesos.Resource{r}
		}(), "", "is neither dynamically reserved nor a persistent volume"},
		{"allocation info is dropped", allocated("db", reservedCPUs("db", 1), persistentVolume("db", "v1", "data", 200)), "", ""},
		{"bad persistence id", []*mesos.Resource{persistentVolume("db", "a/b", "data", 10)}, "", "persistence id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cp, total, err := checkpointedTotal(flags, tc.set, "/w")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && !total.Equal(resources.MustParse(tc.want)) {
				t.Errorf("total %s, want %s", total, tc.want)
			}
			if len(cp.AllocationRoles()) != 0 {
				t.Errorf("checkpointed set keeps allocation info: %s", cp)
			}
			// Quantities never change; the set is in the total.
			if !total.Contains(cp) || total.Scalar("disk") != 1000 || total.Scalar("cpus") != 4 {
				t.Errorf("total %s does not hold %s with the flags' quantities", total, cp)
			}
		})
	}
	_, _, err := checkpointedTotal(flags, []*mesos.Resource{persistentVolume("db", "v1", "data", 2000)}, "/w")
	if err == nil || !strings.Contains(err.Error(), "checkpointed resource disk(reservations: [(DYNAMIC,db,ops)])[v1,data:RW]:2000 does not fit") {
		t.Errorf("conflict error does not name the volume: %v", err)
	}
}
