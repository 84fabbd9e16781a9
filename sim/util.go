package sim

import (
	"cmp"
	"maps"
	"slices"
)

// sortedKeys returns m's keys in order (stable messages and iteration).
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}
