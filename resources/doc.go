// Package resources is the algebra of Mesos resources: parsing the text
// syntax ("cpus(role):4;mem:1024;ports:[31000-32000]") and JSON, addition,
// subtraction and containment over scalars (fixed point), ranges and sets,
// roles and reservation stacks (pre- and post-refinement formats), and
// revocable resources. Pure: it imports only api/.
package resources

import "mezzo/api/mesos"

// Resources is a normalized multiset of resources. Values are immutable by
// convention: every operation returns a new Resources.
type Resources struct {
	items []*mesos.Resource
}
