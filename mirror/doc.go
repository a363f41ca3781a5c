// Package mirror will tie the two tiers together: Record into the local tier,
// Sync to checkpoint into the durable table, a background loop with capped
// backoff, rebalance resumption and recovery planning from committed
// coverage only.
//
// The invariant it owns: nothing is marked checkpointed before the durable
// commit returned, and recovery plans only from what the durable tier holds.
package mirror
