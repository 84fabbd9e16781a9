package main

import (
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"mezzo/agent/containerizer"
)

// The systemd units in docs/operations.md are what operators copy: their
// ExecStart lines and environment files must parse as flags of this
// binary (a renamed or misspelt flag fails here, not on a production
// host), each master must find itself in --masters, and every MESOS_<FLAG>
// of an environment file must name a real flag (flagenv ignores the
// others, so a typo there would be silently dropped).

// docBlock is one fenced code block of a Markdown file: its language and
// its lines.
type docBlock struct {
	lang  string
	lines []string
}

func docBlocks(t *testing.T, path string) []docBlock {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []docBlock
	var cur *docBlock
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &docBlock{lang: strings.TrimPrefix(line, "```")}
		case cur != nil && strings.HasPrefix(line, "```"):
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		}
	}
	return out
}

// unit is a systemd unit of the doc: the file it names in its first
// comment, its ExecStart words and its EnvironmentFile.
type unit struct {
	file, envFile string
	exec          []string
}

var envLine = regexp.MustCompile(`^([A-Z][A-Z0-9_]*)=(.*)$`)

func TestOperationsDocUnits(t *testing.T) {
	blocks := docBlocks(t, "../../docs/operations.md")
	var units []unit
	envs := map[string]map[string]string{} // env file path -> variables
	for _, b := range blocks {
		if len(b.lines) == 0 {
			continue
		}
		file := strings.Fields(strings.TrimPrefix(b.lines[0], "#"))
		switch {
		case b.lang == "ini" && slices.Contains(b.lines, "[Service]"):
			u := unit{file: file[0]}
			for _, l := range b.lines {
				if v, ok := strings.CutPrefix(l, "ExecStart="); ok {
					u.exec = strings.Fields(v)
				}
				if v, ok := strings.CutPrefix(l, "EnvironmentFile="); ok {
					u.envFile = strings.TrimPrefix(v, "-")
				}
			}
			units = append(units, u)
		case b.lang == "sh" && strings.HasPrefix(b.lines[0], "# /etc/"):
			vars := map[string]string{}
			for _, l := range b.lines[1:] {
				if m := envLine.FindStringSubmatch(l); m != nil {
					vars[m[1]] = m[2]
				} else if strings.TrimSpace(l) != "" {
					t.Errorf("%s: %q is not VAR=value", file[0], l)
				}
			}
			envs[file[0]] = vars
		}
	}
	seen := map[string]bool{}
	for _, u := range units {
		if len(u.exec) < 2 || u.exec[0] != "/usr/local/bin/mezzo" {
			t.Errorf("%s: ExecStart %q does not run /usr/local/bin/mezzo", u.file, u.exec)
			continue
		}
		env, ok := envs[u.envFile]
		if !ok {
			t.Errorf("%s: EnvironmentFile %q is not shown in the doc", u.file, u.envFile)
		}
		sub, args := u.exec[1], u.exec[2:]
		seen[sub] = true
		switch sub {
		case "master":
			// The doc shows m1's file and says m2 and m3 differ in
			// address and name only.
			for i, host := range []string{"m1", "m2", "m3"} {
				e := map[string]string{}
				for k, v := range env {
					v = strings.ReplaceAll(v, "10.0.0.1", "10.0.0."+string(rune('1'+i)))
					e[k] = strings.ReplaceAll(v, "m1.", host+".")
				}
				checkMasterUnit(t, u.file+" on "+host, args, e, "10.0.0."+string(rune('1'+i))+":5050")
			}
		case "agent":
			checkAgentUnit(t, u.file, args, env)
		default:
			t.Errorf("%s: unexpected subcommand %q", u.file, sub)
		}
	}
	if !seen["master"] || !seen["agent"] {
		t.Fatalf("docs/operations.md: found units for %v, want a master and an agent unit", seen)
	}
}

func lookupIn(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

// checkEnvNamesFlags: every MESOS_<FLAG> must be a flag of the command.
func checkEnvNamesFlags(t *testing.T, where string, env map[string]string, has func(string) bool) {
	t.Helper()
	for k := range env {
		name, ok := strings.CutPrefix(k, "MESOS_")
		if !ok || !has(strings.ToLower(name)) {
			t.Errorf("%s: environment variable %s names no flag", where, k)
		}
	}
}

func checkMasterUnit(t *testing.T, where string, args []string, env map[string]string, wantSelf string) {
	t.Helper()
	fs := newFlagSet("master", io.Discard)
	f := addMasterFlags(fs)
	if code := parseFlagsWith(fs, args, lookupIn(env)); code >= 0 {
		t.Errorf("%s: flags %q do not parse (exit %d)", where, args, code)
		return
	}
	checkEnvNamesFlags(t, where, env, func(n string) bool { return fs.Lookup(n) != nil })
	if _, _, err := logger(io.Discard, f.logLevel, f.logFormat); err != nil {
		t.Errorf("%s: %v", where, err)
	}
	all, self, err := parseMasters(f.masters, f.ip, hostnameOr(f.hostname), f.port)
	if err != nil {
		t.Errorf("%s: %v", where, err)
		return
	}
	if self != wantSelf || len(all) != 3 {
		t.Errorf("%s: this master is %q of %v, want %s of three", where, self, all, wantSelf)
	}
	if f.workDir == "" || f.registry != "replicated_log" {
		t.Errorf("%s: --work_dir %q, --registry %q: the registry must be replicated on disk", where, f.workDir, f.registry)
	}
}

func checkAgentUnit(t *testing.T, where string, args []string, env map[string]string) {
	t.Helper()
	fs := newFlagSet("agent", io.Discard)
	f := addAgentFlags(fs, true)
	if code := parseFlagsWith(fs, args, lookupIn(env)); code >= 0 {
		t.Errorf("%s: flags %q do not parse (exit %d)", where, args, code)
		return
	}
	checkEnvNamesFlags(t, where, env, func(n string) bool { return fs.Lookup(n) != nil })
	if _, _, err := logger(io.Discard, f.logLevel, f.logFormat); err != nil {
		t.Errorf("%s: %v", where, err)
	}
	if n := len(strings.Split(f.master, ",")); n != 3 {
		t.Errorf("%s: --master lists %d masters, want all three", where, n)
	}
	for _, c := range strings.Split(f.containerizers, ",") {
		if c != "mesos" && c != "docker" {
			t.Errorf("%s: unknown containerizer %q", where, c)
		}
	}
	for _, iso := range strings.Split(f.isolation, ",") {
		if !slices.Contains(containerizer.IsolatorNames(), iso) {
			t.Errorf("%s: unknown isolator %q (known: %v)", where, iso, containerizer.IsolatorNames())
		}
	}
	if f.workDir == "" || f.ip == "" || f.ip == "127.0.0.1" {
		t.Errorf("%s: --work_dir %q, --ip %q: want a work dir and the host's address", where, f.workDir, f.ip)
	}
}
