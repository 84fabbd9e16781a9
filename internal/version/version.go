// Package version reports the mezzo build's version, for /version, /state,
// the agent protocol and `mezzo --version`.
//
// The build description (time, git SHA, user) comes from the first of
// these that has it, most precise first:
//
//  1. values linked in by the Makefile: -ldflags "-X
//     mezzo/internal/version.buildTime=<RFC 3339 or Unix seconds>
//     -X mezzo/internal/version.gitSHA=<sha> -X
//     mezzo/internal/version.buildUser=<user>" (`make build` sets all three);
//  2. the Go toolchain's VCS stamp (runtime/debug.ReadBuildInfo's
//     vcs.time and vcs.revision), present when `go build` ran in a git
//     checkout with -buildvcs on; vcs.time is the commit's time, not the
//     build's, but it names the sources exactly;
//  3. for the time only: the modification time of the running executable,
//     which a plain `go build` (or `go test`) sets to when it linked it.
//
// The build user falls back to "mezzo" and the SHA to none (git_sha is then
// left out, as Mesos does when it was built without one). Whatever the
// build, the time is therefore never the zero time that rendered as
// "0001-01-01 00:00:00".
package version

import (
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"
)

// Version is mezzo's release version. Mesos-compatible tools read it from
// /version; it follows Mesos's major version to signal the API level.
const Version = "1.12.0-mezzo.0.1"

// Set with -ldflags -X by the Makefile; empty in a plain `go build`.
var (
	buildTime string // RFC 3339, or seconds since the epoch
	gitSHA    string
	buildUser string
)

// Info is the build information shown by /version and /state.
type Info struct {
	Version   string
	GitSHA    string
	BuildTime time.Time // zero only if no source above had it
	BuildUser string
}

// BuildDate is BuildTime as Mesos's build_date ("2006-01-02 15:04:05",
// UTC), or "" when the time is unknown.
func (i Info) BuildDate() string {
	if i.BuildTime.IsZero() {
		return ""
	}
	return i.BuildTime.UTC().Format(time.DateTime)
}

// BuildUnix is BuildTime in seconds since the epoch, or 0 when unknown.
func (i Info) BuildUnix() int64 {
	if i.BuildTime.IsZero() {
		return 0
	}
	return i.BuildTime.Unix()
}

// Get returns the build info; it is computed once per process.
func Get() Info { return get() }

var get = sync.OnceValue(func() Info {
	var settings []debug.BuildSetting
	if bi, ok := debug.ReadBuildInfo(); ok {
		settings = bi.Settings
	}
	return resolve(linked{buildTime, gitSHA, buildUser}, settings, executableMTime)
})

// linked are the -ldflags values.
type linked struct{ buildTime, gitSHA, buildUser string }

// resolve applies the precedence of the package comment; mtime is asked
// only when neither ldflags nor VCS stamps give a time.
func resolve(l linked, settings []debug.BuildSetting, mtime func() time.Time) Info {
	info := Info{Version: Version, BuildUser: "mezzo", GitSHA: l.gitSHA, BuildTime: parseTime(l.buildTime)}
	if l.buildUser != "" {
		info.BuildUser = l.buildUser
	}
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			if info.GitSHA == "" {
				info.GitSHA = s.Value
			}
		case "vcs.time":
			if info.BuildTime.IsZero() {
				info.BuildTime = parseTime(s.Value)
			}
		}
	}
	if info.BuildTime.IsZero() && mtime != nil {
		info.BuildTime = mtime()
	}
	return info
}

// parseTime reads RFC 3339 or Unix seconds; anything else is unknown (zero).
func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC()
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
		return time.Unix(n, 0).UTC()
	}
	return time.Time{}
}

// executableMTime is when the running binary was written (linked), or zero.
func executableMTime() time.Time {
	p, err := os.Executable()
	if err != nil {
		return time.Time{}
	}
	fi, err := os.Stat(p)
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime().UTC().Truncate(time.Second)
}
