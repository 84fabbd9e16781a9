package main

import (
	"flag"
	"fmt"
	"log/slog"
	"sort"
	"sync/atomic"

	"mezzo/internal/authn"
	"mezzo/internal/authorizer"
)

// authFlags are the authentication and authorization flags a master and
// an agent share (Mesos's names): where the credentials are, which realms
// require them, and the ACLs.
type authFlags struct {
	credentials, acls, authorizers string
	readwrite, readonly            bool
}

// addAuthFlags registers the shared flags; realm names the process in
// their help ("master" or "agent").
func addAuthFlags(fs *flag.FlagSet, process string) *authFlags {
	f := &authFlags{}
	fs.StringVar(&f.credentials, "credentials", "",
		"path (or file:///path) of the credentials the "+process+" accepts: Mesos's JSON {\"credentials\":[{\"principal\":…,\"secret\":…}]} or lines of 'principal secret'")
	fs.BoolVar(&f.readwrite, "authenticate_http_readwrite", false,
		"require HTTP Basic credentials (from --credentials) on the "+process+"'s read-write endpoints (the operator API and the classic writes)")
	fs.BoolVar(&f.readonly, "authenticate_http_readonly", false,
		"require HTTP Basic credentials (from --credentials) on the "+process+"'s read-only endpoints (state, metrics, files, the web UI)")
	fs.StringVar(&f.acls, "acls", "",
		"the ACLs of the local authorizer, Mesos's JSON format: the JSON itself or a file's path (file:///path); empty allows everything")
	fs.StringVar(&f.authorizers, "authorizers", authorizer.Local, "the authorizer consulted with --acls (built in: local)")
	return f
}

// guard builds the HTTP authentication of a process: required realms
// from the flags (extra adds the process's own), refusals logged to log
// and counted. Requiring a realm without --credentials is an error, as in
// Mesos.
func (f *authFlags) guard(log *slog.Logger, readonly, readwrite authn.Realm, extra map[authn.Realm]bool) (*authn.Guard, error) {
	if f == nil {
		return nil, nil
	}
	g := &authn.Guard{Required: map[authn.Realm]bool{}, Log: log, Failures: &atomic.Int64{}}
	if f.readonly {
		g.Required[readonly] = true
	}
	if f.readwrite {
		g.Required[readwrite] = true
	}
	for r, on := range extra {
		if on {
			g.Required[r] = true
		}
	}
	if f.credentials == "" {
		if len(g.Required) > 0 {
			return nil, fmt.Errorf("authentication is required (realm %s) but no --credentials were given", anyRealm(g.Required))
		}
		return g, nil
	}
	creds, warn, err := authn.LoadCredentials(f.credentials)
	if err != nil {
		return nil, err
	}
	if warn != "" {
		log.Warn(warn)
	}
	g.Authenticator = authn.NewAuthenticator(creds)
	log.Info("HTTP authentication", "principals", g.Authenticator.Len(), "required_realms", fmt.Sprint(realmList(g.Required)))
	return g, nil
}

func anyRealm(m map[authn.Realm]bool) string {
	return realmList(m)[0]
}

func realmList(m map[authn.Realm]bool) []string {
	var out []string
	for r := range m {
		out = append(out, string(r))
	}
	sort.Strings(out)
	return out
}

// authorizer builds the --authorizers authorizer over --acls; nil when no
// ACLs are given (everything allowed, as Mesos without --acls).
func (f *authFlags) authorizer(log *slog.Logger) (authorizer.Authorizer, error) {
	if f == nil {
		return nil, nil
	}
	if f.acls == "" {
		if f.authorizers != authorizer.Local {
			return authorizer.New(f.authorizers, authorizer.Params{})
		}
		return nil, nil
	}
	acls, err := authorizer.LoadACLs(f.acls)
	if err != nil {
		return nil, err
	}
	if len(acls.Ignored) > 0 {
		log.Warn("--acls: these Mesos ACLs govern nothing in mezzo", "keys", fmt.Sprint(acls.Ignored))
	}
	return authorizer.New(f.authorizers, authorizer.Params{ACLs: acls})
}

// loadCredential reads a --credential flag ("" → nil).
func loadCredential(value string, log *slog.Logger) (*authn.Credential, error) {
	if value == "" {
		return nil, nil
	}
	c, warn, err := authn.LoadCredential(value)
	if err != nil {
		return nil, err
	}
	if warn != "" && log != nil {
		log.Warn(warn)
	}
	return &c, nil
}
