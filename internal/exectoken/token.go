package exectoken

// The JWT encoding and checking is github.com/golang-jwt/jwt/v5, not hand
// written: it is the well-kept Go library made for this job, it compares
// MACs with hmac.Equal (constant time), refuses alg=none unless a caller
// opts in with a special key type (we never do), and with WithValidMethods
// refuses every algorithm but HS256, so an attacker cannot switch the
// algorithm (the classic "alg confusion" forgeries). What this package adds
// is the binding of the token to one executor, checked after the signature.

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// EnvVar is the environment variable through which the agent gives an
// executor its token, as Mesos does; the executor sends it back as
// "Authorization: Bearer <token>".
const EnvVar = "MESOS_EXECUTOR_AUTHENTICATION_TOKEN"

// Principal names the executor a token is bound to: Mesos's claims fid
// (framework ID), eid (executor ID) and cid (container ID).
type Principal struct {
	FrameworkID string
	ExecutorID  string
	ContainerID string
}

func (p Principal) String() string {
	return fmt.Sprintf("executor %q of framework %q (container %q)", p.ExecutorID, p.FrameworkID, p.ContainerID)
}

// claims is the token's payload.
type claims struct {
	FrameworkID string `json:"fid"`
	ExecutorID  string `json:"eid"`
	ContainerID string `json:"cid"`
	jwt.RegisteredClaims
}

// Errors Verify wraps, so that a caller can tell a foreign token (a real
// one, for another executor) from one that is no token of ours at all.
var (
	// ErrInvalid: not a well-formed HS256 JWT signed with our key, or expired.
	ErrInvalid = errors.New("invalid executor token")
	// ErrForeign: a genuine token of ours, minted for another executor.
	ErrForeign = errors.New("executor token belongs to another executor")
	// ErrNoToken: the request carries no bearer token.
	ErrNoToken = errors.New("no bearer token")
)

// Mint signs a token for p that expires at expiry. Every ID must be set:
// a token that binds nothing would pass for any executor.
func Mint(key Key, p Principal, now, expiry time.Time) (string, error) {
	if len(key.b) == 0 {
		return "", errors.New("exectoken: no key")
	}
	if p.FrameworkID == "" || p.ExecutorID == "" || p.ContainerID == "" {
		return "", fmt.Errorf("exectoken: cannot mint a token for %v: framework, executor and container IDs are all required", p)
	}
	if !expiry.After(now) {
		return "", fmt.Errorf("exectoken: expiry %v is not after now %v", expiry, now)
	}
	c := claims{
		FrameworkID: p.FrameworkID,
		ExecutorID:  p.ExecutorID,
		ContainerID: p.ContainerID,
		RegisteredClaims: jwt.RegisteredClaims{
			IssuedAt:  jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(expiry),
		},
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(key.b)
}

// Parse checks token's signature, algorithm and expiry at now and returns
// the executor it names. It does not say whether that executor may make
// the call at hand: Verify does.
func Parse(key Key, token string, now time.Time) (Principal, error) {
	if len(key.b) == 0 {
		return Principal{}, fmt.Errorf("%w: no key configured", ErrInvalid)
	}
	var c claims
	_, err := jwt.ParseWithClaims(token, &c,
		func(*jwt.Token) (any, error) { return key.b, nil },
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		// Strict base64: without it the two unused low bits of the
		// signature's last character may be anything, so one token would
		// have four spellings (harmless to the MAC, but a token is a
		// credential and should have exactly one form).
		jwt.WithStrictDecoding(),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	if err != nil {
		return Principal{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	p := Principal{FrameworkID: c.FrameworkID, ExecutorID: c.ExecutorID, ContainerID: c.ContainerID}
	if p.FrameworkID == "" || p.ExecutorID == "" || p.ContainerID == "" {
		return Principal{}, fmt.Errorf("%w: token lacks one of the fid, eid, cid claims", ErrInvalid)
	}
	return p, nil
}

// Verify checks token as Parse does and then that it was minted for want;
// a valid token for any other executor, framework or container is refused
// with ErrForeign.
func Verify(key Key, token string, want Principal, now time.Time) error {
	got, err := Parse(key, token, now)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%w: token is for %v, the call is from %v", ErrForeign, got, want)
	}
	return nil
}

// Bearer returns the token of r's "Authorization: Bearer <token>" header.
// The scheme is matched without regard to case (RFC 7235); a missing
// header, another scheme or an empty token is ErrNoToken.
func Bearer(r *http.Request) (string, error) {
	vals := r.Header.Values("Authorization")
	if len(vals) == 0 {
		return "", ErrNoToken
	}
	if len(vals) > 1 {
		return "", fmt.Errorf("%w: %d Authorization headers", ErrNoToken, len(vals))
	}
	scheme, tok, ok := strings.Cut(strings.TrimSpace(vals[0]), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", fmt.Errorf("%w: Authorization scheme is not Bearer", ErrNoToken)
	}
	tok = strings.TrimSpace(tok)
	if tok == "" {
		return "", fmt.Errorf("%w: empty bearer token", ErrNoToken)
	}
	return tok, nil
}
