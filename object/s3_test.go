package object

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/internal/testseed"
)

// testCredentials puts throwaway static credentials in the environment,
// where the AWS default chain finds them (the stub does not check them).
func testCredentials(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "covmirror")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "covmirror-test-secret")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// openS3 is S3Blobs on endpoint's bucket, through rt when not nil.
func openS3(t *testing.T, endpoint, bucket, prefix string, rt http.RoundTripper) *S3Blobs {
	t.Helper()
	opts := S3Options{Bucket: bucket, Prefix: prefix, Endpoint: endpoint, ForcePathStyle: true}
	if rt != nil {
		opts.HTTPClient = &http.Client{Transport: rt}
	}
	b, err := NewS3Blobs(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// blobsBasics checks the Blobs contract on b, under keys starting with
// base: any backend must pass it.
func blobsBasics(t *testing.T, b Blobs, base string) {
	t.Helper()
	ctx := context.Background()
	k := base + "sink-a"
	if _, _, err := b.Get(ctx, k); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a missing key: %v, want ErrNotFound", err)
	}
	if _, err := b.Put(ctx, k, []byte("one"), `"feedfacefeedfacefeedfacefeedface"`); !errors.Is(err, ErrPrecondition) {
		t.Fatalf("If-Match on a missing key: %v, want ErrPrecondition", err)
	}
	v1, err := b.Put(ctx, k, []byte("one"), "")
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, err := b.Put(ctx, k, []byte("again"), ""); !errors.Is(err, ErrPrecondition) {
		t.Fatalf("create of an existing key: %v, want ErrPrecondition", err)
	}
	data, v, err := b.Get(ctx, k)
	if err != nil || v != v1 || string(data) != "one" {
		t.Fatalf("Get after create = %q, %s, %v; want \"one\", %s", data, v, err, v1)
	}
	v2, err := b.Put(ctx, k, []byte("two"), v1)
	if err != nil || v2 == v1 {
		t.Fatalf("Put If-Match current = %s, %v; want a new version", v2, err)
	}
	if _, err := b.Put(ctx, k, []byte("three"), v1); !errors.Is(err, ErrPrecondition) {
		t.Fatalf("Put If-Match stale: %v, want ErrPrecondition", err)
	}
	if data, v, err := b.Get(ctx, k); err != nil || v != v2 || string(data) != "two" {
		t.Fatalf("Get after the refused write = %q, %s, %v; want \"two\", %s", data, v, err, v2)
	}
	want := []string{"sink-a"}
	for i := range 5 {
		name := fmt.Sprintf("sink-%c/x", 'f'-i)
		if _, err := b.Put(ctx, base+name, []byte(name), ""); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	if _, err := b.Put(ctx, base+"other/sink", []byte("x"), ""); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	got, err := b.List(ctx, base+"sink-")
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		got[i] = strings.TrimPrefix(got[i], base)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("List = %q, want %q", got, want)
	}
	if err := b.Delete(ctx, k); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, k); err != nil {
		t.Fatalf("Delete of a missing key: %v", err)
	}
	if _, _, err := b.Get(ctx, k); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
}

func TestS3BlobsBasics(t *testing.T) {
	testCredentials(t)
	for _, missing := range []int{http.StatusNotFound, http.StatusPreconditionFailed} {
		t.Run(fmt.Sprintf("missing-if-match-%d", missing), func(t *testing.T) {
			endpoint := newS3Stub(t, &s3Stub{missingIfMatch: missing})
			blobsBasics(t, openS3(t, endpoint, "bucket", "coverage", nil), "")
		})
	}
}

func TestDirBlobsBasics(t *testing.T) {
	d, err := OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	blobsBasics(t, d, "t/")
}

// expectPut is what a Put under fault f with a precondition that holds
// (or not) must report: written or not, and whether ErrPrecondition is
// required (1), forbidden (-1) or either is right (0: the store refused,
// but the answer was lost, so the client cannot know).
func expectPut(f httpFault, holds bool) (written bool, precondition int) {
	switch {
	case f == fault412 || f == fault409:
		return false, 1
	case f == faultNone:
		if holds {
			return true, -1
		}
		return false, 1
	case !f.forwarded():
		return false, -1
	case holds:
		return true, -1
	}
	return false, 0
}

// checkPut checks a Put's outcome (read through a clean client) and
// report against expectPut: ErrPrecondition only when nothing was
// written; any other failure says the outcome is unknown and names the key.
func checkPut(t *testing.T, clean Blobs, key string, data, before []byte, err error, f httpFault, holds bool) {
	t.Helper()
	wantWritten, wantPrecondition := expectPut(f, holds)
	after, _, gerr := clean.Get(context.Background(), key)
	if gerr != nil && !errors.Is(gerr, ErrNotFound) {
		t.Fatal(gerr)
	}
	written := bytes.Equal(after, data)
	if !written && !bytes.Equal(after, before) {
		t.Fatalf("fault %s: the object holds %q, neither the old %q nor the new %q", f, after, before, data)
	}
	if written != wantWritten {
		t.Errorf("fault %s, precondition holds %v: written = %v, want %v (err %v)", f, holds, written, wantWritten, err)
	}
	isPrecondition := errors.Is(err, ErrPrecondition)
	switch {
	case wantPrecondition == 1 && !isPrecondition:
		t.Errorf("fault %s, precondition holds %v: %v, want ErrPrecondition", f, holds, err)
	case wantPrecondition == -1 && isPrecondition:
		t.Errorf("fault %s, precondition holds %v: ErrPrecondition, but the write may have landed: %v", f, holds, err)
	case wantWritten && f == faultNone && err != nil:
		t.Errorf("fault %s: %v, want success", f, err)
	case err != nil && !isPrecondition:
		if errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "outcome unknown") || !strings.Contains(err.Error(), key) {
			t.Errorf("fault %s: an unknown outcome must say so and name the key: %v", f, err)
		}
	}
}

// putFaultTable runs one Put per fault, with a precondition that holds
// and one that does not, and checks each is classified as the fault
// demands: ErrPrecondition only when the store wrote nothing because of
// a precondition; an unknown outcome for everything else that failed.
func putFaultTable(t *testing.T, open func(http.RoundTripper) Blobs, clean Blobs, base string) {
	ctx := context.Background()
	for f := faultNone; f < faultCount; f++ {
		for _, holds := range []bool{true, false} {
			key := fmt.Sprintf("%sfault-%d-%v", base, f, holds)
			before := []byte("before")
			v, err := clean.Put(ctx, key, before, "")
			if err != nil {
				t.Fatal(err)
			}
			ifMatch := v
			if !holds {
				ifMatch = `"00000000000000000000000000000000"`
			}
			ft := newFaultTransport(once(http.MethodPut, f))
			data := []byte("after " + key)
			_, err = open(ft).Put(ctx, key, data, ifMatch)
			checkPut(t, clean, key, data, before, err, f, holds)
		}
	}
}

func TestS3PutFaultClassification(t *testing.T) {
	testCredentials(t)
	endpoint := newS3Stub(t, &s3Stub{})
	clean := openS3(t, endpoint, "bucket", "p", nil)
	putFaultTable(t, func(rt http.RoundTripper) Blobs { return openS3(t, endpoint, "bucket", "p", rt) }, clean, "")
}

// TestS3PutFaultsRandom runs a seeded sequence of Puts, a random fault in
// about half, each with a current, stale or create precondition, against
// a reference (the object read through a clean client before and after).
func TestS3PutFaultsRandom(t *testing.T) {
	testCredentials(t)
	seed := testseed.Seed(t)
	endpoint := newS3Stub(t, &s3Stub{})
	clean := openS3(t, endpoint, "bucket", "", nil)
	ft := newFaultTransport(seeded(seed, 0.5))
	faulty := openS3(t, endpoint, "bucket", "", ft)
	ctx := context.Background()
	pick := seeded(seed+1, 1) // a second stream for the preconditions
	for i := range 300 {
		key := fmt.Sprintf("k%d", i%3)
		before, v, err := clean.Get(ctx, key)
		if err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
		ifMatch, holds := v, true // the current version, or a create of a missing key
		switch pick(&http.Request{Method: http.MethodPut}) % 3 {
		case 1:
			ifMatch, holds = `"0000000000000000000000000000000`+fmt.Sprint(i%10)+`"`, false
		case 2:
			ifMatch, holds = "", v == ""
		}
		data := fmt.Appendf(nil, "op %d", i)
		_, err = faulty.Put(ctx, key, data, ifMatch)
		checkPut(t, clean, key, data, before, err, ft.last(), holds)
		if t.Failed() {
			t.Fatalf("op %d (seed %d)", i, seed)
		}
	}
}

func TestS3GetAndList(t *testing.T) {
	testCredentials(t)
	endpoint := newS3Stub(t, &s3Stub{})
	ctx := context.Background()
	clean := openS3(t, endpoint, "bucket", "", nil)
	v, err := clean.Put(ctx, "k", []byte("x"), "")
	if err != nil {
		t.Fatal(err)
	}
	// A read is retried by the SDK: one 503 or reset costs nothing.
	for _, f := range []httpFault{fault503, faultResetBefore, faultTimeoutAfter} {
		data, got, err := openS3(t, endpoint, "bucket", "", newFaultTransport(once(http.MethodGet, f))).Get(ctx, "k")
		if err != nil || got != v || string(data) != "x" {
			t.Errorf("Get after one %s = %q, %s, %v; want a retried success", f, data, got, err)
		}
	}
	wrong := openS3(t, endpoint, "no-such-bucket", "", nil)
	if _, _, err := wrong.Get(ctx, "k"); err == nil || errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "no-such-bucket") {
		t.Errorf("Get from a missing bucket: %v; want an error naming the bucket, not ErrNotFound", err)
	}
	if _, err := wrong.Put(ctx, "k", []byte("x"), v); err == nil || errors.Is(err, ErrPrecondition) {
		t.Errorf("If-Match Put to a missing bucket: %v; want an error other than ErrPrecondition", err)
	}
	if _, err := wrong.List(ctx, ""); err == nil {
		t.Error("List of a missing bucket succeeded")
	}
}

// hangAfter forwards a request, then holds the answer until the request's
// context ends: a write that landed whose client gave up waiting. The
// forward itself ignores the deadline, which on a loaded machine could
// otherwise end it before the write lands.
type hangAfter struct{}

func (hangAfter) RoundTrip(r *http.Request) (*http.Response, error) {
	rsp, err := http.DefaultTransport.RoundTrip(r.WithContext(context.WithoutCancel(r.Context())))
	if err != nil {
		return nil, err
	}
	_ = rsp.Body.Close()
	<-r.Context().Done()
	return nil, r.Context().Err()
}

func TestS3PutDeadlineAfterApplied(t *testing.T) {
	testCredentials(t)
	endpoint := newS3Stub(t, &s3Stub{})
	clean := openS3(t, endpoint, "bucket", "", nil)
	v, err := clean.Put(context.Background(), "k", []byte("before"), "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = openS3(t, endpoint, "bucket", "", hangAfter{}).Put(ctx, "k", []byte("after"), v)
	checkPut(t, clean, "k", []byte("after"), []byte("before"), err, faultTimeoutAfter, true)
}
