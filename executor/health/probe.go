package health

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	mesos "mezzo/api/mesos"
	"mezzo/executor/internal/proc"
	"mezzo/internal/secrets"
)

// The probes below run one check each and return nil when it passed, or an
// error saying why not. The context carries the check's timeout.

// loopback is the address network checks target: the task shares the
// executor's network namespace, and 127.0.0.1 (not "localhost") is what
// Mesos uses because some images have no hosts entry for localhost.
func loopback(proto mesos.NetworkInfo_Protocol) string {
	if proto == mesos.NetworkInfo_IPv6 {
		return "::1"
	}
	return "127.0.0.1"
}

// httpURL is the URL an HTTP check requests: scheme://127.0.0.1:port/path.
func httpURL(h *mesos.HealthCheck_HTTPCheckInfo) string {
	scheme := h.GetScheme()
	if scheme == "" {
		scheme = "http"
	}
	host := net.JoinHostPort(loopback(h.GetProtocol()), strconv.FormatUint(uint64(h.GetPort()), 10))
	return scheme + "://" + host + h.GetPath()
}

// newHTTPClient builds the client for HTTP checks. Like Mesos's curl
// invocation it follows redirects and does not verify certificates; it never
// goes through a proxy and never reuses connections, so each check is a
// fresh connection to the task.
func newHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:             nil,
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // Mesos's HTTP checks ignore certificate validity (curl -k).
		DialContext:       (&net.Dialer{}).DialContext,
	}}
}

// probeHTTP passes when the response status is in statuses, or in 200-399
// when statuses is empty.
func probeHTTP(ctx context.Context, client *http.Client, h *mesos.HealthCheck_HTTPCheckInfo) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, httpURL(h), nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return timeoutOr(ctx, err)
	}
	// Drain a bounded amount so the server is not reset mid-write.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	code := resp.StatusCode
	if statuses := h.GetStatuses(); len(statuses) > 0 {
		if !slices.Contains(statuses, uint32(code)) {
			return fmt.Errorf("unexpected HTTP response code: %d %s", code, http.StatusText(code))
		}
		return nil
	}
	if code < 200 || code >= 400 {
		return fmt.Errorf("unexpected HTTP response code: %d %s", code, http.StatusText(code))
	}
	return nil
}

// probeTCP passes when a TCP connection to the port is established.
func probeTCP(ctx context.Context, t *mesos.HealthCheck_TCPCheckInfo) error {
	addr := net.JoinHostPort(loopback(t.GetProtocol()), strconv.FormatUint(uint64(t.GetPort()), 10))
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return timeoutOr(ctx, fmt.Errorf("TCP connection to %s failed: %w", addr, err))
	}
	return conn.Close()
}

// commandSpec is what a COMMAND check runs, resolved once at New.
type commandSpec struct {
	path string
	argv []string
	env  []string
	dir  string
	out  io.Writer
}

// newCommandSpec resolves the check's CommandInfo: `/bin/sh -c value` for a
// shell command (the default), else value as the executable with arguments
// as the whole argv. The command's environment overrides base.
func newCommandSpec(ci *mesos.CommandInfo, base []string, dir string, out io.Writer) (commandSpec, error) {
	env := mergeEnv(base, ci.GetEnvironment())
	s := commandSpec{env: env, dir: dir, out: out}
	if ci.GetShell() {
		s.path, s.argv = "/bin/sh", []string{"sh", "-c", ci.GetValue()}
		return s, nil
	}
	s.argv = ci.GetArguments()
	if len(s.argv) == 0 {
		s.argv = []string{ci.GetValue()}
	}
	s.argv = slices.Clone(s.argv)
	s.path = ci.GetValue()
	if !strings.Contains(s.path, "/") {
		p, err := proc.LookPath(s.path, env)
		if err != nil {
			return commandSpec{}, fmt.Errorf("health_check.command.value: %w", err)
		}
		s.path = p
	}
	return s, nil
}

// probeCommand runs the command and passes on exit status 0. On timeout the
// command's whole process group is killed.
func probeCommand(ctx context.Context, s commandSpec) error {
	cmd := &exec.Cmd{
		Path:        s.path,
		Args:        s.argv,
		Env:         s.env,
		Dir:         s.dir,
		Stdout:      s.out,
		Stderr:      s.out,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
		// A grandchild holding the output pipe must not stall the check.
		WaitDelay: time.Second,
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("failed to run the command: %w", err)
	}
	pgid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return exitError(err)
	case <-ctx.Done():
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
		return timeoutOr(ctx, ctx.Err())
	}
}

func exitError(err error) error {
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok {
			switch {
			case ws.Exited():
				return fmt.Errorf("command exited with status %d", ws.ExitStatus())
			case ws.Signaled():
				return fmt.Errorf("command terminated with signal %s", ws.Signal())
			}
		}
	}
	return fmt.Errorf("command failed: %w", err)
}

// timeoutOr turns a deadline expiry into a message naming the timeout.
func timeoutOr(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		if dl, ok := ctx.Value(timeoutKey{}).(time.Duration); ok {
			return fmt.Errorf("check has not returned after %v; aborting", dl)
		}
		return errors.New("check timed out; aborting")
	}
	return err
}

// timeoutKey carries the configured timeout in the check's context so that
// timeout messages can name it.
type timeoutKey struct{}

// mergeEnv overlays the VALUE variables of env on base ("K=V" entries),
// later entries replacing earlier ones of the same name.
func mergeEnv(base []string, env *mesos.Environment) []string {
	out := slices.Clone(base)
	index := map[string]int{}
	for i, kv := range out {
		if k, _, ok := strings.Cut(kv, "="); ok {
			index[k] = i
		}
	}
	for _, v := range env.GetVariables() {
		val, ok := secrets.EnvValue(v)
		if !ok || v.GetName() == "" {
			continue
		}
		kv := v.GetName() + "=" + val
		if i, ok := index[v.GetName()]; ok {
			out[i] = kv
			continue
		}
		index[v.GetName()] = len(out)
		out = append(out, kv)
	}
	return out
}
