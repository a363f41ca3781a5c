package object

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// BatchBlobs is Blobs that also reads, writes and deletes many keys in one
// request: a database table can (postgres.Blobs), S3 cannot. Fold uses it
// where Options.Blobs has it, so that a fold costs a few requests per
// batchKeys deltas and bases, not one request each. Each key keeps the
// meaning its one-key call gives it.
type BatchBlobs interface {
	Blobs

	// GetMany returns the object under each key there is one for; a key
	// with no object is absent from the map, as Get's ErrNotFound.
	GetMany(ctx context.Context, keys []string) (map[string]Object, error)

	// PutMany writes each put as Put would, each under its own condition:
	// whether one lands never depends on another. It returns, in puts'
	// order, each one's new version, or "" where its condition did not
	// hold (nothing of it was written). An error leaves the outcome of
	// every put unknown. The keys must be distinct.
	PutMany(ctx context.Context, puts []PutRequest) ([]string, error)

	// DeleteMany removes keys; a missing key is not an error.
	DeleteMany(ctx context.Context, keys []string) error
}

// Object is one key's bytes and version, as Get returns them.
type Object struct {
	Data    []byte
	Version string
}

// PutRequest is one Put of a PutMany: Data under Key if the object is at
// version IfMatch, or, with IfMatch empty, if there is none.
type PutRequest struct {
	Key     string
	Data    []byte
	IfMatch string
}

// batchKeys is how many keys one request of a BatchBlobs carries: enough
// that a fold of a thousand bases is a few requests, few enough that one
// request's bytes (deltas of tens of KB) stay a few MB.
const batchKeys = 128

// chunks splits items into runs of at most batchKeys.
func chunks[T any](items []T) [][]T {
	var out [][]T
	for len(items) > batchKeys {
		out = append(out, items[:batchKeys:batchKeys])
		items = items[batchKeys:]
	}
	if len(items) > 0 {
		out = append(out, items)
	}
	return out
}

// fetch reads keys and returns the object of each key that has one, and
// the error of each key whose read failed (a key with neither has no
// object): through GetMany where Blobs is a BatchBlobs (a failed request
// fails each of its keys), else one Get each, Options.Parallel at a time.
func (s *Tier) fetch(ctx context.Context, keys []string) (map[string]Object, map[string]error) {
	var mu sync.Mutex
	got := make(map[string]Object, len(keys))
	failed := map[string]error{}
	bb, ok := s.opts.Blobs.(BatchBlobs)
	if !ok {
		_ = s.each(ctx, keys, func(ctx context.Context, key string) error {
			data, version, err := s.opts.Blobs.Get(ctx, key)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case errors.Is(err, ErrNotFound):
			case err != nil:
				failed[key] = fmt.Errorf("read %s of %s: %w", key, s.opts.Blobs.Name(), err)
			default:
				got[key] = Object{Data: data, Version: version}
			}
			return nil
		})
		return got, failed
	}
	_ = s.eachChunk(ctx, keys, func(ctx context.Context, chunk []string) error {
		objs, err := bb.GetMany(ctx, chunk)
		mu.Lock()
		defer mu.Unlock()
		for _, key := range chunk {
			if err != nil {
				failed[key] = fmt.Errorf("read %s of %s with %d others at once: %w", key, s.opts.Blobs.Name(), len(chunk)-1, err)
			} else if o, ok := objs[key]; ok {
				got[key] = o
			}
		}
		return nil
	})
	return got, failed
}

// putAll writes puts, each under its own condition, and returns each
// one's outcome in puts' order: its new version, or the error that it did
// not land (ErrPrecondition: refused, nothing written; any other: outcome
// unknown). Through PutMany where Blobs is a BatchBlobs, else one Put
// each, Options.Parallel at a time.
func (s *Tier) putAll(ctx context.Context, puts []PutRequest) ([]string, []error) {
	versions := make([]string, len(puts))
	errs := make([]error, len(puts))
	idx := make([]int, len(puts))
	for i := range idx {
		idx[i] = i
	}
	bb, ok := s.opts.Blobs.(BatchBlobs)
	if !ok {
		_ = s.eachIndex(ctx, idx, 1, func(ctx context.Context, is []int) error {
			p := puts[is[0]]
			versions[is[0]], errs[is[0]] = s.opts.Blobs.Put(ctx, p.Key, p.Data, p.IfMatch)
			return nil
		})
		return versions, errs
	}
	_ = s.eachIndex(ctx, idx, batchKeys, func(ctx context.Context, is []int) error {
		batch := make([]PutRequest, len(is))
		for j, i := range is {
			batch[j] = puts[i]
		}
		got, err := bb.PutMany(ctx, batch)
		if err == nil && len(got) != len(batch) {
			err = fmt.Errorf("%d versions for %d puts", len(got), len(batch))
		}
		for j, i := range is {
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("put %s to %s with %d others at once (outcome unknown): %w", puts[i].Key, s.opts.Blobs.Name(), len(batch)-1, err)
			case got[j] == "":
				errs[i] = fmt.Errorf("put %s to %s: %w", puts[i].Key, s.opts.Blobs.Name(), ErrPrecondition)
			default:
				versions[i] = got[j]
			}
		}
		return nil
	})
	return versions, errs
}

// deleteAll deletes keys, through DeleteMany where Blobs is a BatchBlobs,
// else one Delete each; deleted is called (never concurrently) with each
// run of keys once it is gone. The first error stops it.
func (s *Tier) deleteAll(ctx context.Context, keys []string, deleted func(n int)) error {
	var mu sync.Mutex
	done := func(n int) {
		mu.Lock()
		defer mu.Unlock()
		deleted(n)
	}
	bb, ok := s.opts.Blobs.(BatchBlobs)
	if !ok {
		return s.each(ctx, keys, func(ctx context.Context, key string) error {
			if err := s.opts.Blobs.Delete(ctx, key); err != nil {
				return fmt.Errorf("delete %s of %s: %w", key, s.opts.Blobs.Name(), err)
			}
			done(1)
			return nil
		})
	}
	return s.eachChunk(ctx, keys, func(ctx context.Context, chunk []string) error {
		if err := bb.DeleteMany(ctx, chunk); err != nil {
			return fmt.Errorf("delete %d keys of %s at once (from %s): %w", len(chunk), s.opts.Blobs.Name(), chunk[0], err)
		}
		done(len(chunk))
		return nil
	})
}

// eachChunk calls fn with each run of batchKeys keys, Options.Parallel at
// a time; the first error stops it.
func (s *Tier) eachChunk(ctx context.Context, keys []string, fn func(context.Context, []string) error) error {
	return forEach(ctx, s.opts.Parallel, chunks(keys), fn)
}

// eachIndex calls fn with each run of n of idx, Options.Parallel at a
// time; the first error stops it.
func (s *Tier) eachIndex(ctx context.Context, idx []int, n int, fn func(context.Context, []int) error) error {
	var runs [][]int
	for len(idx) > n {
		runs = append(runs, idx[:n:n])
		idx = idx[n:]
	}
	if len(idx) > 0 {
		runs = append(runs, idx)
	}
	return forEach(ctx, s.opts.Parallel, runs, fn)
}
