package object

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"slices"
	"sort"
	"strings"

	"github.com/covmirror/covmirror/coverage"
)

// sinksDir is where, under Options.Prefix, the sink objects live.
const sinksDir = "sinks/"

// keyEncoding is lowercase base32 with the "extended hex" alphabet: only
// [0-9a-v], so a key is safe as a file name on a case-insensitive file
// system, in a URL and in S3, whatever the sink's name.
var keyEncoding = base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding)

// maxEncodedName keeps a key's last segment under the 255 bytes most file
// systems allow; S3's 1024-byte keys leave room for a prefix.
const maxEncodedName, keptEncoded = 200, 160

// sinkKey is the key of sink's object. Names whose encoding fits are
// encoded whole (a bijection); longer ones keep the first 160 characters
// of their encoding and add "-" and 128 bits of SHA-256 of the whole name,
// a character no whole encoding has. The object holds the exact name and
// the Tier checks it, so even a hash collision is refused, not merged.
func sinkKey(prefix, sink string) string {
	enc := keyEncoding.EncodeToString([]byte(sink))
	if len(enc) > maxEncodedName {
		sum := sha256.Sum256([]byte(sink))
		enc = enc[:keptEncoded] + "-" + hex.EncodeToString(sum[:16])
	}
	return prefix + sinksDir + enc
}

// part is a checkpoint's ranges for one sink, with what binds them.
type part struct {
	writer, name string
	sinks        uint64                       // how many sinks the checkpoint writes to
	digest       [digestLen]byte              // the whole checkpoint's digest
	dests        []coverage.DestinationRanges // merged, in destination order; shared with the checkpoint: read only
}

// lookup returns writer's entry for name, if the object keeps it.
func (o *sinkObject) lookup(writer, name string) (nameEntry, bool) {
	i, ok := slices.BinarySearchFunc(o.Writers, writer, func(w writerState, s string) int { return strings.Compare(w.Writer, s) })
	if !ok {
		return nameEntry{}, false
	}
	for _, e := range o.Writers[i].Names {
		if e.Name == name {
			return e, true
		}
	}
	return nameEntry{}, false
}

// apply merges p into o: each destination's ranges by union, its last
// writer and time, and p's name among its writer's recent names, dropping
// names and writers past MaxNamesPerWriter and MaxWriters.
func (o *sinkObject) apply(p *part, now int64) {
	for _, dr := range p.dests {
		d := dr.Destination
		i, ok := slices.BinarySearchFunc(o.Dests, d, func(s destState, d coverage.Destination) int {
			return compareDest(s.Topic, s.Partition, d.Topic, d.Partition)
		})
		if !ok {
			o.Dests = slices.Insert(o.Dests, i, destState{Topic: d.Topic, Partition: d.Partition})
		}
		ds := &o.Dests[i]
		ds.encoded = appendEncoded(ds, dr.Ranges)
		ds.Ranges = unionInto(ds.Ranges, dr.Ranges)
		ds.LastWriter, ds.LastWrite = p.writer, now
	}
	i, ok := slices.BinarySearchFunc(o.Writers, p.writer, func(w writerState, s string) int { return strings.Compare(w.Writer, s) })
	if !ok {
		o.Writers = slices.Insert(o.Writers, i, writerState{Writer: p.writer})
	}
	w := &o.Writers[i]
	w.LastWrite = now
	w.Names = append(w.Names, nameEntry{Name: p.name, Sinks: p.sinks, Digest: p.digest})
	if extra := len(w.Names) - MaxNamesPerWriter; extra > 0 {
		w.Names = slices.Delete(w.Names, 0, extra)
	}
	for len(o.Writers) > MaxWriters {
		oldest := -1
		for j, w := range o.Writers {
			if w.Writer != p.writer && (oldest < 0 || w.LastWrite < o.Writers[oldest].LastWrite) {
				oldest = j
			}
		}
		o.Writers = slices.Delete(o.Writers, oldest, oldest+1)
	}
}

// appendEncoded returns ds.encoded extended by ranges, which are about to
// be merged into ds.Ranges, when they lie past its last range and do not
// touch it (an append, whose encoding follows the old one's), and nil,
// not kept, otherwise.
func appendEncoded(ds *destState, ranges []coverage.Range) []byte {
	n := len(ds.Ranges)
	switch {
	case len(ranges) == 0:
		return ds.encoded
	case n == 0:
		return appendRanges(nil, 0, ranges)
	case ds.encoded != nil && ds.Ranges[n-1].End < ranges[0].Start:
		return appendRanges(ds.encoded, ds.Ranges[n-1].End, ranges)
	}
	return nil
}

// unionInto returns the union of a and b, reusing a's array: the ranges
// of a that end before b's first starts stay where they are, so the usual
// checkpoint (ranges past a destination's last) costs an append, not a
// copy of the destination's every range.
func unionInto(a, b []coverage.Range) []coverage.Range {
	if len(b) == 0 {
		return a
	}
	k := sort.Search(len(a), func(i int) bool { return a[i].End >= b[0].Start })
	if k == len(a) {
		return append(a, b...)
	}
	tail := unionRanges(a[k:], b) // a new array: a[k:] is read before it is overwritten
	return append(a[:k], tail...)
}

// unionRanges merges two ascending lists of non-touching ranges into one,
// joining ranges that overlap or touch.
func unionRanges(a, b []coverage.Range) []coverage.Range {
	out := make([]coverage.Range, 0, len(a)+len(b))
	add := func(r coverage.Range) {
		if n := len(out); n > 0 && out[n-1].End >= r.Start {
			out[n-1].End = max(out[n-1].End, r.End)
			return
		}
		out = append(out, r)
	}
	for len(a) > 0 || len(b) > 0 {
		if len(b) == 0 || (len(a) > 0 && a[0].Start <= b[0].Start) {
			add(a[0])
			a = a[1:]
		} else {
			add(b[0])
			b = b[1:]
		}
	}
	return out
}
