package run

import (
	"strconv"
	"strings"

	"mezzo/api/mesos"
)

// StatusLine renders a status update as Run prints it:
//
//	<task-id> <STATE> [source=<SOURCE>] [reason=<REASON>] [message="<text>"]
//
// Optional parts appear only when the update carries them; the message is
// quoted Go-style so that one update is always one line.
func StatusLine(s *mesos.TaskStatus) string {
	var b strings.Builder
	b.WriteString(s.GetTaskId().GetValue())
	b.WriteByte(' ')
	b.WriteString(s.GetState().String())
	if s.Source != nil {
		b.WriteString(" source=")
		b.WriteString(s.GetSource().String())
	}
	if s.Reason != nil {
		b.WriteString(" reason=")
		b.WriteString(s.GetReason().String())
	}
	if m := s.GetMessage(); m != "" {
		b.WriteString(" message=")
		b.WriteString(strconv.Quote(m))
	}
	return b.String()
}
