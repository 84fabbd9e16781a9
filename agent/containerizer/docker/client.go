package docker

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
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultSocket is where the Docker Engine listens unless --docker_socket
// or DOCKER_HOST say otherwise (Mesos's --docker_socket default).
const DefaultSocket = "/var/run/docker.sock"

// apiVersion is the highest Engine API version this client speaks; an
// older engine is spoken to in its own version, down to minAPIVersion
// (the first with `wait?condition=`).
const (
	apiVersion    = "1.41"
	minAPIVersion = "1.30"
)

// client is a minimal Docker Engine API client over a unix socket (or a
// plain tcp:// address): only the endpoints the containerizer needs.
type client struct {
	http *http.Client
	base string // "http://docker" or "http://host:port"

	mu      sync.Mutex
	version string // negotiated API version, "" until known
}

// resolveSocket picks the engine address: an explicit socket, else
// DOCKER_HOST (unix:// or tcp://), else DefaultSocket. It returns the
// network ("unix" or "tcp") and the address.
func resolveSocket(socket string) (network, addr string, err error) {
	if socket == "" {
		socket = os.Getenv("DOCKER_HOST")
	}
	if socket == "" {
		return "unix", DefaultSocket, nil
	}
	switch {
	case strings.HasPrefix(socket, "unix://"):
		return "unix", strings.TrimPrefix(socket, "unix://"), nil
	case strings.HasPrefix(socket, "tcp://"):
		return "tcp", strings.TrimPrefix(socket, "tcp://"), nil
	case strings.HasPrefix(socket, "/"):
		return "unix", socket, nil
	}
	return "", "", fmt.Errorf("docker_socket %q: want a socket path, unix://path or tcp://host:port", socket)
}

func newClient(socket string) (*client, error) {
	network, addr, err := resolveSocket(socket)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
	}
	base := "http://docker"
	if network == "tcp" {
		base = "http://" + addr
	}
	return &client{http: &http.Client{Transport: tr}, base: base}, nil
}

// apiError is a non-2xx answer from the engine.
type apiError struct {
	Status  int
	Message string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("docker engine: %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

func isStatus(err error, code int) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == code
}

// negotiate asks the engine for its API version once (successfully) and
// speaks min(apiVersion, engine's).
func (c *client) negotiate(ctx context.Context) (string, error) {
	c.mu.Lock()
	v := c.version
	c.mu.Unlock()
	if v != "" {
		return v, nil
	}
	var out struct {
		ApiVersion string
	}
	if err := c.doJSON(ctx, "", http.MethodGet, "/version", nil, nil, &out); err != nil {
		return "", fmt.Errorf("docker engine unreachable: %w", err)
	}
	v = apiVersion
	if versionLess(out.ApiVersion, apiVersion) {
		v = out.ApiVersion
	}
	if versionLess(v, minAPIVersion) {
		return "", fmt.Errorf("docker engine API %s is too old (need %s or later)", out.ApiVersion, minAPIVersion)
	}
	c.mu.Lock()
	c.version = v
	c.mu.Unlock()
	return v, nil
}

// versionLess compares dotted API versions ("1.9" < "1.41").
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// do sends one request to path (relative to the negotiated version) and
// returns the response if its status is 2xx; otherwise an *apiError with
// the engine's message. The caller closes the body.
func (c *client) do(ctx context.Context, method, path string, q url.Values, body any) (*http.Response, error) {
	v, err := c.negotiate(ctx)
	if err != nil {
		return nil, err
	}
	return c.raw(ctx, "/v"+v, method, path, q, body)
}

func (c *client) raw(ctx context.Context, prefix, method, path string, q url.Values, body any) (*http.Response, error) {
	var rd io.Reader
	ctype := ""
	switch b := body.(type) {
	case nil:
	case io.Reader:
		rd, ctype = b, "application/x-tar"
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		rd, ctype = bytes.NewReader(buf), "application/json"
	}
	u := c.base + prefix + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		msg := strings.TrimSpace(string(b))
		var m struct{ Message string }
		if json.Unmarshal(b, &m) == nil && m.Message != "" {
			msg = m.Message
		}
		return nil, &apiError{Status: resp.StatusCode, Message: msg}
	}
	return resp, nil
}

// doJSON sends a request and decodes a JSON answer into out (if non-nil).
// prefix "" means unversioned (only /version); otherwise the negotiated
// version is used.
func (c *client) doJSON(ctx context.Context, prefix, method, path string, q url.Values, body, out any) error {
	var resp *http.Response
	var err error
	if prefix == "" && path == "/version" {
		resp, err = c.raw(ctx, "", method, path, q, body)
	} else {
		resp, err = c.do(ctx, method, path, q, body)
	}
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("docker engine: decoding %s %s: %w", method, path, err)
	}
	return nil
}

// call is doJSON with the negotiated version.
func (c *client) call(ctx context.Context, method, path string, q url.Values, body, out any) error {
	return c.doJSON(ctx, "v", method, path, q, body, out)
}
