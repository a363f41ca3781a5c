package faultio

import (
	"context"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// Catalog is a catalog whose tables write through an Injector's faults.
// Commits of those tables go through Catalog to the wrapped catalog, and
// the tables they return keep the faulty IO.
type Catalog struct {
	catalog.Catalog
	Faults *Injector
}

// txCatalog is Catalog over a catalog with multi-table transactions.
type txCatalog struct {
	*Catalog
	tx catalog.TransactionalCatalog
}

func (c *txCatalog) CommitTransaction(ctx context.Context, commits []table.TableCommit) error {
	return c.tx.CommitTransaction(ctx, commits)
}

// WrapCatalog returns inner with every table's IO wrapped by in. If inner
// has multi-table transactions (catalog.TransactionalCatalog), so has the
// result.
func WrapCatalog(inner catalog.Catalog, in *Injector) catalog.Catalog {
	c := &Catalog{Catalog: inner, Faults: in}
	if tx, ok := inner.(catalog.TransactionalCatalog); ok {
		return &txCatalog{Catalog: c, tx: tx}
	}
	return c
}

// wrap is tbl with the faulty IO, committing through c (the outermost
// wrapper, so that a transactional catalog stays transactional).
func (c *Catalog) wrap(tbl *table.Table, outer table.CatalogIO) *table.Table {
	if tbl == nil {
		return nil
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), c.Faults.fsFunc(tbl.FS), outer)
}

// LoadTable implements catalog.Catalog.
func (c *Catalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, ident)
	return c.wrap(tbl, c), err
}

// CreateTable implements catalog.Catalog.
func (c *Catalog) CreateTable(ctx context.Context, ident table.Identifier, schema *ice.Schema, opts ...catalog.CreateTableOpt) (*table.Table, error) {
	tbl, err := c.Catalog.CreateTable(ctx, ident, schema, opts...)
	return c.wrap(tbl, c), err
}

// RenameTable implements catalog.Catalog.
func (c *Catalog) RenameTable(ctx context.Context, from, to table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.RenameTable(ctx, from, to)
	return c.wrap(tbl, c), err
}

func (c *txCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.Catalog.LoadTable(ctx, ident)
	return c.wrap(tbl, c), err
}

func (c *txCatalog) CreateTable(ctx context.Context, ident table.Identifier, schema *ice.Schema, opts ...catalog.CreateTableOpt) (*table.Table, error) {
	tbl, err := c.Catalog.Catalog.CreateTable(ctx, ident, schema, opts...)
	return c.wrap(tbl, c), err
}

func (c *txCatalog) RenameTable(ctx context.Context, from, to table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.Catalog.RenameTable(ctx, from, to)
	return c.wrap(tbl, c), err
}
