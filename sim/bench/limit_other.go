//go:build !linux

package bench

// fdLimit is unknown off Linux.
func fdLimit() uint64 { return 0 }
