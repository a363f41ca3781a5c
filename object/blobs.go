package object

import (
	"context"
	"errors"
)

// Blobs is a flat key space of small objects with conditional writes: S3
// (If-Match / If-None-Match), or a local directory (a lock and an atomic
// rename give the same semantics). The Tier above it never writes
// without a precondition.
type Blobs interface {
	// Name names the location in logs and errors: a URL.
	Name() string

	// Get returns the object's bytes and its version (an ETag, or what
	// stands for one); ErrNotFound when there is no object.
	Get(ctx context.Context, key string) (data []byte, version string, err error)

	// Put writes data under key only if the object is still at version
	// ifMatch, or, with ifMatch empty, only if there is no object (create).
	// It returns the new version. A precondition that does not hold
	// (HTTP 412, S3's 409 ConditionalRequestConflict, a missing key under
	// If-Match whether answered 404 or 412) is ErrPrecondition and nothing
	// was written. Any other error leaves the outcome unknown: the write
	// may have been applied.
	Put(ctx context.Context, key string, data []byte, ifMatch string) (version string, err error)

	// List returns every key under prefix, in lexical order.
	List(ctx context.Context, prefix string) ([]string, error)

	// Delete removes key; a missing key is not an error. Only check-store
	// uses it, on its scratch key.
	Delete(ctx context.Context, key string) error
}

var (
	// ErrNotFound: Get found no object under the key.
	ErrNotFound = errors.New("object not found")

	// ErrPrecondition: a conditional Put found the object at another
	// version (or absent, or present when it was to be created); nothing
	// was written. The Tier re-reads, re-merges and tries again.
	ErrPrecondition = errors.New("precondition failed")
)
