package main

import (
	"context"
	"encoding/json"
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
