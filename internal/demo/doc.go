// Package demo is `covmirror demo`: the whole system run once on embedded
// defaults over a simulated pipeline, explained step by step, and the
// pipeline model itself (Pipeline, Store, Outages), which internal/sim
// drives too. It imports no fault injection: the demo's only failures are
// a sink's outages and a pod killed mid-stream.
//
// The invariant it checks, and shows: coverage may lag, never lead. After
// every checkpoint no committed coverage claims a batch its simulated sink
// does not hold (CheckClaims, ErrLeads); a replica table never claims more
// than its primary; and at the end every batch raw holds reached every
// sink and is in the committed coverage (Incomplete), with the price of
// lagging counted as the repeated writes the sinks' dedup absorbed.
package demo
