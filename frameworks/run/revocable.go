package run

import (
	"errors"
	"fmt"
	"strings"

	"mezzo/api/mesos"
	"mezzo/resources"
	"mezzo/scheduler"
)

// Running on revocable cpus (Options.Revocable, `mezzo run --revocable`).
// The master sends revocable resources in offers of their own, so the
// task takes its cpus from one offer and its memory from another offer of
// the same agent, accepted together.

// revocableNeed reads Options.Resources for a revocable run: scalar
// quantities, cpus among them, the cpus to come from revocable resources.
func revocableNeed(text string) (scheduler.Need, error) {
	n, err := scheduler.ParseNeed(text)
	if err != nil {
		return scheduler.Need{}, fmt.Errorf("resources %q: %v (with the revocable option, resources are scalar quantities such as cpus:1;mem:128)", text, err)
	}
	if n.Scalars["cpus"] == 0 {
		return scheduler.Need{}, errors.New("the revocable option runs the task on revocable cpus, but its resources ask for no cpus")
	}
	n.Revocable = []string{"cpus"}
	return n, nil
}

// needResources is the need as resources (the cpus revocable without
// throttle_info), for the REQUEST call and the progress notes.
func needResources(n scheduler.Need) resources.Resources {
	var ps []*mesos.Resource
	text := make([]string, 0, len(n.Scalars))
	for name, q := range n.Scalars {
		text = append(text, fmt.Sprintf("%s:%g", name, q))
	}
	r, err := resources.Parse(strings.Join(text, ";"), "*")
	if err != nil {
		return resources.Resources{}
	}
	for _, p := range r.Proto() {
		for _, name := range n.Revocable {
			if p.GetName() == name {
				p.Revocable = &mesos.Resource_RevocableInfo{}
			}
		}
		ps = append(ps, p)
	}
	out, err := resources.FromProto(ps)
	if err != nil {
		return resources.Resources{}
	}
	return out
}

// NoRevocableResources is WhyWaitingRevocable's answer when no agent has
// any revocable resources of a name the task needs.
const NoRevocableResources = "no agent has revocable %s: an agent offers its unused cpus when it runs a resource estimator (agent --resource_estimator=fixed or slack), and the master lends idle reservations with --lend_idle_reservations; the task waits until one does"

// WhyWaitingRevocable is WhyWaiting for a revocable run: each of the
// need's revocable names is compared with the agents' revocable totals
// (/master/slaves "cpus_revocable"), the rest with their regular totals.
func WhyWaitingRevocable(n scheduler.Need, agents []AgentTotal) string {
	if len(agents) == 0 {
		return "no agents are registered with the master"
	}
	q := map[string]float64{}
	for name, v := range n.Scalars {
		q[name] = v
	}
	for _, name := range n.Revocable {
		v, ok := q[name]
		if !ok {
			continue
		}
		delete(q, name)
		q[name+"_revocable"] = v
		some := false
		for _, a := range agents {
			some = some || a.Total[name+"_revocable"] > 0
		}
		if !some {
			return fmt.Sprintf(NoRevocableResources, name)
		}
	}
	return whyWaiting(q, agents)
}
