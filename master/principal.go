package master

// Principal is who makes a call to one of the master's write entry points:
// the authenticated identity of the framework, agent or operator behind
// the request. Every public write method of Master takes one, so that the
// authorization issue has one place to plug in: an authorizer consulted on
// the loop, at the entry point, before the call changes anything.
//
// Until authentication exists the HTTP layer passes the zero Principal
// (Name ""), an unauthenticated caller, which the master accepts
// everywhere; as in Mesos, the checks that compare principals (a
// reservation's principal against the caller's) apply only to a caller
// with a Name.
type Principal struct {
	// Name is the principal's name as Mesos's Credential.principal; empty
	// for an unauthenticated caller.
	Name string
}
