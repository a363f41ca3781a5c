//go:build !invariants

package local

import "github.com/covmirror/covmirror/coverage"

// checkInvariantsLocked is compiled in under the invariants build tag
// (invariants_on.go).
func (s *Store) checkInvariantsLocked() {}

func (s *Store) checkDestsLocked(...coverage.Destination) {}

func (s *Store) checkEntriesLocked([]coverage.Entry) {}
