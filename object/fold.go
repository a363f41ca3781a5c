package object

import (
	"context"
	"errors"
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
	var mu sync.Mutex
	deltas := map[string]*delta{}
	err = s.each(ctx, keys, func(ctx context.Context, key string) error {
		d, err := s.readDelta(ctx, key)
		switch {
		case errors.Is(err, ErrNotFound):
			return nil // another fold took it
		case unreadable(err):
			s.opts.Logger.Error("object: fold: a delta cannot be read and is left as it is; restore it or move it aside", "key", key, "err", err)
			mu.Lock()
			res.Left++
			mu.Unlock()
			return nil
		case err != nil:
			return err
		}
		mu.Lock()
		deltas[key] = d
		mu.Unlock()
		return nil
	})
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
	into := map[group]*base{}
	touches := func(objs []*sinkObject) []group {
		var gs []group
		for _, o := range objs {
			for _, ds := range o.Dests {
				g := groupOf(ds.Topic, ds.Partition)
				b := into[g]
				if b == nil {
					b = &base{Topic: g.topic, Group: g.n}
					into[g] = b
				}
				mergeDest(sinkIn(&b.Sinks, o.Sink), ds)
				if !slices.Contains(gs, g) {
					gs = append(gs, g)
				}
			}
		}
		return gs
	}
	deltaGroups := map[string][]group{}
	for key, d := range deltas {
		deltaGroups[key] = touches(d.Sinks)
	}
	oldGroups := make([][]group, len(olds))
	for i, l := range olds {
		oldGroups[i] = touches([]*sinkObject{l.o})
	}

	failed := map[group]bool{}
	groups := make([]string, 0, len(into))
	byKey := map[string]group{}
	for g := range into {
		k := g.key(s.opts.Prefix)
		groups = append(groups, k)
		byKey[k] = g
	}
	slices.Sort(groups)
	err = s.each(ctx, groups, func(ctx context.Context, key string) error {
		g := byKey[key]
		if err := s.writeBase(ctx, key, into[g]); err != nil {
			s.opts.Logger.Error("object: fold: a base was not written; what it holds stays where it is for the next fold", "key", key, "err", err)
			mu.Lock()
			failed[g] = true
			mu.Unlock()
			return nil
		}
		mu.Lock()
		res.Bases++
		mu.Unlock()
		return ctx.Err()
	})
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
	err = s.each(ctx, done, func(ctx context.Context, key string) error {
		if err := s.opts.Blobs.Delete(ctx, key); err != nil {
			return fmt.Errorf("delete %s of %s (folded; the next fold folds it again, harmlessly): %w", key, s.opts.Blobs.Name(), err)
		}
		mu.Lock()
		res.Deltas++
		mu.Unlock()
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("object: fold: %w", err)
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

// writeBase merges add into the base under key until a conditional write
// of the merge lands.
func (s *Tier) writeBase(ctx context.Context, key string, add *base) error {
	var last error
	for attempt := 1; ; attempt++ {
		g, version, err := s.readBase(ctx, key)
		if err != nil {
			if unreadable(err) {
				return err
			}
			last = err
		} else {
			if g == nil {
				g = &base{Topic: add.Topic, Group: add.Group}
			}
			for _, o := range add.Sinks {
				into := sinkIn(&g.Sinks, o.Sink)
				for _, ds := range o.Dests {
					mergeDest(into, ds)
				}
			}
			_, err := s.opts.Blobs.Put(ctx, key, encodeBase(g), version)
			if err == nil {
				return nil
			}
			last = err
		}
		if attempt >= s.opts.MaxAttempts {
			return fmt.Errorf("%s: %d attempts: %w", key, attempt, last)
		}
		if err := s.sleep(ctx, attempt); err != nil {
			return fmt.Errorf("%s: %w (after: %w)", key, err, last)
		}
	}
}

// mergeDest merges ds into o's state of its destination: ranges by
// union, the last write the later one.
func mergeDest(o *sinkObject, ds destState) {
	i, ok := slices.BinarySearchFunc(o.Dests, ds, func(a, b destState) int {
		return compareDest(a.Topic, a.Partition, b.Topic, b.Partition)
	})
	if !ok {
		o.Dests = slices.Insert(o.Dests, i, destState{Topic: ds.Topic, Partition: ds.Partition,
			LastWriter: ds.LastWriter, LastWrite: ds.LastWrite, Ranges: slices.Clone(ds.Ranges)})
		return
	}
	t := &o.Dests[i]
	t.Ranges = unionRanges(t.Ranges, ds.Ranges)
	t.encoded = nil
	if ds.LastWrite > t.LastWrite {
		t.LastWriter, t.LastWrite = ds.LastWriter, ds.LastWrite
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
