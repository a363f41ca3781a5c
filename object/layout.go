package object

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Layout is how a Tier writes checkpoints. Every Tier reads every layout,
// so that a location written in one can be read, folded and migrated by a
// process set to the other.
type Layout string

const (
	// LayoutSinkObjects writes each checkpoint into one object per sink,
	// read, merged and written back under If-Match: every writer of a sink
	// meets every other at that object's compare-and-swap. Simple, with
	// nothing else to run; right for a handful of pods.
	LayoutSinkObjects Layout = "sinks"

	// LayoutDeltas writes each checkpoint once, as one new object of its
	// own (If-None-Match: it never conflicts), costing bytes in proportion
	// to what the checkpoint carries. A folder (Tier.Fold, run by one
	// process of the deployment) merges the deltas into base objects, one
	// per topic and partition group, and deletes them. Readers read the
	// bases they select and the deltas not yet folded. Right for a fleet.
	LayoutDeltas Layout = "deltas"
)

// The key spaces under Options.Prefix.
const (
	deltasDir = "deltas/" // deltas/<writer>/<name>.<digest>: one checkpoint each, write-once
	basesDir  = "bases/"  // bases/<topic>/<group>: folded coverage of a partition group, every sink
	foldsDir  = "folds/"  // folds/<time>-<random>: the names each fold folded, write-once
)

// GroupSize is how many consecutive partitions of a topic share a base
// object: a reader of one partition reads one base, and a fold writes one
// base per group its deltas touched. It is part of the layout: a base's
// key names its group by number, and the base holds its bounds, checked
// on read.
const GroupSize = 64

// nameKey maps any name to a key segment: the whole name in lowercase
// base32 when it fits (a bijection), else a cut with a hash suffix, a
// character no whole encoding has. Objects hold the exact names, checked
// on read, so a hash collision is refused, not merged.
func nameKey(name string) string {
	enc := keyEncoding.EncodeToString([]byte(name))
	if len(enc) > maxEncodedName {
		sum := sha256.Sum256([]byte(name))
		enc = enc[:keptEncoded] + "-" + hex.EncodeToString(sum[:16])
	}
	return enc
}

// deltaKey is the key of writer's checkpoint name with that payload
// digest. The digest in the key makes a key's content fixed for ever: a
// name reused with another payload is another key, so a fold that deletes
// a key it read deletes nothing it did not fold.
func deltaKey(prefix, writer, name string, digest [digestLen]byte) string {
	return namePrefix(prefix, writer, name) + hex.EncodeToString(digest[:])
}

// namePrefix is what every delta key of writer's name begins with.
func namePrefix(prefix, writer, name string) string {
	return prefix + deltasDir + nameKey(writer) + "/" + nameKey(name) + "."
}

// baseKey is the key of the base that holds topic's partition.
func baseKey(prefix, topic string, partition int32) string {
	return prefix + basesDir + nameKey(topic) + "/" + fmt.Sprintf("%08d", partition/GroupSize)
}

// group is a base's place: a topic and its group number.
type group struct {
	topic string
	n     int32 // partition / GroupSize
}

func groupOf(topic string, partition int32) group { return group{topic, partition / GroupSize} }

func (g group) key(prefix string) string { return baseKey(prefix, g.topic, g.n*GroupSize) }

// isDeltaKey reports whether key, listed under deltas/, has a delta key's
// shape: WRITER/NAME.DIGEST. Anything else there is not ours and is left
// alone.
func isDeltaKey(prefix, key string) bool {
	rest, ok := strings.CutPrefix(key, prefix+deltasDir)
	writer, rest, ok2 := strings.Cut(rest, "/")
	name, digest, ok3 := strings.Cut(rest, ".")
	return ok && ok2 && ok3 && writer != "" && name != "" && validSegment(writer) && validSegment(name) && isHex(digest, 2*digestLen)
}

// isBaseKey reports whether key, listed under bases/, has a base key's
// shape: TOPIC/GROUP, the group in eight digits.
func isBaseKey(prefix, key string) bool {
	rest, ok := strings.CutPrefix(key, prefix+basesDir)
	topic, group, ok2 := strings.Cut(rest, "/")
	return ok && ok2 && topic != "" && validSegment(topic) && len(group) == 8 && strings.Trim(group, "0123456789") == ""
}

// validSegment: nameKey's alphabet only.
func validSegment(s string) bool {
	return strings.Trim(s, "0123456789abcdefghijklmnopqrstuv-") == ""
}

func isHex(s string, n int) bool {
	return len(s) == n && strings.Trim(s, "0123456789abcdef") == ""
}

// reservedDirs are the key spaces a Tier lists: a Prefix may not begin
// with one, or another deployment's objects under it would be listed as
// this one's.
var reservedDirs = []string{sinksDir, deltasDir, basesDir, foldsDir, "positions/", statesDir}
