// Package exectoken mints and verifies the per-executor authentication
// tokens of --authenticate_http_executors: the agent signs one JWT (HS256,
// keyed by --executor_secret_key) per executor, binding the framework,
// executor and container IDs with Mesos's claim names (fid, eid, cid),
// hands it to the executor in MESOS_EXECUTOR_AUTHENTICATION_TOKEN, and
// refuses any executor API call whose bearer token is not the one minted
// for that very executor.
//
// The package is pure: it reads the key file when asked and does nothing
// else with the world; the caller injects the time.
package exectoken

import (
	"bytes"
	"errors"
	"fmt"
	"os"
)

// MinKeyLen is the shortest secret key accepted, in bytes: RFC 7518 §3.2
// requires an HS256 key of at least the hash's size (256 bits).
const MinKeyLen = 32

// Key is an HS256 signing key. Its String never shows the bytes.
type Key struct{ b []byte }

// String hides the key, so that logging a Key or a struct holding one
// leaks nothing.
func (Key) String() string { return "exectoken.Key(redacted)" }

// GoString hides the key from %#v as well.
func (k Key) GoString() string { return k.String() }

// NewKey checks key and returns it as a Key. The bytes are copied.
func NewKey(key []byte) (Key, error) {
	if len(key) == 0 {
		return Key{}, errors.New("executor secret key is empty")
	}
	if len(key) < MinKeyLen {
		return Key{}, fmt.Errorf("executor secret key is %d bytes, want at least %d (HS256 needs a 256-bit key)", len(key), MinKeyLen)
	}
	return Key{b: bytes.Clone(key)}, nil
}

// LoadKey reads the --executor_secret_key file. One trailing newline
// (what an editor or `echo` leaves) is not part of the key; the rest of the
// file is, byte for byte. Errors name the file and never its content.
func LoadKey(path string) (Key, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Key{}, fmt.Errorf("--executor_secret_key: %w", err)
	}
	data = bytes.TrimSuffix(data, []byte("\n"))
	data = bytes.TrimSuffix(data, []byte("\r"))
	k, err := NewKey(data)
	if err != nil {
		return Key{}, fmt.Errorf("--executor_secret_key %s: %w", path, err)
	}
	return k, nil
}
