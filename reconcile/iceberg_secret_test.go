package reconcile_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/reconcile"
)

// echoingCatalog is a catalog whose table loads fail with what a REST
// catalog that echoes its request says: its Authorization header.
type echoingCatalog struct{ catalog.Catalog }

const catalogSecret = "Zq81fa77CatalogSecret"

func (echoingCatalog) LoadTable(context.Context, table.Identifier) (*table.Table, error) {
	return nil, errors.New(`403 Forbidden: {"headers":{"Authorization":["Bearer ` + catalogSecret + `"]}}`)
}

// TestIcebergCheckerErrorsAreRedacted: an Iceberg checker's error is the
// catalog's text, redacted by shape as the other checkers' are.
func TestIcebergCheckerErrorsAreRedacted(t *testing.T) {
	cfgs := []reconcile.Config{{Sink: "lake", Kind: reconcile.KindIceberg, Table: "ns.lake", BatchColumn: "batch_id"}}
	cs, err := reconcile.Build(cfgs, reconcile.BuildOptions{Catalog: echoingCatalog{}})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	_, err = cs.Checkers["lake"].Held(context.Background(), coverage.Destination{Sink: "lake", Topic: "t"}, []coverage.Range{{Start: 0, End: 5}})
	if err == nil || !strings.Contains(err.Error(), "403 Forbidden") {
		t.Fatalf("Held over a refusing catalog: %v; want its error", err)
	}
	if strings.Contains(err.Error(), catalogSecret[:8]) {
		t.Errorf("the catalog's echo of its credential is in the error: %v", err)
	}
}
