package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"mezzo/internal/loglevel"
	"os"
	"strings"
	"time"

	"mezzo/internal/flagenv"
	"mezzo/internal/stout"
)

// durationValue is a flag accepting Mesos durations ("15secs", "1mins") as
// well as Go's ("15s"), printed in Mesos's form so /flags reads like Mesos.
type durationValue struct{ d *time.Duration }

func (v durationValue) String() string {
	if v.d == nil {
		return ""
	}
	return stout.FormatDuration(*v.d)
}

func (v durationValue) Set(s string) error {
	d, err := stout.ParseDuration(s)
	if err != nil {
		if gd, gerr := time.ParseDuration(s); gerr == nil {
			d, err = gd, nil
		}
	}
	if err != nil {
		return fmt.Errorf("invalid duration %q (want e.g. 15secs, 500ms, 2mins)", s)
	}
	if d < 0 {
		return fmt.Errorf("negative duration %q", s)
	}
	*v.d = d
	return nil
}

func durationFlag(fs *flag.FlagSet, name string, def time.Duration, usage string) *time.Duration {
	d := def
	fs.Var(durationValue{&d}, name, usage)
	return &d
}

// newFlagSet returns a flag set whose errors and help go to stderr.
func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("mezzo "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseFlags parses args (with MESOS_<FLAG> from the environment). It
// returns a non-negative exit code when the caller should stop (help or a
// bad flag).
func parseFlags(fs *flag.FlagSet, args []string) int {
	return parseFlagsWith(fs, args, flagenv.OSLookup)
}

// parseFlagsWith is parseFlags with the environment given by lookup.
func parseFlagsWith(fs *flag.FlagSet, args []string, lookup func(string) (string, bool)) int {
	if err := flagenv.Parse(fs, args, lookup); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		fmt.Fprintf(fs.Output(), "%s: %v\n", fs.Name(), err)
		return 2
	}
	return -1
}

// logFormats are --log_format's values.
const logFormats = "text or json"

// logger returns the process's logger: one line per record, as logfmt
// ("text") or one JSON object ("json"), at the named level ("debug",
// "info", "warn", "error"), and the control through which the operator
// API's SET_LOGGING_LEVEL changes that level for a while. Every line of
// the process goes through it, Raft's included (replog.Config.Logger).
func logger(w io.Writer, level, format string) (*slog.Logger, *loglevel.Control, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		return nil, nil, fmt.Errorf("--logging_level=%q: want debug, info, warn or error", level)
	}
	lv := &slog.LevelVar{}
	lv.Set(l)
	opts := &slog.HandlerOptions{Level: lv}
	var h slog.Handler
	switch format {
	case "text", "":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, nil, fmt.Errorf("--log_format=%q: want %s", format, logFormats)
	}
	return slog.New(h), loglevel.New(lv, nil), nil
}

// bridgeStdLog makes l the process's default logger, so that what
// libraries print through the standard log package (net/http's server:
// "http: Accept error: … too many open files") comes in the process's
// format too, at WARN: nothing in mezzo logs that way, so whatever does is
// a library reporting a problem.
func bridgeStdLog(l *slog.Logger) {
	slog.SetDefault(l)
	slog.SetLogLoggerLevel(slog.LevelWarn)
}

// parseWeights parses --weights "role1=2,role2=0.5".
func parseWeights(s string) (map[string]float64, error) {
	out := map[string]float64{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, kv := range strings.Split(s, ",") {
		role, w, ok := strings.Cut(strings.TrimSpace(kv), "=")
		var f float64
		if _, err := fmt.Sscanf(w, "%g", &f); !ok || err != nil || f <= 0 || role == "" {
			return nil, fmt.Errorf("--weights: %q is not role=positive-number", kv)
		}
		out[role] = f
	}
	return out, nil
}

// parseMinAllocatable parses --min_allocatable_resources "cpus:0.01|mem:32":
// alternatives separated by '|', each a ';'-separated list of name:quantity.
func parseMinAllocatable(s string) ([]map[string]float64, error) {
	var out []map[string]float64
	for _, alt := range strings.Split(s, "|") {
		m := map[string]float64{}
		for _, item := range strings.Split(alt, ";") {
			name, q, ok := strings.Cut(strings.TrimSpace(item), ":")
			var f float64
			if _, err := fmt.Sscanf(q, "%g", &f); !ok || err != nil || f < 0 || name == "" {
				return nil, fmt.Errorf("--min_allocatable_resources: %q is not name:quantity", item)
			}
			m[name] = f
		}
		out = append(out, m)
	}
	return out, nil
}

func hostnameOr(h string) string {
	if h != "" {
		return h
	}
	if n, err := os.Hostname(); err == nil {
		return n
	}
	return "localhost"
}
