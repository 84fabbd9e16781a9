package cli

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

var explainSpec = spec{
	summary: "say why a framework gets no offers, or that what it waits for fits no agent (from /master/allocator/explain)",
	usage:   " FRAMEWORK_ID",
	nargs:   1,
	run:     runExplain,
}

func runExplain(e *env, c *invocation) error {
	id := c.args[0]
	var ex explanation
	if err := c.master.getJSON("/master/allocator/explain?"+url.Values{"framework_id": {id}}.Encode(), &ex); err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.stdout, ex)
	}
	_, err := fmt.Fprint(c.stdout, explainText(ex, e.clock.Now()))
	return err
}

// reasonSentences says in plain words what each allocator reason means
// and, where there is one, what the operator or framework can do.
var reasonSentences = map[string]string{
	"UNKNOWN_FRAMEWORK":             "The allocator does not know this framework: it has not subscribed to this master, or it was torn down.",
	"FRAMEWORK_INACTIVE":            "The framework is not connected (inactive): its scheduler must re-subscribe before it is offered anything.",
	"SUPPRESSED":                    "The framework suppressed offers for this role; it gets none until its scheduler sends REVIVE.",
	"ALLOCATION_PAUSED":             "A newly elected master is waiting for the agents to re-register before it offers anything (--allocator_agent_recovery_factor, --allocator_recovery_timeout, --allocator_recovery_hold).",
	"NO_ACTIVE_AGENTS":              "There are no active agents: start an agent, or reactivate the ones in maintenance.",
	"NOTHING_FREE_IN_ROLE":          "Nothing is free for this role: every resource it may use is already allocated or offered to someone.",
	"OVER_QUOTA_LIMIT":              "The role has reached its quota limit: raise the limit or wait for tasks of the role to finish.",
	"BELOW_MIN_ALLOCATABLE":         "What is free is smaller than the minimum the master offers (--min_allocatable_resources, or the framework's own offer_filters).",
	"EXCLUDED_BY_OFFER_CONSTRAINTS": "The framework's offer constraints (offer_constraints in SUBSCRIBE or UPDATE_FRAMEWORK) exclude the agents with free resources.",
	"GPU_AGENTS_ONLY":               "Only agents with GPUs have free resources, and the framework lacks the GPU_RESOURCES capability.",
	"FILTERED":                      "The framework declined these resources with a filter (refuse_seconds) that has not expired; REVIVE clears it.",
	"ELIGIBLE":                      "Resources can be offered to it: it gets them when its role and it come first in the fair-share (DRF) order, usually at the next allocation.",
}

// explainText renders an explanation as sentences, one paragraph per role.
func explainText(ex explanation, now time.Time) string {
	var b strings.Builder
	state := "is active (connected)"
	if !ex.Active {
		state = "is inactive"
	}
	fmt.Fprintf(&b, "Framework %s %s.", ex.FrameworkID, state)
	if ex.LastOffer != nil && *ex.LastOffer > 0 {
		at := fromSecs(*ex.LastOffer)
		fmt.Fprintf(&b, " It was last offered resources %s ago (%s).", age(now, *ex.LastOffer), at.UTC().Format(time.RFC3339))
	} else {
		b.WriteString(" It has never been offered resources.")
	}
	b.WriteString("\n")
	for _, r := range ex.Roles {
		b.WriteString("\n")
		if r.Role != "" {
			fmt.Fprintf(&b, "Role %q: %s\n", r.Role, reasonTitle(r.Reason))
		} else {
			fmt.Fprintf(&b, "%s\n", reasonTitle(r.Reason))
		}
		// The allocator's own message says the same as the sentence; it is
		// printed only for a reason this CLI does not know (a newer master).
		if r.Reason == "NO_AGENT_FITS" && r.Message != "" {
			// The allocator's message names the cluster's largest totals.
			fmt.Fprintf(&b, "  %s.\n", upperFirst(strings.TrimSuffix(r.Message, ".")))
		} else if s, ok := reasonSentences[r.Reason]; ok {
			fmt.Fprintf(&b, "  %s\n", s)
		} else if r.Message != "" {
			fmt.Fprintf(&b, "  The allocator says: %s.\n", strings.TrimSuffix(r.Message, "."))
		}
		if counts := agentCountText(r.Agents); counts != "" {
			fmt.Fprintf(&b, "  Active agents: %s.\n", counts)
		}
	}
	if len(ex.Roles) == 0 {
		b.WriteString("\nThe framework has no roles, so nothing can be offered to it.\n")
	}
	return b.String()
}

// reasonTitle is the one-line verdict for a reason.
func reasonTitle(reason string) string {
	switch reason {
	case "ELIGIBLE":
		return "offers are possible (ELIGIBLE)"
	case "NO_AGENT_FITS":
		return "what it waits for fits no agent (NO_AGENT_FITS)"
	}
	return "no offers (" + reason + ")"
}

// agentCountText lists the non-zero agent counts: "2 eligible, 1 filtered".
func agentCountText(a agentCounts) string {
	var parts []string
	for _, x := range []struct {
		n    int
		what string
	}{
		{a.Eligible, "eligible"},
		{a.NothingFree, "with nothing free for the role"},
		{a.OverQuotaLimit, "kept by the quota limit"},
		{a.BelowMinAllocatable, "below the minimum allocatable"},
		{a.GPUAgent, "GPU agents the framework may not use"},
		{a.Filtered, "filtered by the framework"},
		{a.OfferConstraints, "excluded by its offer constraints"},
	} {
		if x.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", x.n, x.what))
		}
	}
	return strings.Join(parts, ", ")
}
