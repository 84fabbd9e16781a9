package allocator

import "sort"

// revocationStage is the optional revocation policy (paper §3.3.3), on when
// Options.Revoke is set. After the fair stage, a role whose quota
// guarantee is still unmet while one of its frameworks wants offers (active,
// not suppressed) and got none this run, asks for tasks of frameworks in
// roles above their weighted fair share to be killed, largest share
// first, never taking a victim role below its own guarantee. Each
// (framework, agent) is asked once until resources come back from it.
func (rn *run) revocationStage() {
	c := rn.c
	qr := rn.quota
	var needy []string
	for rname := range qr.guar {
		r := c.roles[rname]
		if r == nil || !qr.computeDeficit(rname).positive() {
			continue
		}
		wants := false
		for _, n := range r.fws.kids {
			f := n.fw
			if f.known && f.active && f.roleSet[rname] && !f.suppressed[rname] && f.offeredRun != c.runSeq {
				wants = true
				break
			}
		}
		if wants {
			needy = append(needy, rname)
		}
	}
	if len(needy) == 0 {
		return
	}
	sort.Strings(needy)

	// Weighted fair share: with all active roles' weights summing to W, a
	// role of weight w is entitled to w/W of the cluster; its leaf share is
	// already divided by w, so "above fair share" is share > 1/W.
	totalW := 0.0
	for _, r := range c.roles {
		if r.nsub > 0 {
			totalW += c.weight(r.name)
		}
	}
	if totalW == 0 {
		return
	}
	var victims []*role
	for _, r := range c.roles {
		if _, needyRole := qr.guar[r.name]; needyRole && qr.computeDeficit(r.name).positive() {
			continue
		}
		if r.leaf.share > 1/totalW {
			victims = append(victims, r)
		}
	}
	sort.Slice(victims, func(i, j int) bool {
		if victims[i].leaf.share != victims[j].leaf.share {
			return victims[i].leaf.share > victims[j].leaf.share
		}
		return victims[i].name < victims[j].name
	})
	// Revocations already asked for and not yet given back count toward
	// every needy role (conservative with several: never over-revoke).
	pending := c.revokingQ
	for _, rname := range needy {
		need := qr.computeDeficit(rname).sub(pending).clampZero()
		for _, v := range victims {
			if !need.positive() {
				break
			}
			// Frameworks with the largest share in the victim role first.
			fws := append([]*drfNode(nil), v.fws.kids...)
			sort.SliceStable(fws, func(i, j int) bool { return fws[j].less(fws[i]) })
			for _, n := range fws {
				if !need.positive() {
					break
				}
				f := n.fw
				var agents []*agent
				for _, a := range c.agentList {
					if a.alloc.has(f.id) {
						agents = append(agents, a)
					}
				}
				sort.Slice(agents, func(i, j int) bool { return agents[i].id < agents[j].id })
				for _, a := range agents {
					if !need.positive() {
						break
					}
					held := a.alloc.get(f.id, v.name)
					if held.IsEmpty() || a.revoking[f.id] != nil {
						continue
					}
					q := c.names.vecOf(held)
					// Never below the victim's own guarantee.
					if g := qr.guar[v.name]; g != nil {
						left := qr.consumption(v.name).sub(q)
						if !g.leq(left.clampZero()) {
							continue
						}
					}
					a.revoking[f.id] = q
					c.revokingQ = c.revokingQ.add(q)
					rn.res.revokes = append(rn.res.revokes, request{framework: f.id, agent: a.id, res: held})
					need = need.sub(q).clampZero()
				}
			}
		}
	}
}
