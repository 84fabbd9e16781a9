package authorizer

import "testing"

// ParseACLs takes operator input: it never panics, and what it accepts
// builds an authorizer that answers every action without error.
func FuzzParseACLs(f *testing.F) {
	for _, s := range []string{
		`{"permissive": false}`,
		`{"run_tasks": [{"principals": {"values": ["a"]}, "users": {"type": "ANY"}}]}`,
		`{"register_frameworks": [{"principals": {"type": "NONE"}, "roles": {"values": ["r/%", "s"]}}]}`,
		`{"view_containers": []}`,
		`{"run_tasks": [{"principals": {"type": "ALL"}}]}`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		acls, err := ParseACLs(data)
		if err != nil {
			return
		}
		for action, rules := range acls.Rules {
			if ObjectField(action) == "" {
				t.Fatalf("accepted rules for unknown action %q", action)
			}
			for _, r := range rules {
				for _, e := range []Entity{r.Principals, r.Objects} {
					if e.Type != Some && len(e.Values) > 0 {
						t.Fatalf("entity of type %v with values", e.Type)
					}
				}
			}
		}
		l := NewLocal(acls)
		for _, a := range Actions() {
			for _, o := range []Object{AnyObject, Value("a"), Value("r/x")} {
				if _, err := l.Authorized(Request{Subject: "a", Action: a, Object: o}); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}
