// Package local will hold the pod-local tier: a coverage.Store on Pebble in a
// directory on the pod's own disk, one key per covered range, written cheaply
// and often, and checkpointed to the durable tier on an interval.
//
// The invariant it owns: the local tier is a write-behind buffer, never
// authoritative and never read by another node. A range is recorded only
// after the sink's durable acknowledgement, and is marked checkpointed only
// after the durable tier's commit has returned.
package local
