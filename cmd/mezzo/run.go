package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"mezzo/cli"
	"mezzo/frameworks/run"
)

// runRun is `mezzo run [flags] -- CMD ARGS…` or `mezzo run --task=FILE
// [flags]`: launch one task, stream its stdout and stderr here, and exit
// with its exit code (frameworks/run/exitcode.go; docs/cli.md).
//
// Usage errors exit with run.ExitMezzo (125), not 2: 2 may be the task's.
func runRun(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("run", stderr)
	masters := fs.String("master", "127.0.0.1:5050", "the master(s): host:port[,host:port...]")
	resources := fs.String("resources", "cpus:0.1;mem:32", "resources for the task, Mesos syntax")
	name := fs.String("name", "mezzo-run", "framework and task name; the task ID is the name with a random suffix")
	taskID := fs.String("task_id", "", "the task's ID instead of a generated one (also over a task file's task_id)")
	role := fs.String("role", "*", "role the framework subscribes with; resources reserved to it are used too")
	taskFile := fs.String("task", "", "the TaskInfo to launch, in JSON: a file's path (or file:///path) or the JSON itself, as mesos-execute --task; replaces -- CMD, --resources and --shell")
	shell := fs.Bool("shell", false, "run the command through /bin/sh -c (one argument)")
	checkpoint := fs.Bool("checkpoint", false, "run under a checkpointing framework (survives agent restarts)")
	revocable := fs.Bool("revocable", false,
		"run on revocable cpus (REVOCABLE_RESOURCES: an agent's unused cpus or a lent reservation), with --resources' other resources regular; the task may be killed when the cpus are needed back (exit 126); while no agent has revocable cpus it says so and waits")
	var env envFlag
	fs.Var(&env, "env", "environment variable for the command, NAME=VALUE (repeatable), or a JSON object as mesos-execute takes it")
	dockerImage := fs.String("docker_image", "", "run the command in this Docker image (docker containerizer)")
	stream := fs.Bool("stream", true, "print the task's stdout and stderr here while it runs (status lines go to stderr); --stream=false prints only status lines, on stdout")
	timeout := durationFlag(fs, "timeout", 0, "give up after this long (0: never)")
	user := fs.String("user", "", "the user the task runs as (FrameworkInfo.user; default: the current user); agents with --switch_user run it as that user")
	client := clientFlags{tls: addTLSFlags(fs, false)}
	fs.StringVar(&client.credential, "credential", "",
		"authenticate with this credential (a file: JSON {\"principal\",\"secret\"} or 'principal secret'); the framework's principal is its principal")
	if code := parseFlags(fs, args); code >= 0 {
		if code != 0 {
			return run.ExitMezzo
		}
		return code
	}
	opts := run.Options{
		Masters:     strings.Split(*masters, ","),
		Command:     fs.Args(),
		Shell:       *shell,
		Resources:   *resources,
		Name:        *name,
		Role:        *role,
		TaskID:      *taskID,
		Checkpoint:  *checkpoint,
		Revocable:   *revocable,
		Env:         env,
		DockerImage: *dockerImage,
		User:        *user,
		Out:         stdout,
		Log:         stderr,
		Timeout:     time.Duration(*timeout),
	}
	transport, cred, err := client.transport()
	if err != nil {
		fmt.Fprintf(stderr, "mezzo run: %v\n", err)
		return run.ExitMezzo
	}
	opts.Credential = cred
	opts.HTTPClient = &http.Client{Transport: transport}
	if *stream {
		opts.Out = stderr
		opts.Output = &cli.TaskOutput{Masters: opts.Masters, Stdout: stdout, Stderr: stderr,
			HTTP: &http.Client{Timeout: cli.DefaultTimeout, Transport: transport}}
	}
	if *taskFile != "" {
		task, err := run.LoadTask(*taskFile)
		if err != nil {
			fmt.Fprintf(stderr, "mezzo run: --task: %v\n", err)
			return run.ExitMezzo
		}
		opts.Task = task
		// --resources has a default; only an explicit one conflicts.
		if !flagSet(fs, "resources") {
			opts.Resources = ""
		}
	} else if len(opts.Command) == 0 {
		fmt.Fprintln(stderr, "mezzo run: no command given; usage: mezzo run [flags] -- CMD ARGS... (or --task=FILE)")
		return run.ExitMezzo
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

// envFlag collects --env: NAME=VALUE per use, or mesos-execute's JSON
// object {"NAME":"VALUE",...}.
type envFlag []string

func (e *envFlag) String() string { return strings.Join(*e, ",") }

func (e *envFlag) Set(v string) error {
	if strings.HasPrefix(strings.TrimSpace(v), "{") {
		var m map[string]string
		if err := json.Unmarshal([]byte(v), &m); err != nil {
			return fmt.Errorf("expecting a JSON object of strings: %v", err)
		}
		names := make([]string, 0, len(m))
		for k := range m {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			*e = append(*e, k+"="+m[k])
		}
		return nil
	}
	if i := strings.IndexByte(v, '='); i <= 0 {
		return fmt.Errorf("%q: expecting NAME=VALUE", v)
	}
	*e = append(*e, v)
	return nil
}
