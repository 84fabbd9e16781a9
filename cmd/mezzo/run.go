package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"mezzo/frameworks/run"
)

// runRun is `mezzo run [flags] -- CMD ARGS…` or `mezzo run --task=FILE
// [flags]`: launch one task and follow it. Exit code 0 only on
// TASK_FINISHED.
func runRun(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("run", stderr)
	masters := fs.String("master", "127.0.0.1:5050", "the master(s): host:port[,host:port...]")
	resources := fs.String("resources", "cpus:0.1;mem:32", "resources for the task, Mesos syntax")
	name := fs.String("name", "mezzo-run", "framework and task name")
	role := fs.String("role", "*", "role the framework subscribes with; resources reserved to it are used too")
	taskFile := fs.String("task", "", "the TaskInfo to launch, in JSON: a file's path (or file:///path) or the JSON itself, as mesos-execute --task; replaces -- CMD, --resources and --shell")
	shell := fs.Bool("shell", false, "run the command through /bin/sh -c (one argument)")
	checkpoint := fs.Bool("checkpoint", false, "run under a checkpointing framework (survives agent restarts)")
	timeout := durationFlag(fs, "timeout", 0, "give up after this long (0: never)")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	opts := run.Options{
		Masters:    strings.Split(*masters, ","),
		Command:    fs.Args(),
		Shell:      *shell,
		Resources:  *resources,
		Name:       *name,
		Role:       *role,
		Checkpoint: *checkpoint,
		Out:        stdout,
		Log:        stderr,
		Timeout:    time.Duration(*timeout),
	}
	if *taskFile != "" {
		task, err := run.LoadTask(*taskFile)
		if err != nil {
			fmt.Fprintf(stderr, "mezzo run: --task: %v\n", err)
			return 2
		}
		opts.Task = task
		// --resources has a default; only an explicit one conflicts.
		if !flagSet(fs, "resources") {
			opts.Resources = ""
		}
	} else if len(opts.Command) == 0 {
		fmt.Fprintln(stderr, "mezzo run: no command given; usage: mezzo run [flags] -- CMD ARGS... (or --task=FILE)")
		return 2
	}
	ctx, cancel := signalContext()
	defer cancel()
	code, err := run.Run(ctx, opts)
	if err != nil {
		fmt.Fprintf(stderr, "mezzo run: %v\n", err)
	}
	return code
}

// flagSet reports whether the flag was given on the command line (or in
// the environment).
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
