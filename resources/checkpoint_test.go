package resources

import (
	"strings"
	"testing"
)

func TestCheckpointed(t *testing.T) {
	r := plus(t, "cpus:4;cpus(a):2;mem:1024;disk:100",
		sc("cpus", 1, dyn("db")),
		sc("mem", 64, rsv(static("a"), dynamic("a/b", "p"))),
		sc("disk", 10, dyn("db"), pv("v1")),
		sc("disk", 20, dyn("db"), pv("s1"), sharedOpt),
		sc("cpus", 3, revocableOpt),
	)
	want := mk(t,
		sc("cpus", 1, dyn("db")),
		sc("mem", 64, rsv(static("a"), dynamic("a/b", "p"))),
		sc("disk", 10, dyn("db"), pv("v1")),
		sc("disk", 20, dyn("db"), pv("s1"), sharedOpt),
	)
	if got := r.Checkpointed(); !got.Equal(want) {
		t.Fatalf("Checkpointed() = %v\nwant %v", got, want)
	}
	if got := MustParse("cpus:4;mem(a):2").Checkpointed(); !got.IsEmpty() {
		t.Fatalf("flag resources need no checkpoint: %v", got)
	}
}

func TestApplyCheckpointed(t *testing.T) {
	tests := []struct {
		name                string
		total, checkpointed Resources
		want                Resources
		err                 string // substring; "" for success
	}{
		{
			name:  "nothing checkpointed",
			total: MustParse("cpus:4;mem:1024"), want: MustParse("cpus:4;mem:1024"),
		},
		{
			name:         "dynamic reservation and volume on the root disk",
			total:        MustParse("cpus:4;mem:1024;disk:2048"),
			checkpointed: mk(t, sc("cpus", 1, dyn("db")), sc("disk", 1024, dyn("db"), pv("id1")), sc("disk", 512, dyn("db"))),
			want: plus(t, "cpus:3;mem:1024;disk:512",
				sc("cpus", 1, dyn("db")), sc("disk", 1024, dyn("db"), pv("id1")), sc("disk", 512, dyn("db"))),
		},
		{
			name:         "refinement of a static reservation",
			total:        MustParse("cpus(a):4;cpus:1"),
			checkpointed: mk(t, sc("cpus", 1.5, rsv(static("a"), dynamic("a/b", "p")))),
			want:         plus(t, "cpus(a):2.5;cpus:1", sc("cpus", 1.5, rsv(static("a"), dynamic("a/b", "p")))),
		},
		{
			name:         "volume on a MOUNT disk keeps its source",
			total:        mk(t, sc("disk", 100, mnt("/mnt/a")), sc("disk", 100, mnt("/mnt/b"))),
			checkpointed: mk(t, sc("disk", 100, mnt("/mnt/b"), dyn("db"), pv("m"))),
			want:         mk(t, sc("disk", 100, mnt("/mnt/a")), sc("disk", 100, mnt("/mnt/b"), dyn("db"), pv("m"))),
		},
		{
			name:         "shared volume is carved from plain disk",
			total:        MustParse("disk:100"),
			checkpointed: mk(t, sc("disk", 40, dyn("db"), pv("s"), sharedOpt)),
			want:         plus(t, "disk:60", sc("disk", 40, dyn("db"), pv("s"), sharedOpt)),
		},
		{
			name:         "two volumes of the same size are two copies",
			total:        MustParse("disk:100"),
			checkpointed: mk(t, sc("disk", 50, dyn("db"), pv("v")), sc("disk", 50, dyn("db"), pv("v"))),
			want:         mk(t, sc("disk", 50, dyn("db"), pv("v")), sc("disk", 50, dyn("db"), pv("v"))),
		},
		{
			name:         "ports",
			total:        MustParse("ports:[31000-32000]"),
			checkpointed: mk(t, rng("ports", 31000, 31009, dyn("db"))),
			want:         plus(t, "ports:[31010-32000]", rng("ports", 31000, 31009, dyn("db"))),
		},
		{
			name:         "does not fit",
			total:        MustParse("cpus:4;mem:1024;disk:512"),
			checkpointed: mk(t, sc("disk", 1024, dyn("db"), pv("id1"))),
			err:          "checkpointed resource disk(reservations: [(DYNAMIC,db,p)])[id1,data:RW]:1024 does not fit the agent's resources cpus:4; disk:512; mem:1024: disk:512 is missing",
		},
		{
			name:         "second resource no longer fits",
			total:        MustParse("cpus:2"),
			checkpointed: mk(t, sc("cpus", 1.5, dyn("db")), sc("cpus", 1, dyn("web"))),
			err:          "cpus(reservations: [(DYNAMIC,web,p)]):1 does not fit the agent's resources cpus:2: cpus:0.5 is missing",
		},
		{
			name:         "static role changed",
			total:        MustParse("cpus(x):4"),
			checkpointed: mk(t, sc("cpus", 1, rsv(static("a"), dynamic("a/b", "p")))),
			err:          "cpus(a):1 is missing",
		},
		{
			name:         "not a checkpointed resource",
			total:        MustParse("cpus:4"),
			checkpointed: MustParse("cpus:1"),
			err:          "checkpointed resource cpus:1 is neither dynamically reserved nor a persistent volume",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ApplyCheckpointed(tc.total, tc.checkpointed)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(tc.want) {
				t.Fatalf("got  %v\nwant %v", got, tc.want)
			}
			// What the agent re-checkpoints is what it was given.
			if cp := got.Checkpointed(); !cp.Equal(tc.checkpointed) {
				t.Fatalf("Checkpointed() of the result = %v, want %v", cp, tc.checkpointed)
			}
		})
	}
}
