package iceberg_test

import (
	"context"
	"testing"

	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/durable/durabletest"
	"github.com/covmirror/covmirror/iceberg"
)

// TestTierConformanceEmbedded runs the durable tiers' conformance suite on
// the coverage table in the embedded catalog (SQLite, a local warehouse):
// every client opens its own catalog connection.
func TestTierConformanceEmbedded(t *testing.T) {
	durabletest.Run(t, durabletest.Harness{Light: testing.Short(), New: func(t *testing.T) func(t *testing.T) durable.Tier {
		props, err := iceberg.EmbeddedProps(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return func(t *testing.T) durable.Tier {
			cat, err := iceberg.OpenCatalog(context.Background(), "", props)
			if err != nil {
				t.Fatal(err)
			}
			table, err := iceberg.Open(context.Background(), cat, iceberg.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return table
		}
	}})
}
