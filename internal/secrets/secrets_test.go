package secrets

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"mezzo/api/mesos"
)

func valueSecret(data string) *mesos.Secret {
	return &mesos.Secret{Type: mesos.Secret_VALUE.Enum(), Value: &mesos.Secret_Value{Data: []byte(data)}}
}

func refSecret(name, key string) *mesos.Secret {
	r := &mesos.Secret_Reference{Name: proto.String(name)}
	if key != "" {
		r.Key = proto.String(key)
	}
	return &mesos.Secret{Type: mesos.Secret_REFERENCE.Enum(), Reference: r}
}

func secretVar(name string, s *mesos.Secret) *mesos.Environment_Variable {
	return &mesos.Environment_Variable{Name: proto.String(name), Type: mesos.Environment_Variable_SECRET.Enum(), Secret: s}
}

func TestEnvironment(t *testing.T) {
	const data = "s3cr3t-data"
	tests := []struct {
		name       string
		v          *mesos.Environment_Variable
		invalid    string // ValidateEnvironment's error, "" if valid
		unresolved string // CheckEnvironment's error when valid but not resolvable
		value      string
	}{
		{name: "plain value", v: &mesos.Environment_Variable{Name: proto.String("A"), Value: proto.String("1")}, value: "1"},
		{name: "value secret", v: secretVar("S", valueSecret(data)), value: data},
		{name: "empty value secret", v: secretVar("S", valueSecret("")), value: ""},
		{name: "reference", v: secretVar("S", refSecret("db/password", "")), unresolved: `environment variable 'S': cannot resolve secret reference "db/password": this agent has no secret resolver`},
		{name: "reference with key", v: secretVar("S", refSecret("db", "pw")), unresolved: `"db" (key "pw")`},
		{name: "secret without secret", v: secretVar("S", nil), invalid: "'S' of type 'SECRET' must have a secret set"},
		{name: "secret with a value", v: func() *mesos.Environment_Variable {
			v := secretVar("S", valueSecret(data))
			v.Value = proto.String("x")
			return v
		}(), invalid: "must not have a value set"},
		{name: "VALUE secret without value", v: secretVar("S", &mesos.Secret{Type: mesos.Secret_VALUE.Enum()}), invalid: "type VALUE must have the 'value' field set"},
		{name: "REFERENCE without reference", v: secretVar("S", &mesos.Secret{Type: mesos.Secret_REFERENCE.Enum()}), invalid: "type REFERENCE must have the 'reference' field set"},
		{name: "both", v: secretVar("S", &mesos.Secret{Type: mesos.Secret_VALUE.Enum(), Value: &mesos.Secret_Value{Data: []byte(data)},
			Reference: &mesos.Secret_Reference{Name: proto.String("n")}}), invalid: "must not have the 'reference' field set"},
		{name: "unknown secret type", v: secretVar("S", &mesos.Secret{}), invalid: "secret of type UNKNOWN is not supported"},
		{name: "NUL in data", v: secretVar("S", valueSecret("a\x00b")), invalid: "NUL byte"},
		{name: "VALUE with a secret", v: &mesos.Environment_Variable{Name: proto.String("V"), Value: proto.String("1"), Secret: valueSecret(data)},
			invalid: "'V' of type 'VALUE' must not have a secret set"},
		{name: "UNKNOWN type", v: &mesos.Environment_Variable{Name: proto.String("U"), Type: mesos.Environment_Variable_UNKNOWN.Enum()}, invalid: "'U' has type UNKNOWN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := &mesos.Environment{Variables: []*mesos.Environment_Variable{tc.v}}
			err := ValidateEnvironment(env)
			if (err == nil) != (tc.invalid == "") || (err != nil && !strings.Contains(err.Error(), tc.invalid)) {
				t.Fatalf("ValidateEnvironment = %v, want %q", err, tc.invalid)
			}
			cerr := CheckEnvironment(env)
			switch {
			case tc.invalid != "":
				if cerr == nil {
					t.Fatal("CheckEnvironment accepted an invalid environment")
				}
			case tc.unresolved != "":
				if cerr == nil || !strings.Contains(cerr.Error(), tc.unresolved) || !errors.Is(cerr, ErrNoResolver) {
					t.Fatalf("CheckEnvironment = %v, want %q wrapping ErrNoResolver", cerr, tc.unresolved)
				}
			default:
				if cerr != nil {
					t.Fatalf("CheckEnvironment = %v", cerr)
				}
			}
			for _, e := range []error{err, cerr} {
				if e != nil && strings.Contains(e.Error(), data) {
					t.Errorf("error %q shows the secret's data", e)
				}
			}
			got, ok := EnvValue(tc.v)
			if wantOK := cerr == nil; ok != wantOK || (ok && got != tc.value) {
				t.Errorf("EnvValue = %q, %v; want %q, %v", got, ok, tc.value, wantOK)
			}
		})
	}
}

func TestRedacted(t *testing.T) {
	env := &mesos.Environment{Variables: []*mesos.Environment_Variable{
		{Name: proto.String("A"), Value: proto.String("plain")},
		secretVar("S", valueSecret("hunter2")),
		secretVar("R", refSecret("db", "pw")),
	}}
	cmd := &mesos.CommandInfo{Value: proto.String("x"), Environment: env}
	red := RedactedCommand(cmd)
	if strings.Contains(red.String(), "hunter2") {
		t.Errorf("redacted command shows the data: %v", red)
	}
	if !strings.Contains(red.String(), "plain") || red.GetEnvironment().GetVariables()[2].GetSecret().GetReference().GetName() != "db" ||
		red.GetEnvironment().GetVariables()[1].GetSecret().GetType() != mesos.Secret_VALUE {
		t.Errorf("redaction lost more than the data: %v", red)
	}
	if string(env.GetVariables()[1].GetSecret().GetValue().GetData()) != "hunter2" {
		t.Error("the original was changed")
	}
	ex := &mesos.ExecutorInfo{ExecutorId: &mesos.ExecutorID{Value: proto.String("e")}, Command: cmd}
	if rex := RedactedExecutor(ex); strings.Contains(rex.String(), "hunter2") || rex.GetExecutorId().GetValue() != "e" || ex.GetCommand() != cmd {
		t.Errorf("redacted executor %v (original command replaced: %v)", rex, ex.GetCommand() != cmd)
	}
	if noCmd := (&mesos.ExecutorInfo{}); RedactedExecutor(noCmd) != noCmd {
		t.Error("an executor without a command was copied")
	}
	plain := &mesos.CommandInfo{Environment: &mesos.Environment{Variables: env.Variables[:1]}}
	if RedactedCommand(plain) != plain || RedactedCommand(nil) != nil {
		t.Error("nothing to hide, yet a copy")
	}
}
