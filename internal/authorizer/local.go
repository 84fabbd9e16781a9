package authorizer

import "strings"

// local is Mesos's local authorizer: for each request it walks the
// action's ACLs in order and the first one whose principals and objects
// both match the request decides (allowed only if both allow it); when
// none matches, the ACLs' permissive flag decides. Immutable after
// NewLocal, so safe for concurrent use.
type local struct {
	permissive bool
	rules      map[Action][]rule
}

// rule is one ACL as the matcher uses it. recursive is set for a role ACL
// whose single object is "parent/%": it matches every role nested under
// parent (Mesos's hierarchical role ACLs).
type rule struct {
	subjects, objects Entity
	recursive         string // "parent/" for a "parent/%" rule
}

// roleActions are the actions whose objects are roles, for which an ACL
// value "a/%" means every role nested under "a" (not "a" itself).
var roleActions = map[Action]bool{
	RegisterFramework: true,
	ReserveResources:  true,
	CreateVolume:      true,
	ResizeVolume:      true,
	UpdateWeight:      true,
	UpdateQuota:       true,
	GetQuota:          true,
	ViewRole:          true,
}

// NewLocal returns the local authorizer for acls; nil acls allow
// everything (permissive, no rules), as Mesos without --acls.
func NewLocal(acls *ACLs) Authorizer {
	l := &local{permissive: true, rules: map[Action][]rule{}}
	if acls == nil {
		return l
	}
	l.permissive = acls.Permissive
	for action, list := range acls.Rules {
		for _, acl := range list {
			if !roleActions[action] || acl.Objects.Type != Some {
				l.rules[action] = append(l.rules[action], rule{subjects: acl.Principals, objects: acl.Objects})
				continue
			}
			// As Mesos splits a role ACL: each "x/%" value becomes a
			// recursive rule of its own, the plain roles stay together
			// (after them, which cannot change a decision: an object
			// matches one or the other).
			var plain []string
			for _, v := range acl.Objects.Values {
				if parent, ok := strings.CutSuffix(v, "/%"); ok {
					l.rules[action] = append(l.rules[action], rule{subjects: acl.Principals,
						objects: Entity{Type: Some, Values: []string{v}}, recursive: parent + "/"})
				} else {
					plain = append(plain, v)
				}
			}
			if len(plain) > 0 {
				l.rules[action] = append(l.rules[action], rule{subjects: acl.Principals, objects: Entity{Type: Some, Values: plain}})
			}
		}
	}
	return l
}

// Authorized decides r; it never fails.
func (l *local) Authorized(r Request) (bool, error) {
	subject := Entity{Type: Any}
	if r.Subject != "" {
		subject = Entity{Type: Some, Values: []string{r.Subject}}
	}
	object := Entity{Type: Any}
	if !r.Object.Any {
		object = Entity{Type: Some, Values: []string{r.Object.Value}}
	}
	anyEntity := Entity{Type: Any}
	for _, acl := range l.rules[r.Action] {
		objects := acl.objects
		if acl.recursive != "" {
			// A recursive rule only covers roles strictly below its parent;
			// for those it acts as a rule on ANY object.
			if object.Type != Some || !strings.HasPrefix(object.Values[0], acl.recursive) {
				continue
			}
			objects = anyEntity
		}
		if matches(subject, acl.subjects) && matches(object, objects) {
			return allows(subject, acl.subjects) && allows(object, objects), nil
		}
	}
	return l.permissive, nil
}

// matches is Mesos's match matrix: does the ACL entity concern the
// request's entity at all?
//
//	                    ACL
//	request     SOME     NONE   ANY
//	SOME        subset   yes    yes
//	NONE        no       yes    no
//	ANY         no       yes    yes
func matches(request, acl Entity) bool {
	switch request.Type {
	case None:
		return acl.Type == None
	case Any:
		return acl.Type == Any || acl.Type == None
	}
	if acl.Type == Any || acl.Type == None {
		return true
	}
	return subset(request.Values, acl.Values)
}

// allows is Mesos's allow matrix: given that the ACL matches, does it
// allow the request's entity?
//
//	                    ACL
//	request     SOME     NONE   ANY
//	SOME        subset   no     yes
//	NONE        no       yes    no
//	ANY         no       no     yes
func allows(request, acl Entity) bool {
	switch request.Type {
	case None:
		return acl.Type == None
	case Any:
		return acl.Type == Any
	}
	switch acl.Type {
	case Any:
		return true
	case None:
		return false
	}
	return subset(request.Values, acl.Values)
}

func subset(vs, of []string) bool {
	for _, v := range vs {
		found := false
		for _, w := range of {
			if v == w {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
