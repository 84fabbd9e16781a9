// Package cli is mezzo's operator command line: `mezzo tasks`, `agents`,
// `frameworks`, `roles`, `explain`, `describe`, `logs`, `kill`, `teardown`,
// `reserve`, `unreserve` and `volumes`, and TaskOutput, which `mezzo run`
// uses to stream a task's output. Each command is a client of the master's
// HTTP endpoints (/master/tasks, /master/state-summary, /master/frameworks,
// /master/slaves, /master/roles, /master/allocator/explain,
// /master/kill-task, /metrics/snapshot, the v1 operator API) and, for logs,
// of the agents' /state and /files/read. It never imports the master or the
// agent: it sees the cluster exactly as any Mesos tool would.
//
// cmd/mezzo wires Commands() into the binary's subcommand table. Every
// command takes --master=host:port[,host:port] (default 127.0.0.1:5050, or
// MESOS_MASTER from the environment), follows 307 redirects to the leading
// master, tries the next listed master when one cannot be reached, and
// prints an aligned table, or -o wide|json|name (--json is -o json). Exit
// codes: ExitOK, ExitFailed, ExitUsage, ExitUnreachable.
package cli
