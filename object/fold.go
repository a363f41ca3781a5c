package object

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// FoldResult says what one Fold did.
type FoldResult struct {
	Deltas      int // deltas folded and deleted
	SinkObjects int // sink objects folded and emptied (the sinks layout migrated)
	Bases       int // bases written
	Left        int // deltas and sink objects left for a later fold: unreadable, or a base they touch failed
	FoldLogs    int // fold logs pruned
}

// Fold merges the deltas not yet folded, and the sink objects' coverage,
// into the bases, then deletes those deltas and empties those sink
// objects. One process of the deployment runs it, on an interval; a second
// one at the same time only wastes work: every base grows by union under
// If-Match, and a delta or sink object is removed only after every base it
// touched was written with its ranges. Readers never miss what a fold
// moves (see view). It folds at most Options.MaxFoldDeltas deltas a call.
//
// A sink object is emptied, not deleted: under If-Match on the version
// folded, so a process still writing the sinks layout loses nothing (its
// write refuses the emptying, or follows it and is folded next time), and
// its recent checkpoint names stay for Landed.
func (s *Tier) Fold(ctx context.Context) (FoldResult, error) {
	var res FoldResult
	keys, err := s.listDeltas(ctx)
	if err != nil {
		return res, fmt.Errorf("object: fold: %w", err)
	}
	keys = fairShare(s.opts.Prefix, keys, s.opts.MaxFoldDeltas)
	deltas, err := s.readDeltas(ctx, keys, &res)
	if err != nil {
		return res, fmt.Errorf("object: fold: %w", err)
	}
	type legacy struct {
		o       *sinkObject
		version string
	}
	var olds []legacy
	sinkKeys, err := s.list(ctx)
	if err != nil {
		return res, fmt.Errorf("object: fold: %w", err)
	}
	for _, key := range sinkKeys {
		o, version, err := s.read(ctx, key, "")
		if unreadable(err) {
			res.Left++
			s.opts.Logger.Error("object: fold: a sink object cannot be read and is left as it is", "key", key, "err", err)
			continue
		}
		if err != nil {
			return res, fmt.Errorf("object: fold: %w", err)
		}
		if len(o.Dests) > 0 {
			olds = append(olds, legacy{o, version})
		}
	}

	// What goes into each base, and which bases each source touches.
	into := parts{}
	deltaGroups := map[string][]group{}
	for key, d := range deltas {
		deltaGroups[key] = into.add(d.Sinks)
	}
	oldGroups := make([][]group, len(olds))
	for i, l := range olds {
		oldGroups[i] = into.add([]*sinkObject{l.o})
	}

	failed, err := s.writeBases(ctx, into, &res)
	if err != nil {
		return res, fmt.Errorf("object: fold: %w", err)
	}
	landed := func(gs []group) bool {
		return !slices.ContainsFunc(gs, func(g group) bool { return failed[g] })
	}

	// The names first, so that Landed finds every checkpoint it deletes.
	var done []string
	var names []foldEntry
	for key, d := range deltas {
		if landed(deltaGroups[key]) {
			done = append(done, key)
			names = append(names, foldEntry{Writer: d.Writer, Name: d.Name, Digest: d.Digest})
		} else {
			res.Left++
		}
	}
	slices.Sort(done)
	if len(names) > 0 {
		if _, err := s.opts.Blobs.Put(ctx, foldLogKey(s.opts.Prefix, s.opts.Now()), encodeFoldLog(names), ""); err != nil {
			return res, fmt.Errorf("object: fold: writing the fold log of %d checkpoints (their deltas stay, for the next fold): %w", len(names), err)
		}
	}
	if err := s.deleteAll(ctx, done, func(n int) { res.Deltas += n }); err != nil {
		return res, fmt.Errorf("object: fold: %w (folded; the next fold folds it again, harmlessly)", err)
	}
	for i, l := range olds {
		if !landed(oldGroups[i]) {
			res.Left++
			continue
		}
		emptied := &sinkObject{Sink: l.o.Sink, Writers: l.o.Writers}
		key := sinkKey(s.opts.Prefix, l.o.Sink)
		if _, err := s.opts.Blobs.Put(ctx, key, encodeObject(emptied), l.version); err != nil {
			// Refused: a writer of the sinks layout wrote since; the next
			// fold takes it all again.
			s.opts.Logger.Info("object: fold: a sink object was not emptied; the next fold folds it again", "key", key, "err", err)
			res.Left++
			continue
		}
		res.SinkObjects++
	}
	if res.FoldLogs, err = s.pruneFoldLogs(ctx); err != nil {
		return res, fmt.Errorf("object: fold: %w", err)
	}
	return res, nil
}

// readDeltas reads and decodes the deltas under keys. A delta gone was
// taken by another fold; one that cannot be read is logged, counted in
// res.Left and left as it is. Any other failure to read fails the fold.
func (s *Tier) readDeltas(ctx context.Context, keys []string, res *FoldResult) (map[string]*delta, error) {
	got, failed := s.fetch(ctx, keys)
	for _, key := range keys {
		if err := failed[key]; err != nil {
			return nil, err
		}
	}
	var mu sync.Mutex
	deltas := make(map[string]*delta, len(got))
	// Decoded in parallel: a fold of a thousand pods' deltas decodes a
	// million destinations.
	err := forEach(ctx, s.opts.Parallel, chunks(keys), func(ctx context.Context, chunk []string) error {
		for _, key := range chunk {
			o, ok := got[key]
			if !ok {
				continue // another fold took it
			}
			d, err := s.deltaAt(key, o.Data)
			mu.Lock()
			if err != nil {
				s.opts.Logger.Error("object: fold: a delta cannot be read and is left as it is; restore it or move it aside", "key", key, "err", err)
				res.Left++
			} else {
				deltas[key] = d
			}
			mu.Unlock()
		}
		return ctx.Err()
	})
	return deltas, err
}

// parts are, per base, the runs of destinations to merge into it: each a
// sink's destinations of one group, in order, sliced from what was read
// (never modified).
type parts map[group][]*sinkObject

// add adds objs' destinations and returns the groups they touch.
func (p parts) add(objs []*sinkObject) []group {
	var gs []group
	for _, o := range objs {
		for i := 0; i < len(o.Dests); {
			g := groupOf(o.Dests[i].Topic, o.Dests[i].Partition)
			j := i + 1
			for j < len(o.Dests) && groupOf(o.Dests[j].Topic, o.Dests[j].Partition) == g {
				j++
			}
			p[g] = append(p[g], &sinkObject{Sink: o.Sink, Dests: o.Dests[i:j:j]})
			if !slices.Contains(gs, g) {
				gs = append(gs, g)
			}
			i = j
		}
	}
	return gs
}

// writeBases merges into's runs into their bases, each under a
// conditional write of the merge, read again and merged again until it
// lands or Options.MaxAttempts run out: in rounds, every base still to
// write read in one go and written in one go (a few requests on a
// BatchBlobs). It returns the groups whose base was not written: what
// they hold stays where it is for the next fold.
func (s *Tier) writeBases(ctx context.Context, into parts, res *FoldResult) (map[group]bool, error) {
	failed := map[group]bool{}
	byKey := make(map[string]group, len(into))
	pending := make([]string, 0, len(into))
	for g := range into {
		k := g.key(s.opts.Prefix)
		byKey[k] = g
		pending = append(pending, k)
	}
	slices.Sort(pending)
	giveUp := func(key string, err error) {
		s.opts.Logger.Error("object: fold: a base was not written; what it holds stays where it is for the next fold", "key", key, "err", err)
		failed[byKey[key]] = true
	}
	// The first attempt writes the bases this Tier's last Fold wrote from
	// its memory; the rest, and every retry, read first.
	cached := s.takeBases(pending)
	for attempt := 1; len(pending) > 0; attempt++ {
		got, errs := s.fetch(ctx, uncached(pending, cached))
		// Decoded, merged and encoded in parallel: a base is a few
		// thousand destinations, and a fold writes a thousand bases.
		slots := make([]*PutRequest, len(pending))
		merged := make([]*base, len(pending))
		var mu sync.Mutex
		_ = forEach(ctx, s.opts.Parallel, chunks(indexes(len(pending))), func(ctx context.Context, is []int) error {
			for _, i := range is {
				key := pending[i]
				if errs[key] != nil {
					continue
				}
				g := byKey[key]
				b := &base{Topic: g.topic, Group: g.n}
				var version string
				if c, ok := cached[key]; ok {
					b, version = c.b, c.version
				} else if o, ok := got[key]; ok {
					var err error
					if b, err = s.baseAt(key, o.Data); err != nil {
						mu.Lock()
						giveUp(key, err) // unreadable: never overwritten
						mu.Unlock()
						continue
					}
					version = o.Version
				}
				for _, o := range into[g] {
					mergeDests(sinkIn(&b.Sinks, o.Sink), o.Dests)
				}
				slots[i] = &PutRequest{Key: key, Data: encodeBase(b), IfMatch: version}
				merged[i] = b
			}
			return nil
		})
		var puts []PutRequest
		var bases []*base
		for i, p := range slots {
			if p != nil {
				puts = append(puts, *p)
				bases = append(bases, merged[i])
			}
		}
		// A cached base was merged into in place: whatever its put did,
		// it is not the cache's any more (keepBase puts back what landed).
		cached = nil
		versions, putErrs := s.putAll(ctx, puts)
		for i, p := range puts {
			if putErrs[i] != nil {
				errs[p.Key] = putErrs[i]
			} else {
				res.Bases++
				s.keepBase(p.Key, bases[i], versions[i])
			}
		}
		pending = pending[:0]
		for key := range errs {
			pending = append(pending, key)
		}
		slices.Sort(pending)
		if len(pending) == 0 {
			break
		}
		if attempt >= s.opts.MaxAttempts {
			for _, key := range pending {
				giveUp(key, fmt.Errorf("%s: %d attempts: %w", key, attempt, errs[key]))
			}
			break
		}
		if err := s.sleep(ctx, attempt); err != nil {
			return failed, fmt.Errorf("%d bases left to write: %w (after: %w)", len(pending), err, errs[pending[0]])
		}
	}
	return failed, nil
}

// takeBases takes the cached bases of keys out of the cache, so that no
// two Folds of this Tier merge into one.
func (s *Tier) takeBases(keys []string) map[string]cachedBase {
	s.basesMu.Lock()
	defer s.basesMu.Unlock()
	out := map[string]cachedBase{}
	for _, k := range keys {
		if c, ok := s.bases[k]; ok {
			out[k] = c
			delete(s.bases, k)
		}
	}
	return out
}

// keepBase caches b as written at version, within
// Options.FoldCacheBases.
func (s *Tier) keepBase(key string, b *base, version string) {
	s.basesMu.Lock()
	defer s.basesMu.Unlock()
	if version != "" && len(s.bases) < s.opts.FoldCacheBases {
		s.bases[key] = cachedBase{b, version}
	}
}

// uncached is keys less those in cached.
func uncached(keys []string, cached map[string]cachedBase) []string {
	if len(cached) == 0 {
		return keys
	}
	out := make([]string, 0, len(keys)-len(cached))
	for _, k := range keys {
		if _, ok := cached[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// indexes is 0 to n-1.
func indexes(n int) []int {
	is := make([]int, n)
	for i := range is {
		is[i] = i
	}
	return is
}

// mergeDests merges add, sorted and unique, into o's destinations: ranges
// by union, the last write the later one. One walk of both lists; the
// destinations o lacks are added at the end and sorted once.
func mergeDests(o *sinkObject, add []destState) {
	n := len(o.Dests)
	i := 0
	for _, ds := range add {
		for i < n && compareDest(o.Dests[i].Topic, o.Dests[i].Partition, ds.Topic, ds.Partition) < 0 {
			i++
		}
		if i == n || compareDest(o.Dests[i].Topic, o.Dests[i].Partition, ds.Topic, ds.Partition) != 0 {
			o.Dests = append(o.Dests, destState{Topic: ds.Topic, Partition: ds.Partition,
				LastWriter: ds.LastWriter, LastWrite: ds.LastWrite, Ranges: slices.Clone(ds.Ranges)})
			continue
		}
		t := &o.Dests[i]
		t.Ranges = unionRanges(t.Ranges, ds.Ranges)
		t.encoded = nil
		if ds.LastWrite > t.LastWrite {
			t.LastWriter, t.LastWrite = ds.LastWriter, ds.LastWrite
		}
	}
	if len(o.Dests) > n {
		slices.SortFunc(o.Dests, func(a, b destState) int { return compareDest(a.Topic, a.Partition, b.Topic, b.Partition) })
	}
}

// fairShare is at most n of keys, taken from each writer in turn, so that
// one writer's many deltas never keep another's waiting.
func fairShare(prefix string, keys []string, n int) []string {
	if len(keys) <= n {
		return keys
	}
	var writers [][]string // keys are listed in order, so each writer's are together
	last := ""
	for _, k := range keys {
		w, _, _ := strings.Cut(strings.TrimPrefix(k, prefix+deltasDir), "/")
		if len(writers) == 0 || w != last {
			writers = append(writers, nil)
			last = w
		}
		writers[len(writers)-1] = append(writers[len(writers)-1], k)
	}
	out := make([]string, 0, n)
	for i := 0; len(out) < n; i++ {
		for _, ks := range writers {
			if i < len(ks) && len(out) < n {
				out = append(out, ks[i])
			}
		}
	}
	return out
}
