package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"mezzo/frameworks/loop"
)

// frameworkFlags are the flags every shipped framework's command takes
// (`mezzo batch`, `gang`, `elastic`).
type frameworkFlags struct {
	masters, name, role string
	asJSON, verbose     bool
	timeout             *time.Duration
}

func addFrameworkFlags(fs *flag.FlagSet, name string) *frameworkFlags {
	f := &frameworkFlags{}
	fs.StringVar(&f.masters, "master", "127.0.0.1:5050", "the master(s): host:port[,host:port...]")
	fs.StringVar(&f.name, "name", name, "framework name")
	fs.StringVar(&f.role, "role", "*", "role the framework subscribes with; resources reserved to it are used first")
	fs.BoolVar(&f.asJSON, "json", false, "print the result as one JSON object")
	fs.BoolVar(&f.verbose, "v", false, "log the framework's calls and errors to stderr")
	f.timeout = durationFlag(fs, "timeout", 0, "give up after this long (0: never)")
	return f
}

// config is the subscription part of the framework's Config.
func (f *frameworkFlags) config(stderr io.Writer) loop.Config {
	c := loop.Config{Masters: strings.Split(f.masters, ","), Name: f.name, Role: f.role}
	if f.verbose {
		c.Logf = func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) }
	}
	return c
}

// context is the run's context: interrupted by SIGINT/SIGTERM, bounded by
// --timeout.
func (f *frameworkFlags) context() (context.Context, context.CancelFunc) {
	ctx, cancel := signalContext()
	if *f.timeout <= 0 {
		return ctx, cancel
	}
	ctx, cancelT := context.WithTimeout(ctx, *f.timeout)
	return ctx, func() { cancelT(); cancel() }
}

// runFramework runs a framework until its jobs end (run) and reports its
// result; failed says whether a job failed (exit 1).
func runFramework[R any](ff *frameworkFlags, stdout, stderr io.Writer, cmd string, run func(context.Context) (*R, error),
	failed func(*R) bool, human func(*R)) int {
	ctx, cancel := ff.context()
	defer cancel()
	r, err := run(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "mezzo %s: %v\n", cmd, err)
		return 1
	}
	return ff.report(stdout, r, failed(r), func() { human(r) })
}

// jobsOrInline picks the jobs: from the --jobs file (load), or one inline
// job (inline, given when its flag is set), or neither: a usage error.
func jobsOrInline[J any](stderr io.Writer, cmd, file string, inlineSet bool, inlineFlag string, load func(string) ([]J, error),
	inline func() (J, error)) ([]J, bool) {
	switch {
	case file != "" && inlineSet:
		fmt.Fprintf(stderr, "mezzo %s: give --jobs or %s, not both\n", cmd, inlineFlag)
	case file != "":
		jobs, err := load(file)
		if err == nil {
			return jobs, true
		}
		fmt.Fprintf(stderr, "mezzo %s: --jobs: %v\n", cmd, err)
	case inlineSet:
		j, err := inline()
		if err == nil {
			return []J{j}, true
		}
		fmt.Fprintf(stderr, "mezzo %s: %v\n", cmd, err)
	default:
		fmt.Fprintf(stderr, "mezzo %s: no jobs given: --jobs=FILE or %s=… -- CMD\n", cmd, inlineFlag)
	}
	return nil, false
}

// report prints the result, as JSON with --json or else by human, and
// returns the exit code: 1 if something failed.
func (f *frameworkFlags) report(stdout io.Writer, result any, failed bool, human func()) int {
	if f.asJSON {
		if err := json.NewEncoder(stdout).Encode(result); err != nil {
			return 1
		}
	} else {
		human()
	}
	if failed {
		return 1
	}
	return 0
}

// errNoCommand: an inline job without a command.
var errNoCommand = errors.New("no command given: --command=CMD or -- CMD ARGS...")

// commandOf is the task command: --command, else the words after "--"
// (joined for /bin/sh), else def.
func commandOf(flagValue string, args []string, def string) string {
	if flagValue != "" {
		return flagValue
	}
	if len(args) > 0 {
		return strings.Join(args, " ")
	}
	return def
}
