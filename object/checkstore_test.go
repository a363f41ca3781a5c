package object

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func openTestDir(t *testing.T) *DirBlobs {
	t.Helper()
	d, err := OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// mustPass runs CheckStore on b and requires a clean pass that left no
// scratch key behind.
func mustPass(t *testing.T, b Blobs, n int) CheckReport {
	t.Helper()
	r, err := CheckStore(context.Background(), b, n)
	t.Log(r)
	if err != nil || !r.OK() {
		t.Fatalf("CheckStore: %v", err)
	}
	if r.IfMatch != (RaceCount{Won: 1, Refused: n - 1}) || r.Create != (RaceCount{Won: 1, Refused: n - 1}) {
		t.Fatalf("races: if-match %+v, create %+v; want one winner and %d refused each", r.IfMatch, r.Create, n-1)
	}
	if left, err := b.List(context.Background(), "covmirror-check-store/"); err != nil || len(left) != 0 {
		t.Fatalf("scratch keys left behind: %q, %v", left, err)
	}
	return r
}

// mustFail runs CheckStore on b and requires ErrStoreUnsafe naming each
// of the defects (substrings of the report's defects).
func mustFail(t *testing.T, b Blobs, n int, defects ...string) CheckReport {
	t.Helper()
	r, err := CheckStore(context.Background(), b, n)
	t.Log(r)
	if !errors.Is(err, ErrStoreUnsafe) || r.OK() {
		t.Fatalf("CheckStore on a broken store: %v, want ErrStoreUnsafe", err)
	}
	all := strings.Join(r.Defects, "\n")
	for _, d := range defects {
		if !strings.Contains(all, d) || !strings.Contains(err.Error(), d) {
			t.Errorf("the report and error do not name %q:\n%s\n%v", d, all, err)
		}
	}
	return r
}

func TestCheckStorePassesDir(t *testing.T) { mustPass(t, openTestDir(t), 16) }

func TestCheckStorePassesS3Stub(t *testing.T) {
	testCredentials(t)
	for _, missing := range []int{http.StatusNotFound, http.StatusPreconditionFailed} {
		endpoint := newS3Stub(t, &s3Stub{missingIfMatch: missing})
		mustPass(t, openS3(t, endpoint, "bucket", "tier", nil), 16)
	}
}

// A store that ignores preconditions altogether, over the wire.
func TestCheckStoreFailsIgnoringStub(t *testing.T) {
	testCredentials(t)
	endpoint := newS3Stub(t, &s3Stub{broken: true})
	r := mustFail(t, openS3(t, endpoint, "bucket", "", nil), 32,
		"32 of 32 writes with the same ETag (If-Match) succeeded: the store does not honour If-Match",
		"32 of 32 creates (If-None-Match: *) of the same new key succeeded",
		"seaweedfs #8800",
		"a create (If-None-Match: *) of an existing key succeeded",
		"a write with If-Match to a missing key succeeded",
		"a write with a stale ETag (If-Match) succeeded")
	if r.IfMatch.Won != 32 || r.Create.Won != 32 {
		t.Fatalf("races %+v %+v, want every write a winner", r.IfMatch, r.Create)
	}
}

// checkThenAct is the common bug: the precondition is checked, then the
// object written, not atomically. Sequential writes behave; concurrent
// ones all pass the check before any writes.
type checkThenAct struct {
	Blobs
	gap time.Duration
}

func (c checkThenAct) Put(ctx context.Context, key string, data []byte, ifMatch string) (string, error) {
	_, v, err := c.Get(ctx, key)
	switch {
	case errors.Is(err, ErrNotFound):
		v = ""
	case err != nil:
		return "", err
	}
	if v != ifMatch {
		return "", ErrPrecondition
	}
	time.Sleep(c.gap)
	for { // write whatever is there now: the check is already done
		_, now, err := c.Get(ctx, key)
		if errors.Is(err, ErrNotFound) {
			now = ""
		} else if err != nil {
			return "", err
		}
		if nv, err := c.Blobs.Put(ctx, key, data, now); !errors.Is(err, ErrPrecondition) {
			return nv, err
		}
	}
}

func TestCheckStoreFailsCheckThenAct(t *testing.T) {
	r := mustFail(t, checkThenAct{Blobs: openTestDir(t), gap: 50 * time.Millisecond}, 8,
		"of 8 writes with the same ETag (If-Match) succeeded: the store does not honour If-Match under concurrency",
		"of 8 creates (If-None-Match: *) of the same new key succeeded")
	if strings.Contains(strings.Join(r.Defects, "\n"), "stale ETag") {
		t.Errorf("sequential checks should pass on a check-then-act store: %q", r.Defects)
	}
}

// refusing refuses every conditional write after the first create.
type refusing struct {
	Blobs
}

func (r refusing) Put(ctx context.Context, key string, data []byte, ifMatch string) (string, error) {
	if strings.HasSuffix(key, "/object") && ifMatch == "" {
		return r.Blobs.Put(ctx, key, data, ifMatch)
	}
	return "", ErrPrecondition
}

func TestCheckStoreFailsRefusingEverything(t *testing.T) {
	mustFail(t, refusing{openTestDir(t)}, 4,
		"none of 4 writes with the same ETag (If-Match) succeeded",
		"none of 4 creates (If-None-Match: *) of the same new key succeeded")
}

// Transport failures make the check inconclusive, never a verdict of
// unsafe.
func TestCheckStoreInconclusive(t *testing.T) {
	testCredentials(t)
	endpoint := newS3Stub(t, &s3Stub{})
	ft := newFaultTransport(func(r *http.Request) httpFault {
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "create-race") {
			return fault503
		}
		return faultNone
	})
	r, err := CheckStore(context.Background(), openS3(t, endpoint, "bucket", "", ft), 4)
	if err == nil || errors.Is(err, ErrStoreUnsafe) || !strings.Contains(err.Error(), "inconclusive") {
		t.Fatalf("CheckStore with every create failing: %v, want an inconclusive error", err)
	}
	if r.Create.Unknown != 4 || !r.OK() {
		t.Fatalf("report %+v", r)
	}
}
