// Package secrets checks and resolves mesos.v1.Secret values, the way
// Mesos's default secret resolver does: mezzo has no secret store, so a
// VALUE secret resolves to the bytes it carries and a REFERENCE secret
// (a name in some store) cannot be resolved at all.
//
// The master uses Validate/ValidateEnvironment to refuse malformed tasks
// (TASK_ERROR, as Mesos's common validation); the agent uses
// CheckEnvironment before it launches anything, so that a task whose secret
// it cannot resolve fails (TASK_FAILED, REASON_CONTAINER_LAUNCH_FAILED, as a
// failing secret resolver does in Mesos) instead of running with the
// variable missing; whoever builds a process environment uses EnvValue.
//
// No function here puts a secret's data in an error: errors name the
// variable and the reference, never the value.
package secrets

import (
	"bytes"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
)

// ErrNoResolver is the cause of every REFERENCE secret's failure.
var ErrNoResolver = errors.New("this agent has no secret resolver, so only secrets of type VALUE can be used")

// Validate checks a secret's shape: REFERENCE has a reference and no value,
// VALUE a value and no reference, as Mesos's common validation requires.
func Validate(s *mesos.Secret) error {
	switch s.GetType() {
	case mesos.Secret_REFERENCE:
		if s.GetReference() == nil {
			return errors.New("secret of type REFERENCE must have the 'reference' field set")
		}
		if s.GetValue() != nil {
			return errors.New("secret of type REFERENCE must not have the 'value' field set")
		}
		if s.GetReference().GetName() == "" {
			return errors.New("secret reference must have a 'name'")
		}
	case mesos.Secret_VALUE:
		if s.GetValue() == nil {
			return errors.New("secret of type VALUE must have the 'value' field set")
		}
		if s.GetReference() != nil {
			return errors.New("secret of type VALUE must not have the 'reference' field set")
		}
	default:
		return fmt.Errorf("secret of type %s is not supported (want VALUE or REFERENCE)", s.GetType())
	}
	return nil
}

// Resolve returns a secret's data: a VALUE secret's own bytes; a REFERENCE
// secret fails with ErrNoResolver (wrapped, naming the reference).
func Resolve(s *mesos.Secret) ([]byte, error) {
	if err := Validate(s); err != nil {
		return nil, err
	}
	if s.GetType() == mesos.Secret_REFERENCE {
		ref := s.GetReference()
		what := fmt.Sprintf("%q", ref.GetName())
		if ref.GetKey() != "" {
			what += fmt.Sprintf(" (key %q)", ref.GetKey())
		}
		return nil, fmt.Errorf("cannot resolve secret reference %s: %w", what, ErrNoResolver)
	}
	return s.GetValue().GetData(), nil
}

// ValidateEnvironment checks the shape of every variable, as Mesos's
// master does for a task's and an executor's CommandInfo: a SECRET
// variable has a well-formed secret and no value, a VALUE variable no
// secret; a secret's data has no NUL byte (it could not be in an
// environment).
func ValidateEnvironment(env *mesos.Environment) error {
	for _, v := range env.GetVariables() {
		if err := validateVariable(v); err != nil {
			return err
		}
	}
	return nil
}

func validateVariable(v *mesos.Environment_Variable) error {
	name := v.GetName()
	switch v.GetType() {
	case mesos.Environment_Variable_SECRET:
		if v.GetSecret() == nil {
			return fmt.Errorf("environment variable '%s' of type 'SECRET' must have a secret set", name)
		}
		if v.Value != nil {
			return fmt.Errorf("environment variable '%s' of type 'SECRET' must not have a value set", name)
		}
		if err := Validate(v.GetSecret()); err != nil {
			return fmt.Errorf("environment variable '%s' specifies an invalid secret: %v", name, err)
		}
		if bytes.IndexByte(v.GetSecret().GetValue().GetData(), 0) >= 0 {
			return fmt.Errorf("environment variable '%s' specifies a secret containing a NUL byte, which an environment cannot hold", name)
		}
	case mesos.Environment_Variable_VALUE:
		if v.GetSecret() != nil {
			return fmt.Errorf("environment variable '%s' of type 'VALUE' must not have a secret set", name)
		}
	default:
		return fmt.Errorf("environment variable '%s' has type %s, want VALUE or SECRET", name, v.GetType())
	}
	return nil
}

// CheckEnvironment is ValidateEnvironment plus resolving every secret: nil
// means EnvValue succeeds for each variable.
func CheckEnvironment(env *mesos.Environment) error {
	if err := ValidateEnvironment(env); err != nil {
		return err
	}
	for _, v := range env.GetVariables() {
		if v.GetType() != mesos.Environment_Variable_SECRET {
			continue
		}
		if _, err := Resolve(v.GetSecret()); err != nil {
			return fmt.Errorf("environment variable '%s': %w", v.GetName(), err)
		}
	}
	return nil
}

// EnvValue is the value a variable takes in a process's environment: its
// value, or its resolved secret's data. ok is false when the variable is
// malformed or its secret cannot be resolved (CheckEnvironment says why);
// callers that ran CheckEnvironment first never see that.
func EnvValue(v *mesos.Environment_Variable) (value string, ok bool) {
	if validateVariable(v) != nil {
		return "", false
	}
	if v.GetType() != mesos.Environment_Variable_SECRET {
		return v.GetValue(), true
	}
	data, err := Resolve(v.GetSecret())
	if err != nil {
		return "", false
	}
	return string(data), true
}

// Redacted returns env without any secret's data (each secret keeps its
// type and reference), for the outputs that show an environment (/state);
// env itself when there is nothing to hide.
func Redacted(env *mesos.Environment) *mesos.Environment {
	hide := false
	for _, v := range env.GetVariables() {
		if v.GetSecret().GetValue() != nil {
			hide = true
			break
		}
	}
	if !hide {
		return env
	}
	out := proto.Clone(env).(*mesos.Environment)
	for _, v := range out.GetVariables() {
		if v.GetSecret() != nil {
			v.Secret.Value = nil
		}
	}
	return out
}

// RedactedCommand is c with its environment Redacted (c itself when there
// is nothing to hide).
func RedactedCommand(c *mesos.CommandInfo) *mesos.CommandInfo {
	env := Redacted(c.GetEnvironment())
	if env == c.GetEnvironment() {
		return c
	}
	out := proto.Clone(c).(*mesos.CommandInfo)
	out.Environment = env
	return out
}

// RedactedExecutor is e with its command's environment Redacted (e itself
// when there is nothing to hide), for the operator APIs' ExecutorInfos.
func RedactedExecutor(e *mesos.ExecutorInfo) *mesos.ExecutorInfo {
	c := RedactedCommand(e.GetCommand())
	if c == e.GetCommand() {
		return e
	}
	out := proto.Clone(e).(*mesos.ExecutorInfo)
	out.Command = c
	return out
}
