package version

import (
	"runtime/debug"
	"testing"
	"time"
)

func TestResolvePrecedence(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}}
	mtime := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	mtimeFn := func() time.Time { return mtime }
	for _, tc := range []struct {
		name     string
		l        linked
		settings []debug.BuildSetting
		mtime    func() time.Time
		want     Info
	}{
		{"ldflags win", linked{"2026-03-04T05:06:07Z", "deadbeef", "alice"}, vcs, mtimeFn,
			Info{Version, "deadbeef", time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), "alice"}},
		{"ldflags unix seconds", linked{buildTime: "1700000000"}, nil, mtimeFn,
			Info{Version, "", time.Unix(1700000000, 0).UTC(), "mezzo"}},
		{"vcs stamps", linked{}, vcs, mtimeFn,
			Info{Version, "abc123", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "mezzo"}},
		{"mtime when nothing else", linked{}, nil, mtimeFn, Info{Version, "", mtime, "mezzo"}},
		{"garbage ldflags time falls through", linked{buildTime: "yesterday"}, nil, mtimeFn, Info{Version, "", mtime, "mezzo"}},
		{"nothing at all", linked{}, nil, nil, Info{Version: Version, BuildUser: "mezzo"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := resolve(tc.l, tc.settings, tc.mtime)
			if got != tc.want {
				t.Errorf("resolve = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The test binary has no ldflags and no VCS stamp: the time is its own
// modification time, never the zero time.
func TestGetNeverZero(t *testing.T) {
	info := Get()
	if info.BuildTime.IsZero() || info.BuildDate() == "" || info.BuildDate() == "0001-01-01 00:00:00" {
		t.Fatalf("Get() = %+v, date %q", info, info.BuildDate())
	}
	if info.BuildTime.Before(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)) || info.BuildTime.After(time.Now().Add(time.Minute)) {
		t.Errorf("build time %v is not when this test binary was linked", info.BuildTime)
	}
	if (Info{}).BuildDate() != "" || (Info{}).BuildUnix() != 0 {
		t.Error("an unknown time renders as something")
	}
}
