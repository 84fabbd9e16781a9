// Package webui is mezzo's embedded web UI: static HTML, CSS and vanilla
// JavaScript (no build step) compiled into the binary with go:embed and
// served by Handler at "/" (index.html) and "/static/..." (assets).
//
// The page is a client of the master's classic endpoints on the same origin
// (/master/state, /metrics/snapshot, /master/roles, /master/slaves,
// /master/allocator/explain) and of the agents' /slave(1)/state and
// /files/{browse,read}, which it reads cross-origin through JSONP (agents
// send no CORS headers; they answer ?jsonp=callback). Routes lists them.
// cmd/mezzo mounts Handler on the master's mux at "/"; the package imports
// nothing else from mezzo.
package webui
