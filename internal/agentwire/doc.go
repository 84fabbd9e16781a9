// Package agentwire is the client side of the internal agent<->master
// protocol (api/protocol) shared by the real agent (package agent) and the
// agent simulator (package sim), which may not import each other: posting
// AgentCalls, opening the SUBSCRIBE event stream across several masters
// while following 307 redirects (Location "//host:port/..."), and decoding
// the RecordIO stream of AgentEvents with a caller-chosen read buffer (the
// simulator keeps it small: it holds 50,000 streams).
//
// It imports only api/... and the standard library.
package agentwire
