// Package webui is mezzo's embedded web UI: static HTML, CSS and vanilla
// JavaScript (no build step) compiled into the binary with go:embed and
// served by Handler at "/" (index.html) and "/static/..." (assets).
//
// The page is a client of the master only, on its own origin: the classic
// endpoints (/master/state, /metrics/snapshot, /master/roles,
// /master/slaves, /master/allocator/explain, /master/redirect when this
// master does not lead) and the agents' /slave(1)/state,
// /files/{browse,read,download} and /monitor/statistics, which it reads
// through the master's read-only proxy at /agent/<agent_id>/...
// (master/agentproxy), so it works behind one ingress. Routes lists them.
// cmd/mezzo mounts Handler on the master's mux at "/"; the package imports
// nothing else from mezzo.
package webui
