// Package authn authenticates HTTP callers the way Mesos's basic HTTP
// authenticator does, and lets clients present their own credential.
//
// Server side (master and agent HTTP layers):
//
//  1. Load the --credentials file once at start-up (LoadCredentials):
//     Mesos's JSON format {"credentials":[{"principal":…,"secret":…}]}
//     or its older text format, one "principal secret" per line.
//  2. Build an Authenticator from them; it compares secrets in constant
//     time and never keeps a secret in the clear.
//  3. For each request, Guard.Check finds the caller's principal from the
//     "Authorization: Basic …" header, or answers 401 with
//     WWW-Authenticate naming the realm (and logs and counts the refusal)
//     when the realm requires authentication and the caller has none, or
//     presents a wrong one. The principal travels to the handlers in the
//     request's context (WithPrincipal, PrincipalOf).
//
// Client side (agents, `mezzo run`, the CLI, the scheduler SDK): load the
// --credential file (LoadCredential, the same two formats for one
// credential) and wrap the HTTP transport (Credential.Transport), which
// adds the Basic header to every request.
//
// Secrets are never printed: Credential's String hides them and no error
// of this package quotes one.
package authn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Credential is one principal and its secret (Mesos's Credential message).
type Credential struct {
	Principal string `json:"principal"`
	Secret    string `json:"secret"`
}

// String hides the secret, so that logging a Credential leaks nothing.
func (c Credential) String() string {
	return fmt.Sprintf("credential for principal %q (secret redacted)", c.Principal)
}

// GoString hides the secret from %#v as well.
func (c Credential) GoString() string { return c.String() }

// validate checks what Mesos requires of a credential; where names the
// credential in the error.
func (c Credential) validate(where string) error {
	switch {
	case c.Principal == "":
		return fmt.Errorf("%s: 'principal' is empty", where)
	case strings.ContainsAny(c.Principal, ":\x00\r\n"):
		// HTTP Basic cannot carry a principal with a colon: the first one
		// separates it from the secret. Not quoted: "name:secret" in the
		// principal's place is a likely mistake.
		return fmt.Errorf("%s: the principal contains ':' or a control character", where)
	case c.Secret == "":
		return fmt.Errorf("%s: principal %q has an empty 'secret'", where, c.Principal)
	case strings.ContainsAny(c.Secret, "\x00\r\n"):
		return fmt.Errorf("%s: the secret of principal %q contains a control character", where, c.Principal)
	}
	return nil
}

// ParseCredentials parses the contents of a --credentials file: Mesos's
// JSON ({"credentials": [{"principal": "p", "secret": "s"}, ...]}), or,
// when the content is not a JSON object, the text format with one
// "principal secret" pair per line (blank lines ignored). Every principal
// must be unique. Errors name the entry or line, never a secret.
func ParseCredentials(data []byte) ([]Credential, error) {
	var out []Credential
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		var doc struct {
			Credentials []Credential `json:"credentials"`
		}
		dec := json.NewDecoder(bytes.NewReader(t))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&doc); err != nil {
			return nil, fmt.Errorf("credentials: not valid JSON of the form {\"credentials\":[{\"principal\":…,\"secret\":…}]}: %v", jsonError(err))
		}
		if dec.More() {
			return nil, errors.New("credentials: trailing data after the JSON object")
		}
		for i, c := range doc.Credentials {
			if err := c.validate(fmt.Sprintf("credentials[%d]", i)); err != nil {
				return nil, err
			}
		}
		out = doc.Credentials
	} else {
		for n, line := range strings.Split(string(data), "\n") {
			fields := strings.Fields(line)
			if len(fields) == 0 {
				continue
			}
			where := fmt.Sprintf("credentials line %d", n+1)
			if len(fields) != 2 {
				return nil, fmt.Errorf("%s: expecting 'principal secret', found %d fields", where, len(fields))
			}
			c := Credential{Principal: fields[0], Secret: fields[1]}
			if err := c.validate(where); err != nil {
				return nil, err
			}
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("credentials: no credential found")
	}
	seen := map[string]bool{}
	for _, c := range out {
		if seen[c.Principal] {
			return nil, fmt.Errorf("credentials: principal %q is listed twice", c.Principal)
		}
		seen[c.Principal] = true
	}
	return out, nil
}

// ParseCredential parses the contents of a --credential file: one
// credential, as JSON ({"principal": "p", "secret": "s"}) or as one line
// "principal secret".
func ParseCredential(data []byte) (Credential, error) {
	t := bytes.TrimSpace(data)
	if len(t) > 0 && t[0] == '{' {
		var c Credential
		dec := json.NewDecoder(bytes.NewReader(t))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return Credential{}, fmt.Errorf("credential: not valid JSON of the form {\"principal\":…,\"secret\":…}: %v", jsonError(err))
		}
		if dec.More() {
			return Credential{}, errors.New("credential: trailing data after the JSON object")
		}
		return c, c.validate("credential")
	}
	fields := strings.Fields(string(t))
	if len(fields) != 2 {
		return Credential{}, fmt.Errorf("credential: expecting one line 'principal secret' (or JSON), found %d fields", len(fields))
	}
	c := Credential{Principal: fields[0], Secret: fields[1]}
	return c, c.validate("credential")
}

// jsonError keeps a JSON decoding error's position and kind but drops any
// quoted input, which could be part of a secret.
func jsonError(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("syntax error at byte %d", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("field %q must be a %s", typ.Field, typ.Type)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return strings.TrimPrefix(err.Error(), "json: ")
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end of input"
	}
	return "malformed JSON"
}

// ReadFlagFile reads a file named by a Mesos path flag, which may be
// "file:///path" or "/path"; flag names the flag in errors. It also
// returns a warning when the file can be read by users other than its
// owner (Mesos warns the same way about credentials files).
func ReadFlagFile(flag, value string) (data []byte, warning string, err error) {
	path := strings.TrimPrefix(value, "file://")
	if path == "" {
		return nil, "", fmt.Errorf("--%s: no path given", flag)
	}
	data, err = os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("--%s: %w", flag, err)
	}
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		warning = fmt.Sprintf("permissions on --%s file %s are too open (%v): it should not be accessible by others", flag, path, st.Mode().Perm())
	}
	return data, warning, nil
}

// LoadCredentials reads and parses a --credentials file.
func LoadCredentials(value string) ([]Credential, string, error) {
	data, warn, err := ReadFlagFile("credentials", value)
	if err != nil {
		return nil, "", err
	}
	cs, err := ParseCredentials(data)
	if err != nil {
		return nil, "", fmt.Errorf("--credentials %s: %w", value, err)
	}
	return cs, warn, nil
}

// LoadCredential reads and parses a --credential file.
func LoadCredential(value string) (Credential, string, error) {
	data, warn, err := ReadFlagFile("credential", value)
	if err != nil {
		return Credential{}, "", err
	}
	c, err := ParseCredential(data)
	if err != nil {
		return Credential{}, "", fmt.Errorf("--credential %s: %w", value, err)
	}
	return c, warn, nil
}
