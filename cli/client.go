package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
)

// client reads the master's HTTP endpoints. It tries the masters in the
// order given, the leader first when several are given; a master that
// cannot be reached or answers 503 (no leader known yet) is skipped. 307
// redirects to the leader are followed by net/http (also for POST, whose
// body is replayable).
type client struct {
	masters []string
	http    *http.Client
	// ordered is masters with the leader first, found once per command.
	ordered []string
}

// inOrder returns the masters to try: with several, the leader first.
// Reads must reach the leader, whose view holds the agents, frameworks and
// tasks: mezzo's followers (and Mesos's) answer them with 307 to it, but a
// master of an older mezzo answered from its own empty view, and asking
// the leader first saves a redirect per request. The first master that
// answers /master/redirect names it (307 to "//host:port"). Without an
// answer (unreachable, 503 during an election, a master without the
// endpoint) the order is the one given.
func (c *client) inOrder() []string {
	if len(c.masters) < 2 {
		return c.masters
	}
	if c.ordered != nil {
		return c.ordered
	}
	c.ordered = c.masters
	hc := *c.http
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, m := range c.masters {
		resp, err := hc.Get("http://" + m + "/master/redirect")
		if err != nil {
			continue
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		if resp.StatusCode != http.StatusTemporaryRedirect {
			continue
		}
		u, err := url.Parse(resp.Header.Get("Location"))
		if err != nil || u.Host == "" {
			continue
		}
		ordered := []string{u.Host}
		for _, x := range c.masters {
			if x != u.Host {
				ordered = append(ordered, x)
			}
		}
		c.ordered = ordered
		break
	}
	return c.ordered
}

// maxBody bounds what the CLI reads from one response (a big cluster's
// /master/state is tens of MB; 512 MiB leaves room and stops a runaway).
const maxBody = 512 << 20

// getJSON GETs path (with its query) from the first master that answers
// and decodes the JSON body into v.
func (c *client) getJSON(path string, v any) error {
	return c.do(http.MethodGet, path, nil, "", v)
}

// do sends one request to the masters in turn. v may be nil (body ignored).
func (c *client) do(method, path string, body []byte, contentType string, v any) error {
	var errs []string
	for _, m := range c.inOrder() {
		status, data, err := c.send(method, "http://"+m+path, body, contentType)
		if err != nil {
			errs = append(errs, fmt.Sprintf("master %s: %s", m, describe(err, m)))
			continue
		}
		if status == http.StatusServiceUnavailable {
			errs = append(errs, fmt.Sprintf("master %s: %s %s: %s", m, method, path, statusText(status, data)))
			continue
		}
		if status/100 != 2 {
			return fmt.Errorf("master %s: %s %s: %s", m, method, path, statusText(status, data))
		}
		if v == nil {
			return nil
		}
		if err := json.Unmarshal(data, v); err != nil {
			return fmt.Errorf("master %s: %s %s: decoding the response: %v", m, method, path, err)
		}
		return nil
	}
	return unreachableError{errors.New(strings.Join(errs, "; "))}
}

// unreachableError is no master answering (or none knowing a leader):
// commands exit with ExitUnreachable.
type unreachableError struct{ error }

func (e unreachableError) Unwrap() error { return e.error }

// getAgentJSON GETs path from an agent. who names the agent in errors.
func (c *client) getAgentJSON(addr, who, path string, v any) error {
	status, data, err := c.send(http.MethodGet, "http://"+addr+path, nil, "")
	if err != nil {
		return fmt.Errorf("agent %s: %s", who, describe(err, addr))
	}
	if status/100 != 2 {
		return fmt.Errorf("agent %s: GET %s: %s", who, path, statusText(status, data))
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("agent %s: GET %s: decoding the response: %v", who, path, err)
	}
	return nil
}

func (c *client) send(method, u string, body []byte, contentType string) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, u, rd)
	if err != nil {
		return 0, nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return 0, nil, fmt.Errorf("reading the response: %w", err)
	}
	return resp.StatusCode, data, nil
}

// describe turns a transport error into what an operator needs to read:
// "connection refused", "timed out", and where a redirect led.
func describe(err error, addr string) string {
	var where string
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" && u.Host != addr {
			where = " (redirected to " + u.Host + ")"
		}
	}
	var ne net.Error
	var dns *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused" + where
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset" + where
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "host unreachable" + where
	case errors.As(err, &dns):
		return "cannot resolve " + dns.Name + where
	case errors.As(err, &ne) && ne.Timeout():
		return "timed out" + where
	case ue != nil:
		return ue.Err.Error() + where
	}
	return err.Error()
}

// statusText renders an HTTP error answer: "404 Not Found: <body>".
func statusText(status int, body []byte) string {
	s := fmt.Sprintf("%d %s", status, http.StatusText(status))
	msg := strings.TrimSpace(string(body))
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	if msg != "" {
		s += ": " + msg
	}
	return s
}

// agentAddr extracts host:port from an agent pid "slave(1)@10.0.0.1:5051".
func agentAddr(pid string) (string, error) {
	i := strings.LastIndex(pid, "@")
	if i < 0 || i == len(pid)-1 {
		return "", fmt.Errorf("agent pid %q: expecting id@host:port", pid)
	}
	addr := pid[i+1:]
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return "", fmt.Errorf("agent pid %q: %v", pid, err)
	}
	return addr, nil
}
