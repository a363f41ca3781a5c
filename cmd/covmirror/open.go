package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/mirror"
)

func (g *globals) localDir() string { return filepath.Join(g.state, "local") }

func (g *globals) openLocal() (*local.Store, error) {
	return local.Open(local.Options{Dir: g.localDir()})
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
	return iceberg.Open(ctx, cat, iceberg.Options{Namespace: []string{g.namespace}, Name: g.table})
}

func (g *globals) openMirror(ctx context.Context) (*mirror.Mirror, error) {
	table, err := g.openTable(ctx)
	if err != nil {
		return nil, err
	}
	l, err := g.openLocal()
	if err != nil {
		return nil, err
	}
	m, err := mirror.New(mirror.Options{Local: l, Durable: table, Writer: g.writer})
	if err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("%w", err)
	}
	return m, nil
}
