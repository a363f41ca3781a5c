package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/mirror"
)

func (g *globals) localDir() string { return filepath.Join(g.state, "local") }

func (g *globals) openLocal() (*local.Store, error) {
	return local.Open(local.Options{Dir: g.localDir(), Logger: g.logger, Sync: g.localSync})
}

// openTable opens the coverage table in the configured catalog, or in the
// embedded one under --state when none is configured.
func (g *globals) openTable(ctx context.Context) (*iceberg.Table, error) {
	props := g.props
	if len(props) == 0 {
		var err error
		if props, err = iceberg.EmbeddedProps(g.state); err != nil {
			return nil, err
		}
	}
	cat, err := iceberg.OpenCatalog(ctx, "", props)
	if err != nil {
		return nil, err
	}
	return iceberg.Open(ctx, cat, iceberg.Options{Namespace: []string{g.namespace}, Name: g.table, Logger: g.logger})
}

// openMirror opens the durable tier and the local tier and ties them
// together; the caller closes the returned store (or the Mirror, which
// closes it after a final checkpoint), then the returned closer.
func (g *globals) openMirror(ctx context.Context, opts mirror.Options) (*mirror.Mirror, *local.Store, durable.Tier, io.Closer, error) {
	tier, closer, err := g.openPrimary(ctx, true)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	l, err := g.openLocal()
	if err != nil {
		_ = closer.Close()
		return nil, nil, nil, nil, err
	}
	opts.Local, opts.Durable, opts.Writer, opts.Logger = l, tier, g.writer, g.logger
	m, err := mirror.New(opts)
	if err != nil {
		_ = l.Close()
		_ = closer.Close()
		return nil, nil, nil, nil, err
	}
	return m, l, tier, closer, nil
}

// explainWriteFailure adds to a failed write into the table what a local
// warehouse says when asked directly: the library may report only its
// consequence (a data file with no rows), not that the directory refused
// the write.
func explainWriteFailure(ctx context.Context, table *iceberg.Table, err error) error {
	if err == nil || table == nil || errors.Is(err, context.Canceled) {
		return err
	}
	tbl, loadErr := table.Load(ctx)
	if loadErr != nil {
		return err
	}
	dir, ok := localDir(tbl.Location())
	if !ok {
		return err
	}
	dir = filepath.Join(dir, "data")
	// The nearest existing directory is where the writer would create one.
	for {
		if _, statErr := os.Lstat(dir); statErr == nil || filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	probe, probeErr := os.CreateTemp(dir, ".covmirror-write-probe-*")
	if probeErr == nil {
		_ = probe.Close()
		_ = os.Remove(probe.Name())
		return err
	}
	return fmt.Errorf("%w; the cause: the warehouse directory %s refuses new files (%v): make it writable for this process (owner, mode, a read-only mount), then retry; the local tier keeps everything pending", err, dir, probeErr)
}

// localDir is a location's local directory, if it is a file: URL or a path.
func localDir(location string) (string, bool) {
	if strings.HasPrefix(location, "/") {
		return location, true
	}
	u, err := url.Parse(location)
	if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") {
		return "", false
	}
	return u.Path, true
}
