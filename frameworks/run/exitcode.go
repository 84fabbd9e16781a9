package run

import (
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"mezzo/api/mesos"
)

// Exit codes of Run. A task's own exit status passes through, so scripts
// can treat `mezzo run -- CMD` like CMD; mezzo's own outcomes take codes a
// command rarely uses, as timeout(1) and `docker run` do:
//
//	0       TASK_FINISHED
//	1–255   TASK_FAILED: the command's exit status (1 when the executor
//	        reported none, or when it was 124–126, which are mezzo's)
//	124     --timeout expired; the task was killed
//	125     mezzo run itself failed: bad options, no master reachable, the
//	        framework refused, or TASK_ERROR (the master refused the task)
//	126     the task was lost: TASK_LOST, TASK_DROPPED, TASK_GONE,
//	        TASK_GONE_BY_OPERATOR, TASK_UNREACHABLE, TASK_UNKNOWN
//	130     interrupted (SIGINT/SIGTERM to mezzo run); the task was killed
//	137     TASK_KILLED (killed through the scheduler or operator API)
//	128+N   TASK_FAILED by signal N ("Command terminated with signal …")
const (
	ExitFinished    = 0
	ExitFailed      = 1
	ExitTimeout     = 124
	ExitMezzo       = 125
	ExitLost        = 126
	ExitInterrupted = 130
	ExitKilled      = 137

	// ExitUsage is kept as the name of mezzo's own failures.
	ExitUsage = ExitMezzo
)

var (
	exitedRE   = regexp.MustCompile(`exited with status (\d+)`)
	signaledRE = regexp.MustCompile(`terminated with signal (.+)$`)
)

// ExitCode maps a terminal status of the task to Run's exit code (see the
// table above).
func ExitCode(s *mesos.TaskStatus) int {
	switch s.GetState() {
	case mesos.TaskState_TASK_FINISHED:
		return ExitFinished
	case mesos.TaskState_TASK_KILLED, mesos.TaskState_TASK_KILLING:
		return ExitKilled
	case mesos.TaskState_TASK_ERROR:
		return ExitMezzo
	case mesos.TaskState_TASK_LOST, mesos.TaskState_TASK_DROPPED, mesos.TaskState_TASK_GONE,
		mesos.TaskState_TASK_GONE_BY_OPERATOR, mesos.TaskState_TASK_UNREACHABLE, mesos.TaskState_TASK_UNKNOWN:
		return ExitLost
	}
	msg := s.GetMessage()
	if m := exitedRE.FindStringSubmatch(msg); m != nil {
		n, err := strconv.Atoi(m[1])
		if err != nil || n <= 0 || n > 255 || (n >= ExitTimeout && n <= ExitLost) {
			return ExitFailed // 124–126 are mezzo's own
		}
		return n
	}
	if m := signaledRE.FindStringSubmatch(msg); m != nil {
		if sig := signalNumber(strings.TrimSpace(m[1])); sig > 0 {
			return 128 + sig
		}
	}
	return ExitFailed
}

// signalNumber reads a signal as the executor names it: strsignal's text
// ("Killed"), the name ("SIGKILL", "KILL") or the number.
func signalNumber(name string) int {
	if n, err := strconv.Atoi(name); err == nil {
		return n
	}
	for sig := unix.Signal(1); sig < 65; sig++ {
		if unix.SignalName(sig) == "" {
			continue
		}
		if strings.EqualFold(sig.String(), name) || unix.SignalName(sig) == name ||
			"SIG"+strings.ToUpper(name) == unix.SignalName(sig) {
			return int(sig)
		}
	}
	return 0
}
