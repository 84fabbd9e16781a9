// Package resources is the algebra of Mesos resources: parsing the text
// syntax ("cpus(role):4;mem:1024;ports:[31000-32000];disks:{a,b}") and JSON,
// addition, subtraction and containment over scalars (fixed point, three
// decimal places as in Mesos), ranges and sets, roles and reservation stacks
// (pre- and post-refinement formats), revocable and shared resources.
//
// The master, its allocator, the agent and the client libraries all do their
// resource arithmetic here. The package is pure: it imports only api/.
//
// A Resources value is a normalized multiset: one entry per identity (name,
// type, reservation stack, disk info, revocable, shared, provider id,
// allocation info), kept sorted by identity so that Add, Subtract and
// Contains are linear merges. Resources that Mesos treats as indivisible
// (persistent volumes, MOUNT/BLOCK/RAW disks, shared resources) are counted
// as whole copies instead of being merged.
//
// Offer operations that change resources are conversions (consumed →
// converted, quantities preserved): ValidateOperation judges an operation
// for a caller (Mesos's master validation), Apply performs it on an agent's
// total or on offered resources, and Conversion gives its net effect for the
// allocator. The agent keeps what operations made (dynamic reservations,
// persistent volumes: Checkpointed) and re-applies it to its flag resources
// when it restarts (ApplyCheckpointed).
package resources

// Resources is a normalized multiset of resources. Values are immutable by
// convention: every operation returns a new Resources, and entries are
// shared between values, never mutated. The zero value is empty and usable.
type Resources struct {
	items []*item // sorted by key, keys unique, no empty entries
}
