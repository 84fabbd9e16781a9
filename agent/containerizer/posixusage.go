package containerizer

import (
	"os"
	"strconv"
	"time"

	"mezzo/api/mesos"

	"google.golang.org/protobuf/proto"
)

// userHZ is the unit of the cpu times in /proc/<pid>/stat (USER_HZ, 100 on
// every Linux architecture Go supports).
const userHZ = 100

// posixUsage measures a container without a usage-reporting isolator as
// Mesos's posix/cpu and posix/mem isolators do: the cpu times and resident
// memory of its processes, found in /proc as the members of the session
// its main process leads (the containerizer starts it with setsid).
// Processes that left the session (daemons) are not counted.
func posixUsage(sid int, now time.Time) (*mesos.ResourceStatistics, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var utime, stime, rss uint64
	var procs uint32
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil || st.session != sid {
			continue
		}
		procs++
		utime += st.utime
		stime += st.stime
		rss += st.rssPages
	}
	if procs == 0 {
		return nil, ErrUnknownContainer
	}
	return &mesos.ResourceStatistics{
		Timestamp:          proto.Float64(float64(now.UnixNano()) / 1e9),
		Processes:          proto.Uint32(procs),
		CpusUserTimeSecs:   proto.Float64(float64(utime) / userHZ),
		CpusSystemTimeSecs: proto.Float64(float64(stime) / userHZ),
		MemRssBytes:        proto.Uint64(rss * uint64(os.Getpagesize())),
	}, nil
}
