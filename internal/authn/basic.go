package authn

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Errors ParseBasic returns; none quotes the header (it holds a secret).
var (
	// ErrNoCredentials: the request carries no Authorization header.
	ErrNoCredentials = errors.New("no credentials presented")
	// ErrMalformed: an Authorization header that is not well-formed Basic.
	ErrMalformed = errors.New("malformed Authorization header")
	// ErrWrongCredentials: well-formed, but no such principal or the
	// wrong secret (the two are not told apart).
	ErrWrongCredentials = errors.New("wrong principal or secret")
)

// ParseBasic parses the values of a request's Authorization headers as
// HTTP Basic (RFC 7617): exactly one header, scheme "Basic" in any case,
// then standard base64 (padded, strict) of "principal:secret", the
// principal non-empty and the first colon the separator. Anything else is
// ErrMalformed (or ErrNoCredentials without a header).
func ParseBasic(values []string) (principal, secret string, err error) {
	if len(values) == 0 {
		return "", "", ErrNoCredentials
	}
	if len(values) > 1 {
		return "", "", fmt.Errorf("%w: %d Authorization headers", ErrMalformed, len(values))
	}
	scheme, payload, ok := strings.Cut(strings.TrimSpace(values[0]), " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return "", "", fmt.Errorf("%w: the scheme is not Basic", ErrMalformed)
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(strings.TrimSpace(payload))
	if err != nil {
		return "", "", fmt.Errorf("%w: the credentials are not base64", ErrMalformed)
	}
	principal, secret, ok = strings.Cut(string(raw), ":")
	if !ok {
		return "", "", fmt.Errorf("%w: no ':' between principal and secret", ErrMalformed)
	}
	if principal == "" {
		return "", "", fmt.Errorf("%w: empty principal", ErrMalformed)
	}
	return principal, secret, nil
}

// BasicHeader is the Authorization header value presenting c.
func (c Credential) BasicHeader() string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(c.Principal+":"+c.Secret))
}

// Authenticator checks principals and secrets against a fixed set of
// credentials. It is immutable and safe for concurrent use.
//
// Secrets are kept only as SHA-256 digests and compared with
// subtle.ConstantTimeCompare, so neither the secret's content nor its
// length shows in the time a check takes; an unknown principal is compared
// against a dummy digest, so the time does not tell whether the principal
// exists either.
type Authenticator struct {
	digests map[string][sha256.Size]byte
}

// dummy is what an unknown principal's secret is compared against.
var dummy = sha256.Sum256([]byte("mezzo: no such principal"))

// NewAuthenticator returns an Authenticator for creds (principals unique,
// as ParseCredentials guarantees).
func NewAuthenticator(creds []Credential) *Authenticator {
	a := &Authenticator{digests: make(map[string][sha256.Size]byte, len(creds))}
	for _, c := range creds {
		a.digests[c.Principal] = sha256.Sum256([]byte(c.Secret))
	}
	return a
}

// Authenticate reports whether secret is principal's.
func (a *Authenticator) Authenticate(principal, secret string) bool {
	want, known := a.digests[principal]
	if !known {
		want = dummy
	}
	got := sha256.Sum256([]byte(secret))
	match := subtle.ConstantTimeCompare(got[:], want[:]) == 1
	return match && known
}

// Check authenticates the Authorization header values: the principal, or
// ErrNoCredentials, ErrMalformed or ErrWrongCredentials.
func (a *Authenticator) Check(values []string) (string, error) {
	principal, secret, err := ParseBasic(values)
	if err != nil {
		return "", err
	}
	if !a.Authenticate(principal, secret) {
		return "", ErrWrongCredentials
	}
	return principal, nil
}

// Len is how many principals a knows (for start-up logs).
func (a *Authenticator) Len() int { return len(a.digests) }
