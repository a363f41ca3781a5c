// Package fleetbench measures the durable tiers under a fleet of pods with
// internal/fleetsim: BenchmarkFleet runs each scenario (a tier, a pod
// count, an interval) in a process of its own, so that each one's CPU time
// and memory are its own, and reports each figure beside the baseline of
// one pod measured in the same run. Scenarios on simulated stores run in a
// testing/synctest bubble (fake time); the PostgreSQL one runs on the
// real server in real time, where a bubble's clock would not move for
// network I/O. It holds benchmarks only.
//
// # The invariant it checks
//
// Every scenario ends, as fleetsim.Run does, by reading the committed
// coverage back from the tier and failing unless it is exactly the union
// of what the pods recorded.
//
//	go test -v -run '^$' -bench Fleet -benchtime 1x -timeout 30m ./internal/fleetbench
package fleetbench
