// Package coveragetest is the conformance suite every coverage.Store and
// coverage.PositionStore backend runs, as iceberg-go's catalogtest is for
// catalogs: the in-memory reference, the pod-local Pebble tier and the
// durable Iceberg table all pass the same scenarios.
//
// The invariant it checks: a store reports as covered exactly the union of
// what was recorded into it, never more (no over-claim, no gap closed that
// was not itself recorded) and, once a Record has returned nil, never less
// (union merge, never last-write-wins, even with concurrent writers). Stored
// positions resolve only as far as raw's coverage reaches without a gap.
//
// A backend's test calls Run with a Harness:
//
//	func TestConformance(t *testing.T) {
//		coveragetest.Run(t, coveragetest.Harness{
//			Open: func(t *testing.T) coverage.Store { return openMyStore(t) },
//		})
//	}
package coveragetest
