//go:build integration

package iceberg

import (
	"context"
	"testing"

	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/durable/durabletest"
)

// conformance runs the durable tiers' suite on tables open makes, one per
// scenario, each of the scenario's clients a Table of its own over the
// first one's catalog; the commits of a real catalog make the heaviest
// scenarios light. (TestTierConformanceEmbedded runs it on the embedded
// catalog, each client with its own catalog connection.)
func conformance(t *testing.T, open func(testing.TB) *Table) {
	durabletest.Run(t, durabletest.Harness{Light: true, New: func(t *testing.T) func(t *testing.T) durable.Tier {
		first := open(t)
		return func(t *testing.T) durable.Tier {
			tbl, err := Open(context.Background(), first.Catalog(), first.opts)
			if err != nil {
				t.Fatal(err)
			}
			return tbl
		}
	}})
}
