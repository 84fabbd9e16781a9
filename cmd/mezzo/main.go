// Command mezzo is the one binary of a mezzo cluster: master, agent, a
// laptop-sized local cluster, the built-in executors, a command runner and
// benchmarks, chosen by the first argument. This package only wires flags
// into the Config structs of the packages that do the work.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"

	"mezzo/cli"
	"mezzo/internal/version"
)

// command is one subcommand: its one-line summary and its entry point,
// which returns the process exit code.
type subcommand struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) int
}

var commands = map[string]subcommand{
	"master":           {"run a master", runMaster},
	"agent":            {"run an agent (--master=host:port)", runAgent},
	"local":            {"run a master and N agents on loopback (the quick start)", runLocal},
	"run":              {"run a command on the cluster and follow it to the end", runRun},
	"batch":            {"run jobs of block-reading tasks with delay scheduling (the paper's Hadoop)", runBatch},
	"gang":             {"run rigid jobs whose tasks start all at once (the paper's MPI)", runGang},
	"elastic":          {"run a web service scaled with its load: elastic [replica|load]", runElastic},
	"executor":         {"the built-in command executor (started by agents)", runCommandExecutor},
	"default-executor": {"the built-in task group executor (started by agents)", runDefaultExecutor},
	"bench":            {"reproducible benchmarks: bench allocator|registrar|failover|launch|paper", runBench},
	"version":          {"print the version", runVersion},
}

func init() {
	// completion reads the table it is part of.
	commands["completion"] = subcommand{"print a shell completion script: completion bash|zsh", runCompletion}
}

func init() {
	// The operator CLI's commands (tasks, agents, frameworks, roles,
	// explain, logs, teardown, reserve, unreserve, volumes) talk to a
	// master over HTTP.
	for name, c := range cli.Commands() {
		commands[name] = subcommand{c.Summary, c.Run}
	}
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" {
		return runVersion(nil, stdout, stderr)
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "mezzo: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	return c.run(args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "mezzo %s: Apache Mesos, rebuilt as one binary.\n\nUsage: mezzo <command> [flags]\n\nCommands:\n", version.Version)
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-17s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "\nEvery flag may also come from the environment as MESOS_<FLAG>.\nRun 'mezzo <command> --help' for a command's flags.\n")
}

func runVersion(_ []string, stdout, _ io.Writer) int {
	v := version.Get()
	fmt.Fprintf(stdout, "mezzo %s", v.Version)
	if v.GitSHA != "" {
		fmt.Fprintf(stdout, " (%s)", v.GitSHA)
	}
	if d := v.BuildDate(); d != "" {
		fmt.Fprintf(stdout, ", built %s UTC by %s", d, v.BuildUser)
	}
	fmt.Fprintln(stdout)
	return 0
}
