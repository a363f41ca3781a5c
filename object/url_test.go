package object

import (
	"context"
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want Location
		err  string // a substring of the error; empty: no error
	}{
		{raw: "s3://lake/coverage", want: Location{Scheme: "s3", Bucket: "lake", Prefix: "coverage/"}},
		{raw: "s3://lake/coverage/prod/", want: Location{Scheme: "s3", Bucket: "lake", Prefix: "coverage/prod/"}},
		{raw: "s3://lake", want: Location{Scheme: "s3", Bucket: "lake"}},
		{raw: "s3://lake/", want: Location{Scheme: "s3", Bucket: "lake"}},
		{raw: "file:///var/lib/covmirror", want: Location{Scheme: "file", Dir: "/var/lib/covmirror"}},
		{raw: "file:///var/lib/covmirror/../x/", want: Location{Scheme: "file", Dir: "/var/lib/x"}},
		{raw: "file://localhost/srv/cov", want: Location{Scheme: "file", Dir: "/srv/cov"}},
		{raw: "s3:///coverage", err: "no bucket"},
		{raw: "s3://", err: "no bucket"},
		{raw: "s3:lake", err: "no bucket"},
		{raw: "s3://lake:9000/x", err: "no port"},
		{raw: "s3://lake/a//b", err: "empty path segment"},
		{raw: "s3://lake/../x", err: `"." or ".." segment`},
		{raw: "s3://lake/a/./b", err: `"." or ".." segment`},
		{raw: "s3://lake/%2e%2e/", err: `"." or ".." segment`},
		{raw: "s3://lake/..x/", want: Location{Scheme: "s3", Bucket: "lake", Prefix: "..x/"}},
		{raw: "file://var/lib/covmirror", err: "relative path"},
		{raw: "file:covmirror", err: "relative path"},
		{raw: "file://", err: "relative path"},
		{raw: "/var/lib/covmirror", err: "no scheme"},
		{raw: "gs://lake/coverage", err: `unsupported scheme "gs"`},
		{raw: "s3://lake/x?versionId=1", err: "query"},
		{raw: "s3://key:secret@lake/x", err: "user name"},
		{raw: "s3://lake/%zz", err: "parsing location"},
	} {
		got, err := ParseURL(c.raw)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("ParseURL(%q): %v", c.raw, err)
		case c.err == "" && got != c.want:
			t.Errorf("ParseURL(%q) = %+v, want %+v", c.raw, got, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseURL(%q) = %+v, %v; want an error saying %q", c.raw, got, err, c.err)
		case c.err != "" && !strings.Contains(err.Error(), "s3://BUCKET/PREFIX or file:///ABSOLUTE/DIR"):
			t.Errorf("ParseURL(%q): %v does not say which forms are expected", c.raw, err)
		}
		if err == nil {
			again, err := ParseURL(got.String())
			if err != nil || again != got {
				t.Errorf("ParseURL(%q).String() = %q parses to %+v, %v", c.raw, got.String(), again, err)
			}
		}
	}
}

func TestOpenBlobs(t *testing.T) {
	testCredentials(t)
	ctx := context.Background()
	dir := t.TempDir()
	b, err := OpenBlobs(ctx, "file://"+dir, S3Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, ok := b.(*DirBlobs)
	if !ok {
		t.Fatalf("file URL opened %T", b)
	}
	defer d.Close()
	if _, err := b.Put(ctx, "k", []byte("x"), ""); err != nil {
		t.Fatal(err)
	}

	endpoint := newS3Stub(t, &s3Stub{bucket: "lake"})
	// The URL's bucket and prefix win over the options'.
	b, err = OpenBlobs(ctx, "s3://lake/cov", S3Options{Bucket: "other", Prefix: "elsewhere", Endpoint: endpoint, ForcePathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	if b.Name() != "s3://lake/cov/" {
		t.Fatalf("Name = %q", b.Name())
	}
	if _, err := b.Put(ctx, "k", []byte("x"), ""); err != nil {
		t.Fatal(err)
	}
	if keys, err := openS3(t, endpoint, "lake", "", nil).List(ctx, ""); err != nil || len(keys) != 1 || keys[0] != "cov/k" {
		t.Fatalf("keys in the bucket = %q, %v; want [cov/k]", keys, err)
	}
	if _, err := OpenBlobs(ctx, "file://relative", S3Options{}); err == nil {
		t.Fatal("a relative file URL opened")
	}
}

// TestS3OptionsValidate: a bucket is required and an endpoint must be an
// http(s) URL with a host; a prefix gets its trailing slash.
func TestS3OptionsValidate(t *testing.T) {
	for _, o := range []S3Options{{}, {Bucket: "b", Endpoint: "seaweed:8333"}, {Bucket: "b", Endpoint: "ftp://x"}, {Bucket: "b", Endpoint: "http://"}} {
		if err := o.Validate(); err == nil {
			t.Errorf("%+v: accepted", o)
		}
	}
	o := S3Options{Bucket: "b", Prefix: "coverage", Endpoint: "http://127.0.0.1:8333"}
	o.EnsureDefaults()
	if err := o.Validate(); err != nil || o.Prefix != "coverage/" {
		t.Fatalf("%+v: %v", o, err)
	}
}
