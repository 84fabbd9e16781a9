package master

// Principal is who makes a call to one of the master's write entry points:
// the authenticated identity of the framework, agent or operator behind
// the request (master/httpapi finds it from the request's credentials).
// Every public write method of Master takes one, and consults
// Config.Authorizer with it on the loop, at the entry point, before the
// call changes anything (authz.go).
//
// The zero Principal (Name "") is an unauthenticated caller: the
// authorizer sees it as Mesos's ANY subject, and, as in Mesos, the checks
// that compare principals (a reservation's principal against the
// caller's, a framework's against the one calling for it) apply only to a
// caller with a Name.
type Principal struct {
	// Name is the principal's name as Mesos's Credential.principal; empty
	// for an unauthenticated caller.
	Name string
}
