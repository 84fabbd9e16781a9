package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// table writes rows aligned in columns, the header first.
func table(w io.Writer, header []string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// writeJSON writes v indented, for --json.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// num renders a quantity without trailing zeros: 0.5, 2, 1.25.
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
}

// mem renders megabytes as Mesos's UI does: 512MB, 1.25GB, 2TB (0 for none).
func mem(mb float64) string {
	switch {
	case mb == 0:
		return "0"
	case mb >= 1024*1024:
		return num(math.Round(mb/1024/1024*100)/100) + "TB"
	case mb >= 1024:
		return num(math.Round(mb/1024*100)/100) + "GB"
	}
	return num(mb) + "MB"
}

// age renders how long ago t was, kubectl style: 45s, 3m, 2h, 5d.
func age(now time.Time, t float64) string {
	if t <= 0 {
		return "-"
	}
	d := now.Sub(fromSecs(t))
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// fromSecs converts Mesos's float seconds since the epoch.
func fromSecs(s float64) time.Time {
	sec, frac := math.Modf(s)
	return time.Unix(int64(sec), int64(frac*1e9))
}

// quantities renders {name: quantity} as "cpus:2;mem:1GB" in name order;
// "-" for none.
func quantities(m map[string]float64) string {
	if len(m) == 0 {
		return "-"
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		v := num(m[n])
		if n == "mem" || n == "disk" {
			v = mem(m[n])
		}
		parts = append(parts, n+":"+v)
	}
	return strings.Join(parts, ";")
}

// scalars keeps the numeric entries of a resource summary, dropping zeros.
func scalars(r resourceSummary) map[string]float64 {
	out := map[string]float64{}
	for k, v := range r {
		if f, ok := v.(float64); ok && f != 0 {
			out[k] = f
		}
	}
	return out
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// terminal reports whether a task state is final.
func terminal(state string) bool {
	switch state {
	case "TASK_STAGING", "TASK_STARTING", "TASK_RUNNING", "TASK_KILLING", "TASK_UNREACHABLE", "":
		return false
	}
	return true
}

// started is when a task was first reported (its first status), 0 if never.
func started(t task) float64 {
	if len(t.Statuses) == 0 {
		return 0
	}
	first := t.Statuses[0].Timestamp
	for _, s := range t.Statuses {
		if s.Timestamp > 0 && s.Timestamp < first {
			first = s.Timestamp
		}
	}
	return first
}
