// Package hclogslog is an hclog.Logger that writes to a log/slog handler,
// so that libraries logging through hashicorp/go-hclog (hashicorp/raft,
// under replog) log in the process's one format (text or JSON) at the
// process's level, instead of hclog's own "[WARN]  name: msg: k=v" lines on
// stderr.
//
// Levels map one to one (Trace is one step below Debug); hclog's key/value
// arguments become slog attributes; the logger's name becomes the attribute
// "component". A caller may re-grade particular messages through
// Options.Adjust: a library's level is its author's guess, and the caller
// often knows better which of its conditions are expected (replog demotes
// Raft's "starting election" at start-up, where no leader is lost).
//
// A Logger is safe for concurrent use, as hclog requires.
package hclogslog

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// LevelTrace is the slog level of hclog's Trace: one step below Debug.
const LevelTrace = slog.LevelDebug - 4

// Options configures New.
type Options struct {
	// Name is the logger's name, logged as the attribute "component"
	// (hclog's Named appends ".sub").
	Name string
	// Adjust, if set, returns the level one message is logged at, given
	// the level its caller chose (hclog.Off drops the message). It is
	// called for every message that its original level would let through
	// or that Adjust might raise; keep it cheap.
	Adjust func(level hclog.Level, msg string, args []any) hclog.Level
}

// Logger is an hclog.Logger over a slog.Handler.
type Logger struct {
	h      slog.Handler
	name   string
	args   []any // implied arguments (With)
	adjust func(hclog.Level, string, []any) hclog.Level
	// floor is an extra minimum level set by SetLevel (hclog.NoLevel:
	// none; the handler decides). Shared by loggers derived with With and
	// Named, as hclog's are unless made independent.
	floor *atomic.Int32
}

var _ hclog.Logger = (*Logger)(nil)

// New returns an hclog.Logger writing to h.
func New(h slog.Handler, o Options) *Logger {
	return &Logger{h: h, name: o.Name, adjust: o.Adjust, floor: new(atomic.Int32)}
}

// SlogLevel maps an hclog level to slog's.
func SlogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace:
		return LevelTrace
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default: // Info, NoLevel (hclog logs those as info), Off handled by callers
		return slog.LevelInfo
	}
}

func (l *Logger) enabled(level hclog.Level) bool {
	if level == hclog.Off {
		return false
	}
	if f := hclog.Level(l.floor.Load()); f != hclog.NoLevel && level < f {
		return false
	}
	return l.h.Enabled(context.Background(), SlogLevel(level))
}

// Log logs msg at level with args (key/value pairs, as hclog's).
func (l *Logger) Log(level hclog.Level, msg string, args ...any) {
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	if l.adjust != nil {
		level = l.adjust(level, msg, args)
	}
	if !l.enabled(level) {
		return
	}
	r := slog.NewRecord(time.Now(), SlogLevel(level), msg, 0)
	if l.name != "" {
		r.AddAttrs(slog.String("component", l.name))
	}
	r.AddAttrs(attrs(l.args)...)
	r.AddAttrs(attrs(args)...)
	_ = l.h.Handle(context.Background(), r)
}

// attrs turns hclog's key/value arguments into slog attributes: values
// hclog formats specially (Fmt, Stringers) become the strings hclog would
// print; a key without a value is logged under EXTRA_VALUE_AT_END, as
// hclog does.
func attrs(args []any) []slog.Attr {
	var out []slog.Attr
	for i := 0; i < len(args); i += 2 {
		if i+1 == len(args) {
			out = append(out, slog.Any(hclog.MissingKey, value(args[i])))
			break
		}
		key, ok := args[i].(string)
		if !ok {
			key = fmt.Sprint(args[i])
		}
		out = append(out, slog.Any(key, value(args[i+1])))
	}
	return out
}

func value(v any) any {
	switch v := v.(type) {
	case hclog.Format:
		if len(v) == 0 {
			return ""
		}
		f, _ := v[0].(string)
		return fmt.Sprintf(f, v[1:]...)
	case hclog.Hex:
		return fmt.Sprintf("0x%x", int(v))
	case hclog.Octal:
		return fmt.Sprintf("0%o", int(v))
	case hclog.Binary:
		return fmt.Sprintf("0b%b", int(v))
	case hclog.Quote:
		return string(v)
	case error, time.Duration, time.Time, slog.LogValuer:
		return v // slog prints these itself
	case fmt.Stringer:
		return v.String()
	}
	return v
}

// Trace logs at hclog's Trace level.
func (l *Logger) Trace(msg string, args ...any) { l.Log(hclog.Trace, msg, args...) }

// Debug logs at Debug.
func (l *Logger) Debug(msg string, args ...any) { l.Log(hclog.Debug, msg, args...) }

// Info logs at Info.
func (l *Logger) Info(msg string, args ...any) { l.Log(hclog.Info, msg, args...) }

// Warn logs at Warn.
func (l *Logger) Warn(msg string, args ...any) { l.Log(hclog.Warn, msg, args...) }

// Error logs at Error.
func (l *Logger) Error(msg string, args ...any) { l.Log(hclog.Error, msg, args...) }

// IsTrace reports whether Trace messages are logged.
func (l *Logger) IsTrace() bool { return l.enabled(hclog.Trace) }

// IsDebug reports whether Debug messages are logged.
func (l *Logger) IsDebug() bool { return l.enabled(hclog.Debug) }

// IsInfo reports whether Info messages are logged.
func (l *Logger) IsInfo() bool { return l.enabled(hclog.Info) }

// IsWarn reports whether Warn messages are logged.
func (l *Logger) IsWarn() bool { return l.enabled(hclog.Warn) }

// IsError reports whether Error messages are logged.
func (l *Logger) IsError() bool { return l.enabled(hclog.Error) }

// ImpliedArgs returns the arguments added by With.
func (l *Logger) ImpliedArgs() []any { return l.args }

// With returns a logger that adds args to every message.
func (l *Logger) With(args ...any) hclog.Logger {
	c := *l
	c.args = append(append([]any(nil), l.args...), args...)
	return &c
}

// Name returns the logger's name.
func (l *Logger) Name() string { return l.name }

// Named returns a logger named "<name>.<sub>" (or sub if unnamed).
func (l *Logger) Named(sub string) hclog.Logger {
	c := *l
	if l.name != "" {
		c.name = l.name + "." + sub
	} else {
		c.name = sub
	}
	return &c
}

// ResetNamed returns a logger named name.
func (l *Logger) ResetNamed(name string) hclog.Logger {
	c := *l
	c.name = name
	return &c
}

// SetLevel sets a minimum level on top of the handler's (hclog.NoLevel
// removes it). The process's level stays the handler's business: this
// can only make the logger quieter.
func (l *Logger) SetLevel(level hclog.Level) { l.floor.Store(int32(level)) }

// GetLevel returns the lowest level that is logged.
func (l *Logger) GetLevel() hclog.Level {
	for _, lv := range []hclog.Level{hclog.Trace, hclog.Debug, hclog.Info, hclog.Warn, hclog.Error} {
		if l.enabled(lv) {
			return lv
		}
	}
	return hclog.Off
}

// StandardLogger returns a standard library logger writing through l.
func (l *Logger) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(l.StandardWriter(opts), "", 0)
}

// StandardWriter returns a writer that logs each line written to it at
// opts.ForceLevel (default Info) or, with opts.InferLevels, at the level
// its "[WARN]"-style prefix names.
func (l *Logger) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	if opts == nil {
		opts = &hclog.StandardLoggerOptions{}
	}
	return &stdWriter{l: l, opts: *opts}
}

type stdWriter struct {
	l    *Logger
	opts hclog.StandardLoggerOptions
}

func (w *stdWriter) Write(p []byte) (int, error) {
	sc := bufio.NewScanner(bytes.NewReader(p))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		level := hclog.Info
		if w.opts.ForceLevel != hclog.NoLevel {
			level = w.opts.ForceLevel
		} else if w.opts.InferLevels {
			level, line = inferLevel(line)
		}
		w.l.Log(level, line)
	}
	return len(p), nil
}

// inferLevel reads a leading "[LEVEL]" tag, as hclog's InferLevels does.
func inferLevel(line string) (hclog.Level, string) {
	for tag, lv := range map[string]hclog.Level{
		"[TRACE]": hclog.Trace, "[DEBUG]": hclog.Debug, "[INFO]": hclog.Info,
		"[WARN]": hclog.Warn, "[ERROR]": hclog.Error, "[ERR]": hclog.Error,
	} {
		if rest, ok := strings.CutPrefix(line, tag); ok {
			return lv, strings.TrimSpace(rest)
		}
	}
	return hclog.Info, line
}
