//go:build !invariants

package local

// checkInvariantsLocked is compiled in under the invariants build tag
// (invariants_on.go).
func (s *Store) checkInvariantsLocked() {}
