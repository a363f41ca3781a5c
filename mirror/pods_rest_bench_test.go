//go:build integration

package mirror

import (
	"fmt"
	"testing"

	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/seaweedtest"
)

// BenchmarkPodsOneRESTTable is BenchmarkPodsOneTable on SeaweedFS's Iceberg
// REST catalog with its S3 warehouse (a real SeaweedFS on loopback ports,
// as a deployment's pods meet one), each N on a table of its own, beside
// the same object-tier baseline:
//
//	go test -tags integration ./mirror -run '^$' -bench PodsOneRESTTable -benchtime 1x [-pods 1,4,16,64]
func BenchmarkPodsOneRESTTable(b *testing.B) {
	server := seaweedtest.Start(b)
	runs := 0
	benchPods(b, func(b *testing.B, n int) tierOpener {
		runs++
		ns := []string{fmt.Sprintf("pods_%d_%d", n, runs)}
		return func(int) durable.Tier {
			cat, err := iceberg.OpenCatalog(ctx, "", server.Props())
			if err != nil {
				b.Fatal(err)
			}
			tbl, err := iceberg.Open(ctx, cat, iceberg.Options{Namespace: ns})
			if err != nil {
				b.Fatal(err)
			}
			return tbl
		}
	})
}
