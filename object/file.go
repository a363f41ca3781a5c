package object

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// DirBlobs is Blobs over a local directory, for one machine: any number of
// processes may share it. A Put holds an exclusive lock (flock on the
// directory's lock file, and a mutex within the process) while it compares
// the version and writes through a temporary file, fsync, rename and an
// fsync of the directory; readers see the old object or the new one,
// never a mix. An object's version is the SHA-256 of its bytes: two
// versions with the same bytes are the same version, which is sound here
// because a writer's merge depends on the bytes alone.
type DirBlobs struct {
	dir  string
	mu   sync.Mutex // serializes this process's holders of lock
	lock *os.File   // the directory's lock file, held open
}

// lockName and tempPrefix are the directory's own files. Keys may not
// have a segment starting with ".", so no key can name them.
const (
	lockName   = ".lock"
	tempPrefix = ".tmp-"
)

// ErrInvalidKey: a key a DirBlobs refuses: empty, absolute, with an empty,
// "." or ".." segment, a segment starting with "." or longer than 255
// bytes, a backslash or a NUL. The Tier's keys never are.
var ErrInvalidKey = errors.New("invalid key")

// OpenDir returns Blobs over dir, creating it if missing. Close releases
// its lock file.
func OpenDir(dir string) (*DirBlobs, error) {
	if dir == "" {
		return nil, errors.New("object: OpenDir: the directory name is empty")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("object: OpenDir %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("object: OpenDir: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(abs, lockName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("object: OpenDir: %w", err)
	}
	return &DirBlobs{dir: abs, lock: lock}, nil
}

// Close releases the lock file.
func (b *DirBlobs) Close() error { return b.lock.Close() }

// Name is the directory as a file URL.
func (b *DirBlobs) Name() string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(b.dir)}).String()
}

// path maps a valid key to its file.
func (b *DirBlobs) path(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") || strings.ContainsAny(key, "\\\x00") {
		return "", fmt.Errorf("%w: %q", ErrInvalidKey, key)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || strings.HasPrefix(seg, ".") || len(seg) > 255 {
			return "", fmt.Errorf("%w: %q has an empty segment, one starting with \".\" or one over 255 bytes", ErrInvalidKey, key)
		}
	}
	return filepath.Join(b.dir, filepath.FromSlash(key)), nil
}

func version(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Get returns the object under key and the SHA-256 of its bytes.
func (b *DirBlobs) Get(_ context.Context, key string) ([]byte, string, error) {
	p, err := b.path(key)
	if err != nil {
		return nil, "", err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	if err != nil {
		return nil, "", err
	}
	return data, version(data), nil
}

// Put writes data under key if its version is still ifMatch (or, with
// ifMatch empty, if there is none).
func (b *DirBlobs) Put(_ context.Context, key string, data []byte, ifMatch string) (string, error) {
	p, err := b.path(key)
	if err != nil {
		return "", err
	}
	unlock, err := b.acquire()
	if err != nil {
		return "", err
	}
	defer unlock()
	old, err := os.ReadFile(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if ifMatch != "" {
			return "", fmt.Errorf("%w: %s is absent, not at version %s", ErrPrecondition, key, ifMatch)
		}
	case err != nil:
		return "", fmt.Errorf("object: put %s: %w", key, err)
	case ifMatch == "":
		return "", fmt.Errorf("%w: %s exists already", ErrPrecondition, key)
	case version(old) != ifMatch:
		return "", fmt.Errorf("%w: %s is at version %s, not %s", ErrPrecondition, key, version(old), ifMatch)
	}
	if err := b.mkdirs(filepath.Dir(p)); err != nil {
		return "", fmt.Errorf("object: put %s: %w", key, err)
	}
	if err := writeAtomic(p, data); err != nil {
		return "", fmt.Errorf("object: put %s: %w", key, err)
	}
	return version(data), nil
}

// writeAtomic replaces p by data: a temporary file beside it, synced,
// renamed over it, and the directory synced so that the rename lasts.
func writeAtomic(p string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(p), tempPrefix+"*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), p); err != nil {
		return err
	}
	return syncDir(filepath.Dir(p))
}

// mkdirs creates dir and the missing directories above it, syncing each
// parent so that a new directory survives a crash.
func (b *DirBlobs) mkdirs(dir string) error {
	if dir == b.dir {
		return nil
	}
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := b.mkdirs(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return syncDir(filepath.Dir(dir))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// List returns the keys under prefix, in lexical order.
func (b *DirBlobs) List(_ context.Context, prefix string) ([]string, error) {
	// Walk only the deepest directory the prefix names.
	root := b.dir
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		p, err := b.path(prefix[:i])
		if err != nil {
			return nil, err
		}
		root = p
	}
	var keys []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // a missing prefix directory, or a file renamed away
		}
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") && p != root {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(b.dir, p)
		if err != nil {
			return err
		}
		if key := filepath.ToSlash(rel); strings.HasPrefix(key, prefix) {
			keys = append(keys, key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("object: list %q in %s: %w", prefix, b.dir, err)
	}
	slices.Sort(keys)
	return keys, nil
}

// Delete removes key; a missing key is not an error.
func (b *DirBlobs) Delete(_ context.Context, key string) error {
	p, err := b.path(key)
	if err != nil {
		return err
	}
	unlock, err := b.acquire()
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.Remove(p); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("object: delete %s: %w", key, err)
	}
	if err := syncDir(filepath.Dir(p)); err != nil {
		return err
	}
	// Directories the key's removal emptied go too (check-store's scratch
	// keys would otherwise leave theirs behind); a non-empty one stops it.
	for dir := filepath.Dir(p); dir != b.dir && strings.HasPrefix(dir, b.dir+string(filepath.Separator)); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			break
		}
	}
	return nil
}

// acquire takes the directory's lock, within and across processes.
func (b *DirBlobs) acquire() (func(), error) {
	b.mu.Lock()
	if err := lockFile(b.lock); err != nil {
		b.mu.Unlock()
		return nil, fmt.Errorf("object: lock %s: %w", b.lock.Name(), err)
	}
	return func() {
		_ = unlockFile(b.lock)
		b.mu.Unlock()
	}, nil
}

var _ Blobs = (*DirBlobs)(nil)
