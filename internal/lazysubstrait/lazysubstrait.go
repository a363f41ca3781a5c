package lazysubstrait

import (
	"fmt"
	"io/fs"
	"path"
	"sync"
	"sync/atomic"
	_ "unsafe" // go:linkname

	"github.com/substrait-io/substrait"
	"github.com/substrait-io/substrait-go/v8/extensions"
)

// defaultCollection is substrait-go's loader of its default collection,
// called by extensions.GetDefaultCollection; replaced in init.
//
//go:linkname defaultCollection github.com/substrait-io/substrait-go/v8/extensions.getDefaultCollectionOnce
var defaultCollection func() (*extensions.Collection, error)

// unsupported are the files substrait-go's own loader skips.
var unsupported = map[string]bool{"unknown.yaml": true}

var (
	// collection is the default collection every caller of
	// extensions.GetDefaultCollection gets, before and after Load.
	collection = new(extensions.Collection)
	files      []fs.DirEntry // the default files, in substrait-go's order
	once       sync.Once
	loadErr    error       // set before loaded
	loaded     atomic.Bool // Load has run
	swapped    bool        // init replaced substrait-go's loader
)

func init() {
	// The collection needs a file loaded to be usable at all (URILoaded
	// on an empty Collection dereferences nil): the first default file
	// substrait-go loads, the smallest.
	entries, err := substrait.GetSubstraitExtensionsFS().ReadDir("extensions")
	if err != nil {
		return // substrait-go's own loader stays, and fails as it would have
	}
	for i, f := range entries {
		if unsupported[f.Name()] {
			continue
		}
		if err := loadFile(f); err != nil {
			return // as above; the collection handed out is substrait-go's
		}
		files = entries[i+1:]
		defaultCollection = func() (*extensions.Collection, error) {
			if loaded.Load() {
				return collection, loadErr
			}
			return collection, nil
		}
		swapped = true
		return
	}
}

// Load fills the default collection with every default file not loaded
// yet, once; later calls return the first call's error. Call it before
// anything converts an expression to Substrait (an iceberg-go scan with a
// row filter): every covmirror command that reads a table does.
func Load() error {
	once.Do(func() {
		if !swapped {
			loaded.Store(true)
			return // substrait-go loads its own collection
		}
		for _, f := range files {
			if err := loadFile(f); err != nil {
				loadErr = fmt.Errorf("loading Substrait's default extension %s: %w", f.Name(), err)
				break
			}
		}
		loaded.Store(true)
	})
	return loadErr
}

func loadFile(f fs.DirEntry) error {
	if unsupported[f.Name()] {
		return nil
	}
	r, err := substrait.GetSubstraitExtensionsFS().Open(path.Join("extensions", f.Name()))
	if err != nil {
		return err
	}
	defer func() { _ = r.Close() }()
	return collection.Load(extensions.SubstraitDefaultURIPrefix+f.Name(), r)
}
