// Package version reports the mezzo build's version, for /version, the
// agent protocol and `mezzo --version`.
package version

import (
	"runtime/debug"
	"time"
)

// Version is mezzo's release version. Mesos-compatible tools read it from
// /version; it follows Mesos's major version to signal the API level.
const Version = "1.12.0-mezzo.0.1"

// Info is the build information shown by /version.
type Info struct {
	Version   string
	GitSHA    string
	BuildTime time.Time
	BuildUser string
}

// Get returns the build info, using VCS stamps when the binary has them.
func Get() Info {
	info := Info{Version: Version, BuildUser: "mezzo"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.GitSHA = s.Value
			case "vcs.time":
				info.BuildTime, _ = time.Parse(time.RFC3339, s.Value)
			}
		}
	}
	return info
}
