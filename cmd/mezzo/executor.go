package main

import (
	"context"
	"io"
	"os"

	commandexec "mezzo/executor/command"
	"mezzo/executor/group"
)

// The built-in executors are configured entirely by the environment the
// agent sets (MESOS_FRAMEWORK_ID, MESOS_AGENT_ENDPOINT, …), as Mesos's are.

func runCommandExecutor(_ []string, _, stderr io.Writer) int {
	return commandexec.Main(context.Background(), os.Environ(), stderr)
}

func runDefaultExecutor(_ []string, _, stderr io.Writer) int {
	return group.Main(context.Background(), os.Environ(), stderr)
}
