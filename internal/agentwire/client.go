package agentwire

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Path is the master's endpoint of the agent protocol.
const Path = "/internal/v1/agent"

// MaxRedirects bounds how many 307s one subscription attempt follows per
// master tried.
const MaxRedirects = 5

// contentType is the only encoding of the internal protocol.
const contentType = "application/x-protobuf"

// Post sends one protobuf-encoded AgentCall body to the master at host
// ("host:port") with hc. hc must not follow redirects itself (its
// CheckRedirect returns http.ErrUseLastResponse): a 307 is the caller's to
// interpret. The caller closes the response body.
func Post(ctx context.Context, hc *http.Client, host string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+host+Path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", contentType)
	return hc.Do(req)
}

// Dial opens a subscription stream: body is the encoded SUBSCRIBE call. It
// tries leader (if not "") and then every master of masters, each time
// following up to MaxRedirects 307s, until one answers 200. It returns that
// response, whose body is the event stream, and the answering master's
// host:port; otherwise every master's error, joined.
//
// When the only failures were redirects to a master that could not be
// reached, the masters still named a leader that had just died: a
// follower learns that within a moment and then holds requests for the
// next leader instead. Dial asks again after staleRedirectPause (at most
// staleRedirectRounds times) rather than fail the attempt, which would
// cost the agent a whole backoff period.
func Dial(ctx context.Context, hc *http.Client, masters []string, leader string, body []byte) (*http.Response, string, error) {
	var candidates []string
	seen := map[string]bool{}
	for _, m := range append([]string{leader}, masters...) {
		if m != "" && !seen[m] {
			seen[m] = true
			candidates = append(candidates, m)
		}
	}
	if len(candidates) == 0 {
		return nil, "", errors.New("agentwire: no master address")
	}
	if l := accepted.Load(); l != nil && seen[*l] {
		candidates = slices.Insert(slices.DeleteFunc(candidates, func(c string) bool { return c == *l }), 0, *l)
	}
	for round := 0; ; round++ {
		resp, host, stale, err := dialOnce(ctx, hc, candidates, body)
		if err == nil || !stale || round == staleRedirectRounds || ctx.Err() != nil {
			return resp, host, err
		}
		select {
		case <-time.After(staleRedirectPause):
		case <-ctx.Done():
			return nil, "", ctx.Err()
		}
	}
}

// A redirect to a dead leader is retried this often, this far apart.
const (
	staleRedirectRounds = 10
	staleRedirectPause  = 50 * time.Millisecond
)

// accepted is, for this process, the master last known to lead: it
// accepted a subscription, or a master redirected a subscription to it.
// Dial tries it first when it is one of the agent's masters.
// After a failover each agent starts from a master list in which the new
// leader may come last: every agent would ask a follower first and be
// redirected. One agent per process (a real agent) learns nothing from
// this; thousands of emulated agents in one process, whose masters share
// the machine with them, are spared a follower's worth of requests that
// would otherwise compete with the leader for the CPU.
var accepted atomic.Pointer[string]

// noteLeader records host as the master last known to lead (accepted),
// without a store when it already is.
func noteLeader(host string) {
	if l := accepted.Load(); l == nil || *l != host {
		accepted.Store(&host)
	}
}

// refused remembers, for this process, the masters that recently refused a
// connection (nothing listens: the process is down), so that Dial tries
// them last. After a leader dies every agent's first candidate is that
// leader; emulated agents share one HTTP transport, which dials a host
// one connection at a time, so thousands of attempts queued behind each
// other's doomed dials for a second or more before trying a live master.
var refused = hostMemory{ttl: 5 * time.Second}

// hostMemory is a set of hosts, each remembered for ttl.
type hostMemory struct {
	ttl time.Duration
	mu  sync.Mutex
	at  map[string]time.Time
}

func (h *hostMemory) note(host string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.at == nil {
		h.at = map[string]time.Time{}
	}
	h.at[host] = time.Now()
}

func (h *hostMemory) forget(host string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.at, host)
}

func (h *hostMemory) has(host string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	at, ok := h.at[host]
	if ok && time.Since(at) > h.ttl {
		delete(h.at, host)
		return false
	}
	return ok
}

// ordered returns candidates with the recently refused ones moved last
// (still tried: the master may be back).
func (h *hostMemory) ordered(candidates []string) []string {
	out := make([]string, 0, len(candidates))
	var last []string
	for _, c := range candidates {
		if h.has(c) {
			last = append(last, c)
		} else {
			out = append(out, c)
		}
	}
	return append(out, last...)
}

// dialOnce is one pass of Dial over candidates. stale reports that some
// master redirected to an unreachable one and none answered with an error
// (masters that cannot be reached themselves do not count either way).
func dialOnce(ctx context.Context, hc *http.Client, candidates []string, body []byte) (resp *http.Response, host string, stale bool, err error) {
	var errs []error
	redirectedToDead, answered := false, false
	for _, m := range refused.ordered(candidates) {
		host := m
		for hop := 0; ; hop++ {
			resp, err := Post(ctx, hc, host, body)
			if errors.Is(err, syscall.ECONNREFUSED) {
				refused.note(host)
			} else if err == nil {
				refused.forget(host)
			}
			if err != nil {
				redirectedToDead = redirectedToDead || hop > 0
				errs = append(errs, err)
				break
			}
			if resp.StatusCode == http.StatusOK {
				noteLeader(host)
				return resp, host, false, nil
			}
			msg := ReadMessage(resp)
			if resp.StatusCode == http.StatusTemporaryRedirect && hop < MaxRedirects {
				if next := RedirectHost(resp.Header.Get("Location")); next != "" {
					// The leader answers slowly during a storm: agents of
					// this process that dial meanwhile go to it directly
					// rather than each through the follower.
					noteLeader(next)
					host = next
					continue
				}
			}
			answered = true
			errs = append(errs, fmt.Errorf("master %s: %s: %s", host, resp.Status, msg))
			break
		}
		if ctx.Err() != nil {
			return nil, "", false, ctx.Err()
		}
	}
	return nil, "", redirectedToDead && !answered, errors.Join(errs...)
}

// Result is the outcome of one non-SUBSCRIBE call posted with Call.
type Result struct {
	Status  int    // the HTTP status
	Message string // the (bounded) response body, trimmed
}

// Call posts one encoded call and reads the answer. A transport error is
// returned as is; any HTTP answer is returned in Result, with an error
// unless it is 200 or 202 (a 403 means the master does not know the agent:
// the caller re-registers).
func Call(ctx context.Context, hc *http.Client, host string, body []byte) (Result, error) {
	resp, err := Post(ctx, hc, host, body)
	if err != nil {
		return Result{}, err
	}
	res := Result{Status: resp.StatusCode, Message: ReadMessage(resp)}
	if res.Status == http.StatusOK || res.Status == http.StatusAccepted {
		return res, nil
	}
	return res, fmt.Errorf("%s: %s", resp.Status, res.Message)
}

// ReadMessage reads (a bounded prefix of) a response body, closes it and
// returns the text trimmed.
func ReadMessage(resp *http.Response) string {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return strings.TrimSpace(string(b))
}

// RedirectHost extracts host:port from a Location such as
// "//10.0.0.2:5050/internal/v1/agent" or "http://10.0.0.2:5050/...";
// "" if it names none.
func RedirectHost(loc string) string {
	if loc == "" {
		return ""
	}
	u, err := url.Parse(loc)
	if err != nil {
		return ""
	}
	return u.Host
}
