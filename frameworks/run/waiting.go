package run

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"mezzo/resources"
)

// When Run has not launched its task yet, it says why: first after
// waitNoteFirst, then every waitNoteEvery while the answer changes.
const (
	waitNoteFirst = 3 * time.Second
	waitNoteEvery = 15 * time.Second
)

// AgentTotal is one agent's total resources as /master/slaves reports them.
type AgentTotal struct {
	ID       string
	Hostname string
	Total    map[string]float64
}

// WhyWaiting explains why a task needing need has not been launched, given
// every registered agent's total: "no agents are registered", "no agent has
// cpus:5; largest is cpus:2", or, when some agent could hold it once its
// resources are free, that it waits for them. Only scalar resources are
// compared (ranges and sets fit or not per offer).
func WhyWaiting(need resources.Resources, agents []AgentTotal) string {
	return whyWaiting(need.Quantities(), agents)
}

// whyWaiting is WhyWaiting for scalar quantities by the names
// /master/slaves uses ("cpus", "cpus_revocable", …).
func whyWaiting(q map[string]float64, agents []AgentTotal) string {
	if len(agents) == 0 {
		return "no agents are registered with the master"
	}
	names := make([]string, 0, len(q))
	for n := range q {
		names = append(names, n)
	}
	sort.Strings(names)
	// An agent fits when its total holds every scalar at once.
	for _, a := range agents {
		fits := true
		for _, n := range names {
			if a.Total[n] < q[n] {
				fits = false
				break
			}
		}
		if fits {
			return fmt.Sprintf("agent %s has %s in total; waiting for that much to be free (in use by other tasks, offered to other frameworks, or reserved to another role)",
				a.Hostname, quantities(q, names))
		}
	}
	var missing []string
	for _, n := range names {
		largest := 0.0
		for _, a := range agents {
			largest = max(largest, a.Total[n])
		}
		if largest < q[n] {
			missing = append(missing, fmt.Sprintf("no agent has %s:%s; largest is %s:%s", n, num(q[n]), n, num(largest)))
		}
	}
	if len(missing) == 0 {
		return fmt.Sprintf("no single agent has %s at once", quantities(q, names))
	}
	return strings.Join(missing, "; ")
}

func quantities(q map[string]float64, names []string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + ":" + num(q[n])
	}
	return strings.Join(parts, ";")
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// masterJSON GETs path from the first master that answers (redirects
// lead to the leader) and decodes the JSON body into v.
func masterJSON(ctx context.Context, hc *http.Client, masters []string, path string, v any) error {
	if hc == nil {
		hc = http.DefaultClient
	}
	var lastErr error
	for _, m := range masters {
		m = strings.TrimRight(strings.TrimPrefix(strings.TrimSpace(m), "http://"), "/")
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+m+path, nil)
		if err != nil {
			cancel()
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			cancel()
			lastErr = err
			continue
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
		resp.Body.Close()
		cancel()
		if err != nil || resp.StatusCode != http.StatusOK {
			lastErr = fmt.Errorf("GET %s on %s: %s", path, m, resp.Status)
			continue
		}
		if err := json.Unmarshal(body, v); err != nil {
			return fmt.Errorf("GET %s on %s: %v", path, m, err)
		}
		return nil
	}
	return lastErr
}

// agentTotals reads every agent's total resources from /master/slaves.
func agentTotals(ctx context.Context, hc *http.Client, masters []string) ([]AgentTotal, error) {
	var doc struct {
		Slaves []struct {
			ID        string         `json:"id"`
			Hostname  string         `json:"hostname"`
			Resources map[string]any `json:"resources"`
		} `json:"slaves"`
	}
	if err := masterJSON(ctx, hc, masters, "/master/slaves", &doc); err != nil {
		return nil, err
	}
	out := make([]AgentTotal, 0, len(doc.Slaves))
	for _, s := range doc.Slaves {
		a := AgentTotal{ID: s.ID, Hostname: s.Hostname, Total: map[string]float64{}}
		for k, v := range s.Resources {
			if f, ok := v.(float64); ok {
				a.Total[k] = f
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// allocatorSays is the allocator's verdict on the framework's first role
// from /master/allocator/explain ("" when it cannot tell).
func allocatorSays(ctx context.Context, hc *http.Client, masters []string, frameworkID string) string {
	var ex struct {
		Roles []struct {
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"roles"`
	}
	if frameworkID == "" || masterJSON(ctx, hc, masters, "/master/allocator/explain?framework_id="+url.QueryEscape(frameworkID), &ex) != nil || len(ex.Roles) == 0 {
		return ""
	}
	return ex.Roles[0].Reason + ": " + ex.Roles[0].Message
}

// noteWaiting prints why the task still waits, when that changed.
func (r *runner) noteWaiting(ctx context.Context) {
	agents, err := agentTotals(ctx, r.opts.HTTPClient, r.opts.Masters)
	var why string
	if err != nil {
		why = fmt.Sprintf("cannot read the agents' resources: %v", err)
	} else {
		if r.opts.Revocable && r.take != nil {
			why = WhyWaitingRevocable(*r.take, agents)
		} else {
			why = WhyWaiting(r.need[0].Scalars(), agents)
		}
		if strings.HasPrefix(why, "agent ") {
			// The totals would hold it: the allocator knows what keeps it.
			if says := allocatorSays(ctx, r.opts.HTTPClient, r.opts.Masters, r.client.FrameworkID().GetValue()); says != "" {
				why += "; the allocator says " + says
			}
		}
	}
	if why == r.lastWhy {
		return
	}
	r.lastWhy = why
	r.logf("Waiting for an offer of %s: %s\n", r.need[0], why)
}
