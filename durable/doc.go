// Package durable is the seam between a pod (and every reader that plans)
// and the durable tier that holds committed coverage: the Iceberg table in
// raw's catalog (package iceberg), one object per sink under conditional
// writes (package object), or another backend that passes the conformance
// suite in durable/durabletest.
//
// # The invariant it owns
//
// What Coverage returns for a destination is the union of every range that
// an Append which returned nil carried for it, and nothing else: never a
// range that was not appended (a lead: silent loss once a planner trusts
// it), and never less once Append returned nil (two writers meeting merge
// by union, never last-write-wins). An Append that returned an error may or
// may not have landed; the caller keeps its ranges pending and appends them
// again, which must be harmless. Landed finds an append of unknown outcome
// by its writer and name, so that a retry after a lost answer is not
// written twice, and a name is bound to what it carried: the same writer
// and name with other ranges is ErrNameReused.
//
// Optional capabilities (snapshot expiry, for one) are separate interfaces
// a backend may also implement, found by type assertion as in
// database/sql/driver.
package durable
