package object

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/covmirror/covmirror/internal/redact"
)

// Location is where a URL says the objects live: an S3 bucket and prefix,
// or a local directory.
type Location struct {
	// Scheme is "s3" or "file".
	Scheme string
	// Bucket and Prefix are set for s3; Prefix has no leading "/" and,
	// when not empty, ends in "/".
	Bucket, Prefix string
	// Dir is set for file: an absolute, cleaned path.
	Dir string
}

// String is the location as a URL.
func (l Location) String() string {
	if l.Scheme == "s3" {
		return "s3://" + l.Bucket + "/" + l.Prefix
	}
	return (&url.URL{Scheme: "file", Path: l.Dir}).String()
}

const urlForms = "s3://BUCKET/PREFIX or file:///ABSOLUTE/DIR"

// ParseURL parses s3://BUCKET/PREFIX (the prefix may be empty) or
// file:///DIR (an absolute path). Other schemes, a missing bucket, a
// relative path and queries or fragments (which neither form has) are
// errors that say which form was expected.
func ParseURL(raw string) (Location, error) {
	// Named as redact.URL shows it: never its user information, query
	// or fragment (an access key, a signature), and never url.Parse's
	// error, which quotes it whole.
	where := redact.URL(raw)
	u, err := url.Parse(raw)
	if err != nil || redact.StrayAt(raw) {
		return Location{}, fmt.Errorf("object: parsing location %q: not a URL (want %s)", where, urlForms)
	}
	bad := func(why string) (Location, error) {
		return Location{}, fmt.Errorf("object: location %q: %s (want %s)", where, why, urlForms)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return bad("a query, fragment or user name has no meaning here")
	}
	switch u.Scheme {
	case "s3":
		if u.Opaque != "" || u.Host == "" {
			return bad("no bucket")
		}
		if u.Port() != "" {
			return bad("a bucket has no port; set the endpoint separately")
		}
		prefix := strings.TrimPrefix(u.Path, "/")
		if prefix != "" && !strings.HasSuffix(prefix, "/") {
			prefix += "/"
		}
		if strings.Contains(prefix, "//") {
			return bad("an empty path segment in the prefix")
		}
		// As Options.Prefix: a store or proxy that normalizes paths would
		// resolve these to another prefix, or outside the bucket.
		for seg := range strings.SplitSeq(strings.TrimSuffix(prefix, "/"), "/") {
			if seg == "." || seg == ".." {
				return bad(`a "." or ".." segment in the prefix`)
			}
		}
		return Location{Scheme: "s3", Bucket: u.Host, Prefix: prefix}, nil
	case "file":
		if u.Opaque != "" || (u.Host != "" && u.Host != "localhost") || !filepath.IsAbs(u.Path) {
			return bad("a relative path (a file URL has three slashes before an absolute path)")
		}
		return Location{Scheme: "file", Dir: filepath.Clean(u.Path)}, nil
	case "":
		return bad("no scheme")
	}
	return bad(fmt.Sprintf("unsupported scheme %q", u.Scheme))
}

// OpenBlobs opens the Blobs a location URL names: S3Blobs for s3:// (the
// URL's bucket and prefix replace those in opts, which supplies the
// endpoint, region, addressing style and HTTP client), a directory for
// file://. It does not check the store; CheckStore does.
func OpenBlobs(ctx context.Context, rawURL string, opts S3Options) (Blobs, error) {
	loc, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	if loc.Scheme == "file" {
		d, err := OpenDir(loc.Dir)
		if err != nil {
			return nil, err
		}
		return d, nil
	}
	opts.Bucket, opts.Prefix = loc.Bucket, loc.Prefix
	return NewS3Blobs(ctx, opts)
}
