package registrar

import "errors"

// Errors returned by Apply for operations that do not apply to the
// registry. They are wrapped with the agent ID or field; test with
// errors.Is.
var (
	// ErrGone: the agent was removed from the registry. A removed agent is
	// never readmitted under its old ID; it must register anew (a new ID).
	ErrGone = errors.New("agent was removed from the registry; a removed agent must register anew with a new agent ID")
	// ErrPrincipal: Readmit or MarkReachable of an agent ID bound to another
	// principal (the one it registered with): one agent may not take over
	// another's ID.
	ErrPrincipal = errors.New("agent ID is bound to another principal")
	// ErrAlreadyAdmitted: Admit of an ID the registry already holds.
	ErrAlreadyAdmitted = errors.New("agent already in the registry")
	// ErrUnknownAgent: the operation names an agent the registry does not hold.
	ErrUnknownAgent = errors.New("agent not in the registry")
	// ErrAlreadyUnreachable: MarkUnreachable of an unreachable agent.
	ErrAlreadyUnreachable = errors.New("agent already unreachable")
	// ErrInvalid: the operation itself is malformed (the message names the field).
	ErrInvalid = errors.New("invalid registry operation")
	// ErrMaintenance: a maintenance operation does not fit the schedule.
	ErrMaintenance = errors.New("maintenance operation does not apply")

	// ErrNotRecovered: Apply before Recover succeeded.
	ErrNotRecovered = errors.New("registrar: not recovered (call Recover first)")
	// ErrEmptyRegistry: strict Recover found a registry that was never written.
	ErrEmptyRegistry = errors.New("registrar: registry is empty and strict mode (--registry_strict) refuses to start on an empty registry; start once without it to initialize a new cluster, or restore the work directory")
	// ErrClosed: the registrar was closed.
	ErrClosed = errors.New("registrar: closed")
)
