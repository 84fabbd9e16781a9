package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"mezzo/frameworks/run"
)

// runRun is `mezzo run [flags] -- CMD ARGS…`: launch one task and follow it.
// Exit code 0 only on TASK_FINISHED.
func runRun(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("run", stderr)
	masters := fs.String("master", "127.0.0.1:5050", "the master(s): host:port[,host:port...]")
	resources := fs.String("resources", "cpus:0.1;mem:32", "resources for the task, Mesos syntax")
	name := fs.String("name", "mezzo-run", "framework and task name")
	role := fs.String("role", "*", "role to run under")
	shell := fs.Bool("shell", false, "run the command through /bin/sh -c (one argument)")
	checkpoint := fs.Bool("checkpoint", false, "run under a checkpointing framework (survives agent restarts)")
	timeout := durationFlag(fs, "timeout", 0, "give up after this long (0: never)")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	command := fs.Args()
	if len(command) == 0 {
		fmt.Fprintln(stderr, "mezzo run: no command given; usage: mezzo run [flags] -- CMD ARGS...")
		return 2
	}
	ctx, cancel := signalContext()
	defer cancel()
	code, err := run.Run(ctx, run.Options{
		Masters:    strings.Split(*masters, ","),
		Command:    command,
		Shell:      *shell,
		Resources:  *resources,
		Name:       *name,
		Role:       *role,
		Checkpoint: *checkpoint,
		Out:        stdout,
		Log:        stderr,
		Timeout:    time.Duration(*timeout),
	})
	if err != nil {
		fmt.Fprintf(stderr, "mezzo run: %v\n", err)
	}
	return code
}
