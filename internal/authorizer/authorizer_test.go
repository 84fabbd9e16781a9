package authorizer

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"mezzo/api/mesos"
)

func mustParse(t *testing.T, s string) *ACLs {
	t.Helper()
	a, err := ParseACLs([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func decide(t *testing.T, a Authorizer, subject string, action Action, object Object) bool {
	t.Helper()
	ok, err := a.Authorized(Request{Subject: subject, Action: action, Object: object})
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// The examples of Mesos's docs/authorization.md, with the decisions that
// page states for them.
func TestLocalMesosDocExamples(t *testing.T) {
	type check struct {
		subject string
		object  Object
		want    bool
	}
	for _, tc := range []struct {
		name   string
		acls   string
		action Action
		checks []check
	}{
		{
			name: "only foo may register with analytics; others anything else",
			acls: `{"register_frameworks": [
				{"principals": {"values": ["foo"]}, "roles": {"values": ["analytics"]}},
				{"principals": {"type": "NONE"}, "roles": {"values": ["analytics"]}}]}`,
			action: RegisterFramework,
			checks: []check{
				{"foo", Value("analytics"), true},
				{"bar", Value("analytics"), false},
				{"", Value("analytics"), false},
				{"bar", Value("ads"), true},
				{"foo", Value("ads"), true},
			},
		},
		{
			name: "foo only analytics and ads",
			acls: `{"register_frameworks": [
				{"principals": {"values": ["foo"]}, "roles": {"values": ["analytics", "ads"]}},
				{"principals": {"values": ["foo"]}, "roles": {"type": "NONE"}}]}`,
			action: RegisterFramework,
			checks: []check{
				{"foo", Value("analytics"), true},
				{"foo", Value("ads"), true},
				{"foo", Value("web"), false},
				{"bar", Value("web"), true},
			},
		},
		{
			name:   "not permissive: foo only analytics",
			acls:   `{"permissive": false, "register_frameworks": [{"principals": {"values": ["foo"]}, "roles": {"values": ["analytics"]}}]}`,
			action: RegisterFramework,
			checks: []check{
				{"foo", Value("analytics"), true},
				{"foo", Value("*"), false},
				{"bar", Value("analytics"), false},
				{"", Value("analytics"), false},
			},
		},
		{
			name:   "not permissive: run only as guest or bar",
			acls:   `{"permissive": false, "run_tasks": [{"principals": {"type": "ANY"}, "users": {"values": ["guest", "bar"]}}]}`,
			action: RunTask,
			checks: []check{
				{"foo", Value("guest"), true},
				{"", Value("bar"), true},
				{"foo", Value("root"), false},
			},
		},
		{
			name: "no one runs as root",
			acls: `{"run_tasks": [{"principals": {"type": "ANY"}, "users": {"values": ["root"]}, "x": 1}]}`,
		},
		{
			name: "nobody but ops tears down; a later allow does not undo an earlier deny",
			acls: `{"teardown_frameworks": [
				{"principals": {"values": ["ops"]}, "framework_principals": {"type": "ANY"}},
				{"principals": {"type": "ANY"}, "framework_principals": {"type": "NONE"}},
				{"principals": {"values": ["eve"]}, "framework_principals": {"type": "ANY"}}]}`,
			action: TeardownFramework,
			checks: []check{
				{"ops", Value("marathon"), true},
				{"eve", Value("marathon"), false},
				{"", Value("marathon"), false},
			},
		},
		{
			name: "a framework principal may tear down only its own",
			acls: `{"permissive": false, "teardown_frameworks": [
				{"principals": {"values": ["a"]}, "framework_principals": {"values": ["a"]}}]}`,
			action: TeardownFramework,
			checks: []check{
				{"a", Value("a"), true},
				{"a", Value("b"), false},
				{"b", Value("b"), false},
			},
		},
		{
			name: "objectless actions take ANY/NONE",
			acls: `{"mark_agents_gone": [
				{"principals": {"values": ["ops"]}, "agents": {"type": "ANY"}},
				{"principals": {"type": "ANY"}, "agents": {"type": "NONE"}}]}`,
			action: MarkAgentGone,
			checks: []check{
				{"ops", AnyObject, true},
				{"dev", AnyObject, false},
				{"", AnyObject, false},
			},
		},
		{
			name: "an ANY object matches no SOME rule",
			acls: `{"permissive": false, "mark_agents_gone": [
				{"principals": {"values": ["ops"]}, "agents": {"values": ["a1"]}}]}`,
			action: MarkAgentGone,
			checks: []check{{"ops", AnyObject, false}},
		},
		{
			name: "hierarchical roles: a/% covers a/b and a/b/c, not a",
			acls: `{"permissive": false, "reserve_resources": [
				{"principals": {"values": ["p"]}, "roles": {"values": ["eng/%", "ops"]}}]}`,
			action: ReserveResources,
			checks: []check{
				{"p", Value("eng/web"), true},
				{"p", Value("eng/web/x"), true},
				{"p", Value("eng"), false},
				{"p", Value("engine"), false},
				{"p", Value("ops"), true},
				{"q", Value("eng/web"), false},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acls, err := ParseACLs([]byte(tc.acls))
			if tc.checks == nil {
				if err == nil {
					t.Fatal("bad ACLs accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			l := NewLocal(acls)
			for _, c := range tc.checks {
				if got := decide(t, l, c.subject, tc.action, c.object); got != c.want {
					t.Errorf("%q %s %v: got %v, want %v", c.subject, tc.action, c.object, got, c.want)
				}
			}
		})
	}
}

func TestNoACLsAllowEverything(t *testing.T) {
	l := NewLocal(nil)
	for _, a := range Actions() {
		if !decide(t, l, "", a, Value("root")) || !decide(t, l, "x", a, AnyObject) {
			t.Errorf("%s refused without ACLs", a)
		}
	}
	if !Allowed(nil, Request{Action: RunTask}) {
		t.Error("a nil Authorizer refused")
	}
}

func TestParseACLsErrors(t *testing.T) {
	for _, tc := range []struct{ in, err string }{
		{`[]`, "not a JSON object"},
		{`null`, "not a JSON object"},
		{`{"permisive": false}`, `unknown key "permisive"`},
		{`{"permissive": "no"}`, "'permissive' must be true or false"},
		{`{"run_tasks": {}}`, `"run_tasks" must be a list`},
		{`{"run_tasks": [{"principals": {"type": "ANY"}}]}`, "run_tasks[0]: 'users' is required"},
		{`{"run_tasks": [{"users": {"type": "ANY"}}]}`, "run_tasks[0]: 'principals' is required"},
		{`{"run_tasks": [{"principals": {"type": "ANY"}, "roles": {"type": "ANY"}}]}`, `run_tasks[0]: unknown key "roles"`},
		{`{"run_tasks": [{"principals": {"type": "ALL"}, "users": {"type": "ANY"}}]}`, `"ALL" is not SOME, ANY or NONE`},
		{`{"run_tasks": [{"principals": {"type": "ANY", "values": ["a"]}, "users": {"type": "ANY"}}]}`, "'values' given with type ANY"},
		{`{"run_tasks": [{"principals": {"value": ["a"]}, "users": {"type": "ANY"}}]}`, "run_tasks[0].principals"},
		{`{} {}`, "trailing data"},
	} {
		if _, err := ParseACLs([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: err = %v, want %q", tc.in, err, tc.err)
		}
	}
	a := mustParse(t, `{"permissive": false, "view_containers": [], "launch_nested_containers_as_user": []}`)
	if a.Permissive || strings.Join(a.Ignored, ",") != "launch_nested_containers_as_user,view_containers" {
		t.Errorf("parsed %+v", a)
	}
}

func TestLoadACLsFromFileOrJSON(t *testing.T) {
	p := filepath.Join(t.TempDir(), "acls.json")
	os.WriteFile(p, []byte(`{"permissive": false}`), 0o600)
	for _, v := range []string{p, "file://" + p, ` {"permissive": false}`} {
		a, err := LoadACLs(v)
		if err != nil || a.Permissive {
			t.Errorf("LoadACLs(%q) = %+v, %v", v, a, err)
		}
	}
	if _, err := LoadACLs("/nonexistent/acls"); err == nil || !strings.HasPrefix(err.Error(), "--acls") {
		t.Errorf("missing file: %v", err)
	}
}

func TestRegistry(t *testing.T) {
	if got := Names(); len(got) == 0 || got[0] != Local {
		t.Fatalf("Names() = %v", got)
	}
	a, err := New(Local, Params{ACLs: mustParse(t, `{"permissive": false}`)})
	if err != nil || decide(t, a, "x", RunTask, Value("u")) {
		t.Fatalf("local from registry: %v", err)
	}
	if _, err := New("nope", Params{}); err == nil || !strings.Contains(err.Error(), "no such authorizer") {
		t.Fatalf("unknown name: %v", err)
	}
}

func TestObjects(t *testing.T) {
	fw := &mesos.FrameworkInfo{User: proto.String("fwuser"), Principal: proto.String("fp")}
	withUser := func(u string) *mesos.CommandInfo { return &mesos.CommandInfo{User: proto.String(u)} }
	exec := &mesos.ExecutorInfo{Command: withUser("execuser")}
	for _, tc := range []struct {
		name string
		got  Object
		want Object
	}{
		{"run: command user", RunTaskObject(&mesos.TaskInfo{Command: withUser("cmd"), Executor: exec}, nil, fw), Value("cmd")},
		{"run: executor user", RunTaskObject(&mesos.TaskInfo{Executor: exec}, nil, fw), Value("execuser")},
		{"run: group executor user", RunTaskObject(&mesos.TaskInfo{}, exec, fw), Value("execuser")},
		{"run: framework user", RunTaskObject(&mesos.TaskInfo{Command: &mesos.CommandInfo{}}, nil, fw), Value("fwuser")},
		{"run: nothing known", RunTaskObject(&mesos.TaskInfo{}, nil, nil), AnyObject},
		{"view task: task user", ViewTaskObject(&mesos.Task{User: proto.String("t")}, fw), Value("t")},
		{"view task: framework user", ViewTaskObject(&mesos.Task{}, fw), Value("fwuser")},
		{"view executor", ViewExecutorObject(exec, fw), Value("execuser")},
		{"view executor: framework user", ViewExecutorObject(&mesos.ExecutorInfo{}, fw), Value("fwuser")},
		{"sandbox", AccessSandboxObject(&mesos.ExecutorInfo{}, fw), Value("fwuser")},
		{"sandbox: unknown", AccessSandboxObject(&mesos.ExecutorInfo{}, nil), AnyObject},
		{"view framework", ViewFrameworkObject(fw), Value("fwuser")},
		{"teardown", TeardownObject(fw), Value("fp")},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// oracle decides a request by the plain reading of Mesos's rules: an ACL
// entity ANY concerns and allows everyone, NONE concerns everyone and
// allows no one, a list concerns and allows exactly its members (a role
// "p/%" member: every role under p/), and an unauthenticated subject or an
// unspecified object is concerned only by ANY and NONE. The first ACL that
// concerns both subject and object decides; else permissive.
func oracle(acls *ACLs, action Action, subject string, object Object) bool {
	concerns := func(e Entity, v string, unspecified, roles bool) (concerned, allowed bool) {
		switch e.Type {
		case Any:
			return true, true
		case None:
			return true, false
		}
		if unspecified {
			return false, false
		}
		for _, m := range e.Values {
			if m == v || roles && strings.HasSuffix(m, "/%") && strings.HasPrefix(v, strings.TrimSuffix(m, "%")) {
				return true, true
			}
		}
		return false, false
	}
	for _, acl := range acls.Rules[action] {
		sc, sa := concerns(acl.Principals, subject, subject == "", false)
		oc, oa := concerns(acl.Objects, object.Value, object.Any, roleActions[action])
		if sc && oc {
			return sa && oa
		}
	}
	return acls.Permissive
}

func TestLocalAgreesWithOracle(t *testing.T) {
	names := []string{"a", "b", "c"}
	roles := []string{"r", "r/x", "r/x/y", "s", "r/%", "s/%"}
	entity := func(t *rapid.T, label string, values []string) Entity {
		switch rapid.IntRange(0, 3).Draw(t, label+".type") {
		case 0:
			return Entity{Type: Any}
		case 1:
			return Entity{Type: None}
		}
		return Entity{Type: Some, Values: rapid.SliceOfNDistinct(rapid.SampledFrom(values), 0, 3, rapid.ID[string]).Draw(t, label+".values")}
	}
	rapid.Check(t, func(t *rapid.T) {
		action := rapid.SampledFrom([]Action{RegisterFramework, RunTask, ReserveResources, MarkAgentGone}).Draw(t, "action")
		objects := names
		if roleActions[action] {
			objects = roles
		}
		acls := &ACLs{Permissive: rapid.Bool().Draw(t, "permissive"), Rules: map[Action][]ACL{}}
		for i := range rapid.IntRange(0, 4).Draw(t, "n") {
			acls.Rules[action] = append(acls.Rules[action], ACL{
				Principals: entity(t, "principals", names),
				Objects:    entity(t, "objects", objects),
			})
			_ = i
		}
		l := NewLocal(acls)
		subject := rapid.SampledFrom(append([]string{""}, names...)).Draw(t, "subject")
		object := AnyObject
		if rapid.Bool().Draw(t, "specified") {
			v := rapid.SampledFrom(objects).Draw(t, "object")
			if strings.HasSuffix(v, "%") {
				v = strings.TrimSuffix(v, "%") + "z"
			}
			object = Value(v)
		}
		got, _ := l.Authorized(Request{Subject: subject, Action: action, Object: object})
		if want := oracle(acls, action, subject, object); got != want {
			t.Fatalf("local says %v, oracle %v for %q %s %v under %+v", got, want, subject, action, object, acls)
		}
	})
}

// One decision of the local authorizer against a 40-ACL action, the
// request matching the last ACL (docs/benchmarks.md).
func BenchmarkLocalAuthorized(b *testing.B) {
	acls := &ACLs{Permissive: false, Rules: map[Action][]ACL{}}
	for i := range 40 {
		acls.Rules[ViewTask] = append(acls.Rules[ViewTask], ACL{
			Principals: Entity{Type: Some, Values: []string{"p" + strconv.Itoa(i)}},
			Objects:    Entity{Type: Some, Values: []string{"u" + strconv.Itoa(i)}},
		})
	}
	l := NewLocal(acls)
	r := Request{Subject: "p39", Action: ViewTask, Object: Value("u39")}
	b.ReportAllocs()
	for b.Loop() {
		if ok, _ := l.Authorized(r); !ok {
			b.Fatal("refused")
		}
	}
}
