// Package httpapi serves the master's HTTP interface: the v1 scheduler API
// (POST /api/v1/scheduler and /master/api/v1/scheduler), mezzo's internal
// agent protocol (POST /internal/v1/agent, HTTP/1.1, h2c, or h2 over TLS,
// many agents per connection), /health, /version and /master/redirect; and it mounts the
// classic JSON endpoints and operator API from master/endpoints on the same
// mux. It only translates HTTP to calls on *master.Master and master events
// back to RecordIO streams; all decisions are the master's. Before any of
// that it authenticates the request (auth.go: the realm by path, 401 or
// the principal in the request's context).
//
// cmd/mezzo calls New and serves the handler (with Protocols enabling
// unencrypted HTTP/2, or over TLS HTTP/2 by ALPN).
package httpapi
