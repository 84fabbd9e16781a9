package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"mezzo/internal/authn"
	"mezzo/internal/clock"
	"mezzo/internal/flagenv"
	"mezzo/internal/tlsconfig"
)

// Exit codes of every operator command, for scripts (docs/cli.md).
const (
	ExitOK          = 0 // done
	ExitFailed      = 1 // the master (or agent) refused, or what was named does not exist
	ExitUsage       = 2 // bad flags or arguments; nothing was sent
	ExitUnreachable = 3 // no master could be reached, or none knows a leader
)

// Command is one operator subcommand: a one-line summary for the binary's
// usage text and its entry point, which returns the process exit code
// (ExitOK, ExitFailed, ExitUsage or ExitUnreachable).
type Command struct {
	Summary string
	Run     func(args []string, stdout, stderr io.Writer) int
}

// Commands returns the operator subcommands by name, running against the
// real environment (MESOS_* variables, the wall clock, a fresh HTTP client).
func Commands() map[string]Command {
	return newEnv().commands()
}

// env is what commands take from the outside world; tests replace it.
type env struct {
	lookup func(string) (string, bool) // MESOS_<FLAG> lookup
	clock  clock.Clock
	http   *http.Client
	// maxPolls bounds `logs --follow` (0: until the task ends or forever).
	maxPolls int
}

func newEnv() *env {
	return &env{lookup: flagenv.OSLookup, clock: clock.Real, http: &http.Client{}}
}

// spec describes one command for the table below.
type spec struct {
	summary string
	usage   string // positional arguments, for --help
	run     func(e *env, c *invocation) error
	setup   func(fs *flag.FlagSet) any // extra flags; the result is passed in invocation.opts
	nargs   int                        // exact number of positional arguments
	// maxargs, when above nargs, allows nargs to maxargs positional
	// arguments (a command with optional actions, e.g. `agents drain ID`).
	maxargs int
}

// invocation is one parsed command line.
type invocation struct {
	name   string
	args   []string
	opts   any
	master *client
	json   bool   // -o json (or --json)
	output string // "table", "wide", "json" or "name"
	stdout io.Writer
	stderr io.Writer
}

func (e *env) commands() map[string]Command {
	specs := map[string]spec{
		"tasks":       tasksSpec,
		"agents":      agentsSpec,
		"frameworks":  frameworksSpec,
		"roles":       rolesSpec,
		"explain":     explainSpec,
		"logs":        logsSpec,
		"teardown":    teardownSpec,
		"reserve":     reserveSpec,
		"unreserve":   unreserveSpec,
		"volumes":     volumesSpec,
		"maintenance": maintenanceSpec,
		"kill":        killSpec,
		"describe":    describeSpec,
	}
	out := make(map[string]Command, len(specs))
	for name, s := range specs {
		out[name] = Command{Summary: s.summary, Run: func(args []string, stdout, stderr io.Writer) int {
			return e.run(name, s, args, stdout, stderr)
		}}
	}
	return out
}

// DefaultMaster is where commands look for a master without --master or
// MESOS_MASTER.
const DefaultMaster = "127.0.0.1:5050"

// DefaultTimeout bounds each HTTP request.
const DefaultTimeout = 10 * time.Second

func (e *env) run(name string, s spec, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mezzo "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	masters := fs.String("master", DefaultMaster, "master address(es), host:port[,host:port]; redirects lead to the leader")
	asJSON := fs.Bool("json", false, "print JSON instead of a table (the same as -o json)")
	var output string
	fs.StringVar(&output, "o", "", "output format: table (default), wide (more columns), json, or name (IDs only, where a command lists things)")
	fs.StringVar(&output, "output", "", "the same as -o")
	timeout := fs.Duration("timeout", DefaultTimeout, "timeout of each HTTP request")
	credential := fs.String("credential", "",
		"present this credential (a file: JSON {\"principal\",\"secret\"} or 'principal secret') to masters and agents that authenticate")
	var tlsFiles tlsconfig.Files
	fs.StringVar(&tlsFiles.CA, "tls_ca_file", "", "talk TLS to the cluster, trusting the PEM CA certificates in this file")
	fs.StringVar(&tlsFiles.Cert, "tls_cert_file", "", "PEM client certificate to present to a cluster with --tls_verify_peer")
	fs.StringVar(&tlsFiles.Key, "tls_key_file", "", "PEM private key of --tls_cert_file")
	var opts any
	if s.setup != nil {
		opts = s.setup(fs)
	}
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: mezzo %s [flags]%s\n\n%s.\n\nFlags:\n", name, s.usage, upperFirst(s.summary))
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args, e.lookup)
	if err == flag.ErrHelp {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "mezzo %s: %v\n", name, err)
		return 2
	}
	if len(pos) != s.nargs && (s.maxargs <= s.nargs || len(pos) < s.nargs || len(pos) > s.maxargs) {
		fmt.Fprintf(stderr, "mezzo %s: expecting %d argument(s)%s, got %d\n", name, s.nargs, s.usage, len(pos))
		return 2
	}
	switch output {
	case "":
		output = "table"
		if *asJSON {
			output = "json"
		}
	case "table", "wide", "json", "name":
	default:
		fmt.Fprintf(stderr, "mezzo %s: -o=%q: expecting table, wide, json or name\n", name, output)
		return ExitUsage
	}
	addrs, err := parseMasters(*masters)
	if err != nil {
		fmt.Fprintf(stderr, "mezzo %s: --master: %v\n", name, err)
		return 2
	}
	hc := *e.http
	hc.Timeout = *timeout
	if err := tlsconfig.FromEnv(&tlsFiles, e.lookup); err != nil {
		fmt.Fprintf(stderr, "mezzo %s: %v\n", name, err)
		return ExitUsage
	}
	if tlsFiles.Enabled() {
		src, err := tlsconfig.Load(tlsFiles)
		if err != nil {
			fmt.Fprintf(stderr, "mezzo %s: %v\n", name, err)
			return ExitUsage
		}
		hc.Transport = src.Transport()
	}
	if *credential != "" {
		c, _, err := authn.LoadCredential(*credential)
		if err != nil {
			fmt.Fprintf(stderr, "mezzo %s: %v\n", name, err)
			return ExitUsage
		}
		hc.Transport = c.Transport(hc.Transport)
	}
	inv := &invocation{
		name: name, args: pos, opts: opts, json: output == "json", output: output,
		master: &client{masters: addrs, http: &hc},
		stdout: stdout, stderr: stderr,
	}
	if err := s.run(e, inv); err != nil {
		if ue, ok := err.(usageError); ok {
			fmt.Fprintf(stderr, "mezzo %s: %v\n", name, ue.error)
			return 2
		}
		fmt.Fprintf(stderr, "mezzo %s: %v\n", name, err)
		var ue unreachableError
		if errors.As(err, &ue) {
			return ExitUnreachable
		}
		return ExitFailed
	}
	return ExitOK
}

// usageError is a bad flag value found after parsing (exit code 2).
type usageError struct{ error }

// parseInterspersed parses flags anywhere on the command line (Go's flag
// package stops at the first positional argument, but operators type
// `mezzo logs TASK --follow`), then fills flags not given from MESOS_<FLAG>.
func parseInterspersed(fs *flag.FlagSet, args []string, lookup func(string) (string, bool)) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		// fs.Parse drops a "--" terminator: everything after it is positional.
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			pos = append(pos, rest...)
			break
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
	if err := flagenv.Parse(fs, nil, lookup); err != nil {
		return nil, err
	}
	return pos, nil
}

// parseMasters splits "host:port[,host:port]", tolerating http:// prefixes
// and trailing slashes; ZooKeeper URLs are refused (mezzo has none).
func parseMasters(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if strings.HasPrefix(p, "zk://") {
			return nil, fmt.Errorf("%q: ZooKeeper addresses are not supported (mezzo masters elect a leader among themselves); give host:port", p)
		}
		p = strings.TrimPrefix(strings.TrimPrefix(p, "http://"), "https://")
		p = strings.TrimRight(p, "/")
		if !strings.Contains(p, ":") {
			return nil, fmt.Errorf("%q: expecting host:port", p)
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no master address given")
	}
	return out, nil
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// Names lists the command names, sorted (for usage texts).
func Names() []string {
	var out []string
	for n := range Commands() {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
