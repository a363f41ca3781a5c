package object

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// ErrStoreUnsafe: CheckStore found the store getting conditional writes
// wrong. Writing coverage there could drop another writer's ranges
// silently; the error names each defect.
var ErrStoreUnsafe = errors.New("store does not honour conditional writes")

// DefaultCheckWriters is how many concurrent writes CheckStore races when
// asked for fewer than two.
const DefaultCheckWriters = 32

// CheckReport is what CheckStore saw, for an operator to read.
type CheckReport struct {
	// Store is the Blobs' name; Key the scratch prefix the check wrote under.
	Store, Key string
	// Writers is how many concurrent writes each race ran.
	Writers int
	// IfMatch counts the race of writes all sent with the object's current
	// ETag: exactly one may succeed.
	IfMatch RaceCount
	// Create counts the race of creates (If-None-Match: *) of one new key:
	// exactly one may succeed.
	Create RaceCount
	// Defects say, in words, each way the store got conditional writes
	// wrong; empty when it passed.
	Defects []string
}

// RaceCount is how one race's writes ended.
type RaceCount struct {
	// Won succeeded; Refused failed with ErrPrecondition; Unknown failed
	// otherwise (a transport error: the write may have landed).
	Won, Refused, Unknown int
}

// OK reports whether the store passed.
func (r CheckReport) OK() bool { return len(r.Defects) == 0 }

// String is the report as lines for a terminal.
func (r CheckReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "check-store %s (scratch %s)\n", r.Store, r.Key)
	fmt.Fprintf(&b, "  %d writes with the same If-Match ETag: %d succeeded, %d refused, %d unknown (want exactly 1 success)\n",
		r.Writers, r.IfMatch.Won, r.IfMatch.Refused, r.IfMatch.Unknown)
	fmt.Fprintf(&b, "  %d creates of one new key: %d succeeded, %d refused, %d unknown (want exactly 1 success)\n",
		r.Writers, r.Create.Won, r.Create.Refused, r.Create.Unknown)
	if r.OK() {
		b.WriteString("  OK: the store honours If-Match and If-None-Match\n")
	}
	for _, d := range r.Defects {
		b.WriteString("  DEFECT: " + d + "\n")
	}
	return b.String()
}

const knownBugs = "see seaweedfs #8800 / minio #21526 / versitygw #2288"

// CheckStore proves, on scratch keys unique to this run, that b honours
// conditional writes as the Tier relies on: a create of an existing key
// is refused, If-Match on a missing key or with a stale ETag is refused,
// and of n concurrent writes with the same If-Match ETag (and of n
// concurrent creates of one new key) exactly one succeeds and its bytes
// are what the object holds. It deletes its keys when done.
//
// A defect is reported in the CheckReport and returned wrapped in
// ErrStoreUnsafe. Any other error (the store unreachable, a race whose
// writes all failed with transport errors) means the check could not
// conclude; the report holds what it saw so far.
func CheckStore(ctx context.Context, b Blobs, n int) (CheckReport, error) {
	if n < 2 {
		n = DefaultCheckWriters
	}
	var id [8]byte
	_, _ = rand.Read(id[:])
	base := fmt.Sprintf("covmirror-check-store/%s-%s/", time.Now().UTC().Format("20060102T150405Z"), hex.EncodeToString(id[:]))
	r := CheckReport{Store: b.Name(), Key: base, Writers: n}
	obj, absent, fresh := base+"object", base+"absent", base+"create-race"
	defer func() {
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		for _, k := range []string{obj, absent, fresh} {
			_ = b.Delete(cleanup, k) // best effort: a leftover scratch key harms nothing
		}
	}()
	fail := func(what string, err error) (CheckReport, error) {
		return r, fmt.Errorf("check-store %s: %s: %w", b.Name(), what, err)
	}

	body := []byte("covmirror check-store " + base)
	v0, err := b.Put(ctx, obj, body, "")
	if err != nil {
		return fail("creating scratch object "+obj, err)
	}
	data, v, err := b.Get(ctx, obj)
	if err != nil {
		return fail("reading scratch object "+obj, err)
	}
	if v != v0 || !bytes.Equal(data, body) {
		r.Defects = append(r.Defects, fmt.Sprintf("a read returned version %s and %d bytes right after a write returned version %s with %d bytes: "+
			"the version a read returns cannot be used for the next conditional write", v, len(data), v0, len(body)))
	}
	if keys, err := b.List(ctx, base); err != nil {
		return fail("listing "+base, err)
	} else if !slices.Contains(keys, obj) {
		r.Defects = append(r.Defects, fmt.Sprintf("a created object (%s) is missing from the listing of its prefix (%q)", obj, keys))
	}

	// Single refusals: each write below must fail with ErrPrecondition.
	for _, c := range []struct {
		key, ifMatch, defect string
	}{
		{obj, "", "a create (If-None-Match: *) of an existing key succeeded: the store does not honour If-None-Match and would overwrite another writer's object"},
		{absent, v0, "a write with If-Match to a missing key succeeded (it created the key): the store does not honour If-Match on absent keys"},
		{obj, `"0123456789abcdef0123456789abcdef"`, "a write with a stale ETag (If-Match) succeeded: the store ignores If-Match and would overwrite another writer's ranges"},
	} {
		_, err := b.Put(ctx, c.key, []byte("covmirror check-store: must be refused"), c.ifMatch)
		switch {
		case err == nil:
			r.Defects = append(r.Defects, c.defect)
		case !errors.Is(err, ErrPrecondition):
			return fail("a write the store should refuse", err)
		}
	}

	// The If-Match race, from the object's version now (a defect above
	// may have changed it).
	if _, v0, err = b.Get(ctx, obj); err != nil {
		return fail("reading scratch object "+obj, err)
	}
	if r.IfMatch, err = race(ctx, b, obj, v0, n, &r.Defects, "writes with the same ETag (If-Match)",
		"the store does not honour If-Match under concurrency; "+knownBugs); err != nil {
		return fail("racing "+obj, err)
	}
	if r.Create, err = race(ctx, b, fresh, "", n, &r.Defects, "creates (If-None-Match: *) of the same new key",
		"the store does not honour If-None-Match under concurrency; "+knownBugs); err != nil {
		return fail("racing "+fresh, err)
	}
	if !r.OK() {
		return r, fmt.Errorf("%w: %s: %s", ErrStoreUnsafe, b.Name(), strings.Join(r.Defects, "; "))
	}
	return r, nil
}

// race runs n concurrent Puts of distinct bodies to key with ifMatch,
// released together, and checks that exactly one won and that the object
// holds the winner's bytes at the winner's version.
func race(ctx context.Context, b Blobs, key, ifMatch string, n int, defects *[]string, what, why string) (RaceCount, error) {
	type result struct {
		body    []byte
		version string
		err     error
	}
	results := make([]result, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range results {
		results[i].body = fmt.Appendf(nil, "covmirror check-store %s writer %d", key, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i].version, results[i].err = b.Put(ctx, key, results[i].body, ifMatch)
		}()
	}
	close(start)
	wg.Wait()

	var c RaceCount
	var winner *result
	var unknown error
	for i := range results {
		switch err := results[i].err; {
		case err == nil:
			c.Won++
			winner = &results[i]
		case errors.Is(err, ErrPrecondition):
			c.Refused++
		default:
			c.Unknown++
			unknown = err
		}
	}
	switch {
	case c.Won > 1:
		*defects = append(*defects, fmt.Sprintf("%d of %d %s succeeded: %s", c.Won, n, what, why))
		return c, nil
	case c.Won == 0 && c.Unknown > 0:
		return c, fmt.Errorf("no write succeeded and %d failed without an answer, so the race is inconclusive: %w", c.Unknown, unknown)
	case c.Won == 0:
		*defects = append(*defects, fmt.Sprintf("none of %d %s succeeded, though one should have: the store refuses conditional writes it should accept, and no checkpoint could ever land", n, what))
		return c, nil
	}
	data, v, err := b.Get(ctx, key)
	if err != nil {
		return c, fmt.Errorf("reading %s after the race: %w", key, err)
	}
	if !bytes.Equal(data, winner.body) || v != winner.version {
		*defects = append(*defects, fmt.Sprintf("after %d %s, the object holds %q at version %s, not the one successful write's bytes at version %s: "+
			"a write that was reported as refused (or a lost one) was applied", n, what, data, v, winner.version))
	}
	return c, nil
}
