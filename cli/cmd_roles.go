package cli

import (
	"fmt"
	"math"
)

var rolesSpec = spec{
	summary: "list roles (NAME, WEIGHT, QUOTA GUARANTEE/LIMIT, ALLOCATED, SHARE)",
	run:     runRoles,
}

// roleRow is one line of `mezzo roles`, also its --json element.
type roleRow struct {
	Name       string             `json:"name"`
	Weight     float64            `json:"weight"`
	Guarantee  map[string]float64 `json:"quota_guarantee"`
	Limit      map[string]float64 `json:"quota_limit"`
	Allocated  map[string]float64 `json:"allocated"`
	Offered    map[string]float64 `json:"offered"`
	Share      *float64           `json:"dominant_share,omitempty"` // nil when unknown
	Frameworks []string           `json:"frameworks"`
}

// shareResources are the resources DRF shares are computed over.
var shareResources = []string{"cpus", "mem", "disk", "gpus"}

func runRoles(e *env, c *invocation) error {
	var doc rolesDoc
	if err := c.master.getJSON("/master/roles", &doc); err != nil {
		return err
	}
	// The shares are the allocator's own when it reports them; otherwise
	// they are computed from the cluster totals. Without metrics there is
	// no share, which is not worth failing the command for.
	var metrics map[string]float64
	metricsErr := c.master.getJSON("/metrics/snapshot", &metrics)
	rows := make([]roleRow, 0, len(doc.Roles))
	for _, r := range doc.Roles {
		row := roleRow{
			Name: r.Name, Weight: r.Weight,
			Guarantee: nonNilMap(r.Quota.Guarantee), Limit: nonNilMap(r.Quota.Limit),
			Allocated: scalars(r.Allocated), Offered: scalars(r.Offered),
			Frameworks: r.Frameworks,
		}
		if row.Frameworks == nil {
			row.Frameworks = []string{}
		}
		if metricsErr == nil {
			row.Share = dominantShare(metrics, r.Name, row.Allocated)
		}
		rows = append(rows, row)
	}
	if c.json {
		return writeJSON(c.stdout, rows)
	}
	lines := make([][]string, 0, len(rows))
	for _, r := range rows {
		share := "-"
		if r.Share != nil {
			share = num(math.Round(*r.Share*1000)/10) + "%"
		}
		lines = append(lines, []string{r.Name, num(r.Weight),
			quantities(r.Guarantee) + " / " + quantities(r.Limit),
			quantities(r.Allocated), share})
	}
	err := table(c.stdout, []string{"NAME", "WEIGHT", "QUOTA GUARANTEE / LIMIT", "ALLOCATED", "SHARE"}, lines)
	if metricsErr != nil {
		// Say why the SHARE column is empty; the table is still worth having.
		fmt.Fprintf(c.stderr, "mezzo roles: shares unknown: %v\n", metricsErr)
	}
	return err
}

// dominantShare is the allocator's reported dominant share of the role, or
// the largest fraction of any cluster total the role's allocation takes.
func dominantShare(metrics map[string]float64, role string, allocated map[string]float64) *float64 {
	if v, ok := metrics["allocator/mesos/roles/"+role+"/shares/dominant"]; ok {
		return &v
	}
	share := 0.0
	known := false
	for _, name := range shareResources {
		total, ok := metrics["master/"+name+"_total"]
		if !ok {
			continue
		}
		known = true
		if total > 0 {
			share = math.Max(share, allocated[name]/total)
		}
	}
	if !known {
		return nil
	}
	return &share
}

func nonNilMap(m map[string]float64) map[string]float64 {
	if m == nil {
		return map[string]float64{}
	}
	return m
}
