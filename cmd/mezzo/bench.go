package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	allocbench "mezzo/master/allocator/bench"
)

// runBench dispatches `mezzo bench <what>`. Results go to stdout as one
// JSON object (--json) or a short human summary; docs/benchmarks.md records
// them with the machine and the command.
func runBench(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: mezzo bench allocator|launch|registrar|failover|cluster|paper|oversubscription [flags]")
		return 2
	}
	switch args[0] {
	case "allocator":
		return benchAllocator(args[1:], stdout, stderr)
	case "launch":
		return benchLaunch(args[1:], stdout, stderr)
	case "registrar":
		return benchRegistrar(args[1:], stdout, stderr)
	case "failover":
		return benchFailover(args[1:], stdout, stderr)
	case "cluster":
		return benchCluster(args[1:], stdout, stderr)
	case "paper":
		return benchPaper(args[1:], stdout, stderr)
	case "oversubscription":
		return benchOversubscription(args[1:], stdout, stderr)
	case "ovs-worker":
		// Not for users: the tasks `bench oversubscription` runs.
		return benchOvsWorker(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "mezzo bench: unknown benchmark %q (known: allocator, launch, registrar, failover, cluster, paper, oversubscription)\n", args[0])
	return 2
}

func benchAllocator(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench allocator", stderr)
	agents := fs.Int("agents", 1000, "number of agents")
	frameworks := fs.Int("frameworks", 100, "number of frameworks")
	roles := fs.Int("roles", 0, "number of roles (0: one per framework)")
	quota := fs.Bool("quota", false, "give every role a quota")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if code := parseFlags(fs, args); code >= 0 {
		return code
	}
	res, err := allocbench.Run(allocbench.Config{Agents: *agents, Frameworks: *frameworks, Roles: *roles, Quota: *quota})
	return report("allocator", res, err, *asJSON, stdout, stderr, func() string { return fmt.Sprintf("%+v", res) })
}

// report prints a benchmark's result: the error, one JSON object (asJSON),
// or the line text renders. It returns the exit code.
func report(name string, res any, err error, asJSON bool, stdout, stderr io.Writer, text func() string) int {
	if err != nil {
		fmt.Fprintf(stderr, "mezzo bench %s: %v\n", name, err)
		return 1
	}
	if asJSON {
		if err := json.NewEncoder(stdout).Encode(res); err != nil {
			return 1
		}
		return 0
	}
	fmt.Fprintln(stdout, text())
	return 0
}

// benchDir returns dir, created if needed, or a new temporary directory
// (named after prefix) that done removes.
func benchDir(dir, prefix string) (_ string, done func(), err error) {
	if dir != "" {
		return dir, func() {}, os.MkdirAll(dir, 0o755)
	}
	d, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	return d, func() { os.RemoveAll(d) }, nil
}
